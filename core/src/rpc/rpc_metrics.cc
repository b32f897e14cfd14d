// RpcHistogram: log2 buckets of microseconds. Recording finds the bucket with
// one count-leading-zeros instruction, so it is cheap enough to run under the
// pool's lock for every call.
#include "ferry/rpc/rpc_metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace ferry {

void RpcHistogram::Record(absl::Duration d) {
  const int64_t us = std::max<int64_t>(0, absl::ToInt64Microseconds(d));
  // bit_width(0) = 0 (under 1 us), bit_width(1) = 1 ([1, 2) us), ...
  const int b = std::min(kBuckets - 1, static_cast<int>(std::bit_width(static_cast<uint64_t>(us))));
  ++buckets[b];
  ++count;
  sum_micros += static_cast<uint64_t>(us);
}

void RpcHistogram::Merge(const RpcHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) buckets[i] += other.buckets[i];
  count += other.count;
  sum_micros += other.sum_micros;
}

absl::Duration RpcHistogram::Percentile(double q) const {
  if (count == 0) return absl::ZeroDuration();
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the sample sought (1-based); at least the first sample.
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count))));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets[i];
    if (seen >= rank) {
      // Upper edge of bucket i: 1 us for bucket 0, 2^i us for bucket i.
      return absl::Microseconds(int64_t{1} << i);
    }
  }
  return absl::Microseconds(int64_t{1} << (kBuckets - 1));
}

absl::Duration RpcHistogram::Mean() const {
  if (count == 0) return absl::ZeroDuration();
  return absl::Microseconds(static_cast<double>(sum_micros) / static_cast<double>(count));
}

}  // namespace ferry
