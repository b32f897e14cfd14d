#include "ferry/runtime/rate_limiter.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "ferry/base/clock.h"

namespace ferry {

void RateLimiter::Take(int64_t bytes) {
  if (rate_ <= 0 || bytes <= 0) return;
  absl::Time paid;
  const absl::Time now = MonotonicNow();
  {
    MutexLock lock(&mu_);
    // Idle time builds up at most a second of credit.
    next_ = std::max(next_, now - absl::Seconds(1));
    next_ += absl::Seconds(static_cast<double>(bytes) / static_cast<double>(rate_));
    paid = next_;
  }
  // The bytes go once the time they are booked up to has come.
  if (paid > now) absl::SleepFor(paid - now);
}

}  // namespace ferry
