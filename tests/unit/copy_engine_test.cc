// The copy engine over the in-memory filesystem (and the local disk): what
// it promises whatever the protocol.
#include "ferry/transfer/copy_engine.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/fs/local_file_system.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/mem_file_system.h"
#include "testing/scratch_dir.h"

namespace ferry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;
using testing::MemFileSystem;

std::string Pattern(size_t n, int seed = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) % 251);
  return s;
}

class CopyEngineTest : public ::testing::Test {
 protected:
  Runtime runtime_{{.blocking_threads = 8, .memory_budget_bytes = 64 << 20}};
  MemFileSystem src_{"src"};
  MemFileSystem dst_{"dst"};
  // Copies a tree of 32 files of 3,000 bytes with 8 MiB chunks, `jobs`
  // files at once, every worker busy at once (each read takes 2 ms).
  void CopySmallFilesWith8MiBChunks(int jobs) {
    for (int i = 0; i < 32; ++i) src_.PutFile(absl::StrCat("t/f", i), Pattern(3'000, i));
    src_.read_delay = absl::Milliseconds(2);
    CopyOptions o;
    o.chunk_bytes = int64_t{8} << 20;
    o.jobs = jobs;
    o.parallelism = jobs;
    absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->totals.files, 32);
  }

  // t/a: 300 files of 100 bytes, more than one walk batch, so the engine
  // has files to copy before the walk lists t/b, which holds "last" ("z").
  void PutTwoFolderTree() {
    for (int i = 0; i < 300; ++i) src_.PutFile(absl::StrCat("t/a/f", i), Pattern(100, i));
    src_.PutFile("t/b/last", "z");
  }

  // Small chunks so a few KiB make many.
  CopyOptions Small() {
    CopyOptions o;
    o.chunk_bytes = 1000;
    o.parallelism = 4;
    return o;
  }
};

TEST_F(CopyEngineTest, CopiesOneFileByteForByte) {
  const std::string data = Pattern(10'500);
  src_.PutFile("a/big.bin", data);
  ASSERT_TRUE(dst_.CreateDir("out", false).ok());
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "a/big.bin", dst_, "out/big.bin", Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("out/big.bin"), Optional(data));
  EXPECT_EQ(stats->bytes, 10'500);
  EXPECT_EQ(stats->requests, 11);  // ceil(10,500 / 1,000) chunks
  EXPECT_EQ(stats->files, 1);
}

// Resuming: a copy stopped mid-file (here a failed read; in the field a
// SIGKILL) leaves its gap-free prefix where the destination keeps one
// (MemFileSystem::keeps_leftovers stands for a local temporary).
class CopyEngineResumeTest : public CopyEngineTest {
 protected:
  void SetUp() override { dst_.keeps_leftovers = true; }

  // One chunk at a time, so the prefix before a failure is exact.
  CopyOptions Resumable() {
    CopyOptions o = Small();
    o.parallelism = 1;
    o.resume_min_bytes = 1;
    return o;
  }

  // Puts `data` at src "f" (modified at kTime) and fails a copy of it to
  // dst "f" at byte 6,500: chunks 0-5 (6,000 bytes) are left.
  void InterruptedCopy(const std::string& data) {
    src_.PutFile("f", data, kTime);
    src_.fail_read_at = 6'500;
    ASSERT_FALSE(CopyFile(runtime_, src_, "f", dst_, "f", Resumable()).ok());
  }

  const absl::Time kTime = absl::FromUnixSeconds(1'700'000'000);
};

TEST_F(CopyEngineResumeTest, ARerunKeepsWhatAnInterruptedCopyOfTheSameSourceLeftAndFetchesTheRest) {
  const std::string data = Pattern(10'000);
  InterruptedCopy(data);
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", dst_, "f", Resumable());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(data));
  EXPECT_EQ(stats->bytes, 10'000);
  EXPECT_EQ(stats->bytes_resumed, 6'000);
  EXPECT_EQ(stats->bytes_fetched, 4'000);
}

TEST_F(CopyEngineResumeTest, ALeftoverOfASourceChangedSinceIsNotKept) {
  InterruptedCopy(Pattern(10'000));
  const std::string changed = Pattern(10'000, 9);
  src_.PutFile("f", changed, kTime + absl::Seconds(1));
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", dst_, "f", Resumable());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(changed));
  EXPECT_EQ(stats->bytes_resumed, 0);
}

TEST_F(CopyEngineResumeTest, ALeftoverWhoseLastBytesDifferFromTheSourceIsCopiedAgainWhole) {
  InterruptedCopy(Pattern(10'000));
  // Rewritten in place, same size and time: only its bytes tell.
  std::string changed = Pattern(10'000);
  changed[5'999] ^= 1;
  src_.PutFile("f", changed, kTime);
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", dst_, "f", Resumable());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(changed));
  EXPECT_EQ(stats->bytes_resumed, 0);
  EXPECT_EQ(stats->bytes_fetched, 10'000);
}

TEST_F(CopyEngineResumeTest, AFileSmallerThanResumeMinBytesIsNotResumed) {
  const std::string data = Pattern(10'000);
  InterruptedCopy(data);
  CopyOptions o = Resumable();
  o.resume_min_bytes = 10'001;
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", dst_, "f", std::move(o));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(data));
  EXPECT_EQ(stats->bytes_resumed, 0);
}

TEST_F(CopyEngineResumeTest, AResumedTreeCopyCountsTheKeptBytesAsDoneInItsProgress) {
  const std::string data = Pattern(10'000);
  src_.PutFile("t/f", data, kTime);
  ASSERT_TRUE(dst_.CreateDir("c", false).ok());
  src_.fail_read_at = 6'500;
  ASSERT_TRUE(CopyTree(runtime_, src_, "t", dst_, "c", Resumable()).ok());  // the file failed
  CopyOptions o = Resumable();
  TransferProgress last;
  o.progress = [&](const TransferProgress& p) {
    last = p;
    return absl::OkStatus();
  };
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(dst_.GetFile("c/f"), Optional(data));
  EXPECT_EQ(r->totals.bytes_resumed, 6'000);
  EXPECT_EQ(last.bytes_done, 10'000);
  EXPECT_EQ(last.bytes_total, 10'000);
}

TEST_F(CopyEngineTest, CopiesAnEmptyFile) {
  src_.PutFile("empty", "");
  ASSERT_TRUE(CopyFile(runtime_, src_, "empty", dst_, "empty", Small()).ok());
  EXPECT_THAT(dst_.GetFile("empty"), Optional(std::string()));
}

TEST_F(CopyEngineTest, MissingSourceIsNotFoundAndCreatesNothing) {
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "nope", dst_, "nope", Small());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(stats.status().message(), HasSubstr("mem://src/nope"));
  EXPECT_EQ(dst_.GetFile("nope"), std::nullopt);
}

TEST_F(CopyEngineTest, SourceDirectoryIsFailedPrecondition) {
  ASSERT_TRUE(src_.CreateDir("d", false).ok());
  EXPECT_EQ(CopyFile(runtime_, src_, "d", dst_, "d", Small()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CopyEngineTest, CopyFileGivenTheSourcesEntryDoesNotStatTheSourceAgain) {
  src_.PutFile("f", Pattern(2'500));
  absl::StatusOr<fs::Entry> entry = src_.Stat("f");
  ASSERT_TRUE(entry.ok()) << entry.status();
  const int stats_before = src_.stat_calls.load();
  CopyOptions o = Small();
  o.preserve_mtime = true;  // which needs the source's entry
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", *entry, dst_, "f", std::move(o));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(Pattern(2'500)));
  EXPECT_EQ(src_.stat_calls.load(), stats_before);
}

// A MemFileSystem that records the threads its files were opened on.
class OpenThreadFileSystem final : public MemFileSystem {
 public:
  using MemFileSystem::MemFileSystem;

  absl::StatusOr<std::unique_ptr<fs::File>> OpenRead(std::string_view path) override {
    {
      MutexLock lock(&mu_);
      opened_on_.push_back(std::this_thread::get_id());
    }
    return MemFileSystem::OpenRead(path);
  }

  std::vector<std::thread::id> opened_on() {
    MutexLock lock(&mu_);
    return opened_on_;
  }

 private:
  Mutex mu_;
  std::vector<std::thread::id> opened_on_ ABSL_GUARDED_BY(mu_);
};

TEST_F(CopyEngineTest, CopyFileOfOneChunkGivenItsEntryRunsOnTheCallersThread) {
  OpenThreadFileSystem src("src");
  src.PutFile("f", Pattern(1'000));  // Small()'s chunk: one
  absl::StatusOr<fs::Entry> entry = src.Stat("f");
  ASSERT_TRUE(entry.ok()) << entry.status();
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src, "f", *entry, dst_, "f", Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(Pattern(1'000)));
  EXPECT_THAT(src.opened_on(), ElementsAre(std::this_thread::get_id()));
}

TEST_F(CopyEngineTest, CopyFileOfSeveralChunksRunsOnPoolWorkers) {
  OpenThreadFileSystem src("src");
  src.PutFile("f", Pattern(1'001));  // two chunks, moved in parallel
  absl::StatusOr<fs::Entry> entry = src.Stat("f");
  ASSERT_TRUE(entry.ok()) << entry.status();
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src, "f", *entry, dst_, "f", Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(Pattern(1'001)));
  ASSERT_EQ(src.opened_on().size(), 1u);
  EXPECT_NE(src.opened_on().front(), std::this_thread::get_id());
}

// A MemFileSystem that records what each writer was told of its target
// (fs::WriteOptions::target).
class TargetRecordingFileSystem final : public MemFileSystem {
 public:
  using MemFileSystem::MemFileSystem;

  absl::StatusOr<std::unique_ptr<fs::File>> OpenWrite(std::string_view path,
                                                      const fs::WriteOptions& options) override {
    {
      MutexLock lock(&mu_);
      told_.push_back(options.target.state);
    }
    return MemFileSystem::OpenWrite(path, options);
  }

  std::vector<fs::PathSeen::State> told() {
    MutexLock lock(&mu_);
    return told_;
  }

 private:
  Mutex mu_;
  std::vector<fs::PathSeen::State> told_ ABSL_GUARDED_BY(mu_);
};

CopyOptions SkipBySizeAndTime() {
  CopyOptions o;
  o.skip = SkipRule::kSizeAndTime;
  return o;
}

TEST_F(CopyEngineTest, CopyFileGivenTheDestinationsStatAsksNothingMoreOfIt) {
  TargetRecordingFileSystem dst("dst");
  src_.PutFile("f", Pattern(2'500));
  dst.PutFile("f", "older");
  absl::StatusOr<fs::Entry> source = src_.Stat("f");
  ASSERT_TRUE(source.ok()) << source.status();
  const fs::PathSeen seen = fs::PathSeen::Of(dst.Stat("f"));
  const int stats_before = dst.stat_calls.load();
  absl::StatusOr<TransferStats> stats =
      CopyFile(runtime_, src_, "f", *source, dst, "f", seen, SkipBySizeAndTime());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst.GetFile("f"), Optional(Pattern(2'500)));
  EXPECT_EQ(dst.stat_calls.load(), stats_before);
  EXPECT_THAT(dst.told(), ElementsAre(fs::PathSeen::State::kFound));
}

TEST_F(CopyEngineTest, CopyFileGivenAMissingDestinationCopiesWithoutLooking) {
  TargetRecordingFileSystem dst("dst");
  src_.PutFile("f", Pattern(100));
  absl::StatusOr<fs::Entry> source = src_.Stat("f");
  ASSERT_TRUE(source.ok()) << source.status();
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", *source, dst, "f",
                                                 fs::PathSeen::Missing(), SkipBySizeAndTime());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst.GetFile("f"), Optional(Pattern(100)));
  EXPECT_EQ(dst.stat_calls.load(), 0);
  EXPECT_THAT(dst.told(), ElementsAre(fs::PathSeen::State::kMissing));
}

TEST_F(CopyEngineTest, CopyFileGivenAnUpToDateDestinationLeavesItWithoutLooking) {
  TargetRecordingFileSystem dst("dst");
  src_.PutFile("f", Pattern(100));
  absl::StatusOr<TransferStats> first = CopyFile(runtime_, src_, "f", dst, "f", [] {
    CopyOptions o;
    o.preserve_mtime = true;
    return o;
  }());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<fs::Entry> source = src_.Stat("f");
  ASSERT_TRUE(source.ok()) << source.status();
  const fs::PathSeen seen = fs::PathSeen::Of(dst.Stat("f"));
  const int stats_before = dst.stat_calls.load();
  absl::StatusOr<TransferStats> again =
      CopyFile(runtime_, src_, "f", *source, dst, "f", seen, SkipBySizeAndTime());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->bytes, 0);
  EXPECT_EQ(dst.stat_calls.load(), stats_before);
  EXPECT_EQ(dst.told().size(), 1u);  // the first copy's writer only
}

TEST_F(CopyEngineTest, TheSkipRulesLookAtTheDestinationIsHandedToItsWriter) {
  TargetRecordingFileSystem dst("dst");
  src_.PutFile("f", Pattern(100));
  ASSERT_TRUE(CopyFile(runtime_, src_, "f", dst, "f", SkipBySizeAndTime()).ok());
  EXPECT_EQ(dst.stat_calls.load(), 1);
  EXPECT_THAT(dst.told(), ElementsAre(fs::PathSeen::State::kMissing));
}

TEST_F(CopyEngineTest, ATreeCopysListingTellsEachWriterItsFileIsMissing) {
  TargetRecordingFileSystem dst("dst");
  src_.PutFile("t/a", Pattern(10));
  src_.PutFile("t/b", Pattern(20));
  ASSERT_TRUE(dst.CreateDir("c", false).ok());
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst, "c", SkipBySizeAndTime());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->totals.files, 2);
  EXPECT_THAT(dst.told(), ElementsAre(fs::PathSeen::State::kMissing, fs::PathSeen::State::kMissing));
}

TEST_F(CopyEngineTest, WithNoSkipRuleNorAGivenDestinationTheWriterLooksItself) {
  TargetRecordingFileSystem dst("dst");
  src_.PutFile("f", Pattern(100));
  ASSERT_TRUE(CopyFile(runtime_, src_, "f", dst, "f", CopyOptions{}).ok());
  EXPECT_EQ(dst.stat_calls.load(), 0);
  EXPECT_THAT(dst.told(), ElementsAre(fs::PathSeen::State::kUnknown));
}

// A MemFileSystem that gives each walked file a handle ("h:" and its path)
// when the walk asks for handles, and records the handle each file was
// opened as listed with.
class HandleListingFileSystem final : public MemFileSystem {
 public:
  using MemFileSystem::MemFileSystem;

  absl::StatusOr<fs::WalkStats> Walk(std::string_view root, const fs::WalkOptions& options,
                                     absl::FunctionRef<bool(fs::WalkBatch&)> on_batch) override {
    return MemFileSystem::Walk(root, options, [&](fs::WalkBatch& batch) {
      for (fs::Entry& e : batch.entries) {
        if (options.with_handles && e.kind == fs::EntryKind::kFile) e.handle = "h:" + e.path;
      }
      return on_batch(batch);
    });
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenReadListed(std::string_view path,
                                                           const fs::Entry& listed) override {
    {
      MutexLock lock(&mu_);
      opened_with_.push_back(listed.handle);
    }
    return MemFileSystem::OpenRead(path);
  }

  std::vector<std::string> opened_with() {
    MutexLock lock(&mu_);
    std::vector<std::string> sorted = opened_with_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

 private:
  Mutex mu_;
  std::vector<std::string> opened_with_ ABSL_GUARDED_BY(mu_);
};

TEST_F(CopyEngineTest, TreeCopyOpensEachFileAsWalkedWithItsHandle) {
  HandleListingFileSystem src("src");
  src.PutFile("t/a", "1");
  src.PutFile("t/d/b", "22");
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src, "t", dst_, "c", Small());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->totals.files, 2);
  EXPECT_THAT(src.opened_with(), ElementsAre("h:a", "h:d/b"));
  EXPECT_THAT(dst_.GetFile("c/d/b"), Optional(std::string("22")));
}

TEST_F(CopyEngineTest, CopyFileGivenADirectorysEntryIsFailedPrecondition) {
  ASSERT_TRUE(src_.CreateDir("d", false).ok());
  absl::StatusOr<fs::Entry> entry = src_.Stat("d");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(CopyFile(runtime_, src_, "d", *entry, dst_, "d", Small()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CopyEngineTest, FailedReadLeavesTheOldTargetAsItWas) {
  src_.PutFile("f", Pattern(8'000));
  dst_.PutFile("f", "old");
  src_.fail_read_at = 5'500;
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", dst_, "f", Small());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(dst_.GetFile("f"), Optional(std::string("old")));
}

TEST_F(CopyEngineTest, WritesEveryChunkAgainOnceWhenCloseSaysAborted) {
  const std::string data = Pattern(4'200);
  src_.PutFile("f", data);
  dst_.abort_first_close = true;
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", dst_, "f", Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("f"), Optional(data));
  EXPECT_EQ(stats->retries, 1);
  EXPECT_EQ(dst_.closes, 2);
}

TEST_F(CopyEngineTest, ProgressStopFailsTheCopyAndLeavesTheTargetUntouched) {
  src_.PutFile("f", Pattern(50'000));
  dst_.PutFile("f", "old");
  CopyOptions o = Small();
  o.progress_interval = absl::ZeroDuration();
  o.progress = [](const TransferProgress&) { return absl::CancelledError("user stopped"); };
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "f", dst_, "f", std::move(o));
  EXPECT_EQ(stats.status(), absl::CancelledError("user stopped"));
  EXPECT_THAT(dst_.GetFile("f"), Optional(std::string("old")));
}

TEST_F(CopyEngineTest, ProgressNeverGoesBackAndEndsWithEveryByte) {
  src_.PutFile("f", Pattern(30'000));
  std::vector<int64_t> seen;
  CopyOptions o = Small();
  o.progress_interval = absl::ZeroDuration();
  int64_t last_total = 0;
  o.progress = [&](const TransferProgress& p) {
    seen.push_back(p.bytes_done);
    // Unknown until the file is open, then its size.
    EXPECT_TRUE(p.bytes_total == -1 || p.bytes_total == 30'000) << p.bytes_total;
    last_total = p.bytes_total;
    return absl::OkStatus();
  };
  ASSERT_TRUE(CopyFile(runtime_, src_, "f", dst_, "f", std::move(o)).ok());
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), 30'000);
  EXPECT_EQ(last_total, 30'000);
}

TEST_F(CopyEngineTest, CopiesServerSideWhenBothSidesAreOneFileSystemThatCan) {
  src_.offers_copy_within = true;
  src_.PutFile("a", Pattern(5'000));
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src_, "a", src_, "b", Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(src_.copy_within_calls, 1);
  EXPECT_EQ(src_.max_reads_in_flight, 0);  // no byte through the client
  EXPECT_THAT(src_.GetFile("b"), Optional(Pattern(5'000)));
  EXPECT_EQ(stats->bytes, 5'000);
}

TEST_F(CopyEngineTest, CopiesBytesWithinOneFileSystemThatCannotCopyServerSide) {
  src_.PutFile("a", Pattern(5'000));
  ASSERT_TRUE(CopyFile(runtime_, src_, "a", src_, "b", Small()).ok());
  EXPECT_THAT(src_.GetFile("b"), Optional(Pattern(5'000)));
}

TEST_F(CopyEngineTest, TreeCopiesEveryFileAndEmptyDirectories) {
  src_.PutFile("t/a.bin", Pattern(3'333, 1));
  src_.PutFile("t/x/b.bin", Pattern(1, 2));
  src_.PutFile("t/x/y/c.bin", Pattern(0, 3));
  ASSERT_TRUE(src_.CreateDir("t/empty", false).ok());
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "copy", Small());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->files_failed, 0);
  EXPECT_EQ(r->totals.files, 3);
  EXPECT_EQ(r->totals.bytes, 3'334);
  EXPECT_THAT(dst_.GetFile("copy/a.bin"), Optional(Pattern(3'333, 1)));
  EXPECT_THAT(dst_.GetFile("copy/x/b.bin"), Optional(Pattern(1, 2)));
  EXPECT_THAT(dst_.GetFile("copy/x/y/c.bin"), Optional(std::string()));
  EXPECT_EQ(dst_.Stat("copy/empty")->kind, fs::EntryKind::kDirectory);
}

TEST_F(CopyEngineTest, TreeRefusesNamesThatWouldLeaveTheDestinationAndCountsThem) {
  src_.PutFile("t/ok.bin", "fine");
  src_.PutRawFile("t/../../escape", "evil");  // a key a server may list
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "copy/in", Small());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(dst_.GetFile("copy/in/ok.bin"), Optional(std::string("fine")));
  for (const std::string& p : dst_.Paths()) {
    EXPECT_TRUE(p.empty() || p == "copy" || p.rfind("copy/in", 0) == 0) << p;
  }
  EXPECT_EQ(r->entries_refused, 1);
  EXPECT_EQ(r->files_failed, 0);
  EXPECT_THAT(r->warnings, ElementsAre(HasSubstr("refused \"../../escape\"")));
}

TEST_F(CopyEngineTest, TreeReportsEachRefusedNameOnceAsItIsFound) {
  src_.PutFile("t/ok.bin", "fine");
  fs::Entry empty;
  empty.kind = fs::EntryKind::kDirectory;  // a directory with no name
  src_.AddListedEntry("t", empty);
  fs::Entry slash;
  slash.path = "/tmp/x";
  slash.kind = fs::EntryKind::kFile;
  src_.AddListedEntry("t", slash);
  CopyOptions o = Small();
  std::vector<CopyNotice> notices;
  o.on_notice = [&](const CopyNotice& n) { notices.push_back(n); };
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->entries_refused, 2);
  EXPECT_EQ(r->totals.files, 1);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0].kind, CopyNotice::Kind::kRefused);
  EXPECT_THAT(notices[0].text, HasSubstr("empty name"));
  EXPECT_THAT(notices[1].text, HasSubstr("\"/tmp/x\""));
  EXPECT_EQ(r->warnings.size(), 2u);
  EXPECT_FALSE(dst_.Stat("c/tmp").ok());  // "/tmp/x" was not read as "tmp/x"
}

TEST_F(CopyEngineTest, TreeTellsAFailedFileThroughOnNotice) {
  src_.PutFile("t/a", Pattern(3'000));
  src_.PutFile("t/b", Pattern(3'000, 1));
  src_.fail_read_at = 2'500;  // hits exactly one file's chunk
  CopyOptions o = Small();
  std::vector<CopyNotice> notices;
  o.on_notice = [&](const CopyNotice& n) { notices.push_back(n); };
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->files_failed, 1);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].kind, CopyNotice::Kind::kFailed);
  EXPECT_EQ(notices[0].text, DescribeFailure(r->failures[0]));
}

TEST_F(CopyEngineTest, TreeSkipsSymlinksWithAWarning) {
  src_.PutFile("t/a", "a");
  src_.PutSymlink("t/link");
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", Small());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->files_skipped, 1);
  EXPECT_EQ(r->files_failed, 0);
  EXPECT_THAT(r->warnings, ElementsAre(HasSubstr("symlink")));
}

TEST_F(CopyEngineTest, TreeKeepsAtMostJobsFilesOpen) {
  for (int i = 0; i < 40; ++i) src_.PutFile(absl::StrCat("t/f", i), Pattern(2'500, i));
  CopyOptions o = Small();
  o.jobs = 3;
  o.parallelism = 8;
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->totals.files, 40);
  EXPECT_LE(dst_.max_open_writers, 3);
  for (int i = 0; i < 40; ++i) {
    EXPECT_THAT(dst_.GetFile(absl::StrCat("c/f", i)), Optional(Pattern(2'500, i)));
  }
}

TEST_F(CopyEngineTest, WorkersBuffersTakeAtMostHalfTheBudget) {
  // Readers and writers take their own buffers from the same budget (S3
  // download chunks): workers holding all of it could wait forever on a
  // read that waits for budget. 8 MiB chunks, 64 MiB: 4 workers, not 8.
  CopySmallFilesWith8MiBChunks(16);
  EXPECT_LE(runtime_.memory_budget().peak(), int64_t{32} << 20);
  EXPECT_LE(src_.max_reads_in_flight, 4);
}

TEST_F(CopyEngineTest, WorkersCopyingSmallFilesHoldASmallBufferNotAChunk) {
  // A chunk-sized buffer is huge-page memory, zeroed 2 MiB at a time when
  // first touched: too dear to hold 3 KB.
  CopySmallFilesWith8MiBChunks(4);
  EXPECT_LE(runtime_.memory_budget().peak(), int64_t{4} << 20);  // 4 workers x 1 MiB
}

TEST_F(CopyEngineTest, AWorkerGrowsItsBufferToAChunkForALargeFileAfterSmallOnes) {
  src_.PutFile("t/a-small", Pattern(3'000, 1));
  src_.PutFile("t/b-large", Pattern((3 << 20) + 5, 2));
  CopyOptions o;
  o.chunk_bytes = int64_t{2} << 20;
  o.jobs = 1;
  o.parallelism = 1;
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(dst_.GetFile("c/a-small"), Optional(Pattern(3'000, 1)));
  EXPECT_THAT(dst_.GetFile("c/b-large"), Optional(Pattern((3 << 20) + 5, 2)));
}

TEST_F(CopyEngineTest, TreeCopiesFilesWhileTheSourceIsStillListed) {
  // The test holds the walk at t/b until a file of t/a has been copied.
  PutTwoFolderTree();
  bool copied_while_listing = false;
  src_.on_list = [&](std::string_view dir) {
    if (dir != "t/b") return;
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!copied_while_listing && absl::Now() < deadline) {
      copied_while_listing = dst_.GetFile("c/a/f0").has_value();
      absl::SleepFor(absl::Milliseconds(1));
    }
  };
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", Small());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(copied_while_listing);
  EXPECT_EQ(r->totals.files, 301);
  EXPECT_THAT(dst_.GetFile("c/b/last"), Optional(std::string("z")));
}

TEST_F(CopyEngineTest, TreeListingThatNeedsTheBlockingPoolIsNotStarvedByIdleWorkers) {
  // A walk may need the blocking pool (a connection's name resolution runs
  // there); workers with nothing to do must not sit on every pool thread.
  Runtime small{{.blocking_threads = 2, .memory_budget_bytes = 64 << 20}};
  PutTwoFolderTree();
  bool pool_ran = false;
  src_.on_list = [&](std::string_view dir) {
    if (dir != "t/b") return;
    auto done = std::make_shared<absl::Notification>();
    small.PostBlocking([done] { done->Notify(); });
    pool_ran = done->WaitForNotificationWithTimeout(absl::Seconds(10));
  };
  absl::StatusOr<TreeCopyResult> r = CopyTree(small, src_, "t", dst_, "c", Small());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(pool_ran);
  EXPECT_EQ(r->totals.files, 301);
}

TEST_F(CopyEngineTest, TreeOfMoreFilesThanMayWaitAtOnceCopiesThemAll) {
  // One worker, slow reads: the walk outruns it and must pause at the
  // limit of waiting files (8,192), then go on.
  constexpr int kFiles = 8'300;
  for (int i = 0; i < kFiles; ++i) src_.PutFile(absl::StrCat("t/f", i), "x");
  src_.read_delay = absl::Microseconds(20);
  CopyOptions o = Small();
  o.jobs = 1;
  o.parallelism = 1;
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->totals.files, kFiles);
  EXPECT_EQ(r->files_failed, 0);
  EXPECT_THAT(dst_.GetFile(absl::StrCat("c/f", kFiles - 1)), Optional(std::string("x")));
}

TEST_F(CopyEngineTest, TreeProgressLeavesTheByteTotalUnknownUntilTheListingEnds) {
  PutTwoFolderTree();
  src_.on_list = [](std::string_view dir) {
    if (dir == "t/b") absl::SleepFor(absl::Milliseconds(20));  // reports come meanwhile
  };
  std::vector<TransferProgress> reports;
  CopyOptions o = Small();
  o.progress_interval = absl::Milliseconds(1);
  o.progress = [&](const TransferProgress& p) {
    reports.push_back(p);
    return absl::OkStatus();
  };
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.front().bytes_total, -1);
  EXPECT_GT(reports.front().files_total, 0);
  EXPECT_EQ(reports.back().bytes_total, 300 * 100 + 1);
  EXPECT_EQ(reports.back().files_total, 301);
  EXPECT_EQ(reports.back().files_done, 301);
}

TEST_F(CopyEngineTest, TreeStopsListingWhenProgressSaysStop) {
  PutTwoFolderTree();
  int lists_of_b = 0;
  src_.on_list = [&](std::string_view dir) { lists_of_b += dir == "t/b"; };
  CopyOptions o = Small();
  o.progress_interval = absl::ZeroDuration();
  o.progress = [](const TransferProgress&) { return absl::CancelledError("stop now"); };
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", std::move(o));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(lists_of_b, 0);
  EXPECT_FALSE(dst_.GetFile("c/b/last").has_value());
}

TEST_F(CopyEngineTest, TreeReportsAFailedFileAndCopiesTheOthers) {
  src_.PutFile("t/a", Pattern(3'000));
  src_.PutFile("t/b", Pattern(3'000, 1));
  src_.fail_read_at = 2'500;  // hits exactly one file's chunk
  absl::StatusOr<TreeCopyResult> r = CopyTree(runtime_, src_, "t", dst_, "c", Small());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->files_failed, 1);
  EXPECT_EQ(r->totals.files, 1);
  ASSERT_EQ(r->failures.size(), 1u);
  EXPECT_EQ(r->failures[0].status.code(), absl::StatusCode::kUnavailable);
}

TEST_F(CopyEngineTest, TreeOfAMissingDirectoryIsNotFound) {
  EXPECT_EQ(CopyTree(runtime_, src_, "nope", dst_, "c", Small()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CopyEngineTest, CopiesTreesBetweenMemoryAndTheLocalDiskBothWays) {
  testing::ScratchDir scratch("ferry_copy_engine_");
  ASSERT_TRUE(scratch.ok());
  fs::LocalFileSystem local;
  const std::string root = fs::LocalPathToFsPath(scratch.Path("tree"));
  src_.PutFile("t/a.bin", Pattern(7'777, 1));
  src_.PutFile("t/d/b.bin", Pattern(12, 2));
  ASSERT_TRUE(CopyTree(runtime_, src_, "t", local, root, Small()).ok());
  EXPECT_EQ(testing::ReadFile(scratch.Path("tree/d/b.bin")), Pattern(12, 2));
  absl::StatusOr<TreeCopyResult> back = CopyTree(runtime_, local, root, dst_, "back", Small());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->totals.files, 2);
  EXPECT_THAT(dst_.GetFile("back/a.bin"), Optional(Pattern(7'777, 1)));
  EXPECT_THAT(dst_.GetFile("back/d/b.bin"), Optional(Pattern(12, 2)));
  std::filesystem::remove_all(scratch.Path("tree"));
}

// A MemFileSystem whose written files take bytes from a descriptor
// (WriteFromDescriptor: pread here, as sendfile would move them), counting
// the calls; `short_by` bytes fewer than asked are taken, as from a source
// that ended early.
class DescriptorTakingFileSystem final : public MemFileSystem {
 public:
  using MemFileSystem::MemFileSystem;
  std::atomic<int> from_descriptor{0};
  size_t short_by = 0;
  bool unimplemented = false;  // answers as a writer that cannot take from this descriptor

  absl::StatusOr<std::unique_ptr<fs::File>> OpenWrite(std::string_view path,
                                                      const fs::WriteOptions& options) override {
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<fs::File> file, MemFileSystem::OpenWrite(path, options));
    return std::unique_ptr<fs::File>(new Taking(this, std::move(file)));
  }

 private:
  class Taking final : public fs::File {
   public:
    Taking(DescriptorTakingFileSystem* fs, std::unique_ptr<fs::File> inner)
        : fs_(fs), inner_(std::move(inner)) {}
    absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) override {
      return inner_->WriteAt(offset, data);
    }
    absl::StatusOr<size_t> WriteFromDescriptor(int64_t offset, int fd, int64_t fd_offset,
                                               size_t n) override {
      ++fs_->from_descriptor;
      if (fs_->unimplemented) return absl::UnimplementedError("not from this descriptor");
      std::string bytes(n - std::min(n, fs_->short_by), '\0');
      if (::pread(fd, bytes.data(), bytes.size(), fd_offset) != static_cast<ssize_t>(bytes.size())) {
        return absl::InternalError("pread");
      }
      FERRY_RETURN_IF_ERROR(inner_->WriteAt(offset, bytes).status());
      return bytes.size();
    }
    absl::StatusOr<int64_t> Size() override { return inner_->Size(); }
    absl::Status Close() override { return inner_->Close(); }
    absl::Status Discard() override { return inner_->Discard(); }

   private:
    DescriptorTakingFileSystem* const fs_;
    std::unique_ptr<fs::File> inner_;
  };
};

// A MemFileSystem whose read files put their bytes into a descriptor
// (ReadIntoDescriptor: pwrite here, as NFS's splice would), counting the
// calls and the ReadAts; `short_by` bytes fewer than asked, as from a
// source that ended early.
class DescriptorFillingFileSystem final : public MemFileSystem {
 public:
  using MemFileSystem::MemFileSystem;
  std::atomic<int> into_descriptor{0};
  std::atomic<int> read_at{0};
  std::atomic<int> locked{0};  // fills handed the destination's write lock
  size_t short_by = 0;

  absl::StatusOr<std::unique_ptr<fs::File>> OpenRead(std::string_view path) override {
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<fs::File> file, MemFileSystem::OpenRead(path));
    return std::unique_ptr<fs::File>(new Filling(this, std::move(file)));
  }

 private:
  class Filling final : public fs::File {
   public:
    Filling(DescriptorFillingFileSystem* fs, std::unique_ptr<fs::File> inner)
        : fs_(fs), inner_(std::move(inner)) {}
    absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
      ++fs_->read_at;
      return inner_->ReadAt(offset, buf);
    }
    absl::StatusOr<size_t> ReadIntoDescriptor(int64_t offset, size_t n, int fd, int64_t fd_offset,
                                              Mutex* write_lock) override {
      ++fs_->into_descriptor;
      if (write_lock != nullptr) ++fs_->locked;
      std::string bytes(n - std::min(n, fs_->short_by), '\0');
      FERRY_ASSIGN_OR_RETURN(size_t got, inner_->ReadAt(offset, absl::MakeSpan(bytes)));
      if (::pwrite(fd, bytes.data(), got, fd_offset) != static_cast<ssize_t>(got)) {
        return absl::InternalError("pwrite");
      }
      return got;
    }
    absl::StatusOr<int64_t> Size() override { return inner_->Size(); }

   private:
    DescriptorFillingFileSystem* const fs_;
    std::unique_ptr<fs::File> inner_;
  };
};

TEST_F(CopyEngineTest, ASourceThatFillsDescriptorsWritesALocalDestinationWithoutReadAt) {
  DescriptorFillingFileSystem src("src");
  src.PutFile("a.bin", Pattern(4'321));
  testing::ScratchDir scratch("ferry_copy_engine_");
  ASSERT_TRUE(scratch.ok());
  fs::LocalFileSystem local;
  absl::StatusOr<TransferStats> stats =
      CopyFile(runtime_, src, "a.bin", local, fs::LocalPathToFsPath(scratch.Path("a.bin")), Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(testing::ReadFile(scratch.Path("a.bin")), Pattern(4'321));
  EXPECT_EQ(src.into_descriptor.load(), 5);  // every chunk of 1,000 bytes
  EXPECT_EQ(src.locked.load(), 5) << "each fill may serialize its writes with the destination's";
  EXPECT_EQ(src.read_at.load(), 0);
}

TEST_F(CopyEngineTest, ASourceThatFillsDescriptorsGivesBytesToADestinationWithout) {
  DescriptorFillingFileSystem src("src");
  src.PutFile("a.bin", Pattern(2'500));
  absl::StatusOr<TransferStats> stats = CopyFile(runtime_, src, "a.bin", dst_, "a.bin", Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst_.GetFile("a.bin"), Optional(Pattern(2'500)));
  EXPECT_EQ(src.into_descriptor.load(), 0);
  EXPECT_EQ(src.read_at.load(), 3);
}

TEST_F(CopyEngineTest, ASourceFillingFewerBytesThanAskedFailsAsShrunkAndLeavesNoFile) {
  DescriptorFillingFileSystem src("src");
  src.PutFile("a.bin", Pattern(2'500));
  src.short_by = 1;
  testing::ScratchDir scratch("ferry_copy_engine_");
  ASSERT_TRUE(scratch.ok());
  fs::LocalFileSystem local;
  absl::StatusOr<TransferStats> stats =
      CopyFile(runtime_, src, "a.bin", local, fs::LocalPathToFsPath(scratch.Path("a.bin")), Small());
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(stats.status().message(), HasSubstr("shrank"));
  EXPECT_THAT(scratch.Files(), ::testing::IsEmpty()) << "the temporary is removed";
}

// Copies a local file of `bytes` to `dst` as "a.bin".
absl::StatusOr<TransferStats> CopyLocalFile(Runtime& runtime, const std::string& bytes, fs::FileSystem& dst,
                                            CopyOptions options) {
  testing::ScratchDir scratch("ferry_copy_engine_");
  if (!scratch.ok()) return absl::InternalError("no scratch directory");
  testing::WriteFile(scratch.Path("a.bin"), bytes);
  fs::LocalFileSystem local;
  return CopyFile(runtime, local, fs::LocalPathToFsPath(scratch.Path("a.bin")), dst, "a.bin",
                  std::move(options));
}

TEST_F(CopyEngineTest, ALocalSourceGoesFromItsDescriptorWhereTheDestinationTakesIt) {
  DescriptorTakingFileSystem dst("dst");
  absl::StatusOr<TransferStats> stats = CopyLocalFile(runtime_, Pattern(4'321), dst, Small());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst.GetFile("a.bin"), Optional(Pattern(4'321)));
  EXPECT_EQ(dst.from_descriptor.load(), 5);  // every chunk of 1,000 bytes
}

TEST_F(CopyEngineTest, AWriterThatCannotTakeTheDescriptorGetsBytesForTheRestOfTheFile) {
  DescriptorTakingFileSystem dst("dst");
  dst.unimplemented = true;
  CopyOptions o = Small();
  o.parallelism = 1;  // chunks one after the other: only the first asks
  absl::StatusOr<TransferStats> stats = CopyLocalFile(runtime_, Pattern(4'321), dst, std::move(o));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(dst.GetFile("a.bin"), Optional(Pattern(4'321)));
  EXPECT_EQ(dst.from_descriptor.load(), 1);
}

TEST_F(CopyEngineTest, ASourceThatEndsBeforeItsDescriptorsRangeFailsAsShrunkAndPublishesNothing) {
  DescriptorTakingFileSystem dst("dst");
  dst.short_by = 1;
  absl::StatusOr<TransferStats> stats = CopyLocalFile(runtime_, Pattern(2'500), dst, Small());
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(stats.status().message()), HasSubstr("the file shrank while being read"));
  EXPECT_EQ(dst.GetFile("a.bin"), std::nullopt);
}

}  // namespace
}  // namespace ferry
