// Promise<T> / Future<T>: the single-result hand-off behind every blocking
// twin of an async call.
//
// Async calls in ferry complete through a callback taking absl::StatusOr<T>
// (run on an I/O thread: it must not block). A Future wraps that for callers
// that want to block, or to attach the callback later:
//
//   ferry::Promise<std::string> p;
//   ferry::Future<std::string> f = p.GetFuture();
//   pool.CallAsync(req, std::move(p).AsCallback());
//   absl::StatusOr<std::string> reply = std::move(f).Get();   // blocks
//
// or, when nothing else happens before the wait,
//
//   absl::StatusOr<std::string> reply = ferry::BlockOn<std::string>(
//       [&](ferry::Callback<std::string> done) { pool.CallAsync(req, std::move(done)); });
//
// A Promise destroyed without a value completes its Future with
// CancelledError, so a dropped call can never leave a waiter hanging.
#ifndef FERRY_RUNTIME_FUTURE_H_
#define FERRY_RUNTIME_FUTURE_H_

#include <memory>
#include <optional>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/mutex.h"

namespace ferry {

// The callback an async call completes through.
template <typename T>
using Callback = absl::AnyInvocable<void(absl::StatusOr<T>)>;

namespace internal {

template <typename T>
struct FutureState {
  Mutex mu;
  CondVar cv;
  bool completed ABSL_GUARDED_BY(mu) = false;
  std::optional<absl::StatusOr<T>> result ABSL_GUARDED_BY(mu);  // until taken
  Callback<T> then ABSL_GUARDED_BY(mu);

  // Stores the result, or hands it to an attached callback (outside the
  // lock). Only the first completion counts. The waiter is woken after the
  // lock is let go, so it does not wake only to wait for the lock: a
  // blocking call's hand-back is one futex wake, not five system calls.
  // (The state outlives the signal: the completing Promise holds it.)
  void Complete(absl::StatusOr<T> r) {
    Callback<T> cb;
    {
      MutexLock l(&mu);
      if (completed) return;
      completed = true;
      if (then) {
        cb = std::move(then);
      } else {
        result.emplace(std::move(r));
      }
    }
    if (cb) {
      cb(std::move(r));
    } else {
      cv.SignalAll();
    }
  }
};

}  // namespace internal

template <typename T>
class Future;

// The producing side. Move-only; thread-safe to Set from any thread, once.
template <typename T>
class Promise {
 public:
  Promise() : state_(std::make_shared<internal::FutureState<T>>()) {}
  Promise(Promise&&) noexcept = default;
  Promise& operator=(Promise&& other) noexcept {
    if (this != &other) {
      Abandon();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  ~Promise() { Abandon(); }

  // REQUIRES: called at most once per Promise.
  Future<T> GetFuture() { return Future<T>(state_); }

  // Completes the future. Later calls are ignored.
  void Set(absl::StatusOr<T> result) {
    if (state_) state_->Complete(std::move(result));
  }

  // This promise as the callback of an async call: its result completes
  // the future (dropped uncalled: CancelledError).
  Callback<T> AsCallback() && {
    return [p = std::move(*this)](absl::StatusOr<T> r) mutable { p.Set(std::move(r)); };
  }

 private:
  void Abandon() {
    if (state_) state_->Complete(absl::CancelledError("promise dropped without a result"));
  }
  std::shared_ptr<internal::FutureState<T>> state_;
};

// The consuming side. Move-only; one consumer.
template <typename T>
class Future {
 public:
  Future() = default;
  Future(Future&&) noexcept = default;
  Future& operator=(Future&&) noexcept = default;

  bool valid() const { return state_ != nullptr; }

  // True once a result is there.
  bool ready() const {
    MutexLock l(&state_->mu);
    return state_->completed;
  }

  // Blocks until the result is there, then returns it.
  absl::StatusOr<T> Get() && {
    auto s = std::move(state_);
    MutexLock l(&s->mu);
    while (!s->completed) s->cv.Wait(&s->mu);
    return std::move(*s->result);
  }

  // Blocks until the result is there or `deadline` passes; DeadlineExceeded
  // in the latter case (the future stays valid and may be waited on again).
  absl::StatusOr<T> GetUntil(absl::Time deadline) & {
    internal::FutureState<T>* st = state_.get();
    MutexLock l(&st->mu);
    while (!st->completed) {
      if (!st->cv.WaitWithDeadline(&st->mu, deadline) && !st->completed) {
        return absl::DeadlineExceededError("future: no result before the deadline");
      }
    }
    return std::move(*st->result);
  }

  // Calls `cb` with the result: now, on this thread, if it is there already;
  // otherwise on the thread that completes the promise.
  void Then(Callback<T> cb) && {
    auto s = std::move(state_);
    std::optional<absl::StatusOr<T>> r;
    {
      MutexLock l(&s->mu);
      if (!s->completed) {
        s->then = std::move(cb);
        return;
      }
      r = std::move(s->result);
    }
    cb(std::move(*r));
  }

 private:
  friend class Promise<T>;
  explicit Future(std::shared_ptr<internal::FutureState<T>> s) : state_(std::move(s)) {}
  std::shared_ptr<internal::FutureState<T>> state_;
};

// Starts an async call with `start(callback)` and blocks until the
// callback has its result: the blocking twin of any callback-taking call.
template <typename T>
absl::StatusOr<T> BlockOn(absl::AnyInvocable<void(Callback<T>)> start) {
  Promise<T> p;
  Future<T> f = p.GetFuture();
  std::move(start)(std::move(p).AsCallback());
  return std::move(f).Get();
}

// A future that is already complete.
template <typename T>
Future<T> MakeReadyFuture(absl::StatusOr<T> r) {
  Promise<T> p;
  Future<T> f = p.GetFuture();
  p.Set(std::move(r));
  return f;
}

}  // namespace ferry

#endif  // FERRY_RUNTIME_FUTURE_H_
