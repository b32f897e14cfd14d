// RandomUint64 / RandomUnit: ranges, and that draws differ.
#include "ferry/base/random.h"

#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ferry {
namespace {

TEST(RandomTest, UnitIsInTheHalfOpenInterval) {
  for (int i = 0; i < 1000; ++i) {
    const double u = RandomUnit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(RandomTest, DrawsDiffer) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 100; ++i) seen.insert(RandomUint64());
  // 100 draws of 64 bits: a repeat would mean a broken source.
  EXPECT_EQ(seen.size(), 100u);
}

TEST(RandomTest, EveryBitIsDrawn) {
  uint64_t any = 0, all = ~uint64_t{0};
  for (int i = 0; i < 200; ++i) {
    const uint64_t v = RandomUint64();
    any |= v;
    all &= v;
  }
  // 200 draws leave a bit always 0 or always 1 with odds 2^-199 each.
  EXPECT_EQ(any, ~uint64_t{0});
  EXPECT_EQ(all, 0u);
}

TEST(RandomTest, ThreadsMayDrawAtOnce) {
  std::vector<std::thread> threads;
  std::vector<uint64_t> values(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&values, i] { values[i] = RandomUint64(); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::set<uint64_t>(values.begin(), values.end()).size(), values.size());
}

}  // namespace
}  // namespace ferry
