#include "ferry/runtime/memory_budget.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ferry {
namespace {

TEST(MemoryBudgetTest, AcquireWithinCapacitySucceedsAndReleaseOnDestruction) {
  MemoryBudget b(100);
  {
    auto t = b.Acquire(60);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(b.in_use(), 60);
  }
  EXPECT_EQ(b.in_use(), 0);
  EXPECT_EQ(b.peak(), 60);
}

TEST(MemoryBudgetTest, RequestLargerThanCapacityIsInvalidArgument) {
  MemoryBudget b(100);
  EXPECT_EQ(b.Acquire(101).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.Acquire(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MemoryBudgetTest, TryAcquireFailsWhenFull) {
  MemoryBudget b(100);
  auto t = b.TryAcquire(80);
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(b.TryAcquire(30).has_value());
  t->Release();
  EXPECT_TRUE(b.TryAcquire(30).has_value());
}

TEST(MemoryBudgetTest, AcquireTimesOutWithDeadlineExceeded) {
  MemoryBudget b(100);
  auto t = b.Acquire(100);
  ASSERT_TRUE(t.ok());
  auto late = b.Acquire(1, absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(b.waiters(), 0);
}

TEST(MemoryBudgetTest, BlockedAcquireIsServedByRelease) {
  MemoryBudget b(100);
  auto t = b.Acquire(100);
  std::thread waiter([&] {
    auto w = b.Acquire(50);
    EXPECT_TRUE(w.ok());
  });
  while (b.waiters() == 0) std::this_thread::yield();
  t->Release();
  waiter.join();
  EXPECT_EQ(b.in_use(), 0);
}

TEST(MemoryBudgetTest, AsyncWaitersAreServedInArrivalOrder) {
  MemoryBudget b(100);
  auto t = b.Acquire(100);
  std::vector<int> order;
  std::vector<MemoryBudget::Ticket> held;
  b.AcquireAsync(70, [&](absl::StatusOr<MemoryBudget::Ticket> r) {
    order.push_back(70);
    held.push_back(std::move(*r));
  });
  b.AcquireAsync(10, [&](absl::StatusOr<MemoryBudget::Ticket> r) {
    order.push_back(10);
    held.push_back(std::move(*r));
  });
  EXPECT_TRUE(order.empty());
  // A small request that would fit must not jump the queue.
  EXPECT_FALSE(b.TryAcquire(1).has_value());
  t->Release();
  EXPECT_EQ(order, (std::vector<int>{70, 10}));
  EXPECT_EQ(b.in_use(), 80);
}

TEST(MemoryBudgetTest, NeverExceedsCapacityUnderContention) {
  MemoryBudget b(1000);
  std::atomic<int64_t> held{0}, max_held{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 500; ++k) {
        auto t = b.Acquire(100 + 37 * i);
        ASSERT_TRUE(t.ok());
        int64_t now = held.fetch_add(t->bytes()) + t->bytes();
        int64_t m = max_held.load();
        while (now > m && !max_held.compare_exchange_weak(m, now)) {}
        held.fetch_sub(t->bytes());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(max_held.load(), 1000);
  EXPECT_LE(b.peak(), 1000);
  EXPECT_EQ(b.in_use(), 0);
}

}  // namespace
}  // namespace ferry
