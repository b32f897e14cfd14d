#include "ferry/fs/local_file_system.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/scratch_dir.h"

namespace ferry::fs {
namespace {

using ::testing::UnorderedElementsAre;

class LocalFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  void TearDown() override { std::filesystem::remove_all(dir_.Path("d")); }
  std::string P(std::string_view name) { return LocalPathToFsPath(dir_.Path(name)); }
  testing::ScratchDir dir_{"ferry_local_fs_"};
  LocalFileSystem fs_;
};

TEST_F(LocalFileSystemTest, StatReportsKindSizeAndMode) {
  testing::WriteFile(dir_.Path("f"), "12345");
  ::chmod(dir_.Path("f").c_str(), 0640);
  absl::StatusOr<Entry> e = fs_.Stat(P("f"));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->kind, EntryKind::kFile);
  EXPECT_EQ(e->size, 5);
  EXPECT_EQ(e->mode, 0640u);
  EXPECT_NE(e->id, 0u);
  EXPECT_EQ(fs_.Stat(P("nope")).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LocalFileSystemTest, ListGivesDirectChildrenByName) {
  ASSERT_TRUE(fs_.CreateDir(P("d/sub"), /*parents=*/true).ok());
  testing::WriteFile(dir_.Path("d/a"), "a");
  std::vector<std::string> names;
  ASSERT_TRUE(fs_.List(P("d"), [&](std::vector<Entry>& batch) {
                    for (const Entry& e : batch) names.push_back(e.path);
                    return true;
                  }).ok());
  EXPECT_THAT(names, UnorderedElementsAre("a", "sub"));
}

TEST_F(LocalFileSystemTest, WrittenFileAppearsOnlyAtClose) {
  testing::WriteFile(dir_.Path("t"), "old");
  absl::StatusOr<std::unique_ptr<File>> w = fs_.OpenWrite(P("t"), {.size = 6});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->WriteAt(3, absl::MakeConstSpan("def", 3)).ok());
  ASSERT_TRUE((*w)->WriteAt(0, absl::MakeConstSpan("abc", 3)).ok());
  EXPECT_EQ(testing::ReadFile(dir_.Path("t")), "old");
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(testing::ReadFile(dir_.Path("t")), "abcdef");
  EXPECT_THAT(dir_.Files(), UnorderedElementsAre("t"));  // no temporary left
}

TEST_F(LocalFileSystemTest, WriterDestroyedUnclosedLeavesTheTargetAndNoTemporary) {
  testing::WriteFile(dir_.Path("t"), "old");
  {
    absl::StatusOr<std::unique_ptr<File>> w = fs_.OpenWrite(P("t"), {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->WriteAt(0, absl::MakeConstSpan("new", 3)).ok());
  }
  EXPECT_EQ(testing::ReadFile(dir_.Path("t")), "old");
  EXPECT_THAT(dir_.Files(), UnorderedElementsAre("t"));
}

TEST_F(LocalFileSystemTest, OpenWriteOfADirectoryIsFailedPrecondition) {
  ASSERT_TRUE(fs_.CreateDir(P("d"), false).ok());
  EXPECT_EQ(fs_.OpenWrite(P("d"), {}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(LocalFileSystemTest, ReadAtReturnsFewerBytesOnlyAtTheEnd) {
  testing::WriteFile(dir_.Path("f"), "0123456789");
  absl::StatusOr<std::unique_ptr<File>> r = fs_.OpenRead(P("f"));
  ASSERT_TRUE(r.ok());
  char buf[8];
  EXPECT_EQ(*(*r)->ReadAt(0, absl::MakeSpan(buf)), 8u);
  EXPECT_EQ(*(*r)->ReadAt(8, absl::MakeSpan(buf)), 2u);
  EXPECT_EQ(*(*r)->ReadAt(10, absl::MakeSpan(buf)), 0u);
  EXPECT_EQ((*r)->WriteAt(0, absl::MakeConstSpan("x", 1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(LocalFileSystemTest, DefaultWalkReportsEveryEntryOnceWithRelativePaths) {
  ASSERT_TRUE(fs_.CreateDir(P("d/x/y"), true).ok());
  testing::WriteFile(dir_.Path("d/a"), "a");
  testing::WriteFile(dir_.Path("d/x/y/b"), "bb");
  std::vector<std::string> paths;
  absl::StatusOr<WalkStats> s = fs_.Walk(P("d"), {}, [&](WalkBatch& b) {
    for (const Entry& e : b.entries) paths.push_back(e.path);
    return true;
  });
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(paths, UnorderedElementsAre("a", "x", "x/y", "x/y/b"));
  EXPECT_EQ(s->bytes, 3u);
  EXPECT_EQ(s->directories, 3u);
}

// `ferry-cp URL /dev/null` times a download: the bytes go into the device,
// which stays a device (a temporary renamed over it once replaced it).
TEST_F(LocalFileSystemTest, WritingToACharacterDeviceWritesIntoItAndLeavesItADevice) {
  absl::StatusOr<std::unique_ptr<File>> w = fs_.OpenWrite("/dev/null", {.size = 3});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->WriteAt(0, absl::MakeConstSpan("abc", 3)).ok());
  ASSERT_TRUE((*w)->Close().ok());
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(LocalFileSystemTest, WritingOverAFifoIsRefusedAndTheFifoStays) {
  ASSERT_EQ(::mkfifo(dir_.Path("fifo").c_str(), 0600), 0);
  absl::StatusOr<std::unique_ptr<File>> w = fs_.OpenWrite(P("fifo"), {});
  EXPECT_EQ(w.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(w.status().message(), ::testing::HasSubstr("FIFO"));
  struct stat st;
  ASSERT_EQ(::stat(dir_.Path("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

}  // namespace
}  // namespace ferry::fs
