// What the transfer unit tests (multipart uploader, file transfers, the
// object file table) set their fixtures up with: deterministic payloads, an
// InMemoryObjectStore whose parts are small, run by hand if need be, and
// TransferTest, the fixture that runs them on a Runtime. Header-only, like
// in_memory_object_store.h, so tests need no CMake edit.
//
//   ferry::testing::InMemoryObjectStore store(
//       ferry::testing::SmallPartStoreOptions(&store_timers));
//   const std::string data = ferry::testing::Pattern(3 * 4096);
//   store.PutObject("bucket/object", data);
#ifndef FERRY_TESTS_TESTING_TRANSFER_FIXTURES_H_
#define FERRY_TESTS_TESTING_TRANSFER_FIXTURES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include "ferry/runtime/memory_budget.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/multipart_downloader.h"
#include "ferry/transfer/multipart_uploader.h"
#include "ferry/transfer/object_store.h"
#include "ferry/runtime/retry_policy.h"
#include "gtest/gtest.h"
#include "testing/in_memory_object_store.h"

namespace ferry::testing {

// `n` bytes that differ by `seed` and do not repeat with any short period
// (the i / 251 term shifts the pattern every 251 bytes), so a chunk placed
// at the wrong offset, or another seed's bytes, compare unequal.
inline std::string Pattern(size_t n, int seed = 1) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + i / 251) & 0xFF);
  return s;
}

// Options for an InMemoryObjectStore that completes requests through
// `timers` (null: manual, the test runs each request) and takes parts of
// 1 KiB and up, so multipart tests stay small; `max_parts` as S3 unless a
// test needs the limit near.
inline InMemoryObjectStore::Options SmallPartStoreOptions(
    DelayScheduler* timers, int max_parts = MultipartLimits().max_parts) {
  InMemoryObjectStore::Options o;
  o.scheduler = timers;
  o.limits.min_part_bytes = 1024;  // small parts keep the tests small
  o.limits.max_parts = max_parts;
  return o;
}

// Runs `call` (a blocking transfer call) on a thread of its own while this
// thread completes the manual `store`'s requests one at a time, until the
// call returns; returns what it returned.
template <typename Call>
auto RunRequestsUntilDone(InMemoryObjectStore& store, Call call) -> decltype(call()) {
  std::atomic<bool> done{false};
  decltype(call()) result;
  std::thread caller([&] {
    result = call();
    done = true;
  });
  while (!done) {
    store.RunNext();
    std::this_thread::yield();
  }
  caller.join();
  return result;
}

// TransferTest's chunk and part size.
inline constexpr int64_t kTransferUnit = 4096;

// A fixture whose store completes requests on the Runtime's I/O threads
// without delay, and whose transfers skip their back-off waits. Downloads
// and uploads move kTransferUnit bytes a chunk or part, three at a time,
// within a budget of 64 units.
class TransferTest : public ::testing::Test {
 protected:
  explicit TransferTest(RuntimeOptions runtime = {.io_threads = 2, .blocking_threads = 1})
      : runtime_(runtime) {}

  MultipartDownloaderOptions DownloadOptions() {
    return {.chunk_bytes = kTransferUnit,
            .concurrency = 3,
            .memory_budget = &budget_,
            .scheduler = &timers_};
  }

  MultipartUploaderOptions UploadOptions() {
    return {.part_bytes = kTransferUnit,
            .concurrency = 3,
            .memory_budget = &budget_,
            .scheduler = &timers_};
  }

  MemoryBudget budget_{64 * kTransferUnit};
  Runtime runtime_;
  RuntimeDelayScheduler store_timers_{runtime_};
  ImmediateDelayScheduler timers_{runtime_};
  InMemoryObjectStore store_{SmallPartStoreOptions(&store_timers_)};
};

}  // namespace ferry::testing

#endif  // FERRY_TESTS_TESTING_TRANSFER_FIXTURES_H_
