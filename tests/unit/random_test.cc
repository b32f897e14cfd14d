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
