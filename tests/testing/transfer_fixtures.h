// What the transfer unit tests (multipart uploader, file transfers, the
// object file table) set their fixtures up with: deterministic payloads and
// an InMemoryObjectStore whose parts are small, run by hand if need be.
// Header-only, like
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
#include <string>
#include <thread>
#include <utility>

#include "ferry/transfer/object_store.h"
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

}  // namespace ferry::testing

#endif  // FERRY_TESTS_TESTING_TRANSFER_FIXTURES_H_
