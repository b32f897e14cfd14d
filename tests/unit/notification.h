// A one-shot event for unit tests that hold one thread until another says
// so. Not absl::Notification: that uses absl::Mutex, which ThreadSanitizer
// cannot see in Debian's abseil build (ferry/base/mutex.h says more).
#ifndef FERRY_TESTS_UNIT_NOTIFICATION_H_
#define FERRY_TESTS_UNIT_NOTIFICATION_H_

#include "absl/base/thread_annotations.h"
#include "ferry/base/mutex.h"

namespace ferry::testing {

// Wait() returns once Notify() has been called, at once if it already has.
// Notify() may be called more than once. Thread-safe.
class Notification {
 public:
  void Notify() {
    MutexLock l(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  void Wait() {
    MutexLock l(&mu_);
    while (!notified_) cv_.Wait(&mu_);
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ferry::testing

#endif  // FERRY_TESTS_UNIT_NOTIFICATION_H_
