// SharedLoader's logic against an in-process fake tier (the real tier,
// Redis, is proven by tests/integration/redis with real processes).
#include "ferry/cache/shared_loader.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "testing/fake_shared_tier.h"

namespace ferry {
namespace {

using testing::FakeSharedStore;
using testing::FakeSharedTier;

std::string Encode(const std::string& v) { return "v1:" + v; }
absl::StatusOr<std::string> Decode(std::string_view b) {
  if (b.substr(0, 3) != "v1:") return absl::DataLossError("not v1");
  return std::string(b.substr(3));
}

// One front end: its own connection to the shared store and its own loader.
struct FrontEnd {
  explicit FrontEnd(FakeSharedStore& s, SharedLoaderOptions o = {}) : tier(s), loader(tier, o) {}
  absl::StatusOr<SharedLoaded<std::string>> Load(const std::string& key, std::atomic<int>& origin_calls,
                                                 absl::Duration origin_time = absl::ZeroDuration(),
                                                 std::string value = "fresh") {
    return loader.Load<std::string>(
        key, absl::Seconds(30),
        [&]() -> absl::StatusOr<std::string> {
          ++origin_calls;
          absl::SleepFor(origin_time);
          return value;
        },
        Encode, Decode);
  }
  // Loads "k" and expects the value from the origin, loaded once: what a
  // first miss and every fallback (tier down, lease timed out, value
  // undecodable) end in.
  void ExpectLoadedOnceFromTheOrigin() {
    std::atomic<int> calls{0};
    auto got = Load("k", calls);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->from_tier);
    EXPECT_EQ(got->value, "fresh");
    EXPECT_EQ(calls, 1);
  }
  FakeSharedTier tier;
  SharedLoader loader;
};

TEST(SharedLoaderTest, AMissLoadsFromTheOriginAndSharesTheValueWithOtherFrontEnds) {
  FakeSharedStore store;
  FrontEnd a(store), b(store);
  a.ExpectLoadedOnceFromTheOrigin();
  std::atomic<int> calls{0};
  auto second = b.Load("k", calls);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_tier);
  EXPECT_EQ(second->value, "fresh");
  EXPECT_EQ(calls, 0);
}

TEST(SharedLoaderTest, AValueFromTheTierKeepsOnlyItsRemainingTime) {
  FakeSharedStore store;
  FrontEnd a(store), b(store);
  std::atomic<int> calls{0};
  ASSERT_TRUE(a.Load("k", calls).ok());
  absl::SleepFor(absl::Milliseconds(50));
  auto got = b.Load("k", calls);
  ASSERT_TRUE(got.ok());
  EXPECT_LT(got->ttl, absl::Seconds(30) - absl::Milliseconds(40));
  EXPECT_GT(got->ttl, absl::Seconds(29));
}

TEST(SharedLoaderTest, ConcurrentMissesInSeveralFrontEndsCallTheOriginOnce) {
  FakeSharedStore store;
  std::vector<std::unique_ptr<FrontEnd>> fronts;
  for (int i = 0; i < 4; ++i) fronts.push_back(std::make_unique<FrontEnd>(store));
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (auto& f : fronts) {
    threads.emplace_back([&, fe = f.get()] {
      if (fe->Load("k", calls, absl::Milliseconds(100)).ok()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(calls, 1);
}

TEST(SharedLoaderTest, AnInvalidationDuringALoadKeepsItsValueOutOfTheTier) {
  FakeSharedStore store;
  FrontEnd loader(store), writer(store);
  std::atomic<int> calls{0};
  std::thread t([&] { ASSERT_TRUE(loader.Load("k", calls, absl::Milliseconds(100), "stale").ok()); });
  absl::SleepFor(absl::Milliseconds(30));
  writer.loader.Invalidate({"k"}, {}, "changed k");
  t.join();
  EXPECT_FALSE(store.Has("k"));
  EXPECT_EQ(loader.loader.stats().stores_skipped, 1);
}

TEST(SharedLoaderTest, ATierThatIsDownFallsBackToTheOriginWithoutAnError) {
  FakeSharedStore store;
  FrontEnd a(store);
  store.SetDown(true);
  a.ExpectLoadedOnceFromTheOrigin();
  EXPECT_EQ(a.loader.stats().tier_failures, 1);
}

TEST(SharedLoaderTest, AWaiterLoadsAloneWhenTheLeaseHolderTakesLongerThanMaxWait) {
  FakeSharedStore store;
  FakeSharedTier crashed(store);
  ASSERT_TRUE(*crashed.TryLock("k", "dead-process", absl::Seconds(60)));
  FrontEnd a(store, SharedLoaderOptions{.max_wait = absl::Milliseconds(50)});
  const absl::Time start = absl::Now();
  a.ExpectLoadedOnceFromTheOrigin();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));
  EXPECT_EQ(a.loader.stats().wait_timeouts, 1);
}

TEST(SharedLoaderTest, AnOriginErrorIsReturnedAndTheLeaseIsGivenBack) {
  FakeSharedStore store;
  FrontEnd a(store), b(store, SharedLoaderOptions{.max_wait = absl::Seconds(10)});
  auto failed = a.loader.Load<std::string>(
      "k", absl::Seconds(30), []() -> absl::StatusOr<std::string> { return absl::NotFoundError("gone"); },
      Encode, Decode);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(store.Has("k"));
  std::atomic<int> calls{0};
  const absl::Time start = absl::Now();
  ASSERT_TRUE(b.Load("k", calls).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));  // did not wait on a stuck lease
  EXPECT_EQ(b.loader.stats().waits, 0);
}

TEST(SharedLoaderTest, AnUndecodableTierValueIsLoadedFromTheOrigin) {
  FakeSharedStore store;
  FakeSharedTier other(store);
  ASSERT_TRUE(*other.PutIfEpoch("k", "v2:future-format", absl::Seconds(30), 0));
  FrontEnd a(store);
  a.ExpectLoadedOnceFromTheOrigin();
  EXPECT_EQ(a.loader.stats().undecodable, 1);
}

TEST(SharedLoaderTest, InvalidateReachesEveryOtherFrontEndButNotItsOwn) {
  FakeSharedStore store;
  FrontEnd a(store), b(store);
  std::vector<std::string> seen_a, seen_b;
  auto sub_a = a.tier.Subscribe([&](const SharedTierEvent& e) { seen_a.emplace_back(e.message); });
  auto sub_b = b.tier.Subscribe([&](const SharedTierEvent& e) { seen_b.emplace_back(e.message); });
  a.loader.Invalidate({}, {"/zone/a"}, "changed /zone/a");
  EXPECT_TRUE(seen_a.empty());
  EXPECT_EQ(seen_b, std::vector<std::string>{"changed /zone/a"});
}

TEST(SharedLoaderTest, InvalidateDropsKeysUnderAPrefixFromTheTier) {
  FakeSharedStore store;
  FrontEnd a(store);
  std::atomic<int> calls{0};
  ASSERT_TRUE(a.Load("/a/b", calls).ok());
  ASSERT_TRUE(a.Load("/a/c", calls).ok());
  a.loader.Invalidate({}, {"/a/b"}, "x");
  EXPECT_FALSE(store.Has("/a/b"));
  EXPECT_TRUE(store.Has("/a/c"));
}

}  // namespace
}  // namespace ferry
