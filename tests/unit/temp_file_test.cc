// io_internal::TempFile: the temporary a download lands in, beside its
// destination, renamed over it on Commit and removed otherwise.
#include "ferry/io/internal/temp_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::io_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;

class TempFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ferry_temp_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& name : Names()) unlink((dir_ + "/" + name).c_str());
    rmdir(dir_.c_str());
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    DIR* d = opendir(dir_.c_str());
    if (d == nullptr) return names;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
    return names;
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  static void Write(const TempFile& f, const std::string& data) {
    ASSERT_EQ(pwrite(f.fd(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  }

  std::string dir_;
};

TEST_F(TempFileTest, CreatesAHiddenFileNamedAfterTheDestinationBesideIt) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_ + "/out.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(Names(), ElementsAre(MatchesRegex("\\.out\\.bin\\.ferry-[0-9a-f]{16}")));
  EXPECT_EQ(f->path(), dir_ + "/" + Names()[0]);
}

TEST_F(TempFileTest, CommitRenamesOverAnExistingDestination) {
  const std::string dest = dir_ + "/out.bin";
  std::ofstream(dest) << "old";
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dest);
  ASSERT_TRUE(f.ok()) << f.status();
  Write(*f, "new content");
  ASSERT_TRUE(f->Commit(dest).ok());
  EXPECT_THAT(Names(), ElementsAre("out.bin"));
  EXPECT_EQ(Read(dest), "new content");
}

TEST_F(TempFileTest, DestructionWithoutCommitRemovesTheFileAndKeepsTheDestination) {
  const std::string dest = dir_ + "/out.bin";
  std::ofstream(dest) << "old";
  {
    absl::StatusOr<TempFile> f = TempFile::CreateBeside(dest);
    ASSERT_TRUE(f.ok()) << f.status();
    Write(*f, "partial");
  }
  EXPECT_THAT(Names(), ElementsAre("out.bin"));
  EXPECT_EQ(Read(dest), "old");
}

TEST_F(TempFileTest, FailedRenameRemovesTheTemporary) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_ + "/out.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  absl::Status s = f->Commit(dir_ + "/no/such/dir/out.bin");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("rename"));
  EXPECT_THAT(Names(), IsEmpty());
}

TEST_F(TempFileTest, MovedFromFileRemovesNothing) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_ + "/out.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  TempFile moved = *std::move(f);
  f = absl::UnknownError("reset");  // destroys the moved-from TempFile
  EXPECT_EQ(Names().size(), 1u);
  ASSERT_TRUE(moved.Commit(dir_ + "/out.bin").ok());
  EXPECT_THAT(Names(), ElementsAre("out.bin"));
}

TEST_F(TempFileTest, DestinationNamingADirectoryIsInvalidArgument) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_ + "/");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << f.status();
  EXPECT_THAT(Names(), IsEmpty());
}

TEST_F(TempFileTest, MissingDirectoryNamesTheTemporaryPath) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_ + "/nope/out.bin");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound) << f.status();
  EXPECT_THAT(f.status().message(), HasSubstr(dir_ + "/nope/.out.bin.ferry-"));
}

TEST_F(TempFileTest, ModeIsTheRequestedBitsMinusTheUmask) {
  const mode_t old = umask(022);
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_ + "/out.bin", 0666);
  umask(old);
  ASSERT_TRUE(f.ok()) << f.status();
  struct stat st;
  ASSERT_EQ(fstat(f->fd(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

}  // namespace
}  // namespace ferry::io_internal
