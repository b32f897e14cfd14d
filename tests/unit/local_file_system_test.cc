#include "ferry/fs/local_file_system.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

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

// Bytes 0..n of a recognisable pattern.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 % 251);
  return s;
}

// Whether files in `dir` take user extended attributes (resumable writes
// record their progress in one).
bool KeepsUserAttributes(const std::string& dir) {
  const std::string probe = dir + "/xattr-probe";
  testing::WriteFile(probe, "");
  const bool ok = ::setxattr(probe.c_str(), "user.probe", "1", 1, 0) == 0;
  ::unlink(probe.c_str());
  return ok;
}

TEST_F(LocalFileSystemTest, AKilledResumableWriteLeavesItsGapFreePrefixToTheNextWriteOfTheSameSource) {
  if (!KeepsUserAttributes(dir_.Path(""))) GTEST_SKIP() << "no user xattrs under " << dir_.Path("");
  const std::string data = Pattern(4000);
  const WriteOptions options{.size = 4000, .resume_source = "src/f 4000 17"};
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // writes 0-2000 and 3000-4000, records after a second, is killed
    absl::StatusOr<std::unique_ptr<File>> w = fs_.OpenWrite(P("t"), options);
    if (w.ok()) {
      (void)(*w)->WriteAt(1000, absl::MakeConstSpan(data.data() + 1000, 1000));
      (void)(*w)->WriteAt(0, absl::MakeConstSpan(data.data(), 1000));
      ::usleep(1'100'000);
      (void)(*w)->WriteAt(3000, absl::MakeConstSpan(data.data() + 3000, 1000));
    }
    ::kill(::getpid(), SIGKILL);
  }
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  absl::StatusOr<std::unique_ptr<File>> w = fs_.OpenWrite(P("t"), options);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ((*w)->resumed_bytes(), 2000);
  std::string kept(2000, '\0');
  ASSERT_EQ(*(*w)->ReadAt(0, absl::MakeSpan(kept)), 2000u);
  EXPECT_EQ(kept, data.substr(0, 2000));
  ASSERT_TRUE((*w)->WriteAt(2000, absl::MakeConstSpan(data.data() + 2000, 2000)).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(testing::ReadFile(dir_.Path("t")), data);
  EXPECT_THAT(dir_.Files(), UnorderedElementsAre("t"));
}

TEST_F(LocalFileSystemTest, AResumableWriteDiscardedLeavesNoTemporary) {
  {
    absl::StatusOr<std::unique_ptr<File>> w =
        fs_.OpenWrite(P("t"), {.size = 3, .resume_source = "src/f 3 17"});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->WriteAt(0, absl::MakeConstSpan("new", 3)).ok());
    ASSERT_TRUE((*w)->Discard().ok());
  }
  EXPECT_TRUE(dir_.Files().empty());
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
