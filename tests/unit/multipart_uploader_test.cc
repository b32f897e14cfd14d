#include "ferry/transfer/multipart_uploader.h"

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <map>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/in_memory_object_store.h"
#include "testing/transfer_fixtures.h"

namespace ferry {
namespace {

using ::ferry::testing::InMemoryObjectStore;
using ::ferry::testing::Pattern;
using ::ferry::testing::RunRequestsUntilDone;
using ::ferry::testing::SmallPartStoreOptions;
using ::testing::Each;
using ::testing::HasSubstr;

constexpr int64_t kPart = ::ferry::testing::kTransferUnit;
constexpr char kKey[] = "bucket/upload";

std::span<const char> Slice(const std::string& s, size_t at, size_t n) {
  return std::span<const char>(s.data() + at, std::min(n, s.size() - at));
}

// PartLayout arithmetic, with S3's real limits.
TEST(PartLayoutTest, UnknownLengthPartsDoubleEveryThousandPartsAndFitFiveTebibytes) {
  auto l = PartLayout::ForUnknownSize(int64_t{8} << 20, MultipartLimits());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->PartBytes(1), int64_t{8} << 20);
  EXPECT_EQ(l->PartBytes(1000), int64_t{8} << 20);
  EXPECT_EQ(l->PartBytes(1001), int64_t{16} << 20);
  EXPECT_EQ(l->PartBytes(10000), int64_t{4} << 30);  // 8 MiB * 2^9, under S3's 5 GiB
  EXPECT_EQ(l->PartStart(1001), int64_t{8000} << 20);
  EXPECT_GE(l->capacity(), int64_t{5} << 40);         // S3's largest object
  EXPECT_EQ(l->PartAt(l->capacity() - 1), 10000);
  EXPECT_EQ(l->PartAt(l->capacity()), 0);
  for (int n = 1; n < 10000; n += 37) {
    EXPECT_EQ(l->PartStart(n + 1), l->PartStart(n) + l->PartBytes(n)) << n;
    EXPECT_EQ(l->PartAt(l->PartStart(n)), n);
    EXPECT_EQ(l->PartAt(l->PartStart(n + 1) - 1), n);
    EXPECT_LE(l->PartBytes(n), l->PartBytes(n + 1));
  }
}

TEST(PartLayoutTest, TinyBasePartIsRaisedToTheStoreMinimum) {
  auto l = PartLayout::ForUnknownSize(1, MultipartLimits());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->PartBytes(1), int64_t{5} << 20);
}

TEST(PartLayoutTest, KnownSizeGrowsThePartSoTenThousandPartsHoldTheObject) {
  const int64_t size = int64_t{1} << 40;  // 1 TiB at an 8 MiB base would need 131072 parts
  auto l = PartLayout::ForKnownSize(size, int64_t{8} << 20, MultipartLimits());
  ASSERT_TRUE(l.ok());
  EXPECT_LE(l->max_parts(), 10000);
  EXPECT_EQ(l->PartAt(size - 1), l->max_parts());
  EXPECT_EQ(l->PartStart(l->max_parts()) + l->PartBytes(l->max_parts()), size);
  EXPECT_EQ(l->PartAt(size), 0);
  // Beyond what 10,000 parts of 5 GiB hold: refused.
  EXPECT_EQ(PartLayout::ForKnownSize(int64_t{60} << 40, int64_t{8} << 20, MultipartLimits())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// Back-off waits are recorded and skipped.
class MultipartUploaderTest : public ::ferry::testing::TransferTest {
 protected:
  std::unique_ptr<MultipartUploader> Create(const MultipartUploaderOptions& o) {
    auto up = MultipartUploader::Create(store_, runtime_, kKey, o);
    EXPECT_TRUE(up.ok()) << up.status();
    return up.ok() ? std::move(*up) : nullptr;
  }

};

TEST_F(MultipartUploaderTest, ObjectSmallerThanOnePartGoesUpAsOnePut) {
  auto up = Create(UploadOptions());
  const std::string data = Pattern(3000);
  ASSERT_TRUE(up->Write(0, data).ok());
  auto etag = up->Finish();
  ASSERT_TRUE(etag.ok()) << etag.status();
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kPut), 1);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kCreateMultipart), 0);
  EXPECT_TRUE(up->stats().single_put);
}

TEST_F(MultipartUploaderTest, EmptyObjectIsOneEmptyPut) {
  auto up = Create(UploadOptions());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), "");
}

TEST_F(MultipartUploaderTest, SequentialWritesOfUnknownLengthStreamAsParts) {
  auto up = Create(UploadOptions());
  const std::string data = Pattern(10 * kPart + 100);
  for (size_t at = 0; at < data.size(); at += 1000) ASSERT_TRUE(up->Write(at, Slice(data, at, 1000)).ok());
  auto etag = up->Finish();
  ASSERT_TRUE(etag.ok()) << etag.status();
  EXPECT_EQ(store_.ObjectData(kKey), data);
  const auto parts = store_.last_completed_parts();
  ASSERT_EQ(parts.size(), 11u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(parts[i].second, kPart);
  EXPECT_EQ(parts[10].second, 100);
  EXPECT_EQ(up->stats().parts_spilled, 0);
  EXPECT_EQ(store_.open_uploads(), 0);
  EXPECT_EQ(budget_.in_use(), 0);
}

TEST_F(MultipartUploaderTest, PartBuffersComeFromTheBufferPoolAndGoBackToIt) {
  constexpr int64_t kBigPart = int64_t{2} << 20;  // pooled sizes start at 2 MiB
  MemoryBudget budget(16 * kBigPart);
  BufferPool pool(int64_t{64} << 20);
  MultipartUploaderOptions o = UploadOptions();
  o.part_bytes = kBigPart;
  o.concurrency = 1;
  o.max_sealed_parts = 1;
  o.memory_budget = &budget;
  o.buffer_pool = &pool;
  auto up = Create(o);
  const std::string data = Pattern(8 * kBigPart, 5);
  for (size_t at = 0; at < data.size(); at += 1 << 20) {
    ASSERT_TRUE(up->Write(at, Slice(data, at, 1 << 20)).ok());
  }
  auto etag = up->Finish();
  ASSERT_TRUE(etag.ok()) << etag.status();
  EXPECT_EQ(store_.ObjectData(kKey), data);
  const BufferPool::Stats stats = pool.stats();
  EXPECT_EQ(stats.allocations + stats.reuses, 8);  // one buffer per part
  EXPECT_EQ(stats.idle_bytes, stats.allocations * kBigPart);  // every one given back
}

TEST_F(MultipartUploaderTest, OutOfOrderParallelWritersProduceTheRightObject) {
  const std::string data = Pattern(25 * kPart + 7, 3);
  MultipartUploaderOptions o = UploadOptions();
  o.total_bytes = static_cast<int64_t>(data.size());
  auto up = Create(o);
  // iRODS parallel put: thread i owns stripe i, its buffers arrive in reverse.
  constexpr int kThreads = 4;
  const size_t stripe = (data.size() + kThreads - 1) / kThreads;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 1);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const size_t begin = i * stripe, end = std::min(data.size(), begin + stripe);
      std::vector<size_t> offsets;
      for (size_t at = begin; at < end; at += 1500) offsets.push_back(at);
      std::reverse(offsets.begin(), offsets.end());
      for (size_t at : offsets) {
        if (!up->Write(at, Slice(data, at, std::min<size_t>(1500, end - at))).ok()) ok[i] = 0;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(ok, Each(1));
  auto etag = up->Finish();
  ASSERT_TRUE(etag.ok()) << etag.status();
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_EQ(up->stats().parts_spilled, 0);
  EXPECT_EQ(store_.last_completed_parts().size(), 26u);
}

TEST_F(MultipartUploaderTest, PartThatFailsTwiceThenSucceedsIsRetried) {
  int failures = 0;
  store_.SetFault([&](const InMemoryObjectStore::Request& r) {
    if (r.op == InMemoryObjectStore::Op::kUploadPart && r.part_number == 2 && failures < 2) {
      ++failures;
      return absl::UnavailableError("connection reset");
    }
    return absl::OkStatus();
  });
  auto up = Create(UploadOptions());
  const std::string data = Pattern(4 * kPart);
  ASSERT_TRUE(up->Write(0, data).ok());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_EQ(up->stats().retries, 2);
  EXPECT_EQ(timers_.delays().size(), 2u);
}

TEST_F(MultipartUploaderTest, PartThatKeepsFailingAbortsTheUploadAndFinishReturnsTheError) {
  store_.SetFault([](const InMemoryObjectStore::Request& r) {
    return r.op == InMemoryObjectStore::Op::kUploadPart && r.part_number == 3
               ? absl::UnavailableError("503 SlowDown")
               : absl::OkStatus();
  });
  auto up = Create(UploadOptions());
  const std::string data = Pattern(8 * kPart);
  for (size_t at = 0; at < data.size(); at += kPart) (void)up->Write(at, Slice(data, at, kPart));
  auto etag = up->Finish();
  EXPECT_EQ(etag.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(etag.status().message(), HasSubstr("part 3"));
  EXPECT_THAT(etag.status().message(), HasSubstr("503 SlowDown"));
  EXPECT_EQ(store_.open_uploads(), 0);  // no orphan parts
  EXPECT_EQ(store_.aborted_uploads(), 1);
  EXPECT_TRUE(up->stats().aborted);
  EXPECT_FALSE(store_.ObjectData(kKey).has_value());
  EXPECT_EQ(budget_.in_use(), 0);
}

TEST_F(MultipartUploaderTest, LastCloseReturnsTheCompleteErrorAndAborts) {
  store_.SetFault([](const InMemoryObjectStore::Request& r) {
    return r.op == InMemoryObjectStore::Op::kComplete ? absl::PermissionDeniedError("AccessDenied")
                                                      : absl::OkStatus();
  });
  auto up = Create(UploadOptions());
  ASSERT_TRUE(up->Write(0, Pattern(3 * kPart)).ok());
  auto etag = up->Finish();
  EXPECT_EQ(etag.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(etag.status().message(), HasSubstr("complete multipart upload bucket/upload"));
  EXPECT_EQ(store_.open_uploads(), 0);
  EXPECT_EQ(up->Finish().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(MultipartUploaderTest, UnknownLengthUploadGrowsPartsToStayWithinThePartLimit) {
  InMemoryObjectStore store(SmallPartStoreOptions(&store_timers_, /*max_parts=*/20));
  MultipartUploaderOptions o = UploadOptions();
  o.part_bytes = 1024;
  auto up = MultipartUploader::Create(store, runtime_, kKey, o);
  ASSERT_TRUE(up.ok());
  // 20 parts doubling every 2: 2 x 1 KiB, 2 x 2 KiB, ... hold ~2 MiB.
  EXPECT_EQ((*up)->layout().PartBytes(3), 2048);
  const std::string data = Pattern(300 << 10, 5);
  for (size_t at = 0; at < data.size(); at += 7000) {
    ASSERT_TRUE((*up)->Write(at, Slice(data, at, 7000)).ok());
  }
  ASSERT_TRUE((*up)->Finish().ok());
  EXPECT_EQ(store.ObjectData(kKey), data);
  const auto parts = store.last_completed_parts();
  EXPECT_LE(parts.size(), 20u);
  for (size_t i = 1; i + 1 < parts.size(); ++i) EXPECT_LE(parts[i - 1].second, parts[i].second);
  // Past what 20 parts hold: refused up front.
  auto again = MultipartUploader::Create(store, runtime_, "bucket/big", o);
  ASSERT_TRUE(again.ok());
  const int64_t cap = (*again)->layout().capacity();
  EXPECT_EQ((*again)->Write(cap, Slice(data, 0, 10)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*again)->Abort().ok());
}

TEST_F(MultipartUploaderTest, KnownSizeWithUnwrittenBytesFailsWithDataLoss) {
  MultipartUploaderOptions o = UploadOptions();
  o.total_bytes = 3 * kPart;
  auto up = Create(o);
  const std::string data = Pattern(3 * kPart);
  ASSERT_TRUE(up->Write(0, Slice(data, 0, 5000)).ok());
  ASSERT_TRUE(up->Write(6000, Slice(data, 6000, data.size())).ok());
  auto etag = up->Finish();
  EXPECT_EQ(etag.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(etag.status().message(), HasSubstr("[5000, 6000)"));
  EXPECT_EQ(store_.open_uploads(), 0);
}

TEST_F(MultipartUploaderTest, UnknownLengthHolesReadAsZeros) {
  auto up = Create(UploadOptions());
  const std::string data = Pattern(100);
  ASSERT_TRUE(up->Write(3 * kPart, data).ok());  // parts 1-3 never written
  ASSERT_TRUE(up->Finish().ok());
  std::string want(3 * kPart, '\0');
  want += data;
  EXPECT_EQ(store_.ObjectData(kKey), want);
}

TEST_F(MultipartUploaderTest, WriteBeyondAKnownSizeIsInvalidArgument) {
  MultipartUploaderOptions o = UploadOptions();
  o.total_bytes = 100;
  auto up = Create(o);
  EXPECT_EQ(up->Write(90, Pattern(20)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(up->Abort().ok());
}

TEST_F(MultipartUploaderTest, RewriteOfASealedPartIsInvalidArgument) {
  auto up = Create(UploadOptions());
  const std::string data = Pattern(2 * kPart);
  ASSERT_TRUE(up->Write(0, data).ok());
  const absl::Status s = up->Write(10, Slice(data, 0, 10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("rewrites part 1"));
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
}

TEST_F(MultipartUploaderTest, PartsBeyondTheBufferedLimitSpillToScratchAndStillLand) {
  MultipartUploaderOptions o = UploadOptions();
  o.max_buffered_parts = 1;
  o.total_bytes = 4 * kPart;
  o.scratch_dir = ::testing::TempDir();
  auto up = Create(o);
  const std::string data = Pattern(4 * kPart, 9);
  // First halves of every part, then second halves: four parts open at once.
  for (int64_t p = 0; p < 4; ++p) ASSERT_TRUE(up->Write(p * kPart, Slice(data, p * kPart, kPart / 2)).ok());
  for (int64_t p = 0; p < 4; ++p) {
    const size_t at = p * kPart + kPart / 2;
    ASSERT_TRUE(up->Write(at, Slice(data, at, kPart / 2)).ok());
  }
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_EQ(up->stats().parts_spilled, 3);
  EXPECT_EQ(budget_.in_use(), 0);
}

TEST_F(MultipartUploaderTest, ScratchOnlyUploadAcceptsRewrites) {
  MultipartUploaderOptions o = UploadOptions();
  o.scratch_only = true;
  o.scratch_dir = ::testing::TempDir();
  auto up = Create(o);
  std::string data = Pattern(3 * kPart);
  ASSERT_TRUE(up->Write(0, data).ok());
  const std::string patch(50, 'x');
  ASSERT_TRUE(up->Write(kPart + 10, patch).ok());
  data.replace(kPart + 10, patch.size(), patch);
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
}

TEST_F(MultipartUploaderTest, ScratchUploadLargerThanTheBudgetStreamsBackPartByPart) {
  MemoryBudget small(3 * kPart);
  MultipartUploaderOptions o = UploadOptions();
  o.memory_budget = &small;
  o.scratch_only = true;
  o.scratch_dir = ::testing::TempDir();
  auto up = Create(o);
  const std::string data = Pattern(12 * kPart + 11);
  ASSERT_TRUE(up->Write(0, data).ok());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_LE(small.peak(), small.capacity());
}

TEST_F(MultipartUploaderTest, PartsCarryTheConfiguredChecksum) {
  for (ChecksumAlgorithm a : {ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kMd5}) {
    InMemoryObjectStore store(SmallPartStoreOptions(&store_timers_));
    MultipartUploaderOptions o = UploadOptions();
    o.checksum = a;
    auto up = MultipartUploader::Create(store, runtime_, kKey, o);
    ASSERT_TRUE(up.ok());
    const std::string data = Pattern(3 * kPart + 5);
    ASSERT_TRUE((*up)->Write(0, data).ok());
    ASSERT_TRUE((*up)->Finish().ok()) << ChecksumAlgorithmName(a);  // the fake verifies each
    EXPECT_EQ(store.ObjectData(kKey), data);
    EXPECT_THAT(store.checksums_seen(), Each(a));
  }
}

TEST_F(MultipartUploaderTest, UploadWaitsForBudgetInsteadOfExceedingIt) {
  MemoryBudget small(3 * kPart);
  MultipartUploaderOptions o = UploadOptions();
  o.memory_budget = &small;
  auto up = Create(o);
  const std::string data = Pattern(40 * kPart);
  for (size_t at = 0; at < data.size(); at += 3000) ASSERT_TRUE(up->Write(at, Slice(data, at, 3000)).ok());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_LE(small.peak(), small.capacity());
  EXPECT_EQ(up->stats().parts_spilled, 0);
}

TEST_F(MultipartUploaderTest, AbortDiscardsTheMultipartUpload) {
  auto up = Create(UploadOptions());
  ASSERT_TRUE(up->Write(0, Pattern(3 * kPart)).ok());
  EXPECT_TRUE(up->Abort().ok());
  EXPECT_EQ(store_.open_uploads(), 0);
  EXPECT_FALSE(store_.ObjectData(kKey).has_value());
  EXPECT_EQ(up->Write(3 * kPart, Pattern(10)).code(), absl::StatusCode::kCancelled);
}

// Resuming an interrupted upload (what a SIGKILLed copy left on S3).
std::map<int, std::string> PartsOf(const std::string& data, std::initializer_list<int> numbers) {
  std::map<int, std::string> out;
  for (int n : numbers) out[n] = data.substr(static_cast<size_t>((n - 1) * kPart), kPart);
  return out;
}

MultipartUploaderOptions Resuming(MultipartUploaderOptions o, int64_t size,
                                  const InMemoryObjectStore& store, const std::string& id) {
  o.total_bytes = size;
  o.resume = {.upload_id = id, .parts = store.StoredParts(id)};
  return o;
}

TEST_F(MultipartUploaderTest, ResumedUploadSendsOnlyThePartsTheStoreLacks) {
  const std::string data = Pattern(5 * kPart + 10);
  const std::string id = store_.SeedUpload(kKey, PartsOf(data, {1, 2, 4}));
  auto up = Create(Resuming(UploadOptions(), static_cast<int64_t>(data.size()), store_, id));
  ASSERT_TRUE(up->Write(0, data).ok());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kCreateMultipart), 0);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kUploadPart), 3);  // parts 3, 5, 6
  EXPECT_TRUE(up->stats().resumed);
  EXPECT_EQ(up->stats().parts_kept, 3);
  EXPECT_EQ(up->stats().bytes_kept, 3 * kPart);
  EXPECT_EQ(store_.open_uploads(), 0);
  EXPECT_EQ(budget_.in_use(), 0);
}

TEST_F(MultipartUploaderTest, ResumedUploadSendsAgainAStoredPartWhoseBytesDiffer) {
  const std::string data = Pattern(3 * kPart);
  std::map<int, std::string> stored = PartsOf(data, {1, 2});
  stored[2][7] ^= 1;  // the source changed there since the interrupted run
  const std::string id = store_.SeedUpload(kKey, stored);
  auto up = Create(Resuming(UploadOptions(), static_cast<int64_t>(data.size()), store_, id));
  ASSERT_TRUE(up->Write(0, data).ok());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kUploadPart), 2);  // parts 2 and 3
  EXPECT_EQ(up->stats().parts_kept, 1);
}

TEST_F(MultipartUploaderTest, ResumedUploadSendsAgainAStoredPartOfAnotherSize) {
  const std::string data = Pattern(3 * kPart);
  const std::string id = store_.SeedUpload(kKey, {{1, data.substr(0, kPart - 1)}});
  auto up = Create(Resuming(UploadOptions(), static_cast<int64_t>(data.size()), store_, id));
  ASSERT_TRUE(up->Write(0, data).ok());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_EQ(up->stats().parts_kept, 0);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kUploadPart), 3);
}

TEST_F(MultipartUploaderTest, ResumedUploadThatFailsIsAborted) {
  const std::string data = Pattern(3 * kPart);
  const std::string id = store_.SeedUpload(kKey, PartsOf(data, {1}));
  auto up = Create(Resuming(UploadOptions(), static_cast<int64_t>(data.size()), store_, id));
  ASSERT_TRUE(up->Write(0, data.substr(0, 2 * kPart)).ok());
  EXPECT_EQ(up->Finish().status().code(), absl::StatusCode::kDataLoss);  // bytes never written
  EXPECT_EQ(store_.open_uploads(), 0);
}

TEST_F(MultipartUploaderTest, SmallObjectIgnoresTheUploadToResumeAndIsOnePut) {
  const std::string data = Pattern(100);
  const std::string id = store_.SeedUpload(kKey, {{1, data}});
  auto up = Create(Resuming(UploadOptions(), static_cast<int64_t>(data.size()), store_, id));
  ASSERT_TRUE(up->Write(0, data).ok());
  ASSERT_TRUE(up->Finish().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
  EXPECT_TRUE(up->stats().single_put);
  EXPECT_FALSE(up->stats().resumed);
  // The abort runs in the background: wait for it (bounded).
  for (int i = 0; i < 5000 && store_.open_uploads() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(store_.open_uploads(), 0);
}

TEST_F(MultipartUploaderTest, FinishAsyncCompletesThroughTheCallback) {
  auto up = Create(UploadOptions());
  const std::string data = Pattern(2 * kPart + 1);
  ASSERT_TRUE(up->Write(0, data).ok());
  Promise<std::string> p;
  auto f = p.GetFuture();
  up->FinishAsync(std::move(p).AsCallback());
  ASSERT_TRUE(std::move(f).Get().ok());
  EXPECT_EQ(store_.ObjectData(kKey), data);
}

// --- Back-pressure (max_sealed_parts). These use a store whose requests
// wait until the test runs them, so "accepted" happens exactly when the
// test says.

class MultipartUploaderManualStoreTest : public MultipartUploaderTest {
 protected:
  std::unique_ptr<MultipartUploader> CreateManual(const MultipartUploaderOptions& o) {
    auto up = MultipartUploader::Create(manual_, runtime_, kKey, o);
    EXPECT_TRUE(up.ok()) << up.status();
    return up.ok() ? std::move(*up) : nullptr;
  }

  // An uploader of `total_bytes` to the manual store whose writes wait
  // while `max_sealed_parts` parts are sealed and not yet accepted.
  std::unique_ptr<MultipartUploader> CreateSealedAtMost(int max_sealed_parts,
                                                        int64_t total_bytes) {
    MultipartUploaderOptions o = UploadOptions();
    o.total_bytes = total_bytes;
    o.max_sealed_parts = max_sealed_parts;
    return CreateManual(o);
  }

  // Runs the store's requests until `up` finishes; returns Finish's result.
  absl::StatusOr<std::string> FinishRunningRequests(MultipartUploader& up) {
    return RunRequestsUntilDone(manual_, [&up] { return up.Finish(); });
  }

  InMemoryObjectStore manual_{SmallPartStoreOptions(nullptr)};
};

TEST_F(MultipartUploaderManualStoreTest, WriteOfANewPartWaitsUntilASealedPartIsAccepted) {
  auto up = CreateSealedAtMost(2, /*total_bytes=*/4 * kPart);
  ASSERT_NE(up, nullptr);
  const std::string data = Pattern(4 * kPart);
  ASSERT_TRUE(up->Write(0, Slice(data, 0, kPart)).ok());
  ASSERT_TRUE(up->Write(kPart, Slice(data, kPart, kPart)).ok());
  std::atomic<bool> returned{false};
  absl::Status third;
  std::thread writer([&] {
    third = up->Write(2 * kPart, Slice(data, 2 * kPart, kPart));
    returned = true;
  });
  while (up->stats().sealed_waits == 0) std::this_thread::yield();
  ASSERT_TRUE(manual_.RunNext());  // CreateMultipart; parts 1 and 2 go out
  EXPECT_FALSE(returned);        // sent is not accepted
  ASSERT_TRUE(manual_.RunMatching([](const InMemoryObjectStore::Request& r) {
    return r.op == InMemoryObjectStore::Op::kUploadPart && r.part_number == 1;
  }));
  writer.join();
  EXPECT_TRUE(third.ok()) << third;
  manual_.RunAll();
  ASSERT_TRUE(up->Write(3 * kPart, Slice(data, 3 * kPart, kPart)).ok());
  ASSERT_TRUE(FinishRunningRequests(*up).ok());
  EXPECT_EQ(manual_.ObjectData(kKey), data);
}

TEST_F(MultipartUploaderManualStoreTest, WriteWaitingForASealedPartReturnsTheUploadsFailure) {
  manual_.SetFault([](const InMemoryObjectStore::Request& r) {
    return r.op == InMemoryObjectStore::Op::kUploadPart ? absl::UnavailableError("503 SlowDown")
                                                        : absl::OkStatus();
  });
  MultipartUploaderOptions o = UploadOptions();
  o.max_sealed_parts = 1;
  o.retry.max_attempts = 1;  // the failure is final at once
  auto up = CreateManual(o);
  ASSERT_NE(up, nullptr);
  const std::string data = Pattern(2 * kPart);
  ASSERT_TRUE(up->Write(0, Slice(data, 0, kPart)).ok());
  absl::Status second;
  std::thread writer([&] { second = up->Write(kPart, Slice(data, kPart, kPart)); });
  while (up->stats().sealed_waits == 0) std::this_thread::yield();
  manual_.RunAll();  // create, part 1 fails, abort
  writer.join();
  EXPECT_EQ(second.code(), absl::StatusCode::kUnavailable) << second;
  EXPECT_THAT(second.message(), HasSubstr("part 1"));
  manual_.RunAll();
  EXPECT_EQ(manual_.open_uploads(), 0);
}

TEST_F(MultipartUploaderManualStoreTest, WriteIntoAPartAlreadyBeingFilledDoesNotWait) {
  auto up = CreateSealedAtMost(1, /*total_bytes=*/2 * kPart);
  ASSERT_NE(up, nullptr);
  const std::string data = Pattern(2 * kPart);
  ASSERT_TRUE(up->Write(kPart, Slice(data, kPart, kPart / 2)).ok());  // part 2 filling
  ASSERT_TRUE(up->Write(0, Slice(data, 0, kPart)).ok());              // part 1 sealed: full
  // Nothing has been accepted, yet the rest of part 2 goes in at once.
  ASSERT_TRUE(up->Write(kPart + kPart / 2, Slice(data, kPart + kPart / 2, kPart)).ok());
  EXPECT_EQ(up->stats().sealed_waits, 0);
  ASSERT_TRUE(FinishRunningRequests(*up).ok());
  EXPECT_EQ(manual_.ObjectData(kKey), data);
}

TEST_F(MultipartUploaderManualStoreTest, WithoutMaxSealedPartsWritesQueueEveryPartWithoutWaiting) {
  auto up = CreateManual(UploadOptions());
  ASSERT_NE(up, nullptr);
  const std::string data = Pattern(8 * kPart);
  for (size_t at = 0; at < data.size(); at += kPart) {
    ASSERT_TRUE(up->Write(at, Slice(data, at, kPart)).ok());  // nothing accepted yet
  }
  EXPECT_EQ(up->stats().sealed_waits, 0);
  ASSERT_TRUE(FinishRunningRequests(*up).ok());
  EXPECT_EQ(manual_.ObjectData(kKey), data);
}

TEST_F(MultipartUploaderManualStoreTest, WaitUntilWritableTimesOutWhileFullAndIsTrueOnceAPartIsAccepted) {
  auto up = CreateSealedAtMost(1, /*total_bytes=*/2 * kPart);
  ASSERT_NE(up, nullptr);
  const std::string data = Pattern(2 * kPart);
  EXPECT_TRUE(up->WaitUntilWritable(absl::ZeroDuration()));
  ASSERT_TRUE(up->Write(0, Slice(data, 0, kPart)).ok());
  EXPECT_FALSE(up->WaitUntilWritable(absl::ZeroDuration()));  // no time to wait
  manual_.RunAll();  // create, part 1 accepted
  EXPECT_TRUE(up->WaitUntilWritable(absl::ZeroDuration()));
  ASSERT_TRUE(up->Write(kPart, Slice(data, kPart, kPart)).ok());
  EXPECT_EQ(up->stats().sealed_waits, 0);
  ASSERT_TRUE(FinishRunningRequests(*up).ok());
}

TEST_F(MultipartUploaderTest, NegativeMaxSealedPartsIsInvalidArgument) {
  MultipartUploaderOptions o = UploadOptions();
  o.max_sealed_parts = -1;
  EXPECT_EQ(MultipartUploader::Create(store_, runtime_, kKey, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry
