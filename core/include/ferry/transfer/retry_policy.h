// RetryPolicy, DelayScheduler and CallWithRetry: how transfers retry one
// request (a chunk GET, a part upload) with exponential back-off and jitter.
//
// Waits run on a DelayScheduler, never by sleeping a thread: the real one
// arms a timer on the Runtime's io_context; tests inject one that records
// the waits and runs them when told, so no test sleeps.
//
//   ferry::RetryPolicy policy{.max_attempts = 4, .initial_backoff = absl::Milliseconds(100)};
//   ferry::RuntimeDelayScheduler timers(runtime);
//   ferry::CallWithRetry<std::string>(
//       policy, timers,
//       [&](int attempt, ferry::Callback<std::string> cb) {
//         store.GetRange(key, off, len, etag, std::move(cb));
//       },
//       [](absl::StatusOr<std::string> bytes) { ... });
#ifndef FERRY_TRANSFER_RETRY_POLICY_H_
#define FERRY_TRANSFER_RETRY_POLICY_H_

#include <memory>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "ferry/base/random.h"
#include "ferry/runtime/future.h"

namespace ferry {

class Runtime;

// How often and how patiently one request is retried.
struct RetryPolicy {
  // Tries in all, the first included; 1 disables retries. Four rides out a
  // connection reset plus a couple of throttling replies (S3 asks clients
  // to back off on 503 SlowDown) without hiding a store that is really down.
  int max_attempts = 4;
  // Wait before the first retry; doubles for each further retry. 100 ms is
  // about one S3 round trip: long enough for a reset connection to reopen.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // No wait is longer than this.
  absl::Duration max_backoff = absl::Seconds(10);
  // Fraction of each wait that is random: the wait is drawn from
  // [d * (1 - jitter), d]. Half keeps many chunks that failed together (one
  // outage) from retrying in lock-step.
  double jitter = 0.5;

  // The wait before retry number `retry` (1 = the first retry), given a
  // uniform random `unit` in [0, 1).
  absl::Duration Backoff(int retry, double unit) const;
};

// True for errors a retry may cure: Unavailable, DeadlineExceeded, DataLoss
// (a truncated reply) and Aborted. NotFound, PermissionDenied,
// Unauthenticated, InvalidArgument, FailedPrecondition (object changed),
// ResourceExhausted and Cancelled are final, and so is any status marked
// with MarkRetriesExhausted.
bool IsRetryable(const absl::Status& status);

// Marks `status` as the last of a layer's own retries (an HTTP client that
// already retried a refused connection S3_RETRY_COUNT times), so the
// transfer layer above does not retry the whole series again: a refused
// connection then fails in one round of back-off, not two.
void MarkRetriesExhausted(absl::Status& status);

// Runs functions after a delay. Thread-safe.
class DelayScheduler {
 public:
  virtual ~DelayScheduler() = default;
  // Runs `fn` once `delay` has passed, on a thread that must not block (an
  // I/O thread for the real scheduler). Never runs `fn` inline.
  virtual void RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) = 0;
};

// A DelayScheduler over asio timers on `runtime`'s io_context. Thread-safe.
// Pending functions are dropped, not run, if the Runtime is destroyed first;
// the scheduler object itself may be destroyed while functions are pending.
class RuntimeDelayScheduler final : public DelayScheduler {
 public:
  explicit RuntimeDelayScheduler(Runtime& runtime) : runtime_(runtime) {}
  void RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) override;

 private:
  Runtime& runtime_;
};

namespace internal {

template <typename T>
struct RetryCall {
  RetryPolicy policy;
  DelayScheduler* scheduler;
  absl::AnyInvocable<void(int attempt, Callback<T> cb)> attempt_fn;
  Callback<T> done;
  int attempt = 0;

  static void Start(std::shared_ptr<RetryCall> self) {
    const int n = ++self->attempt;
    RetryCall* raw = self.get();
    raw->attempt_fn(n, [self = std::move(self)](absl::StatusOr<T> r) mutable {
      RetryCall& c = *self;
      if (r.ok() || !IsRetryable(r.status()) || c.attempt >= c.policy.max_attempts) {
        c.done(std::move(r));
        return;
      }
      const absl::Duration wait = c.policy.Backoff(c.attempt, RandomUnit());
      DelayScheduler* sched = c.scheduler;
      sched->RunAfter(wait, [self = std::move(self)]() mutable { Start(std::move(self)); });
    });
  }
};

}  // namespace internal

// Calls `attempt(n, cb)` for n = 1, 2, ... until it succeeds, fails with an
// error IsRetryable() rejects, or `policy.max_attempts` tries have failed,
// waiting policy.Backoff() on `scheduler` between tries; then calls `done`
// once with the last result. `attempt` may see that its work is no longer
// wanted and complete `cb` with Cancelled to stop early.
// REQUIRES: `scheduler` outlives the call.
template <typename T>
void CallWithRetry(const RetryPolicy& policy, DelayScheduler& scheduler,
                   absl::AnyInvocable<void(int attempt, Callback<T> cb)> attempt,
                   Callback<T> done) {
  auto call = std::make_shared<internal::RetryCall<T>>();
  call->policy = policy;
  call->scheduler = &scheduler;
  call->attempt_fn = std::move(attempt);
  call->done = std::move(done);
  internal::RetryCall<T>::Start(std::move(call));
}

}  // namespace ferry

#endif  // FERRY_TRANSFER_RETRY_POLICY_H_
