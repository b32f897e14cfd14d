// io_internal::TempFile: the temporary a download lands in, beside its
// destination, renamed over it on Commit and removed otherwise.
#include "ferry/io/internal/temp_file.h"
#include "ferry/fs/file_system.h"

#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/scratch_dir.h"

namespace ferry::io_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::ferry::testing::ReadFile;
using ::ferry::testing::WriteFile;

class TempFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }

  static void Write(const TempFile& f, const std::string& data) {
    ASSERT_TRUE(f.WriteAt(data, 0).ok());
  }

  // Writes `data` into `f` and commits it over `dest`.
  static void WriteAndCommit(TempFile& f, const std::string& data, const std::string& dest) {
    Write(f, data);
    ASSERT_TRUE(f.Commit(dest).ok());
  }

  // Expects the folder to hold out.bin alone, with `content` in it: no
  // temporary left beside it.
  void ExpectOnlyOutBinHolding(const std::string& content) {
    EXPECT_THAT(dir_.Files(), ElementsAre("out.bin"));
    EXPECT_EQ(ReadFile(dir_.Path("out.bin")), content);
  }

  static absl::StatusOr<TempFile> Named(const std::string& dest) {
    return TempFile::CreateBeside(dest, 0644, TempFile::Naming::kNamed);
  }

  // An unnamed temporary for `dest`, or nullopt where the filesystem under
  // the scratch folder has no O_TMPFILE (the caller skips).
  static std::optional<TempFile> Unnamed(const std::string& dest) {
    absl::StatusOr<TempFile> f = TempFile::CreateBeside(dest);
    if (!f.ok() || !f->unnamed()) return std::nullopt;
    return *std::move(f);
  }

  ferry::testing::ScratchDir dir_{"ferry_temp_file_test."};
};

TEST(FerryTemporaryName, EveryNameFerryGivesATemporaryIsRecognised) {
  for (const std::string& name : {TempNameFor("a.bin"), TempSlotFor("a.bin"), TempNameFor(""),
                                  TempNameFor(".hidden"), TempSlotFor("with space")}) {
    EXPECT_TRUE(fs::IsFerryTemporaryName(name)) << name;
  }
}

TEST(FerryTemporaryName, AUsersFileThatMerelyLooksLikeOneIsNot) {
  for (std::string_view name : {"a.bin", ".a.bin", ".a.bin.ferry-", ".a.bin.ferry-0123",
                                ".a.bin.ferry-0123456789abcdeg", "a.bin.ferry-0123456789abcdef",
                                "..ferry-0123456789abcdef", ".a.bin.ferry-0123456789ABCDEF",
                                ".a.bin.ferry-0123456789abcdef.txt"}) {
    EXPECT_FALSE(fs::IsFerryTemporaryName(name)) << name;
  }
}

TEST_F(TempFileTest, CreatesAHiddenFileNamedAfterTheDestinationBesideIt) {
  absl::StatusOr<TempFile> f = Named(dir_.Path("out.bin"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(dir_.Files(), ElementsAre(MatchesRegex("\\.out\\.bin\\.ferry-[0-9a-f]{16}")));
  EXPECT_EQ(f->path(), dir_.Path(dir_.Files()[0]));
}

TEST_F(TempFileTest, WriteAtPutsTheBytesAtTheirOffset) {
  const std::string dest = dir_.Path("out.bin");
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dest);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->Resize(6).ok());
  ASSERT_TRUE(f->WriteAt(std::string("def"), 3).ok());
  ASSERT_TRUE(f->WriteAt(std::string("abc"), 0).ok());
  ASSERT_TRUE(f->Commit(dest).ok());
  EXPECT_EQ(ReadFile(dest), "abcdef");
}

TEST_F(TempFileTest, ResizeSetsTheSizeAndReservesTheBlocksOffTmpfs) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_.Path("out.bin"));
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->Resize(1 << 20).ok());
  struct stat st;
  ASSERT_EQ(::fstat(f->fd(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
  struct statfs where;
  ASSERT_EQ(::fstatfs(f->fd(), &where), 0);
  if (where.f_type == TMPFS_MAGIC) {
    EXPECT_EQ(st.st_blocks, 0) << "sparse on tmpfs";
  } else {
    EXPECT_GE(st.st_blocks * 512, 1 << 20) << "reserved (fallocate)";
  }
}

TEST_F(TempFileTest, ResizeBelowTheReserveSizeLeavesTheFileSparse) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_.Path("out.bin"));
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->Resize(TempFile::kReserveMinBytes - 4096).ok());
  struct stat st;
  ASSERT_EQ(::fstat(f->fd(), &st), 0);
  EXPECT_EQ(st.st_size, TempFile::kReserveMinBytes - 4096);
  EXPECT_EQ(st.st_blocks, 0);
}

TEST_F(TempFileTest, ALeftoverInTheDestinationsSlotIsReclaimedByTheNextWriter) {
  const std::string dest = dir_.Path("out.bin");
  WriteFile(dir_.Path(TempSlotFor("out.bin")), "a killed writer's partial bytes");
  absl::StatusOr<TempFile> f = Named(dest);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->path(), dir_.Path(TempSlotFor("out.bin")));
  WriteAndCommit(*f, "new", dest);
  ExpectOnlyOutBinHolding("new");
}

TEST_F(TempFileTest, ALiveWritersSlotSendsASecondWriterToAnotherName) {
  const std::string dest = dir_.Path("out.bin");
  absl::StatusOr<TempFile> first = Named(dest);
  absl::StatusOr<TempFile> second = Named(dest);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->path(), dir_.Path(TempSlotFor("out.bin")));
  EXPECT_NE(second->path(), first->path());
  Write(*first, "first");
  Write(*second, "second");
  ASSERT_TRUE(first->Commit(dest).ok());
  ASSERT_TRUE(second->Commit(dest).ok());
  ExpectOnlyOutBinHolding("second");
}

TEST_F(TempFileTest, AWriterKilledMidWriteLeavesNothingOnceTheNextWriterCommits) {
  const std::string dest = dir_.Path("out.bin");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the writer: killed holding its temporary open and locked
    absl::StatusOr<TempFile> f = Named(dest);
    if (f.ok()) (void)f->WriteAt(std::string(1000, 'x'), 0);
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(dir_.Files().size(), 1u);  // its leftover
  absl::StatusOr<TempFile> f = Named(dest);
  ASSERT_TRUE(f.ok()) << f.status();
  WriteAndCommit(*f, "complete", dest);
  ExpectOnlyOutBinHolding("complete");
}

// Runs a resumable writer of `dest` for content `identity` in a child
// process that writes `written` bytes of 'x' from offset 0, records the
// first `recorded` of them, and is SIGKILLed holding its temporary.
void KillResumableWriter(const std::string& dest, const std::string& identity, int64_t written,
                         int64_t recorded) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<TempFile> f = TempFile::CreateResumable(dest, identity);
    if (f.ok() && f->WriteAt(std::string(static_cast<size_t>(written), 'x'), 0).ok()) {
      (void)f->RecordPrefix(recorded);
    }
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
}

// A resumable temporary for `dest`, or nullopt where the scratch folder's
// filesystem keeps no user attributes (the caller skips).
std::optional<TempFile> Resumable(const std::string& dest, const std::string& identity) {
  absl::StatusOr<TempFile> f = TempFile::CreateResumable(dest, identity);
  if (!f.ok() || !f->resumable()) return std::nullopt;
  return *std::move(f);
}

TEST_F(TempFileTest, AKilledResumableWritersRecordedPrefixIsKeptForTheSameContent) {
  const std::string dest = dir_.Path("out.bin");
  if (!Resumable(dir_.Path("probe"), "p")) GTEST_SKIP() << "no user xattrs here";
  KillResumableWriter(dest, "src/a 3000 17", 3000, 2000);
  std::optional<TempFile> f = Resumable(dest, "src/a 3000 17");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->resumed_bytes(), 2000);
  EXPECT_EQ(f->path(), dir_.Path(TempSlotFor("out.bin")));
  std::string kept(2000, '\0');
  ASSERT_EQ(::pread(f->fd(), kept.data(), kept.size(), 0), 2000);
  EXPECT_EQ(kept, std::string(2000, 'x'));
}

TEST_F(TempFileTest, AKilledResumableWritersBytesAreDroppedForOtherContent) {
  const std::string dest = dir_.Path("out.bin");
  if (!Resumable(dir_.Path("probe"), "p")) GTEST_SKIP() << "no user xattrs here";
  KillResumableWriter(dest, "src/a 3000 17", 3000, 2000);
  std::optional<TempFile> f = Resumable(dest, "src/a 3000 18");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->resumed_bytes(), 0);
  struct stat st;
  ASSERT_EQ(::fstat(f->fd(), &st), 0);
  EXPECT_EQ(st.st_size, 0);  // truncated like any leftover
}

TEST_F(TempFileTest, AResumableWriterKilledBeforeItsFirstRecordLeavesNothingToKeep) {
  const std::string dest = dir_.Path("out.bin");
  if (!Resumable(dir_.Path("probe"), "p")) GTEST_SKIP() << "no user xattrs here";
  KillResumableWriter(dest, "same", 3000, 0);
  std::optional<TempFile> f = Resumable(dest, "same");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->resumed_bytes(), 0);
}

TEST_F(TempFileTest, ALeftoverRecordedInAnotherBootOfTheMachineKeepsNothing) {
  const std::string dest = dir_.Path("out.bin");
  if (!Resumable(dir_.Path("probe"), "p")) GTEST_SKIP() << "no user xattrs here";
  KillResumableWriter(dest, "same", 3000, 2000);
  // The record as a crash and a reboot would find it: another boot id.
  const std::string slot = dir_.Path(TempSlotFor("out.bin"));
  char value[200];
  const ssize_t n = ::getxattr(slot.c_str(), "user.ferry.resume", value, sizeof(value));
  ASSERT_GT(n, 0);
  std::string record(value, static_cast<size_t>(n));
  const size_t slash = record.find('/');
  ASSERT_NE(slash, std::string::npos);
  record.replace(slash + 1, 36, "00000000-0000-0000-0000-000000000000");
  ASSERT_EQ(::setxattr(slot.c_str(), "user.ferry.resume", record.data(), record.size(), 0), 0);
  std::optional<TempFile> f = Resumable(dest, "same");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->resumed_bytes(), 0);
}

TEST_F(TempFileTest, ForgottenResumedBytesAreNotKeptForTheNextWriter) {
  const std::string dest = dir_.Path("out.bin");
  if (!Resumable(dir_.Path("probe"), "p")) GTEST_SKIP() << "no user xattrs here";
  KillResumableWriter(dest, "same", 3000, 3000);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // finds the bytes, forgets them, is killed
    absl::StatusOr<TempFile> f = TempFile::CreateResumable(dest, "same");
    if (f.ok() && f->resumed_bytes() == 3000) (void)f->ForgetResumed();
    ::kill(::getpid(), SIGKILL);
  }
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  std::optional<TempFile> f = Resumable(dest, "same");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->resumed_bytes(), 0);
}

TEST_F(TempFileTest, ACommittedResumableTemporaryCarriesNoRecord) {
  const std::string dest = dir_.Path("out.bin");
  std::optional<TempFile> f = Resumable(dest, "same");
  if (!f) GTEST_SKIP() << "no user xattrs here";
  Write(*f, "complete");
  ASSERT_TRUE(f->RecordPrefix(8).ok());
  ASSERT_TRUE(f->Commit(dest).ok());
  ExpectOnlyOutBinHolding("complete");
  char value[8];
  EXPECT_LT(::getxattr(dest.c_str(), "user.ferry.resume", value, sizeof(value)), 0);
  EXPECT_EQ(errno, ENODATA);
}

TEST_F(TempFileTest, AResumableWriterBesideALiveOneKeepsNothingAndUsesAnotherTemporary) {
  const std::string dest = dir_.Path("out.bin");
  std::optional<TempFile> first = Resumable(dest, "same");
  if (!first) GTEST_SKIP() << "no user xattrs here";
  Write(*first, "first");
  ASSERT_TRUE(first->RecordPrefix(5).ok());
  absl::StatusOr<TempFile> second = TempFile::CreateResumable(dest, "same");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->resumed_bytes(), 0);
  EXPECT_NE(second->path(), first->path());
}

TEST(TempNameForTest, TheSlotIsTheSameInEveryRunAndLooksLikeATemporary) {
  EXPECT_EQ(TempSlotFor("out.bin"), TempSlotFor("out.bin"));
  EXPECT_NE(TempSlotFor("out.bin"), TempSlotFor("out.bim"));
  EXPECT_THAT(TempSlotFor("out.bin"), MatchesRegex("\\.out\\.bin\\.ferry-[0-9a-f]{16}"));
}

TEST(TempNameForTest, NamesAHiddenTemporaryAfterItsDestination) {
  EXPECT_THAT(TempNameFor("out.bin"), MatchesRegex("\\.out\\.bin\\.ferry-[0-9a-f]{16}"));
  EXPECT_EQ(TempNameFor("out.bin").size(), 7 + kTempNameExtraBytes);
  EXPECT_THAT(TempNameFor(""), MatchesRegex("\\.ferry-[0-9a-f]{16}"));
}

TEST_F(TempFileTest, CommitRenamesOverAnExistingDestination) {
  const std::string dest = dir_.Path("out.bin");
  WriteFile(dest, "old");
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dest);
  ASSERT_TRUE(f.ok()) << f.status();
  WriteAndCommit(*f, "new content", dest);
  ExpectOnlyOutBinHolding("new content");
}

TEST_F(TempFileTest, DestructionWithoutCommitRemovesTheFileAndKeepsTheDestination) {
  const std::string dest = dir_.Path("out.bin");
  WriteFile(dest, "old");
  {
    absl::StatusOr<TempFile> f = TempFile::CreateBeside(dest);
    ASSERT_TRUE(f.ok()) << f.status();
    Write(*f, "partial");
  }
  ExpectOnlyOutBinHolding("old");
}

TEST_F(TempFileTest, FailedRenameRemovesTheTemporary) {
  absl::StatusOr<TempFile> f = Named(dir_.Path("out.bin"));
  ASSERT_TRUE(f.ok()) << f.status();
  absl::Status s = f->Commit(dir_.Path("no/such/dir/out.bin"));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("rename"));
  EXPECT_THAT(dir_.Files(), IsEmpty());
}

TEST_F(TempFileTest, MovedFromFileRemovesNothing) {
  absl::StatusOr<TempFile> f = Named(dir_.Path("out.bin"));
  ASSERT_TRUE(f.ok()) << f.status();
  TempFile moved = *std::move(f);
  f = absl::UnknownError("reset");  // destroys the moved-from TempFile
  EXPECT_EQ(dir_.Files().size(), 1u);
  ASSERT_TRUE(moved.Commit(dir_.Path("out.bin")).ok());
  EXPECT_THAT(dir_.Files(), ElementsAre("out.bin"));
}

TEST_F(TempFileTest, DestinationNamingADirectoryIsInvalidArgument) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_.Path(""));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << f.status();
  EXPECT_THAT(dir_.Files(), IsEmpty());
}

TEST_F(TempFileTest, MissingDirectoryNamesTheTemporaryPath) {
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_.Path("nope/out.bin"));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound) << f.status();
  EXPECT_THAT(f.status().message(), HasSubstr(dir_.Path("nope/.out.bin.ferry-")));
}

TEST_F(TempFileTest, ModeIsTheRequestedBitsMinusTheUmask) {
  const mode_t old = umask(022);
  absl::StatusOr<TempFile> f =
      TempFile::CreateBeside(dir_.Path("out.bin"), 0666, TempFile::Naming::kNamed);
  umask(old);
  ASSERT_TRUE(f.ok()) << f.status();
  struct stat st;
  ASSERT_EQ(fstat(f->fd(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST_F(TempFileTest, AnUnnamedTemporaryLeavesNoNameInTheFolderUntilCommitted) {
  const std::string dest = dir_.Path("out.bin");
  std::optional<TempFile> f = Unnamed(dest);
  if (!f) GTEST_SKIP() << "no O_TMPFILE under " << dir_.Path("");
  Write(*f, "partial");
  EXPECT_THAT(dir_.Files(), IsEmpty());
  EXPECT_THAT(f->path(), HasSubstr(dest));
  ASSERT_TRUE(f->Commit(dest).ok());
  ExpectOnlyOutBinHolding("partial");
}

TEST_F(TempFileTest, AnUnnamedTemporaryReplacesAnExistingDestinationLeavingNoHiddenName) {
  const std::string dest = dir_.Path("out.bin");
  WriteFile(dest, "old");
  std::optional<TempFile> f = Unnamed(dest);
  if (!f) GTEST_SKIP() << "no O_TMPFILE under " << dir_.Path("");
  WriteAndCommit(*f, "new content", dest);
  ExpectOnlyOutBinHolding("new content");
}

TEST_F(TempFileTest, AnUnnamedTemporaryDiscardedLeavesTheFolderAsItWas) {
  const std::string dest = dir_.Path("out.bin");
  WriteFile(dest, "old");
  {
    std::optional<TempFile> f = Unnamed(dest);
    if (!f) GTEST_SKIP() << "no O_TMPFILE under " << dir_.Path("");
    Write(*f, "partial");
  }
  ExpectOnlyOutBinHolding("old");
}

TEST_F(TempFileTest, AWriterOfAnUnnamedTemporaryKilledMidWriteLeavesNothing) {
  const std::string dest = dir_.Path("out.bin");
  if (!Unnamed(dest)) GTEST_SKIP() << "no O_TMPFILE under " << dir_.Path("");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::optional<TempFile> f = Unnamed(dest);
    if (f) (void)f->WriteAt(std::string(1000, 'x'), 0);
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_THAT(dir_.Files(), IsEmpty());
}

TEST_F(TempFileTest, AnUnnamedTemporaryThatCannotBeLinkedInFailsNamingTheLinkAndLeavesNothing) {
  std::optional<TempFile> f = Unnamed(dir_.Path("out.bin"));
  if (!f) GTEST_SKIP() << "no O_TMPFILE under " << dir_.Path("");
  absl::Status s = f->Commit(dir_.Path("no/such/dir/out.bin"));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("link"));
  EXPECT_EQ(f->fd(), -1);
  EXPECT_THAT(dir_.Files(), IsEmpty());
}

TEST_F(TempFileTest, ModeOfAnUnnamedTemporaryIsTheRequestedBitsMinusTheUmask) {
  const mode_t old = umask(022);
  absl::StatusOr<TempFile> f = TempFile::CreateBeside(dir_.Path("out.bin"), 0666);
  umask(old);
  ASSERT_TRUE(f.ok()) << f.status();
  if (!f->unnamed()) GTEST_SKIP() << "no O_TMPFILE under " << dir_.Path("");
  ASSERT_TRUE(f->Commit(dir_.Path("out.bin")).ok());
  struct stat st;
  ASSERT_EQ(::stat(dir_.Path("out.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

}  // namespace
}  // namespace ferry::io_internal
