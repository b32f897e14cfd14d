// Sync in the copy engine (SkipRule, PathFilter, dry_run,
// delete_extraneous) over the in-memory filesystem and the local disk:
// rclone's rules, whatever the protocol.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/fs/local_file_system.h"
#include "ferry/fs/path_filter.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/mem_file_system.h"
#include "testing/scratch_dir.h"

namespace ferry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;
using ::testing::UnorderedElementsAre;
using testing::MemFileSystem;

const absl::Time kMonday = absl::FromUnixSeconds(1'700'000'000) + absl::Nanoseconds(123'456'789);
const absl::Time kTuesday = kMonday + absl::Hours(24);

class SyncTest : public ::testing::Test {
 protected:
  Runtime runtime_{{.blocking_threads = 8, .memory_budget_bytes = 64 << 20}};
  MemFileSystem src_{"src"};
  MemFileSystem dst_{"dst"};
  std::vector<FileEvent> events_;

  CopyOptions Sync(SkipRule skip = SkipRule::kSizeAndTime) {
    CopyOptions o;
    o.skip = skip;
    o.on_file = [this](const FileEvent& e) { events_.push_back(e); };
    return o;
  }

  TreeCopyResult Run(CopyOptions o) {
    events_.clear();
    absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "t", std::move(o));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : TreeCopyResult();
  }

  std::vector<std::string> Paths(FileEvent::Kind kind) const {
    std::vector<std::string> out;
    for (const FileEvent& e : events_) {
      if (e.kind == kind) out.push_back(e.path);
    }
    return out;
  }
};

TEST_F(SyncTest, ACopyKeepsTheSourcesModificationTime) {
  src_.PutFile("t/a", "alpha", kMonday);
  Run(Sync(SkipRule::kNever));
  absl::StatusOr<fs::Entry> e = dst_.Stat("t/a");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->mtime, kMonday);
}

TEST_F(SyncTest, ASecondRunCopiesNothing) {
  src_.PutFile("t/a", "alpha", kMonday);
  src_.PutFile("t/d/b", "beta", kMonday);
  Run(Sync());
  TreeCopyResult r = Run(Sync());
  EXPECT_EQ(r.totals.files, 0);
  EXPECT_EQ(r.files_up_to_date, 2);
  EXPECT_THAT(Paths(FileEvent::Kind::kUpToDate), UnorderedElementsAre("a", "d/b"));
}

TEST_F(SyncTest, AChangedSizeIsCopied) {
  src_.PutFile("t/a", "alpha", kMonday);
  Run(Sync());
  src_.PutFile("t/a", "alphabet", kMonday);
  TreeCopyResult r = Run(Sync());
  EXPECT_EQ(r.totals.files, 1);
  EXPECT_THAT(dst_.GetFile("t/a"), Optional(std::string("alphabet")));
}

TEST_F(SyncTest, SameSizeOtherTimeOtherContentIsCopied) {
  src_.PutFile("t/a", "alpha", kMonday);
  Run(Sync());
  src_.PutFile("t/a", "ALPHA", kTuesday);
  TreeCopyResult r = Run(Sync());
  EXPECT_EQ(r.totals.files, 1);
  EXPECT_THAT(dst_.GetFile("t/a"), Optional(std::string("ALPHA")));
  EXPECT_EQ(dst_.Stat("t/a")->mtime, kTuesday);
}

TEST_F(SyncTest, ATouchedFileWithTheSameContentOnlyGetsItsTimeSet) {
  src_.PutFile("t/a", "alpha", kMonday);
  Run(Sync());
  src_.PutFile("t/a", "alpha", kTuesday);
  TreeCopyResult r = Run(Sync());
  EXPECT_EQ(r.totals.files, 0);
  EXPECT_EQ(r.times_updated, 1);
  EXPECT_EQ(dst_.Stat("t/a")->mtime, kTuesday);
  EXPECT_THAT(Paths(FileEvent::Kind::kTimeUpdated), ElementsAre("a"));
}

TEST_F(SyncTest, TimesWithinTheCoarserPrecisionAreEqual) {
  // A destination that keeps seconds (iRODS) holds the source's time cut.
  class SecondsFileSystem : public MemFileSystem {
   public:
    using MemFileSystem::MemFileSystem;
    absl::Duration mtime_precision() const override { return absl::Seconds(1); }
  };
  SecondsFileSystem dst("seconds");
  src_.PutFile("t/a", "alpha", kMonday);
  dst.PutFile("t/a", "ALPHA", absl::FromUnixSeconds(1'700'000'000));
  CopyOptions o = Sync();
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst, "t", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->files_up_to_date, 1);
}

TEST_F(SyncTest, SizeOnlyIgnoresTimesAndContent) {
  src_.PutFile("t/a", "alpha", kTuesday);
  dst_.PutFile("t/a", "ALPHA", kMonday);
  TreeCopyResult r = Run(Sync(SkipRule::kSizeOnly));
  EXPECT_EQ(r.files_up_to_date, 1);
  EXPECT_THAT(dst_.GetFile("t/a"), Optional(std::string("ALPHA")));
}

TEST_F(SyncTest, ChecksumCopiesDifferentContentWithEqualSizeAndTime) {
  src_.PutFile("t/a", "alpha", kMonday);
  dst_.PutFile("t/a", "ALPHA", kMonday);
  TreeCopyResult r = Run(Sync(SkipRule::kChecksum));
  EXPECT_EQ(r.totals.files, 1);
  EXPECT_THAT(dst_.GetFile("t/a"), Optional(std::string("alpha")));
}

TEST_F(SyncTest, ChecksumHashesAChangedSourceOnce) {
  src_.PutFile("t/a", "alpha", kMonday);
  dst_.PutFile("t/a", "ALPHA", kMonday);
  Run(Sync(SkipRule::kChecksum));
  EXPECT_EQ(src_.md5_calls.load(), 1);
}

TEST_F(SyncTest, ChecksumLeavesEqualContentWhateverItsTime) {
  src_.PutFile("t/a", "alpha", kMonday);
  dst_.PutFile("t/a", "alpha", kTuesday);
  TreeCopyResult r = Run(Sync(SkipRule::kChecksum));
  EXPECT_EQ(r.files_up_to_date, 1);
  EXPECT_EQ(r.totals.files, 0);
}

TEST_F(SyncTest, IgnoreExistingLeavesAnyFileThere) {
  src_.PutFile("t/a", "alpha", kTuesday);
  src_.PutFile("t/new", "n", kTuesday);
  dst_.PutFile("t/a", "old content", kMonday);
  TreeCopyResult r = Run(Sync(SkipRule::kExisting));
  EXPECT_EQ(r.files_up_to_date, 1);
  EXPECT_EQ(r.totals.files, 1);
  EXPECT_THAT(dst_.GetFile("t/a"), Optional(std::string("old content")));
}

TEST_F(SyncTest, NeverCopiesEvenAnUpToDateFile) {
  src_.PutFile("t/a", "alpha", kMonday);
  Run(Sync());
  TreeCopyResult r = Run(Sync(SkipRule::kNever));
  EXPECT_EQ(r.totals.files, 1);
}

TEST_F(SyncTest, ADirectoryInTheWayOfAFileFailsThatFile) {
  src_.PutFile("t/a", "alpha", kMonday);
  ASSERT_TRUE(dst_.CreateDir("t/a", true).ok());
  TreeCopyResult r = Run(Sync());
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("directory is in the way"));
}

TEST_F(SyncTest, AFilterLeavesExcludedFilesAndTheirDirectories) {
  src_.PutFile("t/keep.txt", "k", kMonday);
  src_.PutFile("t/skip.tmp", "s", kMonday);
  src_.PutFile("t/cache/c.txt", "c", kMonday);
  absl::StatusOr<fs::PathFilter> filter =
      fs::PathFilter::Create({.exclude = {"*.tmp", "cache/"}});
  ASSERT_TRUE(filter.ok());
  CopyOptions o = Sync();
  o.filter = &*filter;
  TreeCopyResult r = Run(std::move(o));
  EXPECT_EQ(r.totals.files, 1);
  EXPECT_EQ(r.files_excluded, 2);
  EXPECT_FALSE(dst_.Stat("t/cache").ok());
  EXPECT_FALSE(dst_.Stat("t/skip.tmp").ok());
}

TEST_F(SyncTest, ADryRunWritesNothingAndCountsWhatItWouldDo) {
  src_.PutFile("t/a", "alpha", kMonday);
  src_.PutFile("t/d/b", "beta", kMonday);
  dst_.PutFile("t/gone", "x", kMonday);
  CopyOptions o = Sync();
  o.dry_run = true;
  o.delete_extraneous = true;
  TreeCopyResult r = Run(std::move(o));
  EXPECT_TRUE(r.dry_run);
  EXPECT_EQ(r.totals.files, 2);
  EXPECT_EQ(r.totals.bytes, 9);
  EXPECT_EQ(r.files_deleted, 1);
  EXPECT_THAT(Paths(FileEvent::Kind::kCopied), UnorderedElementsAre("a", "d/b"));
  EXPECT_THAT(Paths(FileEvent::Kind::kDeleted), ElementsAre("gone"));
  EXPECT_THAT(dst_.Paths(), UnorderedElementsAre("", "t", "t/gone"));
}

TEST_F(SyncTest, DeleteRemovesWhatTheSourceLacksAfterCopying) {
  src_.PutFile("t/a", "alpha", kMonday);
  dst_.PutFile("t/old", "x", kMonday);
  dst_.PutFile("t/olddir/y", "y", kMonday);
  CopyOptions o = Sync();
  o.delete_extraneous = true;
  TreeCopyResult r = Run(std::move(o));
  EXPECT_EQ(r.files_deleted, 2);
  EXPECT_THAT(dst_.Paths(), UnorderedElementsAre("", "t", "t/a"));
}

TEST_F(SyncTest, DeleteKeepsExcludedFilesAndFerryTemporaries) {
  src_.PutFile("t/a", "alpha", kMonday);
  dst_.PutFile("t/notes.tmp", "mine", kMonday);
  dst_.PutFile("t/.a.ferry-0123456789abcdef", "in flight", kMonday);
  absl::StatusOr<fs::PathFilter> filter = fs::PathFilter::Create({.exclude = {"*.tmp"}});
  ASSERT_TRUE(filter.ok());
  CopyOptions o = Sync();
  o.filter = &*filter;
  o.delete_extraneous = true;
  TreeCopyResult r = Run(std::move(o));
  EXPECT_EQ(r.files_deleted, 0);
  EXPECT_TRUE(dst_.Stat("t/notes.tmp").ok());
  EXPECT_TRUE(dst_.Stat("t/.a.ferry-0123456789abcdef").ok());
}

TEST_F(SyncTest, DeleteDeletesNothingAfterAFailedCopy) {
  src_.PutFile("t/a", std::string(10'000, 'a'), kMonday);
  dst_.PutFile("t/old", "x", kMonday);
  src_.fail_read_at = 0;
  CopyOptions o = Sync();
  o.delete_extraneous = true;
  o.chunk_bytes = 4096;
  TreeCopyResult r = Run(std::move(o));
  EXPECT_EQ(r.files_failed, 1);
  EXPECT_EQ(r.files_deleted, 0);
  EXPECT_TRUE(dst_.Stat("t/old").ok());
  EXPECT_EQ(dst_.removes.load(), 0);
}

TEST_F(SyncTest, MaxDeleteRefusesToDeleteMoreAndDeletesNothing) {
  src_.PutFile("t/a", "alpha", kMonday);
  for (int i = 0; i < 3; ++i) dst_.PutFile(absl::StrCat("t/old", i), "x", kMonday);
  CopyOptions o = Sync();
  o.delete_extraneous = true;
  o.max_delete = 2;
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "t", std::move(o));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("3 files"));
  EXPECT_EQ(dst_.removes.load(), 0);
}

TEST_F(SyncTest, TheDestinationIsReadByDirectoryListingsNotAStatPerFile) {
  for (int i = 0; i < 50; ++i) src_.PutFile(absl::StrCat("t/d/f", i), "x", kMonday);
  Run(Sync());
  dst_.stat_calls = 0;
  dst_.list_calls = 0;
  TreeCopyResult r = Run(Sync());
  EXPECT_EQ(r.files_up_to_date, 50);
  EXPECT_EQ(dst_.stat_calls.load(), 0);
  EXPECT_EQ(dst_.list_calls.load(), 1);
}

TEST_F(SyncTest, ListingsWithoutKeptTimesAreSettledByHashesWithoutAStat) {
  dst_.listings_lack_kept_mtime = true;
  src_.PutFile("t/same", "alpha", kMonday);
  src_.PutFile("t/other", "alpha", kMonday);
  dst_.PutFile("t/same", "alpha", kTuesday);
  dst_.PutFile("t/other", "ALPHA", kMonday);
  TreeCopyResult r = Run(Sync());
  EXPECT_EQ(r.files_up_to_date, 1);
  EXPECT_THAT(Paths(FileEvent::Kind::kCopied), ElementsAre("other"));
  EXPECT_EQ(dst_.stat_calls.load(), 0);
}

TEST_F(SyncTest, VerifyPassesAFaithfulCopy) {
  src_.PutFile("t/a", std::string(100'000, 'a'), kMonday);
  CopyOptions o = Sync();
  o.verify = true;
  TreeCopyResult r = Run(std::move(o));
  EXPECT_EQ(r.totals.files, 1);
  EXPECT_TRUE(r.failures.empty());
  EXPECT_EQ(dst_.md5_calls.load(), 1);
}

TEST_F(SyncTest, VerifyFailsAFileWhoseHashesDiffer) {
  // A destination whose stored bytes hash otherwise (a corrupting store).
  class Corrupting : public MemFileSystem {
   public:
    using MemFileSystem::MemFileSystem;
    absl::StatusOr<std::string> Md5(std::string_view, const fs::Entry&, bool) override {
      return std::string(16, 'x');
    }
  };
  Corrupting dst("corrupting");
  src_.PutFile("t/a", "alpha", kMonday);
  CopyOptions o = Sync();
  o.verify = true;
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst, "t", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->failures.size(), 1u);
  EXPECT_EQ(r->failures[0].status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r->failures[0].status.message(), HasSubstr("not the source's"));
}

TEST_F(SyncTest, ASingleFileCopyLeavesAnUpToDateTarget) {
  src_.PutFile("a", "alpha", kMonday);
  ASSERT_TRUE(CopyFile(runtime_, src_, "a", dst_, "a", Sync()).ok());
  absl::StatusOr<TransferStats> again = CopyFile(runtime_, src_, "a", dst_, "a", Sync());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->files, 0);
  EXPECT_THAT(Paths(FileEvent::Kind::kUpToDate), ElementsAre("a"));
}

TEST_F(SyncTest, ASingleFileCopyTellsOnFileItsCopyByItsDestinationName) {
  src_.PutFile("a", "alpha", kMonday);
  ASSERT_TRUE(dst_.CreateDir("d", false).ok());
  events_.clear();
  ASSERT_TRUE(CopyFile(runtime_, src_, "a", dst_, "d/b", Sync()).ok());
  EXPECT_THAT(Paths(FileEvent::Kind::kCopied), ElementsAre("b"));
}

TEST_F(SyncTest, TheLocalDiskKeepsTheTimeToTheNanosecond) {
  ferry::testing::ScratchDir scratch("sync_test");
  ASSERT_TRUE(scratch.ok());
  fs::LocalFileSystem local;
  src_.PutFile("a", "alpha", kMonday);
  // Into the scratch directory itself (its destructor removes files only).
  ASSERT_TRUE(CopyFile(runtime_, src_, "a", local, scratch.Path("a"), Sync()).ok());
  absl::StatusOr<fs::Entry> e = local.Stat(scratch.Path("a"));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->mtime, kMonday);
  absl::StatusOr<TransferStats> again =
      CopyFile(runtime_, src_, "a", local, scratch.Path("a"), Sync());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->files, 0);
}

}  // namespace
}  // namespace ferry
