// fs::FileTable: POSIX descriptors over any filesystem's files.
#include "ferry/fs/file_table.h"

#include <cstdio>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/mem_file_system.h"

namespace ferry::fs {
namespace {

using ::testing::Optional;

class FileTableTest : public ::testing::Test {
 protected:
  testing::MemFileSystem mem_;
  FileTable files_;
};

TEST_F(FileTableTest, ReadsMoveTheOffsetAndEndShort) {
  mem_.PutFile("f", "0123456789");
  absl::StatusOr<int> fd = files_.Open(mem_, "f", OpenMode::kRead);
  ASSERT_TRUE(fd.ok()) << fd.status();
  char buf[6];
  EXPECT_EQ(*files_.Read(*fd, absl::MakeSpan(buf)), 6u);
  EXPECT_EQ(*files_.Read(*fd, absl::MakeSpan(buf)), 4u);
  EXPECT_EQ(std::string(buf, 4), "6789");
  EXPECT_EQ(*files_.Read(*fd, absl::MakeSpan(buf)), 0u);
  EXPECT_EQ(*files_.Lseek(*fd, -3, SEEK_END), 7);
  EXPECT_EQ(*files_.Size(*fd), 10);
  EXPECT_EQ(*files_.Lseek(*fd, 0, SEEK_CUR), 7);  // Size left the offset alone
  EXPECT_TRUE(files_.Close(*fd).ok());
}

TEST_F(FileTableTest, EachOpenHasItsOwnOffset) {
  mem_.PutFile("f", "abcdef");
  int a = *files_.Open(mem_, "f", OpenMode::kRead);
  int b = *files_.Open(mem_, "f", OpenMode::kRead);
  EXPECT_NE(a, b);
  char buf[2];
  ASSERT_TRUE(files_.Read(a, absl::MakeSpan(buf)).ok());
  ASSERT_TRUE(files_.Read(b, absl::MakeSpan(buf)).ok());
  EXPECT_EQ(std::string(buf, 2), "ab");
}

TEST_F(FileTableTest, WrittenFileIsPublishedByClose) {
  int fd = *files_.Open(mem_, "out", OpenMode::kWrite);
  ASSERT_TRUE(files_.Write(fd, absl::MakeConstSpan("hello", 5)).ok());
  EXPECT_EQ(mem_.GetFile("out"), std::nullopt);
  ASSERT_TRUE(files_.Close(fd).ok());
  EXPECT_THAT(mem_.GetFile("out"), Optional(std::string("hello")));
}

TEST_F(FileTableTest, DiscardedWrittenFileIsNotPublished) {
  mem_.PutFile("out", "old");
  int fd = *files_.Open(mem_, "out", OpenMode::kWrite);
  ASSERT_TRUE(files_.Write(fd, absl::MakeConstSpan("hello", 5)).ok());
  ASSERT_TRUE(files_.Discard(fd).ok());
  EXPECT_THAT(mem_.GetFile("out"), Optional(std::string("old")));
  EXPECT_EQ(files_.open_descriptors(), 0);
}

TEST_F(FileTableTest, ReadWriteOpensAreRefused) {
  mem_.PutFile("f", "x");
  EXPECT_EQ(files_.Open(mem_, "f", OpenMode::kReadWrite).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FileTableTest, ClosedDescriptorIsInvalidArgument) {
  mem_.PutFile("f", "x");
  int fd = *files_.Open(mem_, "f", OpenMode::kRead);
  ASSERT_TRUE(files_.Close(fd).ok());
  char c;
  EXPECT_EQ(files_.Read(fd, absl::MakeSpan(&c, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(files_.Close(fd).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(FileTableTest, MissingFileIsNotFound) {
  EXPECT_EQ(files_.Open(mem_, "nope", OpenMode::kRead).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ferry::fs
