#include "ferry/transfer/file_transfer.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/in_memory_object_store.h"
#include "testing/scratch_dir.h"
#include "testing/transfer_fixtures.h"

namespace ferry {
namespace {

using ::ferry::testing::InMemoryObjectStore;
using ::ferry::testing::Pattern;
using ::ferry::testing::RunRequestsUntilDone;
using ::ferry::testing::ReadFile;
using ::ferry::testing::ScratchDir;
using ::ferry::testing::SmallPartStoreOptions;
using ::ferry::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kChunk = ::ferry::testing::kTransferUnit;
constexpr char kKey[] = "bucket/object";

// Records every progress report, and whether each came on the thread that
// made the recorder (the caller's).
class ProgressRecorder {
 public:
  // Reports to this recorder, as often as there is progress.
  void Into(TransferOptions& o) {
    o.progress_interval = absl::ZeroDuration();
    o.progress = [this](const TransferProgress& p) {
      on_caller_thread_ = on_caller_thread_ && std::this_thread::get_id() == caller_;
      calls_.push_back(p);
      return absl::OkStatus();
    };
  }
  // Expects reports, all on the caller's thread, the last with all `bytes`.
  void ExpectEndedWithEveryByte(size_t bytes) const {
    ASSERT_FALSE(calls_.empty());
    EXPECT_TRUE(on_caller_thread_);
    EXPECT_EQ(calls_.back().bytes_done, static_cast<int64_t>(bytes));
    EXPECT_EQ(calls_.back().bytes_total, static_cast<int64_t>(bytes));
  }
  const std::vector<TransferProgress>& calls() const { return calls_; }

 private:
  const std::thread::id caller_ = std::this_thread::get_id();
  bool on_caller_thread_ = true;
  std::vector<TransferProgress> calls_;
};

// A progress callback that cancels the transfer at its first report.
void CancelAtFirstProgress(TransferOptions& o) {
  o.progress_interval = absl::ZeroDuration();
  o.progress = [](const TransferProgress&) { return absl::CancelledError("user pressed ^C"); };
}

// Each test gets a fresh directory for its files.
class FileTransferTest : public ::ferry::testing::TransferTest {
 protected:
  FileTransferTest() : ::ferry::testing::TransferTest({.io_threads = 2, .blocking_threads = 2}) {}
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }

  TransferOptions FileUploadOptions() { return {.upload = UploadOptions()}; }

  // Downloads `data` through a manager of its own that takes its memory
  // from `budget`; expects the file to hold `data`.
  void ExpectDownloadWithin(MemoryBudget& budget, const std::string& data) {
    MultipartDownloaderOptions o = DownloadOptions();
    o.memory_budget = &budget;
    MultipartDownloadManager downloads(store_, runtime_, o);
    store_.PutObject(kKey, data);
    auto stats = DownloadToFile(downloads, kKey, dir_.Path("out.bin"));
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_TRUE(ReadFile(dir_.Path("out.bin")) == data);
  }

  // Expects a download into out.bin (which held "precious") to have failed
  // with `code`, saying `says`, and to have left out.bin as it was and no
  // temporary beside it.
  void ExpectFailedKeepingTheDestination(const absl::StatusOr<TransferStats>& stats,
                                         absl::StatusCode code, std::string_view says) {
    EXPECT_EQ(stats.status().code(), code);
    EXPECT_THAT(std::string(stats.status().message()), HasSubstr(says));
    EXPECT_EQ(ReadFile(dir_.Path("out.bin")), "precious");
    EXPECT_THAT(dir_.Files(), ElementsAre("out.bin"));
  }

  ScratchDir dir_{"ferry_file_transfer_"};
  MultipartDownloadManager downloads_{store_, runtime_, DownloadOptions()};
};

TEST_F(FileTransferTest, DownloadWritesTheObjectByteExact) {
  const std::string data = Pattern(10 * kChunk + 123);
  store_.PutObject(kKey, data);
  auto stats = DownloadToFile(downloads_, kKey, dir_.Path("out.bin"));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(ReadFile(dir_.Path("out.bin")) == data);
  EXPECT_EQ(stats->bytes, static_cast<int64_t>(data.size()));
  EXPECT_EQ(stats->bytes_fetched, static_cast<int64_t>(data.size()));
  EXPECT_THAT(dir_.Files(), ElementsAre("out.bin"));  // no temporary left
}

TEST_F(FileTransferTest, DownloadStaysWithinTheMemoryBudget) {
  MemoryBudget small(3 * kChunk);
  ExpectDownloadWithin(small, Pattern(40 * kChunk + 5));
  EXPECT_LE(small.peak(), small.capacity());
  EXPECT_EQ(small.in_use(), 0);
}

TEST_F(FileTransferTest, DownloadWithABudgetOfOneChunkStillCompletes) {
  // No room for a write buffer beside the chunk: the buffer is taken
  // outside the budget rather than waiting for it forever.
  MemoryBudget tiny(kChunk);
  ExpectDownloadWithin(tiny, Pattern(5 * kChunk + 1));
}

TEST_F(FileTransferTest, DownloadReplacesAnExistingDestination) {
  WriteFile(dir_.Path("out.bin"), "old contents that are longer than the new object");
  store_.PutObject(kKey, "new");
  ASSERT_TRUE(DownloadToFile(downloads_, kKey, dir_.Path("out.bin")).ok());
  EXPECT_EQ(ReadFile(dir_.Path("out.bin")), "new");
}

TEST_F(FileTransferTest, ZeroByteObjectDownloadsAsAnEmptyFile) {
  store_.PutObject(kKey, "");
  auto stats = DownloadToFile(downloads_, kKey, dir_.Path("empty"));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(ReadFile(dir_.Path("empty")), "");
  EXPECT_THAT(dir_.Files(), ElementsAre("empty"));
}

TEST_F(FileTransferTest, DownloadOfAMissingObjectIsNotFoundAndCreatesNoFile) {
  auto stats = DownloadToFile(downloads_, "bucket/missing", dir_.Path("out.bin"));
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(stats.status().message()), HasSubstr("bucket/missing"));
  EXPECT_TRUE(dir_.Files().empty());
}

TEST_F(FileTransferTest, DownloadFailureLeavesNoTempFileAndKeepsTheDestination) {
  WriteFile(dir_.Path("out.bin"), "precious");
  store_.PutObject(kKey, Pattern(8 * kChunk));
  store_.SetFault([](const InMemoryObjectStore::Request& r) {
    if (r.op == InMemoryObjectStore::Op::kGetRange && r.offset == 5 * kChunk) {
      return absl::PermissionDeniedError("AccessDenied");
    }
    return absl::OkStatus();
  });
  ExpectFailedKeepingTheDestination(DownloadToFile(downloads_, kKey, dir_.Path("out.bin")),
                                    absl::StatusCode::kPermissionDenied, "out.bin");
}

TEST_F(FileTransferTest, DownloadProgressRunsOnTheCallerThreadAndEndsWithEveryByte) {
  const std::string data = Pattern(6 * kChunk + 5);
  store_.PutObject(kKey, data);
  ProgressRecorder progress;
  TransferOptions o;
  progress.Into(o);
  ASSERT_TRUE(DownloadToFile(downloads_, kKey, dir_.Path("out.bin"), std::move(o)).ok());
  progress.ExpectEndedWithEveryByte(data.size());
  for (size_t i = 1; i < progress.calls().size(); ++i) {
    EXPECT_LE(progress.calls()[i - 1].bytes_done, progress.calls()[i].bytes_done);
  }
}

TEST_F(FileTransferTest, ProgressErrorCancelsTheDownloadAndLeavesNoFile) {
  WriteFile(dir_.Path("out.bin"), "precious");
  store_.PutObject(kKey, Pattern(6 * kChunk));
  TransferOptions o;
  CancelAtFirstProgress(o);
  ExpectFailedKeepingTheDestination(
      DownloadToFile(downloads_, kKey, dir_.Path("out.bin"), std::move(o)),
      absl::StatusCode::kCancelled, "user pressed ^C");
}

TEST_F(FileTransferTest, UploadWritesTheFileAsMultipartParts) {
  const std::string data = Pattern(10 * kChunk + 7);
  WriteFile(dir_.Path("in.bin"), data);
  auto stats = UploadFromFile(store_, runtime_, dir_.Path("in.bin"), kKey, FileUploadOptions());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(store_.ObjectData(kKey) == data);
  EXPECT_EQ(stats->bytes, static_cast<int64_t>(data.size()));
  EXPECT_EQ(stats->bytes_uploaded, static_cast<int64_t>(data.size()));
  EXPECT_EQ(stats->parts, 11);
  EXPECT_EQ(store_.open_uploads(), 0);
}

TEST_F(FileTransferTest, SmallFileUploadsAsOnePut) {
  WriteFile(dir_.Path("in.bin"), "tiny");
  ASSERT_TRUE(UploadFromFile(store_, runtime_, dir_.Path("in.bin"), kKey, FileUploadOptions()).ok());
  EXPECT_EQ(store_.ObjectData(kKey), "tiny");
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kCreateMultipart), 0);
}

TEST_F(FileTransferTest, ZeroByteFileUploadsAsAnEmptyObject) {
  WriteFile(dir_.Path("in.bin"), "");
  auto stats = UploadFromFile(store_, runtime_, dir_.Path("in.bin"), kKey, FileUploadOptions());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(store_.ObjectData(kKey), "");
}

TEST_F(FileTransferTest, UploadOfAMissingFileIsNotFound) {
  auto stats = UploadFromFile(store_, runtime_, dir_.Path("nope"), kKey, FileUploadOptions());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(stats.status().message()), HasSubstr("nope"));
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kCreateMultipart), 0);
}

TEST_F(FileTransferTest, UploadFailureAbortsTheUploadAndLeavesNoObject) {
  WriteFile(dir_.Path("in.bin"), Pattern(10 * kChunk));
  store_.SetFault([](const InMemoryObjectStore::Request& r) {
    if (r.op == InMemoryObjectStore::Op::kUploadPart && r.part_number == 4) {
      return absl::PermissionDeniedError("AccessDenied");
    }
    return absl::OkStatus();
  });
  auto stats = UploadFromFile(store_, runtime_, dir_.Path("in.bin"), kKey, FileUploadOptions());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(store_.ObjectData(kKey), std::nullopt);
  EXPECT_EQ(store_.open_uploads(), 0);
  EXPECT_EQ(store_.aborted_uploads(), 1);
}

TEST_F(FileTransferTest, UploadProgressRunsOnTheCallerThreadAndEndsWithEveryByte) {
  const std::string data = Pattern(9 * kChunk + 1);
  WriteFile(dir_.Path("in.bin"), data);
  ProgressRecorder progress;
  TransferOptions o = FileUploadOptions();
  progress.Into(o);
  ASSERT_TRUE(UploadFromFile(store_, runtime_, dir_.Path("in.bin"), kKey, std::move(o)).ok());
  progress.ExpectEndedWithEveryByte(data.size());
}

TEST_F(FileTransferTest, ProgressErrorCancelsTheUploadAndAbortsIt) {
  WriteFile(dir_.Path("in.bin"), Pattern(10 * kChunk));
  TransferOptions o = FileUploadOptions();
  CancelAtFirstProgress(o);
  auto stats = UploadFromFile(store_, runtime_, dir_.Path("in.bin"), kKey, std::move(o));
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(store_.ObjectData(kKey), std::nullopt);
  EXPECT_EQ(store_.open_uploads(), 0);
}

TEST_F(FileTransferTest, UploadHoldsAtMostConcurrencyPlusTwoSealedPartsAndOneFilling) {
  // Requests wait until this thread runs them: without back-pressure the
  // reader would seal all 20 parts before the first is accepted.
  InMemoryObjectStore manual(SmallPartStoreOptions(nullptr));
  const std::string data = Pattern(20 * kChunk);
  WriteFile(dir_.Path("in.bin"), data);
  absl::StatusOr<TransferStats> stats = RunRequestsUntilDone(manual, [&] {
    return UploadFromFile(manual, runtime_, dir_.Path("in.bin"), kKey, FileUploadOptions());
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(manual.ObjectData(kKey) == data);
  EXPECT_LE(budget_.peak(), (3 + 2 + 1) * kChunk);  // concurrency 3
}

}  // namespace
}  // namespace ferry
