#include "ferry/runtime/rate_limiter.h"

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

TEST(RateLimiterTest, ASecondsWorthGoesAtOnceAfterIdleness) {
  RateLimiter limit(1'000'000);
  const absl::Time start = absl::Now();
  limit.Take(1'000'000);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(200));
}

TEST(RateLimiterTest, BytesBeyondTheBurstWaitForTheirShareOfTheRate) {
  RateLimiter limit(1'000'000);
  const absl::Time start = absl::Now();
  // Four threads, 1.5 MB in all: the burst covers 1 MB, the rest takes at
  // least half a second at 1 MB/s.
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { limit.Take(375'000); });
  for (std::thread& t : threads) t.join();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(450));
}

TEST(RateLimiterTest, ZeroMeansNoLimit) {
  RateLimiter limit(0);
  const absl::Time start = absl::Now();
  for (int i = 0; i < 100; ++i) limit.Take(int64_t{1} << 30);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(200));
}

}  // namespace
}  // namespace ferry
