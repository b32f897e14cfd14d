// Clock: where ferry's timers and TTLs read the time.
//
// Everything that expires (cache entries, deadlines, retry back-off) takes a
// `const Clock*` so tests drive time with a ManualClock and never sleep.
// A null Clock* means the real monotonic clock (RealClock), read without a
// virtual call on hot paths.
//
//   ferry::ManualClock clock;
//   Options o; o.clock = &clock;
//   ...
//   clock.Advance(absl::Seconds(31));   // every TTL of 30 s has now expired
#ifndef FERRY_BASE_CLOCK_H_
#define FERRY_BASE_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "absl/time/time.h"

namespace ferry {

// The monotonic time, as an absl::Time measured from an arbitrary epoch: it
// never jumps with the wall clock, so it is only meaningful for intervals and
// deadlines within this process.
inline absl::Time MonotonicNow() {
  return absl::UnixEpoch() +
         absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

// A source of time. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// The real monotonic clock. Thread-safe, stateless.
class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return MonotonicNow(); }
};

// A clock that moves only when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::UnixEpoch() + absl::Hours(1))
      : nanos_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override {
    return absl::FromUnixNanos(nanos_.load(std::memory_order_acquire));
  }
  void Advance(absl::Duration d) {
    nanos_.fetch_add(absl::ToInt64Nanoseconds(d), std::memory_order_acq_rel);
  }
  void Set(absl::Time t) { nanos_.store(absl::ToUnixNanos(t), std::memory_order_release); }

 private:
  std::atomic<int64_t> nanos_;
};

// Reads `clock`, or the real monotonic clock when it is null.
inline absl::Time NowFrom(const Clock* clock) {
  return clock == nullptr ? MonotonicNow() : clock->Now();
}

}  // namespace ferry

#endif  // FERRY_BASE_CLOCK_H_
