// Three front-end processes (ferry_redis_front_end) sharing one redis-server
// through RedisTier + SharedLoader, their origin a real folder tree they all
// list and rename in. Real processes, because what is shared across them
// (connections, subscriber threads, the lease) is per process.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "integration/redis/front_end_driver.h"
#include "integration/redis/redis_peer.h"

namespace ferry::testing {
namespace {

namespace fs = std::filesystem;

// How soon a rename through one front end must show in the others'
// listings. Pub/sub on localhost takes well under a millisecond (the bench
// measures it); the bound is for a loaded CI machine.
constexpr absl::Duration kInvalidationBound = absl::Seconds(1);

class RedisSharedTierProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / FreshNamespace();
    for (const char* dir : {"a", "b", "c", "fresh"}) {
      fs::create_directories(root_ / dir);
      for (int i = 0; i < 100; ++i) std::ofstream(root_ / dir / absl::StrCat("f", i));
    }
    const std::string ns = FreshNamespace();
    for (int i = 0; i < 3; ++i) {
      fronts_.push_back(std::make_unique<FrontEndProcess>(
          FERRY_REDIS_FRONT_END,
          std::vector<std::string>{absl::StrCat("--port=", RedisPeerPort()), absl::StrCat("--root=", root_.string()),
                                   absl::StrCat("--ns=", ns), "--ttl-ms=60000", "--origin-delay-ms=200",
                                   "--retry-ms=200"}));
      ASSERT_TRUE(fronts_.back()->ok());
    }
    absl::SleepFor(absl::Milliseconds(100));  // subscribers connected
  }
  void TearDown() override {
    fronts_.clear();
    fs::remove_all(root_);
  }

  long TotalOriginLoads() {
    long n = 0;
    for (auto& f : fronts_) n += f->Stat("origin_loads");
    return n;
  }
  // Lists `key` in every front end at once; true if all answered "ok".
  bool ListEverywhere(const std::string& key) {
    for (auto& f : fronts_) f->Send(absl::StrCat("list ", key));
    bool ok = true;
    for (auto& f : fronts_) ok = f->Reply().rfind("ok ", 0) == 0 && ok;
    return ok;
  }
  // Polls `front` until its listing of `key` has `name`; the time it took.
  absl::Duration TimeUntilSeen(FrontEndProcess& front, const std::string& key, const std::string& name,
                               absl::Time since, absl::Duration limit) {
    while (absl::Now() - since < limit) {
      if (front.Call(absl::StrCat("has ", key, " ", name)) == "yes") return absl::Now() - since;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return absl::InfiniteDuration();
  }

  fs::path root_;
  std::vector<std::unique_ptr<FrontEndProcess>> fronts_;
};

TEST_F(RedisSharedTierProcessesTest, ConcurrentListingsInThreeProcessesLoadFromTheOriginOnce) {
  ASSERT_TRUE(ListEverywhere("/a"));
  EXPECT_EQ(TotalOriginLoads(), 1);
}

TEST_F(RedisSharedTierProcessesTest, ARenameThroughOneIsSeenByTheOthersListingsWithinTheBound) {
  ASSERT_TRUE(ListEverywhere("/a"));
  ASSERT_EQ(fronts_[1]->Call("has /a renamed"), "no");  // cached without it
  const absl::Time renamed = absl::Now();
  ASSERT_EQ(fronts_[0]->Call("rename /a f7 renamed"), "ok");
  for (int i = 1; i < 3; ++i) {
    const absl::Duration seen = TimeUntilSeen(*fronts_[i], "/a", "renamed", renamed, 2 * kInvalidationBound);
    EXPECT_LT(seen, kInvalidationBound) << "front end " << i;
    EXPECT_EQ(fronts_[i]->Call("has /a f7"), "no");
    std::fprintf(stderr, "front end %d saw the rename after %s\n", i, absl::FormatDuration(seen).c_str());
  }
}

TEST_F(RedisSharedTierProcessesTest, RedisKilledAndRestartedCachesKeepServingThenSharingResumes) {
  ASSERT_TRUE(ListEverywhere("/a"));
  ASSERT_TRUE(RedisPeer("kill"));
  auto restart = absl::MakeCleanup([] { RedisPeer("start"); });

  // Down: cached listings are served, uncached ones come from the origin,
  // and a rename shows at once where it was made. No errors.
  EXPECT_TRUE(ListEverywhere("/a"));
  EXPECT_TRUE(ListEverywhere("/b"));
  ASSERT_EQ(fronts_[0]->Call("rename /a f3 moved"), "ok");
  EXPECT_EQ(fronts_[0]->Call("has /a moved"), "yes");

  // Back: the subscribers resync, so the others see the rename their
  // messages missed.
  ASSERT_TRUE(RedisPeer("start"));
  std::move(restart).Cancel();
  const absl::Time back = absl::Now();
  for (int i = 1; i < 3; ++i) {
    EXPECT_LT(TimeUntilSeen(*fronts_[i], "/a", "moved", back, absl::Seconds(5)), absl::Seconds(2))
        << "front end " << i;
  }
  for (auto& f : fronts_) EXPECT_GE(f->Stat("resyncs"), 1);

  // And loads are shared again, once every command connection is back
  // (those dropped by a failed call during the outage reconnect after
  // retry-ms).
  ASSERT_TRUE(ListEverywhere("/c"));
  absl::SleepFor(absl::Milliseconds(300));
  const long before = TotalOriginLoads();
  ASSERT_TRUE(ListEverywhere("/fresh"));
  EXPECT_EQ(TotalOriginLoads() - before, 1);
}

}  // namespace
}  // namespace ferry::testing
