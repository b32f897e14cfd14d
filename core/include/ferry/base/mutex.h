// Mutex, MutexLock and CondVar: ferry's lock types.
//
// Thin wrappers over std::mutex / std::condition_variable that carry
// abseil's thread-safety attributes, so clang's -Wthread-safety checks every
// ABSL_GUARDED_BY field. ferry does not use absl::Mutex because Debian's
// abseil is not built with ThreadSanitizer instrumentation: TSan cannot see
// its synchronisation and reports false races, while it understands
// pthread-based std::mutex.
//
//   class Counter {
//    public:
//     void Add() { ferry::MutexLock l(&mu_); ++n_; }
//    private:
//     ferry::Mutex mu_;
//     int n_ ABSL_GUARDED_BY(mu_) = 0;
//   };
#ifndef FERRY_BASE_MUTEX_H_
#define FERRY_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace ferry {

// A non-reentrant exclusive lock. Thread-safe.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds the lock (no runtime check).
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for the lifetime of the scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds `mu` while it lives when `mu` is not null (a lock a caller may or
// may not hand over, such as FileRange::write_lock). Invisible to the
// thread-safety analysis, which cannot follow a lock that may be absent.
class OptionalLock {
 public:
  explicit OptionalLock(Mutex* mu) ABSL_NO_THREAD_SAFETY_ANALYSIS : mu_(mu) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~OptionalLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr) mu_->Unlock();
  }
  OptionalLock(const OptionalLock&) = delete;
  OptionalLock& operator=(const OptionalLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with a held ferry::Mutex. Thread-safe.
// Waits may wake spuriously: always wait in a loop on the condition,
//   while (!ready_) cv_.Wait(&mu_);
// (There are deliberately no predicate overloads: clang's thread-safety
// analysis cannot see that a predicate lambda runs under the lock.)
class CondVar {
 public:
  // REQUIRES: `mu` is held. Releases it while waiting, holds it on return.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    cv_.wait(l);
    l.release();
  }
  // As Wait, but returns false if `deadline` passed first.
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    const bool signalled =
        cv_.wait_until(l, absl::ToChronoTime(deadline)) == std::cv_status::no_timeout;
    l.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace ferry

#endif  // FERRY_BASE_MUTEX_H_
