// IrodsCacheSet's shared listing tier: two front ends, each with its own
// iRODS login and its own RedisTier (own connections, own subscriber
// thread), against ferry's iRODS test peer and redis-server. (The
// three-process proof of the tier itself is tests/integration/redis.)
#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "ferry/irods/irods_cache.h"
#include "ferry/irods/irods_file_system.h"
#include "ferry/redis/redis_tier.h"
#include "gtest/gtest.h"
#include "integration/redis/redis_peer.h"

namespace ferry::irods {
namespace {

IrodsAccount Rods() {
  IrodsAccount a;
  a.host = "127.0.0.1";
  a.port = 1247;
  a.zone = "tempZone";
  a.user = "rods";
  a.password = "rods";
  return a;
}

// One NFSRODS-style front end.
struct FrontEnd {
  explicit FrontEnd(const std::string& ns)
      : fs(*IrodsFileSystem::Connect(Rods())),
        tier(redis::RedisTierOptions{.port = ::ferry::testing::RedisPeerPort(), .name_space = ns}),
        caches(fs->client(), IrodsCacheOptions{.shared_listings = &tier}) {}
  std::vector<std::string> Names(const std::string& coll) {
    std::vector<std::string> out;
    auto l = caches.List("rods", coll);
    EXPECT_TRUE(l.ok()) << l.status();
    if (l.ok()) {
      for (const auto& e : **l) out.push_back(e.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::shared_ptr<IrodsFileSystem> fs;
  redis::RedisTier tier;
  IrodsCacheSet caches;
};

class IrodsSharedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string ns = ::ferry::testing::FreshNamespace();
    a_ = std::make_unique<FrontEnd>(ns);
    b_ = std::make_unique<FrontEnd>(ns);
    coll_ = absl::StrCat("/tempZone/home/rods/shared-", ns);
    ASSERT_TRUE(a_->fs->client().CreateCollection(coll_, false).ok());
    ASSERT_TRUE(a_->fs->client().CreateCollection(coll_ + "/x", false).ok());
    absl::SleepFor(absl::Milliseconds(100));  // subscribers connected
  }
  void TearDown() override { (void)a_->fs->client().RemoveCollection(coll_, true); }

  std::unique_ptr<FrontEnd> a_, b_;
  std::string coll_;
};

TEST_F(IrodsSharedCacheTest, ASecondFrontEndTakesTheListingFromTheSharedTierNotFromIrods) {
  EXPECT_EQ(a_->Names(coll_), std::vector<std::string>{"x"});
  EXPECT_EQ(b_->Names(coll_), std::vector<std::string>{"x"});
  EXPECT_EQ(a_->caches.shared_list_stats().origin_loads, 1);
  EXPECT_EQ(b_->caches.shared_list_stats().origin_loads, 0);
  EXPECT_EQ(b_->caches.shared_list_stats().tier_hits, 1);
}

TEST_F(IrodsSharedCacheTest, ARenameThroughOneFrontEndShowsInTheOthersListingWithinASecond) {
  EXPECT_EQ(b_->Names(coll_), std::vector<std::string>{"x"});
  ASSERT_TRUE(a_->fs->client().Rename(coll_ + "/x", coll_ + "/y", /*is_collection=*/true).ok());
  a_->caches.Renamed(coll_ + "/x", coll_ + "/y");
  const absl::Time start = absl::Now();
  while (b_->Names(coll_) != std::vector<std::string>{"y"} && absl::Now() - start < absl::Seconds(2)) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(b_->Names(coll_), std::vector<std::string>{"y"});
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST_F(IrodsSharedCacheTest, AChangeThroughOneFrontEndDropsTheOthersCachedStat) {
  auto before = b_->caches.Stat("rods", coll_ + "/x");
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(a_->fs->client().RemoveCollection(coll_ + "/x", false).ok());
  a_->caches.Changed(coll_ + "/x");
  const absl::Time start = absl::Now();
  while (b_->caches.Stat("rods", coll_ + "/x").ok() && absl::Now() - start < absl::Seconds(2)) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(b_->caches.Stat("rods", coll_ + "/x").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ferry::irods
