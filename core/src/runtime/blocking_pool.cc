#include "runtime/blocking_pool.h"

#include <algorithm>
#include <utility>

namespace ferry::runtime_internal {

BlockingPool::BlockingPool(int max_threads) : max_threads_(std::max(1, max_threads)) {}

BlockingPool::~BlockingPool() { Stop(); }

void BlockingPool::Post(absl::AnyInvocable<void()> task) {
  MutexLock lock(&mu_);
  if (stopped_) return;  // `task` is destroyed after the lock is released
  queue_.push_back(std::move(task));
  // A thread more only when the idle ones cannot take every queued task.
  if (static_cast<int>(queue_.size()) > idle_ &&
      static_cast<int>(threads_.size()) < max_threads_) {
    threads_.emplace_back([this] { Work(); });
  } else {
    ready_.Signal();
  }
}

void BlockingPool::Stop() {
  std::deque<absl::AnyInvocable<void()>> dropped;
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    stopped_ = true;
    dropped.swap(queue_);
    threads.swap(threads_);
    ready_.SignalAll();
  }
  // Queued tasks are destroyed here, unlocked: destroying one may release
  // what it holds (a budget ticket) and run other code.
  dropped.clear();
  for (std::thread& t : threads) t.join();
}

void BlockingPool::Work() {
  for (;;) {
    absl::AnyInvocable<void()> task;
    {
      MutexLock lock(&mu_);
      ++idle_;
      while (queue_.empty() && !stopped_) ready_.Wait(&mu_);
      --idle_;
      if (stopped_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace ferry::runtime_internal
