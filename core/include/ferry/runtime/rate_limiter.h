// RateLimiter: at most `bytes_per_second` through it, whichever threads
// take it (a copy's --bwlimit over all its workers). Each Take books its
// bytes on one schedule and sleeps until their slot; a one-second burst is
// allowed after idleness, as rclone's token bucket does.
//
//   RateLimiter limit(10 << 20);          // 10 MiB/s
//   limit.Take(chunk.size());             // blocks as long as needed
//
// Thread-safety: thread-safe; Take blocks its caller.
#ifndef FERRY_RUNTIME_RATE_LIMITER_H_
#define FERRY_RUNTIME_RATE_LIMITER_H_

#include <cstdint>

#include "absl/time/time.h"
#include "ferry/base/mutex.h"

namespace ferry {

class RateLimiter {
 public:
  explicit RateLimiter(int64_t bytes_per_second) : rate_(bytes_per_second) {}

  // Waits until `bytes` more keep the average within the rate.
  void Take(int64_t bytes);

 private:
  const int64_t rate_;
  Mutex mu_;
  // The time the bytes booked so far are paid for at the rate.
  absl::Time next_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace ferry

#endif  // FERRY_RUNTIME_RATE_LIMITER_H_
