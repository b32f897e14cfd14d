// RedisTier against a real redis-server (peer_redis), in one process: each
// test its own namespace, each tier its own connections.
#include "ferry/redis/redis_tier.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "ferry/base/mutex.h"
#include "gtest/gtest.h"
#include "integration/redis/redis_peer.h"

namespace ferry::redis {
namespace {

using ::ferry::testing::FreshNamespace;
using ::ferry::testing::RedisPeerPort;

RedisTierOptions Options(const std::string& ns) {
  return RedisTierOptions{.port = RedisPeerPort(), .name_space = ns};
}

TEST(RedisTierTest, AStoredValueIsFoundWithItsRemainingTime) {
  RedisTier tier(Options(FreshNamespace()));
  auto before = tier.Lookup("/zone/a");
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_FALSE(before->value.has_value());
  ASSERT_TRUE(*tier.PutIfEpoch("/zone/a", std::string("bytes\0with nul", 14), absl::Seconds(10), before->epoch));
  auto after = tier.Lookup("/zone/a");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->value, std::string("bytes\0with nul", 14));
  EXPECT_GT(after->ttl_left, absl::Seconds(9));
  EXPECT_LE(after->ttl_left, absl::Seconds(10));
}

TEST(RedisTierTest, APutAfterAnInvalidationStoresNothing) {
  RedisTier tier(Options(FreshNamespace()));
  const uint64_t epoch = tier.Lookup("/zone/a")->epoch;
  ASSERT_TRUE(tier.Invalidate({}, {"/zone/a"}, "changed").ok());
  EXPECT_FALSE(*tier.PutIfEpoch("/zone/a", "stale", absl::Seconds(10), epoch));
  EXPECT_FALSE(tier.Lookup("/zone/a")->value.has_value());
}

TEST(RedisTierTest, ALeaseHasOneHolderUntilItIsGivenBack) {
  const std::string ns = FreshNamespace();
  RedisTier a(Options(ns)), b(Options(ns));
  EXPECT_TRUE(*a.TryLock("k", "token-a", absl::Seconds(10)));
  EXPECT_FALSE(*b.TryLock("k", "token-b", absl::Seconds(10)));
  ASSERT_TRUE(b.Unlock("k", "token-b").ok());  // not b's to give back
  EXPECT_FALSE(*b.TryLock("k", "token-b", absl::Seconds(10)));
  ASSERT_TRUE(a.Unlock("k", "token-a").ok());
  EXPECT_TRUE(*b.TryLock("k", "token-b", absl::Seconds(10)));
}

TEST(RedisTierTest, ALeaseRunsOutByItself) {
  const std::string ns = FreshNamespace();
  RedisTier a(Options(ns)), b(Options(ns));
  EXPECT_TRUE(*a.TryLock("k", "crashed", absl::Milliseconds(50)));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_TRUE(*b.TryLock("k", "token-b", absl::Seconds(10)));
}

TEST(RedisTierTest, InvalidateDeletesKeysUnderAPrefixButNotBesideIt) {
  RedisTier tier(Options(FreshNamespace()));
  for (const char* k : {"/a/b", "/a/b/c", "/a/bc", "/a/[x]*"}) {
    ASSERT_TRUE(*tier.PutIfEpoch(k, "v", absl::Seconds(10), tier.Lookup(k)->epoch));
  }
  ASSERT_TRUE(tier.Invalidate({"/a/b"}, {"/a/b/", "/a/[x]"}, "m").ok());
  EXPECT_FALSE(tier.Lookup("/a/b")->value.has_value());
  EXPECT_FALSE(tier.Lookup("/a/b/c")->value.has_value());
  EXPECT_FALSE(tier.Lookup("/a/[x]*")->value.has_value());  // glob characters taken literally
  EXPECT_TRUE(tier.Lookup("/a/bc")->value.has_value());
}

TEST(RedisTierTest, AnInvalidationReachesOtherTiersSubscriptionsButNotTheSendersOwn) {
  const std::string ns = FreshNamespace();
  RedisTier sender(Options(ns)), receiver(Options(ns));
  Mutex mu;
  std::vector<std::string> got_sender, got_receiver;
  auto s1 = sender.Subscribe([&](const SharedTierEvent& e) {
    MutexLock l(&mu);
    got_sender.emplace_back(e.message);
  });
  auto s2 = receiver.Subscribe([&](const SharedTierEvent& e) {
    MutexLock l(&mu);
    got_receiver.emplace_back(e.message);
  });
  absl::SleepFor(absl::Milliseconds(100));  // both subscribed
  ASSERT_TRUE(sender.Invalidate({}, {}, "renamed /zone/x").ok());
  for (int i = 0; i < 200; ++i) {
    {
      MutexLock l(&mu);
      if (!got_receiver.empty()) break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  absl::SleepFor(absl::Milliseconds(50));  // time for a wrong delivery to show
  MutexLock l(&mu);
  EXPECT_EQ(got_receiver, std::vector<std::string>{"renamed /zone/x"});
  EXPECT_TRUE(got_sender.empty());
}

TEST(RedisTierTest, WithNoServerCallsFailFastAndWarnOncePerOutage) {
  std::atomic<int> warnings{0};
  RedisTier tier(RedisTierOptions{.port = 1,  // nothing listens there
                                  .name_space = FreshNamespace(),
                                  .retry_after = absl::Milliseconds(100),
                                  .on_warning = [&](const absl::Status& s) {
                                    if (!s.ok()) ++warnings;
                                  }});
  EXPECT_EQ(tier.Lookup("k").status().code(), absl::StatusCode::kUnavailable);
  const absl::Time start = absl::Now();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(tier.Lookup("k").ok());
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  absl::SleepFor(absl::Milliseconds(150));  // past retry_after: tries again, still down
  EXPECT_FALSE(tier.Lookup("k").ok());
  EXPECT_EQ(warnings, 1);
}

TEST(RedisTierTest, AConnectionLeftIdleAcrossAServerRestartIsReplacedWithoutAFailure) {
  std::atomic<int> warnings{0};
  RedisTier tier(RedisTierOptions{.port = RedisPeerPort(), .name_space = FreshNamespace(),
                                  .on_warning = [&](const absl::Status& s) {
                                    if (!s.ok()) ++warnings;
                                  }});
  ASSERT_TRUE(tier.Lookup("k").ok());
  ASSERT_TRUE(::ferry::testing::RedisPeer("kill"));
  ASSERT_TRUE(::ferry::testing::RedisPeer("start"));
  // The first call after the restart finds its socket dead, and retries.
  EXPECT_TRUE(tier.Invalidate({"k"}, {}, "changed k").ok());
  EXPECT_EQ(warnings, 0);
}

TEST(RedisTierTest, ASubscriptionToAnAbsentServerStopsPromptlyWhenDestroyed) {
  RedisTier tier(RedisTierOptions{.port = 1, .name_space = FreshNamespace(),
                                  .retry_after = absl::Seconds(30)});
  auto sub = tier.Subscribe([](const SharedTierEvent&) {});
  absl::SleepFor(absl::Milliseconds(50));  // now waiting to retry
  const absl::Time start = absl::Now();
  sub.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

}  // namespace
}  // namespace ferry::redis
