// RetryPolicy, DelayScheduler, CallWithRetry and RetryBlocking (and
// CallTimeouts, the client settings they run under): how ferry
// call, an iRODS stat) with exponential back-off and jitter, bounded by a
// number of attempts, by time, or both.
//
// One policy, two drivers: CallWithRetry for async calls (waits on a
// DelayScheduler) and RetryBlocking for calls that block their thread anyway
// (iRODS sessions; waits by sleeping that thread). Both ask
// RetryPolicy::NextWait whether and when to try again.
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
#ifndef FERRY_RUNTIME_RETRY_POLICY_H_
#define FERRY_RUNTIME_RETRY_POLICY_H_

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/base/random.h"
#include "ferry/runtime/future.h"

namespace ferry {

class Runtime;

// CallTimeouts: how long a protocol client's connects and calls may take,
// and how long an idempotent call that lost its connection keeps being
// retried (the RetryPolicy its client builds: max_elapsed = retry_window).
// One struct for every adapter's client options (NfsClientOptions and
// IrodsClientOptions hold it as `timeouts`), so `--timeout` and the retry
// window mean the same thing over NFS and iRODS.
struct CallTimeouts {
  // Per connect attempt (and login, where the protocol has one).
  absl::Duration connect = absl::Seconds(10);
  // Per call, from sending to the reply; a stalled server fails here.
  absl::Duration call = absl::Seconds(60);
  // Idempotent calls that fail Unavailable (their connection was lost: a
  // reset blip, a server restarting) are sent again on a new connection,
  // waiting 100 ms doubling to 2 s (jittered, RetryPolicy) between tries,
  // until this long after the first try; then the last error, saying how
  // many tries and how long. Zero: no such retries. A server never reached
  // (a wrong port) fails at once, and a call past `call` is not retried.
  // Which calls are idempotent is the client's to say.
  absl::Duration retry_window = absl::Seconds(20);
};

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
  // Time bound: no retry starts later than this after the first try began
  // (a wait that would end past it is not waited). With a large
  // max_attempts this makes the retries time-bounded, which is what rides
  // out an outage of unknown length (a server restart) where a count of
  // fast-failing attempts would be spent in milliseconds.
  absl::Duration max_elapsed = absl::InfiniteDuration();
  // Which errors are worth another try; null: IsRetryable. A status marked
  // with MarkRetriesExhausted is final whatever this says.
  bool (*retryable)(const absl::Status&) = nullptr;
  // Reads the elapsed time for max_elapsed; null: the monotonic clock.
  const Clock* clock = nullptr;

  // The wait before retry number `retry` (1 = the first retry), given a
  // uniform random `unit` in [0, 1).
  absl::Duration Backoff(int retry, double unit) const;

  // After `attempts` tries that took `elapsed` in all and ended with
  // `status`: the wait before the next try, or nullopt when the call ends
  // here (success, a final error, attempts or time spent).
  std::optional<absl::Duration> NextWait(const absl::Status& status, int attempts,
                                         absl::Duration elapsed, double unit) const;

  // `status`, the last error of a call that gave up after `attempts` tries
  // in `elapsed`, with that said in its message when there was more than
  // one try, and marked with MarkRetriesExhausted so no layer above runs
  // the series again.
  absl::Status GiveUp(absl::Status status, int attempts, absl::Duration elapsed) const;
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

// A DelayScheduler that its owner can drain before it goes away: Drain()
// runs every pending function at once, on the calling thread, and from then
// on RunAfter runs its function at once on the calling thread (the owner is
// going away; its retry functions see that and end their calls Cancelled
// instead of trying again). Without this, a retry waiting out its back-off
// would fire into an owner already destroyed, or never end its call.
// Thread-safe.
class DrainableDelayScheduler final : public DelayScheduler {
 public:
  // REQUIRES: `inner` outlives this object.
  explicit DrainableDelayScheduler(DelayScheduler& inner);
  ~DrainableDelayScheduler() override;  // drains
  void RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) override;
  void Drain();

 private:
  struct State;
  DelayScheduler& inner_;
  std::shared_ptr<State> state_;
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

  absl::Time start;

  static void Start(std::shared_ptr<RetryCall> self) {
    const int n = ++self->attempt;
    RetryCall* raw = self.get();
    raw->attempt_fn(n, [self = std::move(self)](absl::StatusOr<T> r) mutable {
      RetryCall& c = *self;
      if (r.ok()) {
        // The common case, first: every NFS call passes here, and a random
        // draw (a system call) or a clock read per success showed in its
        // profile.
        c.done(std::move(r));
        return;
      }
      const absl::Duration elapsed = NowFrom(c.policy.clock) - c.start;
      const std::optional<absl::Duration> wait =
          c.policy.NextWait(r.status(), c.attempt, elapsed, RandomUnit());
      if (!wait) {
        if (!r.ok()) r = c.policy.GiveUp(r.status(), c.attempt, elapsed);
        c.done(std::move(r));
        return;
      }
      DelayScheduler* sched = c.scheduler;
      sched->RunAfter(*wait, [self = std::move(self)]() mutable { Start(std::move(self)); });
    });
  }
};

inline const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace internal

// Calls `attempt(n, cb)` for n = 1, 2, ... until it succeeds, fails with an
// error IsRetryable() rejects, or `policy.max_attempts` tries have failed,
// waiting policy.Backoff() on `scheduler` between tries; then calls `done`
// once with the last result (a last error after retries says how many and
// how long, see RetryPolicy::GiveUp). `attempt` may see that its work is no
// longer wanted and complete `cb` with Cancelled to stop early.
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
  call->start = NowFrom(policy.clock);
  internal::RetryCall<T>::Start(std::move(call));
}

// CallWithRetry's blocking twin, for calls that block their thread anyway:
// runs `attempt(n)` (returning absl::Status or absl::StatusOr<T>) for n = 1,
// 2, ... on the calling thread, `sleep`ing policy.NextWait() between tries,
// and returns the first success or the last error (see GiveUp). `sleep`
// defaults to absl::SleepFor; tests pass one that advances a ManualClock.
template <typename Fn>
auto RetryBlocking(const RetryPolicy& policy, Fn&& attempt,
                   absl::FunctionRef<void(absl::Duration)> sleep = absl::SleepFor)
    -> std::invoke_result_t<Fn&, int> {
  const absl::Time start = NowFrom(policy.clock);
  for (int n = 1;; ++n) {
    std::invoke_result_t<Fn&, int> r = attempt(n);
    if (internal::StatusOf(r).ok()) return r;
    const absl::Duration elapsed = NowFrom(policy.clock) - start;
    const std::optional<absl::Duration> wait =
        policy.NextWait(internal::StatusOf(r), n, elapsed, RandomUnit());
    if (!wait) return policy.GiveUp(internal::StatusOf(r), n, elapsed);
    sleep(*wait);
  }
}

}  // namespace ferry

#endif  // FERRY_RUNTIME_RETRY_POLICY_H_
