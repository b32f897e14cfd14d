#include "ferry/runtime/runtime.h"

#include <atomic>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "ferry/base/mutex.h"

#include "ferry/runtime/future.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

// Whether a task given to `post` (Runtime::Post or PostBlocking) ran on one
// of `rt`'s I/O threads.
template <typename PostFn>
bool RanOnAnIoThread(Runtime& rt, PostFn post) {
  Promise<bool> p;
  auto f = p.GetFuture();
  post([&rt, p = std::move(p)]() mutable { p.Set(rt.InIoThread()); });
  return *std::move(f).Get();
}

TEST(RuntimeTest, PostRunsOnAnIoThread) {
  Runtime rt({.io_threads = 2, .blocking_threads = 1});
  EXPECT_TRUE(RanOnAnIoThread(rt, [&rt](auto task) { rt.Post(std::move(task)); }));
  EXPECT_FALSE(rt.InIoThread());
}

TEST(RuntimeTest, PostBlockingRunsOffTheIoThreads) {
  Runtime rt({.io_threads = 1, .blocking_threads = 2});
  EXPECT_FALSE(RanOnAnIoThread(rt, [&rt](auto task) { rt.PostBlocking(std::move(task)); }));
}

TEST(RuntimeTest, OwnsTheMemoryBudgetItWasGiven) {
  Runtime rt({.memory_budget_bytes = 4096});
  EXPECT_EQ(rt.memory_budget().capacity(), 4096);
}

TEST(RuntimeTest, DestructionWithWorkStillQueuedJoinsCleanly) {
  std::atomic<int> ran{0};
  {
    Runtime rt({.io_threads = 1, .blocking_threads = 1});
    for (int i = 0; i < 1000; ++i) {
      rt.Post([&ran] { ran.fetch_add(1); });
      rt.PostBlocking([&ran] { ran.fetch_add(1); });
    }
  }
  EXPECT_LE(ran.load(), 2000);
}

TEST(RuntimeTest, TicketsHeldByWorkDroppedAtShutdownReturnToALiveBudget) {
  auto rt = std::make_unique<Runtime>(RuntimeOptions{.io_threads = 1, .blocking_threads = 1,
                                                     .memory_budget_bytes = 1024});
  Promise<int> never_set;
  Future<int> gate = never_set.GetFuture();
  Promise<int> started;
  Future<int> running = started.GetFuture();
  // Keep the only I/O thread busy past the Runtime's destruction, so the
  // next handler is still queued when the io_context goes away.
  rt->Post([&gate, s = std::move(started)]() mutable {
    s.Set(1);
    (void)gate.GetUntil(absl::Now() + absl::Milliseconds(100));
  });
  ASSERT_TRUE(std::move(running).Get().ok());
  auto ticket = rt->memory_budget().Acquire(512);
  ASSERT_TRUE(ticket.ok());
  rt->Post([t = std::move(*ticket)]() {});
  rt.reset();  // destroys the queued handler, and with it the ticket (ASan checks)
}

// Threads of this process (Linux: /proc/self/task).
int ProcessThreads() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(RuntimeTest, BlockingThreadsStartAsWorkNeedsThem) {
  // A short job does not pay for the whole pool. Counted from after the
  // Runtime's start (a sanitizer may start a thread of its own with the
  // process's second).
  Runtime rt({.io_threads = 1, .blocking_threads = 16});
  const int before = ProcessThreads();
  Promise<int> p;
  auto f = p.GetFuture();
  rt.PostBlocking([p = std::move(p)]() mutable { p.Set(1); });
  ASSERT_EQ(*std::move(f).Get(), 1);
  EXPECT_EQ(ProcessThreads(), before + 1);  // the one the task needed
}

TEST(RuntimeTest, BlockingTasksThatWaitForEachOtherGetAThreadEach) {
  constexpr int kThreads = 6;
  Runtime rt({.io_threads = 1, .blocking_threads = kThreads});
  Mutex mu;  // ferry's (std::mutex): ThreadSanitizer sees it
  CondVar all_arrived;
  int arrived = 0;
  std::vector<Future<int>> done;
  for (int i = 0; i < kThreads; ++i) {
    Promise<int> p;
    done.push_back(p.GetFuture());
    rt.PostBlocking([&, p = std::move(p)]() mutable {
      MutexLock lock(&mu);
      if (++arrived == kThreads) all_arrived.SignalAll();
      // Returns only once every task runs at the same time.
      const absl::Time deadline = absl::Now() + absl::Seconds(30);
      while (arrived < kThreads && all_arrived.WaitWithDeadline(&mu, deadline)) {
      }
      p.Set(arrived == kThreads ? 1 : 0);
    });
  }
  for (Future<int>& f : done) EXPECT_EQ(*std::move(f).Get(), 1);
}

TEST(RuntimeTest, BlockingTasksBeyondTheThreadsWaitTheirTurn) {
  Runtime rt({.io_threads = 1, .blocking_threads = 2});
  std::atomic<int> running{0}, most{0};
  std::vector<Future<int>> done;
  for (int i = 0; i < 20; ++i) {
    Promise<int> p;
    done.push_back(p.GetFuture());
    rt.PostBlocking([&running, &most, p = std::move(p)]() mutable {
      const int now = running.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      running.fetch_sub(1);
      p.Set(1);
    });
  }
  for (Future<int>& f : done) EXPECT_EQ(*std::move(f).Get(), 1);
  EXPECT_LE(most.load(), 2);
}

}  // namespace
}  // namespace ferry
