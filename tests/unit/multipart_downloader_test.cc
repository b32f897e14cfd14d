#include "ferry/transfer/multipart_downloader.h"

#include <memory>
#include <thread>
#include <vector>

#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/in_memory_object_store.h"

namespace ferry {
namespace {

using ::ferry::testing::Drain;
using ::ferry::testing::InMemoryObjectStore;
using ::ferry::testing::ManualDelayScheduler;
using ::testing::HasSubstr;

constexpr int64_t kChunk = 64 << 10;
constexpr uint64_t kSeed = 7;
constexpr char kKey[] = "bucket/object";

// One async read and where its result went.
struct PendingResult {
  bool done = false;
  absl::StatusOr<size_t> result = absl::UnknownError("not done");
  std::vector<char> buf;
};

std::shared_ptr<PendingResult> StartRead(MultipartDownloader& d, int64_t offset, size_t len) {
  auto r = std::make_shared<PendingResult>();
  r->buf.resize(len);
  d.ReadAsync(offset, r->buf, [r](absl::StatusOr<size_t> n) {
    r->done = true;
    r->result = std::move(n);
  });
  return r;
}

// True if buf holds the synthetic bytes of `seed` at `offset`.
bool HoldsSynthetic(std::span<const char> buf, int64_t offset, uint64_t seed = kSeed) {
  std::vector<char> want(buf.size());
  InMemoryObjectStore::FillSynthetic(seed, offset, want);
  return std::equal(buf.begin(), buf.end(), want.begin());
}

// Manual store and timers: the test thread decides when each request and
// each back-off wait completes.
class MultipartDownloaderTest : public ::testing::Test {
 protected:
  MultipartDownloaderOptions DefaultOptions() {
    MultipartDownloaderOptions o;
    o.chunk_bytes = kChunk;
    o.concurrency = 4;
    o.memory_budget = &budget_;
    o.buffer_pool = &pool_;
    o.scheduler = &timers_;
    o.retry.initial_backoff = absl::Milliseconds(100);
    return o;
  }

  std::unique_ptr<MultipartDownloader> Open(int64_t size, MultipartDownloaderOptions o) {
    store_.PutSyntheticObject(kKey, size, kSeed);
    manager_ = std::make_unique<MultipartDownloadManager>(store_, runtime_, o);
    std::unique_ptr<MultipartDownloader> out;
    manager_->OpenAsync(kKey, [&](absl::StatusOr<std::unique_ptr<MultipartDownloader>> r) {
      ASSERT_TRUE(r.ok()) << r.status();
      out = std::move(*r);
    });
    store_.RunAll();  // the HEAD
    return out;
  }

  static bool IsGetAt(const InMemoryObjectStore::Request& r, int64_t chunk) {
    return r.op == InMemoryObjectStore::Op::kGetRange && r.offset == chunk * kChunk;
  }

  // A whole read of a 64-chunk object, before any download, whose slice at
  // `slice_offset` fails every time with `fault`: the read's status.
  absl::Status LargeReadWithAFailingSlice(int64_t slice_offset, absl::Status fault) {
    store_.SetFault([=](const InMemoryObjectStore::Request& r) {
      return r.op == InMemoryObjectStore::Op::kGetRange && r.offset == slice_offset
                 ? fault
                 : absl::OkStatus();
    });
    const int64_t size = 64 * kChunk;
    auto d = Open(size, DefaultOptions());
    auto r = StartRead(*d, 0, size);
    Drain(store_, timers_);
    if (!r->done) return absl::InternalError("the read never ended");
    return r->result.status();
  }

  MemoryBudget budget_{256 * kChunk};
  BufferPool pool_{int64_t{64} << 20};
  InMemoryObjectStore store_;
  ManualDelayScheduler timers_;
  Runtime runtime_{{.io_threads = 1, .blocking_threads = 1}};
  std::unique_ptr<MultipartDownloadManager> manager_;
};

TEST_F(MultipartDownloaderTest, SmallReadOfAHugeObjectFetchesOnlyTheRequestedBytes) {
  const int64_t size = int64_t{100} << 30;  // 100 GiB
  auto d = Open(size, DefaultOptions());
  const int64_t offset = int64_t{50} << 30;
  auto r = StartRead(*d, offset, 1024);
  store_.RunAll();
  ASSERT_TRUE(r->done);
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  EXPECT_EQ(*r->result, 1024u);
  EXPECT_TRUE(HoldsSynthetic(r->buf, offset));
  EXPECT_EQ(store_.bytes_served(), 1024);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kGetRange), 1);
  EXPECT_FALSE(d->stats().download_started);
}

TEST_F(MultipartDownloaderTest, LoneReaderGetsNoReadAhead) {
  auto d = Open(64 * kChunk, DefaultOptions());
  for (int i = 0; i < 4; ++i) {
    auto r = StartRead(*d, i * 4096, 4096);
    store_.RunAll();
    ASSERT_TRUE(r->result.ok());
  }
  EXPECT_EQ(store_.bytes_served(), 4 * 4096);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kGetRange), 4);
}

// Reads `n` pieces of `piece` bytes in order from offset 0, each served
// before the next is asked for; false if one failed.
bool ReadInOrder(MultipartDownloader& d, InMemoryObjectStore& store, int n, size_t piece) {
  for (int i = 0; i < n; ++i) {
    auto r = StartRead(d, i * static_cast<int64_t>(piece), piece);
    while (!r->done && store.RunNext()) {
    }
    if (!r->done || !r->result.ok()) return false;
  }
  return true;
}

TEST_F(MultipartDownloaderTest, ALoneReaderReadingOnPastOneMiBGetsChunksFetchedAhead) {
  auto d = Open(64 * kChunk, DefaultOptions());
  ASSERT_TRUE(ReadInOrder(*d, store_, 31, kChunk / 2));  // just under 1 MiB in order
  EXPECT_FALSE(d->stats().download_started);
  ASSERT_TRUE(ReadInOrder(*d, store_, 32, kChunk / 2));  // the first 31 again, then on
  EXPECT_TRUE(d->stats().download_started);
  // Chunks past the reader are asked for before it reads them.
  EXPECT_GT(store_.pending(), 1u);
}

TEST_F(MultipartDownloaderTest, ALoneReadersReadAheadStopsAtItsWindowNotTheObjectsEnd) {
  auto d = Open(64 * kChunk, DefaultOptions());
  ASSERT_TRUE(ReadInOrder(*d, store_, 32, kChunk / 2));  // 1 MiB in order
  store_.RunAll();
  // 31 exact GETs, then the chunk of the 32nd read and the window past it:
  // `concurrency` (4) chunks, not the object's other 47.
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kGetRange), 31 + 1 + 4);
}

TEST_F(MultipartDownloaderTest, ReadsOfAChunkOrMoreInOrderStayDirect) {
  auto d = Open(64 * kChunk, DefaultOptions());
  ASSERT_TRUE(ReadInOrder(*d, store_, 32, kChunk));  // 2 MiB in order, a chunk at a time
  EXPECT_FALSE(d->stats().download_started);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kGetRange), 32);
}

TEST_F(MultipartDownloaderTest, ReadsOutOfOrderStayExactGets) {
  auto d = Open(64 * kChunk, DefaultOptions());
  for (int i = 0; i < 40; ++i) {  // 40 x 32 KiB, each away from the last
    auto r = StartRead(*d, (i * 7 % 40) * (kChunk / 2) + (i % 2), kChunk / 2);
    store_.RunAll();
    ASSERT_TRUE(r->result.ok());
  }
  EXPECT_FALSE(d->stats().download_started);
  EXPECT_EQ(store_.bytes_served(), 40 * (kChunk / 2));
}

TEST_F(MultipartDownloaderTest, SecondReaderStartsOneParallelDownload) {
  auto d = Open(32 * kChunk, DefaultOptions());
  d->OnReaderCountChanged(1);
  EXPECT_EQ(store_.pending(), 0u);
  d->OnReaderCountChanged(2);
  // `concurrency` chunk requests, each one whole chunk.
  const auto pending = store_.PendingRequests();
  ASSERT_EQ(pending.size(), 4u);
  for (const auto& p : pending) EXPECT_EQ(p.length, kChunk);
  d->OnReaderCountChanged(3);  // still the same one download
  EXPECT_EQ(store_.pending(), 4u);
  // No reader: read-ahead stops at its window (2 rounds of requests).
  store_.RunAll();
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kGetRange), 8);
  // A reader streaming through the whole object drives it to the end.
  auto r = StartRead(*d, 0, 32 * kChunk);
  Drain(store_, timers_);
  ASSERT_TRUE(r->result.ok());
  EXPECT_TRUE(HoldsSynthetic(r->buf, 0));
  EXPECT_TRUE(d->stats().download_complete);
  EXPECT_EQ(store_.bytes_served(), 32 * kChunk);  // every byte once
}

TEST_F(MultipartDownloaderTest, EachWaitingReaderWakesWhenItsOwnChunkLands) {
  MultipartDownloaderOptions o = DefaultOptions();
  o.concurrency = 16;
  auto d = Open(16 * kChunk, o);
  d->OnReaderCountChanged(8);
  // Reader i waits on chunk 2i.
  std::vector<std::shared_ptr<PendingResult>> readers;
  for (int i = 0; i < 8; ++i) readers.push_back(StartRead(*d, 2 * i * kChunk + 100, 1000));
  for (const auto& r : readers) EXPECT_FALSE(r->done);
  // Chunks land in reverse order; only the reader of each wakes.
  for (int i = 7; i >= 0; --i) {
    ASSERT_TRUE(store_.RunMatching([&](const auto& req) { return IsGetAt(req, 2 * i); }));
    for (int j = 0; j < 8; ++j) EXPECT_EQ(readers[j]->done, j >= i) << "after chunk " << 2 * i;
    ASSERT_TRUE(readers[i]->result.ok());
    EXPECT_TRUE(HoldsSynthetic(readers[i]->buf, 2 * i * kChunk + 100));
    EXPECT_FALSE(d->stats().download_complete);  // woken before the download ends
  }
  Drain(store_, timers_);
  EXPECT_TRUE(d->stats().download_complete);
}

TEST_F(MultipartDownloaderTest, ChunksAWaitingReaderNeedsAreFetchedFirst) {
  MultipartDownloaderOptions o = DefaultOptions();
  o.concurrency = 1;
  auto d = Open(32 * kChunk, o);
  d->StartDownload();
  ASSERT_EQ(store_.pending(), 1u);
  EXPECT_TRUE(IsGetAt(store_.PendingRequests()[0], 0));
  auto r = StartRead(*d, 20 * kChunk, 10);
  ASSERT_TRUE(store_.RunNext());  // chunk 0 lands
  ASSERT_EQ(store_.pending(), 1u);
  EXPECT_TRUE(IsGetAt(store_.PendingRequests()[0], 20));  // not chunk 1
  ASSERT_TRUE(store_.RunNext());
  EXPECT_TRUE(r->done);
  EXPECT_TRUE(HoldsSynthetic(r->buf, 20 * kChunk));
}

TEST_F(MultipartDownloaderTest, ObjectChangedMidDownloadFailsWithFailedPrecondition) {
  MultipartDownloaderOptions o = DefaultOptions();
  o.concurrency = 2;
  auto d = Open(8 * kChunk, o);
  d->StartDownload();
  auto whole = StartRead(*d, 0, 8 * kChunk);
  ASSERT_TRUE(store_.RunNext());  // chunk 0 of the old version lands
  store_.PutSyntheticObject(kKey, 8 * kChunk, kSeed + 1);  // new version, new ETag
  Drain(store_, timers_);
  ASSERT_TRUE(whole->done);
  EXPECT_EQ(whole->result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(whole->result.status().message(), HasSubstr("changed"));
  // Later reads fail the same way, even of bytes that had landed.
  auto later = StartRead(*d, 0, 10);
  EXPECT_TRUE(later->done);
  EXPECT_EQ(later->result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(budget_.in_use(), 0);
}

TEST_F(MultipartDownloaderTest, HeldBytesNeverExceedTheSharedBudget) {
  MemoryBudget small(4 * kChunk);
  MultipartDownloaderOptions o = DefaultOptions();
  o.concurrency = 8;
  o.memory_budget = &small;
  const int64_t size = 64 * kChunk;
  auto d = Open(size, o);
  d->OnReaderCountChanged(2);
  // Two readers stream through the two halves in unaligned 48 KiB reads,
  // each issuing its next read from the previous one's callback.
  struct Stream {
    int64_t at, end;
    std::vector<char> buf = std::vector<char>(48 << 10);
    bool ok = true;
  };
  std::vector<std::unique_ptr<Stream>> streams;
  streams.push_back(std::make_unique<Stream>(Stream{0, size / 2}));
  streams.push_back(std::make_unique<Stream>(Stream{size / 2, size}));
  std::function<void(Stream*)> next = [&](Stream* s) {
    if (s->at >= s->end) return;
    const size_t len = static_cast<size_t>(std::min<int64_t>(s->buf.size(), s->end - s->at));
    d->ReadAsync(s->at, std::span<char>(s->buf.data(), len), [&, s, len](absl::StatusOr<size_t> n) {
      if (!n.ok() || *n != len || !HoldsSynthetic(std::span<const char>(s->buf.data(), len), s->at)) {
        s->ok = false;
        return;
      }
      s->at += static_cast<int64_t>(len);
      next(s);
    });
  };
  for (auto& s : streams) next(s.get());
  Drain(store_, timers_);
  for (auto& s : streams) {
    EXPECT_TRUE(s->ok);
    EXPECT_EQ(s->at, s->end);
  }
  EXPECT_LE(small.peak(), small.capacity());
  EXPECT_LE(store_.max_gets_in_flight(), 4);  // never more chunks than the budget holds
  EXPECT_EQ(small.in_use(), 0);               // every chunk was read, then released
}

TEST_F(MultipartDownloaderTest, ChunkThatFailsTwiceThenSucceedsIsRetriedWithBackoff) {
  int failures = 0;
  store_.SetFault([&](const InMemoryObjectStore::Request& r) {
    if (IsGetAt(r, 3) && failures < 2) {
      ++failures;
      return absl::UnavailableError("connection reset");
    }
    return absl::OkStatus();
  });
  auto d = Open(8 * kChunk, DefaultOptions());
  d->StartDownload();
  auto r = StartRead(*d, 3 * kChunk, kChunk);
  Drain(store_, timers_);
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  EXPECT_TRUE(HoldsSynthetic(r->buf, 3 * kChunk));
  EXPECT_EQ(d->stats().retries, 2);
  const auto delays = timers_.delays();
  ASSERT_EQ(delays.size(), 2u);
  // Exponential with jitter: [d/2, d] for d = 100 ms, then 200 ms.
  EXPECT_GE(delays[0], absl::Milliseconds(50));
  EXPECT_LE(delays[0], absl::Milliseconds(100));
  EXPECT_GE(delays[1], absl::Milliseconds(100));
  EXPECT_LE(delays[1], absl::Milliseconds(200));
}

TEST_F(MultipartDownloaderTest, ChunkThatKeepsFailingFailsOnlyTheReadersThatNeedIt) {
  store_.SetFault([&](const InMemoryObjectStore::Request& r) {
    return IsGetAt(r, 3) ? absl::UnavailableError("503 SlowDown") : absl::OkStatus();
  });
  auto d = Open(8 * kChunk, DefaultOptions());
  d->OnReaderCountChanged(2);
  auto needs3 = StartRead(*d, 3 * kChunk + 10, 100);
  auto needs4 = StartRead(*d, 4 * kChunk + 10, 100);
  Drain(store_, timers_);
  ASSERT_TRUE(needs3->done);
  EXPECT_EQ(needs3->result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(needs3->result.status().message(), HasSubstr("chunk 3"));
  EXPECT_THAT(needs3->result.status().message(), HasSubstr("503 SlowDown"));
  ASSERT_TRUE(needs4->result.ok());
  EXPECT_TRUE(HoldsSynthetic(needs4->buf, 4 * kChunk + 10));
  EXPECT_EQ(d->stats().retries, DefaultOptions().retry.max_attempts - 1);
}

TEST_F(MultipartDownloaderTest, ReadsPastTheEndReturnShortCountsAndZero) {
  const int64_t size = 3 * kChunk + 100;
  auto d = Open(size, DefaultOptions());
  auto at_end = StartRead(*d, size, 10);
  EXPECT_TRUE(at_end->done);
  EXPECT_EQ(*at_end->result, 0u);
  auto past = StartRead(*d, size + 5000, 10);
  EXPECT_EQ(*past->result, 0u);
  auto straddle = StartRead(*d, size - 50, 1000);
  store_.RunAll();
  ASSERT_TRUE(straddle->result.ok());
  EXPECT_EQ(*straddle->result, 50u);
  d->StartDownload();
  auto straddle2 = StartRead(*d, size - 70, 1000);
  Drain(store_, timers_);
  EXPECT_EQ(*straddle2->result, 70u);
  EXPECT_TRUE(HoldsSynthetic(std::span<const char>(straddle2->buf.data(), 70), size - 70));
}

TEST_F(MultipartDownloaderTest, RereadingAReleasedChunkFetchesItAgain) {
  MultipartDownloaderOptions o = DefaultOptions();
  o.read_ahead_bytes = kChunk;  // keep read-ahead out of the way
  auto d = Open(8 * kChunk, o);
  d->StartDownload();
  auto first = StartRead(*d, 0, kChunk);  // all of chunk 0: released after
  Drain(store_, timers_);
  ASSERT_TRUE(first->result.ok());
  const int64_t before = store_.bytes_served();
  auto again = StartRead(*d, 100, 100);
  Drain(store_, timers_);
  ASSERT_TRUE(again->result.ok());
  EXPECT_TRUE(HoldsSynthetic(again->buf, 100));
  EXPECT_EQ(d->stats().chunks_refetched, 1);
  EXPECT_GE(store_.bytes_served() - before, kChunk);
}

TEST_F(MultipartDownloaderTest, DestroyingTheDownloaderCancelsWaitingReadsAtOnce) {
  auto d = Open(8 * kChunk, DefaultOptions());
  d->StartDownload();
  auto r = StartRead(*d, 5 * kChunk, 10);
  d.reset();
  ASSERT_TRUE(r->done);
  EXPECT_EQ(r->result.status().code(), absl::StatusCode::kCancelled);
}

TEST_F(MultipartDownloaderTest, DestroyingTheDownloaderFreesHeldChunksAtOnceAndInFlightOnesAsTheyEnd) {
  auto d = Open(8 * kChunk, DefaultOptions());
  d->StartDownload();
  store_.RunNext();  // one chunk lands (held) and the next one is asked for
  ASSERT_EQ(budget_.in_use(), 5 * kChunk);
  d.reset();
  // The landed chunk is freed; the store may still be writing into the
  // four in-flight chunks' buffers.
  EXPECT_EQ(budget_.in_use(), 4 * kChunk);
  Drain(store_, timers_);  // late replies are dropped with their buffers
  EXPECT_EQ(budget_.in_use(), 0);
}

TEST_F(MultipartDownloaderTest, BuffersOfConsumedChunksServeLaterFetches) {
  constexpr int64_t kBigChunk = int64_t{2} << 20;  // pooled sizes start at 2 MiB
  MemoryBudget budget(16 * kBigChunk);
  MultipartDownloaderOptions o = DefaultOptions();
  o.chunk_bytes = kBigChunk;
  o.concurrency = 2;
  o.memory_budget = &budget;
  auto d = Open(16 * kBigChunk, o);
  d->StartDownload();
  // One reader consumes the object a chunk at a time as the chunks land.
  for (int64_t c = 0; c < 16; ++c) {
    auto r = StartRead(*d, c * kBigChunk, kBigChunk);
    Drain(store_, timers_);
    ASSERT_TRUE(r->result.ok()) << r->result.status();
    ASSERT_TRUE(HoldsSynthetic(r->buf, c * kBigChunk));
  }
  EXPECT_EQ(d->stats().requests, 16);
  // The read-ahead window (2 rounds of 2 requests) is all that is ever new.
  EXPECT_LE(pool_.stats().allocations, 4);
  EXPECT_GE(pool_.stats().reuses, 12);
  EXPECT_EQ(budget.in_use(), 0);
}

TEST_F(MultipartDownloaderTest, ChunkBufferOfASmallObjectIsSizedToTheObject) {
  MemoryBudget budget(int64_t{64} << 20);
  MultipartDownloaderOptions o = DefaultOptions();
  o.chunk_bytes = int64_t{12} << 20;
  o.memory_budget = &budget;
  auto d = Open(int64_t{3} << 20, o);
  d->StartDownload();
  auto r = StartRead(*d, 0, size_t{3} << 20);
  Drain(store_, timers_);
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  EXPECT_TRUE(HoldsSynthetic(r->buf, 0));
  // A 4 MiB buffer (3 MiB rounded to the pool's 2 MiB classes), not 12 MiB.
  EXPECT_EQ(pool_.stats().idle_bytes, int64_t{4} << 20);
}

TEST_F(MultipartDownloaderTest, AWholeReadOfAnObjectOfOneChunkIsOneDirectGet) {
  auto d = Open(kChunk / 2, DefaultOptions());
  auto r = StartRead(*d, 0, kChunk / 2);
  store_.RunAll();
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  EXPECT_TRUE(HoldsSynthetic(r->buf, 0));
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kGetRange), 1);
  EXPECT_FALSE(d->stats().download_started);
  EXPECT_EQ(budget_.peak(), 0);
}

TEST_F(MultipartDownloaderTest, AWholeReadOfALargerObjectIsParallelRangedGetsIntoTheReadersBuffer) {
  const int64_t size = 64 * kChunk;  // 4 MiB: four 1 MiB slices over 4 lanes
  auto d = Open(size, DefaultOptions());
  auto r = StartRead(*d, 0, size);
  EXPECT_EQ(store_.pending(), 4u);  // every lane in flight at once
  Drain(store_, timers_);
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  EXPECT_EQ(*r->result, static_cast<size_t>(size));
  EXPECT_TRUE(HoldsSynthetic(r->buf, 0));
  EXPECT_FALSE(d->stats().download_started);
  EXPECT_EQ(store_.bytes_served(), size);  // every byte once
  EXPECT_EQ(budget_.peak(), 0);            // no chunk buffers, no copy
}

TEST_F(MultipartDownloaderTest, LargeReadKeepsAtMostConcurrencyRequestsInFlight) {
  const int64_t size = 256 * kChunk;  // 16 MiB: sixteen 1 MiB slices
  auto d = Open(size, DefaultOptions());
  auto r = StartRead(*d, 0, size);
  size_t most = 0;
  while (!r->done) {
    most = std::max(most, store_.pending());
    if (!store_.RunNext()) break;
  }
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  EXPECT_TRUE(HoldsSynthetic(r->buf, 0));
  EXPECT_EQ(most, 4u);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kGetRange), 16);
}

TEST_F(MultipartDownloaderTest, LargeReadWithASliceThatKeepsFailingFailsWithTheSlicesError) {
  const absl::Status s =
      LargeReadWithAFailingSlice(int64_t{2} << 20, absl::UnavailableError("connection reset"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("connection reset"));
  EXPECT_THAT(s.message(), HasSubstr("[2097152, 3145728)"));
}

TEST_F(MultipartDownloaderTest, LargeReadOfAShortReplyIsDataLossNotAShortCount) {
  const absl::Status s =
      LargeReadWithAFailingSlice(int64_t{1} << 20, absl::DataLossError("short reply"));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
}

TEST_F(MultipartDownloaderTest, DirectReadLandsInTheReadersBufferWithoutBudget) {
  auto d = Open(64 * kChunk, DefaultOptions());
  auto r = StartRead(*d, 1000, 5000);
  store_.RunAll();
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  EXPECT_TRUE(HoldsSynthetic(r->buf, 1000));
  EXPECT_EQ(budget_.peak(), 0);
}

TEST_F(MultipartDownloaderTest, OpenOfAMissingKeyIsNotFound) {
  manager_ = std::make_unique<MultipartDownloadManager>(store_, runtime_, DefaultOptions());
  absl::Status status;
  manager_->OpenAsync("bucket/none", [&](absl::StatusOr<std::unique_ptr<MultipartDownloader>> r) {
    status = r.status();
  });
  store_.RunAll();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("bucket/none"));
}

TEST_F(MultipartDownloaderTest, ChunkLargerThanTheBudgetIsInvalidArgument) {
  MemoryBudget tiny(kChunk - 1);
  MultipartDownloaderOptions o = DefaultOptions();
  o.memory_budget = &tiny;
  MultipartDownloadManager m(store_, runtime_, o);
  EXPECT_EQ(m.OpenWithInfo(kKey, {10, "e"}).status().code(), absl::StatusCode::kInvalidArgument);
}

// Real threads: blocking reads from 8 threads, each its own stripe, while
// requests complete on the Runtime's I/O threads.
TEST(MultipartDownloaderThreadsTest, ConcurrentBlockingReadersEachGetTheirStripe) {
  MemoryBudget budget(16 * kChunk);
  Runtime runtime({.io_threads = 2, .blocking_threads = 1});
  RuntimeDelayScheduler timers(runtime);
  InMemoryObjectStore store({.scheduler = &timers});
  const int64_t size = 64 * kChunk + 123;
  store.PutSyntheticObject(kKey, size, kSeed);
  MultipartDownloadManager manager(
      store, runtime, {.chunk_bytes = kChunk, .concurrency = 4, .memory_budget = &budget});
  auto d = manager.Open(kKey);
  ASSERT_TRUE(d.ok()) << d.status();
  (*d)->OnReaderCountChanged(8);
  constexpr int kReaders = 8;
  const int64_t stripe = (size + kReaders - 1) / kReaders;
  std::vector<std::thread> threads;
  std::vector<int> ok(kReaders, 0);
  for (int i = 0; i < kReaders; ++i) {
    threads.emplace_back([&, i] {
      std::vector<char> buf(20000);
      for (int64_t at = i * stripe; at < std::min(size, (i + 1) * stripe);) {
        const size_t want = static_cast<size_t>(std::min<int64_t>(buf.size(), (i + 1) * stripe - at));
        absl::StatusOr<size_t> n = (*d)->Read(at, std::span<char>(buf.data(), want));
        if (!n.ok() || *n == 0 || !HoldsSynthetic(std::span<const char>(buf.data(), *n), at)) return;
        at += static_cast<int64_t>(*n);
      }
      ok[i] = 1;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(ok, ::testing::Each(1));
  EXPECT_LE(budget.peak(), budget.capacity());
}

}  // namespace
}  // namespace ferry
