// Parallel copies against nfs-ganesha: NFS -> local and local -> NFS of
// files around the chunk size, verified by MD5 of both sides; NfsFile as an
// FdTable handle; and the errors of missing sources and targets.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "ferry/io/fd_table.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_copy.h"
#include "ferry/nfs/nfs_file.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/checksum.h"
#include "nfs_test_util.h"

namespace ferry::nfs {
namespace {

using ::testing::HasSubstr;

// Small chunks so that a few MiB make many READ/WRITE calls in flight.
constexpr uint32_t kChunk = 64 << 10;

std::string Md5OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  return Md5(std::span<const char>(data.data(), data.size()));
}

class NfsCopyTest : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    fresh_ = nfs_test::MakeFreshDir("copy");
    absl::StatusOr<std::unique_ptr<NfsClient>> c =
        NfsClient::Connect(runtime_, nfs_test::UrlFor(fresh_));
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
    scratch_ = absl::StrCat(nfs_test::kExportDir, "/", fresh_, "_local");
    mkdir(scratch_.c_str(), 0755);
  }

  std::string Exported(std::string_view name) const {
    return absl::StrCat(nfs_test::kExportDir, "/", fresh_, "/",
                        absl::string_view(name.data(), name.size()));
  }

  CopyOptions Options() const {
    CopyOptions o;
    o.chunk_bytes = kChunk;
    o.parallelism = 8;
    return o;
  }

  Runtime runtime_{{.io_threads = 2, .blocking_threads = 8}};
  std::string fresh_;
  std::string scratch_;
  std::unique_ptr<NfsClient> client_;
};

TEST_P(NfsCopyTest, NfsToLocalKeepsEveryByte) {
  const size_t size = GetParam();
  nfs_test::WriteFile(Exported("src.bin"), size);
  const std::string local = scratch_ + "/dst.bin";
  absl::StatusOr<CopyStats> s = CopyNfsToLocal(runtime_, *client_, "src.bin", local, Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->bytes, size);
  EXPECT_EQ(s->chunks, (size + kChunk - 1) / kChunk);
  EXPECT_EQ(Md5OfFile(local), Md5OfFile(Exported("src.bin")));
}

TEST_P(NfsCopyTest, LocalToNfsKeepsEveryByteAndCommits) {
  const size_t size = GetParam();
  const std::string local = scratch_ + "/src.bin";
  nfs_test::WriteFile(local, size);
  absl::StatusOr<CopyStats> s = CopyLocalToNfs(runtime_, *client_, local, "dst.bin", Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->bytes, size);
  EXPECT_EQ(s->rewrites, 0);
  EXPECT_EQ(Md5OfFile(Exported("dst.bin")), Md5OfFile(local));
}

INSTANTIATE_TEST_SUITE_P(Sizes, NfsCopyTest,
                         ::testing::Values(0, 1, kChunk - 1, kChunk, kChunk + 1,
                                           (5 << 20) + 7));

class NfsCopyErrorsTest : public NfsCopyTest {};

TEST_F(NfsCopyErrorsTest, MissingSourceIsNotFoundNamingIt) {
  absl::StatusOr<CopyStats> s =
      CopyNfsToLocal(runtime_, *client_, "absent.bin", scratch_ + "/x", Options());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(absl::StrCat(fresh_, "/absent.bin")));
}

TEST_F(NfsCopyErrorsTest, TargetInMissingDirectoryIsNotFound) {
  const std::string local = scratch_ + "/src.bin";
  nfs_test::WriteFile(local, 10);
  absl::StatusOr<CopyStats> s =
      CopyLocalToNfs(runtime_, *client_, local, "no/such/dir/x.bin", Options());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound) << s.status();
}

TEST_F(NfsCopyErrorsTest, DirectorySourceIsFailedPrecondition) {
  mkdir(Exported("adir").c_str(), 0755);
  absl::StatusOr<CopyStats> s =
      CopyNfsToLocal(runtime_, *client_, "adir", scratch_ + "/x", Options());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
}

TEST_F(NfsCopyErrorsTest, NfsFileServesAnFdTable) {
  nfs_test::WriteFile(Exported("f.bin"), 1000);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "f.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  FdTable<NfsFile> table;
  auto opened = table.Open("f.bin", *f, OpenMode::kReadWrite);
  ASSERT_TRUE(opened.ok()) << opened.status();
  char buf[600];
  absl::StatusOr<size_t> n = table.Read(opened->fd, absl::MakeSpan(buf));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 600u);
  n = table.Read(opened->fd, absl::MakeSpan(buf));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 400u);  // short read at the end
  const std::string tail = "appended";
  ASSERT_TRUE(table.Lseek(opened->fd, 0, SEEK_END).ok());
  ASSERT_TRUE(table.Write(opened->fd, absl::MakeConstSpan(tail.data(), tail.size())).ok());
  auto closed = table.Close(opened->fd);
  ASSERT_TRUE(closed.ok()) << closed.status();
  ASSERT_TRUE(closed->handle->Commit().ok());
  struct stat st;
  ASSERT_EQ(stat(Exported("f.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1008);
}

TEST_F(NfsCopyErrorsTest, NfsFileReadsABufferOfManyCallsInOneReadAt) {
  // ReadAt splits a buffer into READs of at most 1 MiB, sends them 16 at a
  // time and assembles them; past the end it stops short, every byte in its
  // place. The file takes two windows of calls; the buffer is at least the
  // server's rtmax (ganesha: 64 MiB, a READ whose reply would not fit in a
  // record).
  const size_t call = std::min<size_t>(client_->fsinfo().rtmax, 1 << 20);
  const size_t size = 18 * call + call / 2 + 7;
  nfs_test::WriteFile(Exported("multi.bin"), size);
  std::ifstream in(Exported("multi.bin"), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string expected = ss.str();
  ASSERT_EQ(expected.size(), size);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "multi.bin");
  ASSERT_TRUE(f.ok()) << f.status();

  std::string buf(std::max<size_t>(20 * call, client_->fsinfo().rtmax), 'x');
  absl::StatusOr<size_t> n = (*f)->ReadAt(0, absl::MakeSpan(buf.data(), buf.size()));
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, size);
  EXPECT_TRUE(buf.compare(0, size, expected) == 0);

  const size_t offset = call / 2 + 3;
  n = (*f)->ReadAt(static_cast<int64_t>(offset), absl::MakeSpan(buf.data(), 2 * call));
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, 2 * call);
  EXPECT_TRUE(buf.compare(0, 2 * call, expected, offset, 2 * call) == 0);
}

}  // namespace
}  // namespace ferry::nfs
