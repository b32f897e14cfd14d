// FdTableOpsPerSecond: how many FdTable calls per second one thread makes.
//
// Header-only so any benchmark (tests/bench/cache_bench.cc first) can print
// the figure beside its own. The workload is the iRODS S3 plugin's per-read
// bookkeeping against an in-memory object, so the figure is the table's own
// cost (lookup, mode check, call accounting, offset lock), not a store's:
// each iteration does Lseek(SEEK_SET) + Read(64 bytes) + PRead(64 bytes), and
// every one of those three calls counts as one op.
//
//   std::printf("fd table: %.1f M ops/s\n", ferry::bench::FdTableOpsPerSecond() / 1e6);
#ifndef FERRY_TESTS_BENCH_FD_TABLE_OPS_H_
#define FERRY_TESTS_BENCH_FD_TABLE_OPS_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ferry/io/fd_table.h"

namespace ferry::bench {
namespace fd_table_ops_internal {

// An immutable in-memory object: reads only, so it needs no lock.
class MemoryObject {
 public:
  explicit MemoryObject(std::string bytes) : bytes_(std::move(bytes)) {}
  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) {
    if (offset >= static_cast<int64_t>(bytes_.size())) return size_t{0};
    const size_t n = std::min(buf.size(), bytes_.size() - static_cast<size_t>(offset));
    std::memcpy(buf.data(), bytes_.data() + offset, n);
    return n;
  }
  absl::StatusOr<size_t> WriteAt(int64_t, absl::Span<const char>) {
    return absl::FailedPreconditionError("MemoryObject is read-only");
  }
  absl::StatusOr<int64_t> Size() { return static_cast<int64_t>(bytes_.size()); }

 private:
  const std::string bytes_;
};

}  // namespace fd_table_ops_internal

// Median, over `runs` runs of `iterations` iterations each, of FdTable calls
// per second on one thread (three calls per iteration, see above). Returns 0
// if a call fails, which would be a bug in the table.
inline double FdTableOpsPerSecond(int runs = 5, int iterations = 100000) {
  using fd_table_ops_internal::MemoryObject;
  constexpr size_t kObjectBytes = 1 << 20;  // 1 MiB: offsets spread, data stays in cache
  constexpr size_t kReadBytes = 64;         // a small read: the table's cost dominates
  constexpr int kOpsPerIteration = 3;
  auto object = std::make_shared<MemoryObject>(std::string(kObjectBytes, 'x'));

  FdTable<MemoryObject> table;
  // A few other open descriptors, so lookups do not hit a one-entry map.
  std::vector<int> others;
  for (int i = 0; i < 64; ++i) {
    auto opened = table.Open("bench/other", object, OpenMode::kRead);
    if (!opened.ok()) return 0;
    others.push_back(opened->fd);
  }
  auto opened = table.Open("bench/object", object, OpenMode::kRead);
  if (!opened.ok()) return 0;
  const int fd = opened->fd;

  std::vector<double> rates;
  char buf[kReadBytes];
  uint64_t checksum = 0;
  for (int run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      // A stride coprime with the object size walks every 64-byte slot.
      const int64_t offset =
          static_cast<int64_t>((uint64_t{static_cast<uint32_t>(i)} * 4099 * kReadBytes) %
                               (kObjectBytes - kReadBytes));
      if (!table.Lseek(fd, offset, SEEK_SET).ok()) return 0;
      auto n = table.Read(fd, absl::MakeSpan(buf));
      if (!n.ok() || *n != kReadBytes) return 0;
      // The mirror offset: PRead touches a different slot than Read.
      auto m = table.PRead(fd, static_cast<int64_t>(kObjectBytes - kReadBytes) - offset,
                           absl::MakeSpan(buf));
      if (!m.ok()) return 0;
      checksum += *n + *m + static_cast<unsigned char>(buf[0]);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(iterations) * kOpsPerIteration / seconds);
  }
  if (checksum == 0) return 0;  // uses the reads, so they are not optimised away
  (void)table.Close(fd);
  for (int other : others) (void)table.Close(other);
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace ferry::bench

#endif  // FERRY_TESTS_BENCH_FD_TABLE_OPS_H_
