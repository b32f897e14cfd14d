// BlockingPool: the Runtime's threads for blocking work (disk, user
// loaders), started as work needs them, up to a maximum.
//
// A process that copies one small file used to start every thread of the
// pool (16 for ferry-cp) before its first byte moved; threads now start
// when a task finds no idle one, so a short job starts one or two. Once
// started a thread stays until Stop: no churn under a steady load.
#ifndef FERRY_RUNTIME_BLOCKING_POOL_H_
#define FERRY_RUNTIME_BLOCKING_POOL_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "ferry/base/mutex.h"

namespace ferry::runtime_internal {

// Thread-safe.
class BlockingPool {
 public:
  explicit BlockingPool(int max_threads);
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;
  // Stops and joins (as Stop).
  ~BlockingPool();

  // Runs `task` on a pool thread; dropped (destroyed, not run) after Stop.
  void Post(absl::AnyInvocable<void()> task);
  // Lets running tasks finish, drops queued ones and joins every thread.
  // Idempotent; must not be called from a pool thread.
  void Stop();

 private:
  void Work();

  const int max_threads_;
  Mutex mu_;
  CondVar ready_;
  std::deque<absl::AnyInvocable<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;  // threads waiting for a task
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ferry::runtime_internal

#endif  // FERRY_RUNTIME_BLOCKING_POOL_H_
