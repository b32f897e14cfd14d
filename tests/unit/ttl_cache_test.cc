#include "ferry/cache/ttl_cache.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "unit/notification.h"

namespace ferry {
namespace {

using ::ferry::testing::Notification;
using ::testing::ElementsAre;

using StringCache = TtlCache<std::string, std::string>;

// An executor whose tasks run only when the test says so.
class ManualExecutor {
 public:
  TtlCacheExecutor AsExecutor() {
    return [this](absl::AnyInvocable<void()> fn) { Add(std::move(fn)); };
  }
  void Add(absl::AnyInvocable<void()> fn) {
    MutexLock l(&mu_);
    tasks_.push_back(std::move(fn));
  }
  size_t pending() {
    MutexLock l(&mu_);
    return tasks_.size();
  }
  // Runs the queued tasks (not ones they queue) on this thread.
  void RunAll() {
    std::vector<absl::AnyInvocable<void()>> tasks;
    {
      MutexLock l(&mu_);
      tasks.swap(tasks_);
    }
    for (auto& t : tasks) t();
  }
  // Destroys the queued tasks unrun, as a stopping Runtime does.
  void DropAll() {
    std::vector<absl::AnyInvocable<void()>> tasks;
    {
      MutexLock l(&mu_);
      tasks.swap(tasks_);
    }
  }

 private:
  Mutex mu_;
  std::vector<absl::AnyInvocable<void()>> tasks_ ABSL_GUARDED_BY(mu_);
};

// Yields until `done()`; for waiting on another thread to reach a state the
// cache counts (e.g. "N callers have joined the load"). No sleeping.
template <typename Pred>
void SpinUntil(Pred done) {
  while (!done()) std::this_thread::yield();
}

// A loader returning `value` and counting its calls.
auto CountingLoader(std::atomic<int>* calls, std::string value) {
  return [calls, value](const std::string&) -> absl::StatusOr<std::string> {
    calls->fetch_add(1);
    return value;
  };
}

StringCache::Options BasicOptions(const Clock* clock) {
  StringCache::Options o;
  o.refresh_time = absl::Seconds(30);
  o.negative_refresh_time = absl::Seconds(1);
  o.clock = clock;
  return o;
}

// Weighs an entry by its value's length.
int64_t WeighByLength(const std::string&, const std::string& value) {
  return static_cast<int64_t>(value.size());
}

// Every counter, so a mismatch between two TtlCacheStats prints readably.
std::string Counts(const TtlCacheStats& s) {
  return absl::StrCat("hits=", s.hits, " negative_hits=", s.negative_hits, " misses=", s.misses,
                      " loads=", s.loads, " load_failures=", s.load_failures,
                      " refreshes=", s.refreshes, " evictions=", s.evictions,
                      " expirations=", s.expirations, " invalidations=", s.invalidations,
                      " loads_in_flight=", s.loads_in_flight);
}

// A cache with BasicOptions on a clock that moves only when the test says.
class TtlCacheOnAClockTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  StringCache cache_{BasicOptions(&clock_)};
};

// ---- Loading, sharing, expiry ---------------------------------------------

TEST_F(TtlCacheOnAClockTest, MissLoadsAndLaterGetsHitWithoutLoading) {
  std::atomic<int> calls{0};
  auto first = cache_.Get("/a", CountingLoader(&calls, "v1"));
  auto second = cache_.Get("/a", CountingLoader(&calls, "v2"));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(**first, "v1");
  EXPECT_EQ(**second, "v1");
  EXPECT_EQ(calls.load(), 1);
}

TEST(TtlCacheTest, HitsShareOneValueInsteadOfCopying) {
  using Listing = std::vector<std::string>;
  TtlCache<std::string, Listing> cache;
  auto load = [](const std::string&) -> absl::StatusOr<Listing> {
    return Listing(10'000, "entry");
  };
  auto a = cache.Get("/big", load);
  auto b = cache.Get("/big", load);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());  // the same object, handed out twice
  EXPECT_EQ((*a)->size(), 10'000u);
}

TEST(TtlCacheTest, LoaderMayHandOverASharedValue) {
  TtlCache<int, std::string> cache;
  auto shared = std::make_shared<const std::string>("shared");
  auto r = cache.Get(1, [&](int) -> absl::StatusOr<std::shared_ptr<const std::string>> {
    return shared;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->get(), shared.get());
}

TEST_F(TtlCacheOnAClockTest, EntryExpiresAfterTheRefreshTime) {
  std::atomic<int> calls{0};
  ASSERT_TRUE(cache_.Get("/a", CountingLoader(&calls, "v1")).ok());
  clock_.Advance(absl::Seconds(29));
  EXPECT_EQ(**cache_.Get("/a", CountingLoader(&calls, "v2")), "v1");
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(**cache_.Get("/a", CountingLoader(&calls, "v2")), "v2");
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(cache_.stats().expirations, 1);
}

TEST_F(TtlCacheOnAClockTest, PutWithItsOwnRefreshTimeOverridesTheCacheDefault) {
  cache_.Put("/short", std::make_shared<const std::string>("s"), absl::Seconds(5));
  cache_.Put("/default", std::string("d"));
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(cache_.GetIfPresent("/short"), nullptr);
  ASSERT_NE(cache_.GetIfPresent("/default"), nullptr);
  EXPECT_EQ(*cache_.GetIfPresent("/default"), "d");
}

TEST(TtlCacheTest, RefreshTimeHookSetsEachEntrysTime) {
  ManualClock clock;
  StringCache::Options o = BasicOptions(&clock);
  o.refresh_time_for = [](const std::string& key, const std::string&) {
    return key == "/hot" ? absl::Seconds(2) : absl::Seconds(30);
  };
  StringCache cache(std::move(o));
  std::atomic<int> calls{0};
  ASSERT_TRUE(cache.Get("/hot", CountingLoader(&calls, "h")).ok());
  ASSERT_TRUE(cache.Get("/cold", CountingLoader(&calls, "c")).ok());
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(cache.GetIfPresent("/hot"), nullptr);
  EXPECT_NE(cache.GetIfPresent("/cold"), nullptr);
}

TEST_F(TtlCacheOnAClockTest, GetIfPresentNeverLoads) {
  EXPECT_EQ(cache_.GetIfPresent("/a"), nullptr);
  cache_.Put("/a", std::string("v"));
  ASSERT_NE(cache_.GetIfPresent("/a"), nullptr);
  EXPECT_EQ(cache_.stats().loads, 0);
}

// ---- Single-flight and errors ---------------------------------------------

TEST(TtlCacheTest, SixtyFourConcurrentMissesRunTheLoaderOnce) {
  constexpr int kThreads = 64;
  StringCache cache;
  std::atomic<int> calls{0};
  std::vector<absl::StatusOr<std::shared_ptr<const std::string>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      results[i] = cache.Get("/k", [&](const std::string&) -> absl::StatusOr<std::string> {
        calls.fetch_add(1);
        // Hold the load until every caller has missed and joined it.
        SpinUntil([&] { return cache.stats().misses == kThreads; });
        return std::string("v");
      });
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->get(), results[0]->get());  // one shared value for all
  }
  EXPECT_EQ(cache.stats().loads, 1);
}

// What the two callers of Get("/k") in TwoCallersOfOneLoad got.
struct TwoCallers {
  absl::Status loader;  // the caller that ran the load
  absl::Status waiter;  // the caller that joined it
};

// Has two callers Get("/k") through one run of `load`, which is held until
// the second caller has joined it; returns what each got.
TwoCallers TwoCallersOfOneLoad(StringCache& cache,
                               absl::AnyInvocable<absl::StatusOr<std::string>()> load) {
  Notification release;
  auto held = [&](const std::string&) -> absl::StatusOr<std::string> {
    release.Wait();
    return load();
  };
  TwoCallers got;
  std::thread loader([&] { got.loader = cache.Get("/k", held).status(); });
  SpinUntil([&] { return cache.stats().loads_in_flight == 1; });
  std::thread waiter([&] { got.waiter = cache.Get("/k", held).status(); });
  SpinUntil([&] { return cache.stats().misses == 2; });
  release.Notify();
  loader.join();
  waiter.join();
  return got;
}

TEST(TtlCacheTest, WaitersReceiveTheSameErrorAsTheLoader) {
  StringCache cache;
  const TwoCallers got = TwoCallersOfOneLoad(cache, []() -> absl::StatusOr<std::string> {
    return absl::UnavailableError("list /k: connection reset");
  });
  EXPECT_EQ(got.loader, absl::UnavailableError("list /k: connection reset"));
  EXPECT_EQ(got.waiter, got.loader);
  EXPECT_EQ(cache.stats().loads, 1);
}

TEST(TtlCacheTest, ErrorsAreNotCached) {
  StringCache cache;
  std::atomic<int> calls{0};
  auto failing = [&](const std::string&) -> absl::StatusOr<std::string> {
    calls.fetch_add(1);
    return absl::PermissionDeniedError("stat /k: denied");
  };
  EXPECT_EQ(cache.Get("/k", failing).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(cache.Get("/k", failing).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(cache.size(), 0);
  EXPECT_EQ(cache.stats().load_failures, 2);
}

TEST_F(TtlCacheOnAClockTest, NotFoundIsCachedForItsOwnShorterTime) {
  std::atomic<int> calls{0};
  auto missing = [&](const std::string&) -> absl::StatusOr<std::string> {
    calls.fetch_add(1);
    return absl::NotFoundError("stat /gone: no such path");
  };
  EXPECT_EQ(cache_.Get("/gone", missing).status(), absl::NotFoundError("stat /gone: no such path"));
  clock_.Advance(absl::Milliseconds(999));
  EXPECT_EQ(cache_.Get("/gone", missing).status(), absl::NotFoundError("stat /gone: no such path"));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(cache_.stats().negative_hits, 1);
  clock_.Advance(absl::Milliseconds(1));  // the negative time (1 s) is up
  EXPECT_EQ(cache_.Get("/gone", missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(cache_.stats().load_failures, 0);  // NotFound is an answer
}

TEST(TtlCacheTest, NotFoundIsNotCachedWhenNegativeTimeIsZero) {
  ManualClock clock;
  StringCache::Options o = BasicOptions(&clock);
  o.negative_refresh_time = absl::ZeroDuration();
  StringCache cache(std::move(o));
  std::atomic<int> calls{0};
  auto missing = [&](const std::string&) -> absl::StatusOr<std::string> {
    calls.fetch_add(1);
    return absl::NotFoundError("gone");
  };
  (void)cache.Get("/gone", missing);
  (void)cache.Get("/gone", missing);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(cache.stats().negative_hits, 0);
}

TEST_F(TtlCacheOnAClockTest, PutReplacesACachedNotFound) {
  (void)cache_.Get("/p", [](const std::string&) -> absl::StatusOr<std::string> {
    return absl::NotFoundError("gone");
  });
  cache_.Put("/p", std::string("created"));
  auto r = cache_.Get("/p", [](const std::string&) -> absl::StatusOr<std::string> {
    return absl::InternalError("must not load");
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, "created");
}

TEST(TtlCacheTest, ThrowingLoaderGivesEveryWaiterAnInternalError) {
  StringCache cache;
  const TwoCallers got = TwoCallersOfOneLoad(cache, []() -> absl::StatusOr<std::string> {
    throw std::runtime_error("jargon blew up");
  });
  EXPECT_EQ(got.loader.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(got.loader.message()), ::testing::HasSubstr("jargon blew up"));
  EXPECT_EQ(got.waiter, got.loader);
  EXPECT_EQ(cache.stats().load_failures, 1);
  EXPECT_EQ(cache.stats().loads_in_flight, 0);
}

// ---- Invalidation racing with loads ---------------------------------------

// Starts a Get of `key` on its own thread whose loader blocks on `release`
// and returns `value`; returns once the load is running.
class BlockedLoad {
 public:
  BlockedLoad(StringCache& cache, std::string key, std::string value, std::atomic<int>* calls)
      : thread_([this, &cache, key, value, calls] {
          result_ = cache.Get(key, [this, value, calls](const std::string&)
                                       -> absl::StatusOr<std::string> {
            calls->fetch_add(1);
            started_.Notify();
            release_.Wait();
            return value;
          });
        }) {
    started_.Wait();
  }
  ~BlockedLoad() {
    Release();
    if (thread_.joinable()) thread_.join();
  }
  void Release() { release_.Notify(); }
  absl::StatusOr<std::shared_ptr<const std::string>> Join() {
    Release();
    thread_.join();
    return result_;
  }

 private:
  Notification started_;
  Notification release_;
  absl::StatusOr<std::shared_ptr<const std::string>> result_;
  std::thread thread_;  // last: starts after the members it uses exist
};

TEST(TtlCacheTest, InvalidateDuringLoadGivesWaitersTheResultButDoesNotStoreIt) {
  StringCache cache;
  std::atomic<int> calls{0};
  BlockedLoad load(cache, "/k", "old", &calls);
  absl::StatusOr<std::shared_ptr<const std::string>> waiter;
  std::thread t([&] { waiter = cache.Get("/k", CountingLoader(&calls, "unused")); });
  SpinUntil([&] { return cache.stats().misses == 2; });

  EXPECT_TRUE(cache.Invalidate("/k"));
  auto loaded = load.Join();
  t.join();

  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(waiter.ok());
  EXPECT_EQ(**loaded, "old");
  EXPECT_EQ(**waiter, "old");
  EXPECT_EQ(cache.GetIfPresent("/k"), nullptr);  // not stored
  EXPECT_EQ(**cache.Get("/k", CountingLoader(&calls, "new")), "new");
  EXPECT_EQ(calls.load(), 2);
}

TEST(TtlCacheTest, GetAfterInvalidationDuringLoadStartsAFreshLoad) {
  StringCache cache;
  std::atomic<int> calls{0};
  BlockedLoad stale(cache, "/k", "stale", &calls);
  cache.Invalidate("/k");
  // Does not join the superseded load (which is still blocked).
  auto fresh = cache.Get("/k", CountingLoader(&calls, "fresh"));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(**fresh, "fresh");
  EXPECT_EQ(**stale.Join(), "stale");
  // The superseded load finishing late does not overwrite the fresh value.
  EXPECT_EQ(*cache.GetIfPresent("/k"), "fresh");
  EXPECT_EQ(calls.load(), 2);
}

TEST(TtlCacheTest, PutDuringLoadWinsOverTheLoad) {
  StringCache cache;
  std::atomic<int> calls{0};
  BlockedLoad load(cache, "/k", "loaded", &calls);
  cache.Put("/k", std::string("put"));
  EXPECT_EQ(**load.Join(), "loaded");
  EXPECT_EQ(*cache.GetIfPresent("/k"), "put");
}

TEST(TtlCacheTest, InvalidatePrefixDuringLoadSupersedesIt) {
  StringCache cache;
  std::atomic<int> calls{0};
  BlockedLoad load(cache, "/a/b/c", "old", &calls);
  cache.InvalidatePrefix("/a/b");
  EXPECT_EQ(**load.Join(), "old");
  EXPECT_EQ(cache.GetIfPresent("/a/b/c"), nullptr);
}

TEST(TtlCacheTest, InvalidateAllDuringLoadSupersedesIt) {
  StringCache cache;
  std::atomic<int> calls{0};
  BlockedLoad load(cache, "/k", "old", &calls);
  cache.InvalidateAll();
  EXPECT_EQ(**load.Join(), "old");
  EXPECT_EQ(cache.GetIfPresent("/k"), nullptr);
  EXPECT_EQ(cache.size(), 0);
}

// ---- Invalidation by key, prefix, predicate --------------------------------

std::vector<std::string> PresentKeys(StringCache& cache, const std::vector<std::string>& keys) {
  std::vector<std::string> present;
  for (const auto& k : keys) {
    if (cache.GetIfPresent(k) != nullptr) present.push_back(k);
  }
  return present;
}

TEST(TtlCacheTest, InvalidateDropsOnlyThatKey) {
  StringCache cache;
  cache.Put("/a", std::string("1"));
  cache.Put("/b", std::string("2"));
  EXPECT_TRUE(cache.Invalidate("/a"));
  EXPECT_FALSE(cache.Invalidate("/a"));
  EXPECT_EQ(cache.GetIfPresent("/a"), nullptr);
  EXPECT_NE(cache.GetIfPresent("/b"), nullptr);
}

const std::vector<std::string> kTree = {"/a", "/a/b", "/a/b/c", "/a/b/c/d", "/a/bc", "/a/b2",
                                        "/ab", "a/b", "/x/a/b"};

TEST(TtlCacheTest, InvalidatePrefixDropsThePathAndEverythingBelowIt) {
  StringCache cache;
  for (const auto& k : kTree) cache.Put(k, std::string("v"));
  EXPECT_EQ(cache.InvalidatePrefix("/a/b"), 3u);
  EXPECT_THAT(PresentKeys(cache, kTree), ElementsAre("/a", "/a/bc", "/a/b2", "/ab", "a/b", "/x/a/b"));
}

TEST(TtlCacheTest, InvalidatePrefixIgnoresTrailingSlashes) {
  StringCache cache;
  for (const auto& k : kTree) cache.Put(k, std::string("v"));
  EXPECT_EQ(cache.InvalidatePrefix("/a/b//"), 3u);
  EXPECT_THAT(PresentKeys(cache, kTree), ElementsAre("/a", "/a/bc", "/a/b2", "/ab", "a/b", "/x/a/b"));
}

TEST(TtlCacheTest, InvalidatePrefixOfRootDropsEveryAbsolutePath) {
  StringCache cache;
  for (const auto& k : kTree) cache.Put(k, std::string("v"));
  EXPECT_EQ(cache.InvalidatePrefix("/"), kTree.size() - 1);
  EXPECT_THAT(PresentKeys(cache, kTree), ElementsAre("a/b"));
}

TEST(TtlCacheTest, InvalidatePrefixWithEmptyPrefixDropsNothing) {
  StringCache cache;
  for (const auto& k : kTree) cache.Put(k, std::string("v"));
  EXPECT_EQ(cache.InvalidatePrefix(""), 0u);
  EXPECT_EQ(cache.size(), static_cast<int64_t>(kTree.size()));
}

TEST(TtlCacheTest, InvalidatePrefixMatchesWholeKeysNotTheirTail) {
  // NFSRODS-style keys "<user>#<path>": the prefix includes the user.
  StringCache cache;
  cache.Put("alice#/z/home/d", std::string("v"));
  cache.Put("alice#/z/home/d/e", std::string("v"));
  cache.Put("bob#/z/home/d", std::string("v"));
  EXPECT_EQ(cache.InvalidatePrefix("alice#/z/home/d"), 2u);
  EXPECT_NE(cache.GetIfPresent("bob#/z/home/d"), nullptr);
}

TEST(TtlCacheTest, InvalidateIfDropsEveryUsersKeysForAPath) {
  StringCache cache;
  cache.Put("alice#/z/d", std::string("v"));
  cache.Put("bob#/z/d", std::string("v"));
  cache.Put("bob#/z/other", std::string("v"));
  EXPECT_EQ(cache.InvalidateIf([](const std::string& k) {
    return k.ends_with("#/z/d");
  }), 2u);
  EXPECT_EQ(cache.size(), 1);
  EXPECT_EQ(cache.stats().invalidations, 2);
}

TEST(TtlCacheTest, InvalidateAllDropsEverything) {
  StringCache cache;
  for (const auto& k : kTree) cache.Put(k, std::string("v"));
  EXPECT_EQ(cache.InvalidateAll(), kTree.size());
  EXPECT_EQ(cache.size(), 0);
  EXPECT_EQ(cache.weight(), 0);
}

// ---- Refresh-ahead ---------------------------------------------------------

// A cache refreshing entries 20 s into their 30 s, on `executor` (or on
// none), and the counted loads of the tests.
struct RefreshFixture {
  explicit RefreshFixture(bool with_executor = true) {
    StringCache::Options o;
    o.refresh_time = absl::Seconds(30);
    o.refresh_after = absl::Seconds(20);
    o.clock = &clock;
    if (with_executor) o.executor = executor.AsExecutor();
    cache = std::make_unique<StringCache>(std::move(o));
  }
  // Loads "/k" as "v1" (one call) and lets 21 s pass: the entry is fresh
  // but due for a reload.
  void LoadAnEntryDueForRefresh() {
    ASSERT_TRUE(cache->Get("/k", CountingLoader(&calls, "v1")).ok());
    clock.Advance(absl::Seconds(21));
  }
  ManualClock clock;
  ManualExecutor executor;
  std::unique_ptr<StringCache> cache;
  std::atomic<int> calls{0};
};

TEST(TtlCacheTest, RefreshAheadServesTheStaleValueWhileOneReloadRuns) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v2")), "v1");  // at once
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v3")), "v1");
  EXPECT_EQ(f.executor.pending(), 1u);  // one reload, not two
  EXPECT_EQ(f.calls.load(), 1);           // nothing loaded in the callers
  EXPECT_EQ(f.cache->stats().loads_in_flight, 1);
  f.executor.RunAll();
  EXPECT_EQ(f.calls.load(), 2);
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v4")), "v2");
  EXPECT_EQ(f.cache->stats().refreshes, 1);
  EXPECT_EQ(f.cache->stats().loads_in_flight, 0);
}

TEST(TtlCacheTest, RefreshedValueGetsAFullRefreshTime) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  (void)f.cache->Get("/k", CountingLoader(&f.calls, "v2"));
  f.executor.RunAll();
  f.clock.Advance(absl::Seconds(29));  // 50 s after the first load, 29 after the reload
  EXPECT_EQ(*f.cache->GetIfPresent("/k"), "v2");
}

TEST(TtlCacheTest, FailedRefreshKeepsTheOldValueUntilItExpires) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  (void)f.cache->Get("/k", [&](const std::string&) -> absl::StatusOr<std::string> {
    f.calls.fetch_add(1);
    return absl::UnavailableError("server gone");
  });
  f.executor.RunAll();
  EXPECT_EQ(f.cache->stats().load_failures, 1);
  f.clock.Advance(absl::Seconds(8));  // 29 s: still within the refresh time
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v2")), "v1");
  EXPECT_EQ(f.executor.pending(), 0u);  // no retry storm against a failing server
  f.clock.Advance(absl::Seconds(1));    // 30 s: expired
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v2")), "v2");
  EXPECT_EQ(f.calls.load(), 3);
}

TEST(TtlCacheTest, WithoutAnExecutorEntriesJustExpire) {
  RefreshFixture f(/*with_executor=*/false);
  f.LoadAnEntryDueForRefresh();
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v2")), "v1");
  EXPECT_EQ(f.calls.load(), 1);
  EXPECT_EQ(f.cache->stats().refreshes, 0);
  f.clock.Advance(absl::Seconds(9));
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v2")), "v2");
  EXPECT_EQ(f.calls.load(), 2);
}

TEST(TtlCacheTest, RefreshDroppedByTheExecutorLeavesNothingInFlight) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  (void)f.cache->Get("/k", CountingLoader(&f.calls, "v2"));
  f.executor.DropAll();
  EXPECT_EQ(f.cache->stats().loads_in_flight, 0);
  EXPECT_EQ(*f.cache->GetIfPresent("/k"), "v1");  // kept until it expires
  f.clock.Advance(absl::Seconds(9));
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v3")), "v3");
}

TEST(TtlCacheTest, MissWhileARefreshIsQueuedLoadsInTheCallerOnce) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  (void)f.cache->Get("/k", CountingLoader(&f.calls, "queued"));
  f.clock.Advance(absl::Seconds(9));  // expired before the executor ran the reload
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "caller")), "caller");
  f.executor.RunAll();  // the queued reload finds its work done
  EXPECT_EQ(f.calls.load(), 2);
  EXPECT_EQ(*f.cache->GetIfPresent("/k"), "caller");
}

TEST(TtlCacheTest, InvalidationDuringRefreshDiscardsTheReload) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  (void)f.cache->Get("/k", CountingLoader(&f.calls, "reloaded"));
  f.cache->Invalidate("/k");
  f.executor.RunAll();
  EXPECT_EQ(f.cache->GetIfPresent("/k"), nullptr);
}

TEST(TtlCacheTest, QueuedRefreshDoesNothingAfterTheCacheIsGone) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  (void)f.cache->Get("/k", CountingLoader(&f.calls, "v2"));
  f.cache.reset();
  f.executor.RunAll();
  EXPECT_EQ(f.calls.load(), 1);
}

TEST(TtlCacheTest, RefreshAheadRunsOnARuntimesBlockingPool) {
  Runtime rt({.io_threads = 1, .blocking_threads = 1});
  ManualClock clock;
  StringCache cache({.refresh_time = absl::Seconds(30),
                     .refresh_after = absl::Seconds(20),
                     .executor = [&rt](auto fn) { rt.PostBlocking(std::move(fn)); },
                     .clock = &clock});
  ASSERT_TRUE(cache.Get("/k", [](const std::string&) -> absl::StatusOr<std::string> {
    return std::string("v1");
  }).ok());
  clock.Advance(absl::Seconds(21));
  auto reloaded = std::make_shared<Notification>();
  EXPECT_EQ(**cache.Get("/k", [reloaded](const std::string&) -> absl::StatusOr<std::string> {
    reloaded->Notify();
    return std::string("v2");
  }), "v1");
  reloaded->Wait();
  SpinUntil([&] { return cache.stats().loads_in_flight == 0; });
  EXPECT_EQ(*cache.GetIfPresent("/k"), "v2");
}

// ---- TryGetFresh (a hit that never waits) --------------------------------

TEST_F(TtlCacheOnAClockTest, TryGetFreshReturnsAStoredValueAndCountsOneHit) {
  cache_.Put("/a", std::string("v"));
  StringCache::ValuePtr v = cache_.TryGetFresh("/a");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, "v");
  EXPECT_EQ(Counts(cache_.stats()), Counts(TtlCacheStats{.hits = 1}));
}

TEST_F(TtlCacheOnAClockTest, TryGetFreshOnAMissCountsNothingAndLoadsNothing) {
  EXPECT_EQ(cache_.TryGetFresh("/a"), nullptr);
  EXPECT_EQ(Counts(cache_.stats()), Counts(TtlCacheStats{}));
}

TEST_F(TtlCacheOnAClockTest, TryGetFreshLeavesAnExpiredEntryForGetToDropAndCount) {
  cache_.Put("/a", std::string("old"));
  clock_.Advance(absl::Seconds(30));
  EXPECT_EQ(cache_.TryGetFresh("/a"), nullptr);
  EXPECT_EQ(cache_.size(), 1);  // not dropped
  EXPECT_EQ(Counts(cache_.stats()), Counts(TtlCacheStats{}));
  std::atomic<int> calls{0};
  EXPECT_EQ(**cache_.Get("/a", CountingLoader(&calls, "new")), "new");
  EXPECT_EQ(Counts(cache_.stats()),
            Counts(TtlCacheStats{.misses = 1, .loads = 1, .expirations = 1}));
}

TEST_F(TtlCacheOnAClockTest, TryGetFreshLeavesACachedNotFoundForGetToCount) {
  auto missing = [](const std::string&) -> absl::StatusOr<std::string> {
    return absl::NotFoundError("gone");
  };
  ASSERT_EQ(cache_.Get("/n", missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache_.TryGetFresh("/n"), nullptr);
  EXPECT_EQ(cache_.stats().negative_hits, 0);
  EXPECT_EQ(cache_.Get("/n", missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache_.stats().negative_hits, 1);
}

TEST(TtlCacheTest, TryGetFreshLeavesAnEntryDueForRefreshToGet) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  EXPECT_EQ(f.cache->TryGetFresh("/k"), nullptr);  // Get must see it to start the reload
  EXPECT_EQ(f.executor.pending(), 0u);
  EXPECT_EQ(**f.cache->Get("/k", CountingLoader(&f.calls, "v2")), "v1");
  EXPECT_EQ(f.executor.pending(), 1u);
  EXPECT_EQ(f.cache->stats().refreshes, 1);
}

TEST(TtlCacheTest, TryGetFreshServesAnEntryWhoseRefreshHasStarted) {
  RefreshFixture f;
  f.LoadAnEntryDueForRefresh();
  (void)f.cache->Get("/k", CountingLoader(&f.calls, "v2"));  // queues the one reload
  ASSERT_NE(f.cache->TryGetFresh("/k"), nullptr);
  EXPECT_EQ(*f.cache->TryGetFresh("/k"), "v1");
  EXPECT_EQ(f.executor.pending(), 1u);
}

TEST(TtlCacheTest, TryGetFreshMovesTheEntryToTheLruFront) {
  StringCache cache({.max_entries = 2});
  cache.Put("a", std::string("1"));
  cache.Put("b", std::string("2"));
  ASSERT_NE(cache.TryGetFresh("a"), nullptr);  // a is now the most recent
  cache.Put("c", std::string("3"));
  EXPECT_EQ(PresentKeys(cache, {"a", "b", "c"}), (std::vector<std::string>{"a", "c"}));
}

TEST_F(TtlCacheOnAClockTest, TryVisitFreshShowsAFreshValueInPlaceAndCountsOneHit) {
  cache_.Put("/a", std::string("v"));
  const std::string* seen = nullptr;
  EXPECT_TRUE(cache_.TryVisitFresh("/a", [&](const StringCache::ValuePtr& v) { seen = v.get(); }));
  EXPECT_EQ(seen, cache_.GetIfPresent("/a").get());  // the stored value, not a copy
  EXPECT_EQ(cache_.stats().hits, 2);
}

TEST_F(TtlCacheOnAClockTest, TryVisitFreshDoesNotCallFnWhenTryGetFreshWouldReturnNull) {
  cache_.Put("/a", std::string("old"));
  clock_.Advance(absl::Seconds(30));
  bool called = false;
  auto fn = [&](const StringCache::ValuePtr&) { called = true; };
  EXPECT_FALSE(cache_.TryVisitFresh("/a", fn));       // expired
  EXPECT_FALSE(cache_.TryVisitFresh("/absent", fn));  // never stored
  EXPECT_FALSE(called);
  EXPECT_EQ(Counts(cache_.stats()), Counts(TtlCacheStats{}));
}

TEST(TtlCacheTest, TryGetFreshDoesNotWaitWhileAnotherThreadHoldsTheShardLock) {
  StringCache cache({.shards = 1});  // "/a" and the keys InvalidateIf visits share the one lock
  cache.Put("/a", std::string("v"));
  Notification inside, release;
  // InvalidateIf runs its predicate under the shard lock: hold it there.
  std::thread holder([&] {
    bool first = true;
    cache.InvalidateIf([&](const std::string&) {
      if (first) {
        first = false;
        inside.Notify();
        release.Wait();
      }
      return false;
    });
  });
  inside.Wait();
  EXPECT_EQ(cache.TryGetFresh("/a"), nullptr);
  EXPECT_EQ(cache.TryGetFresh("/a"), nullptr);
  release.Notify();
  holder.join();
  EXPECT_EQ(cache.stats().hits, 0);
  EXPECT_NE(cache.TryGetFresh("/a"), nullptr);
}

// ---- Bounds and eviction ---------------------------------------------------

TEST(TtlCacheTest, CountBoundEvictsTheLeastRecentlyUsedEntry) {
  StringCache cache({.max_entries = 3});
  cache.Put("a", std::string("1"));
  cache.Put("b", std::string("2"));
  cache.Put("c", std::string("3"));
  ASSERT_NE(cache.GetIfPresent("a"), nullptr);  // a is now the most recent
  cache.Put("d", std::string("4"));
  EXPECT_EQ(cache.GetIfPresent("b"), nullptr);
  cache.Put("e", std::string("5"));
  EXPECT_EQ(cache.GetIfPresent("c"), nullptr);
  EXPECT_EQ(PresentKeys(cache, {"a", "b", "c", "d", "e"}), (std::vector<std::string>{"a", "d", "e"}));
  EXPECT_EQ(cache.stats().evictions, 2);
}

TEST(TtlCacheTest, WeightBoundEvictsLeastRecentlyUsedUntilTheNewEntryFits) {
  StringCache cache({.max_weight = 10, .weigher = WeighByLength});
  cache.Put("a", std::string(4, 'x'));
  cache.Put("b", std::string(3, 'x'));
  cache.Put("c", std::string(3, 'x'));
  EXPECT_EQ(cache.weight(), 10);
  ASSERT_NE(cache.GetIfPresent("a"), nullptr);
  cache.Put("d", std::string(5, 'x'));  // b and c (least recent) must go
  EXPECT_EQ(PresentKeys(cache, {"a", "b", "c", "d"}), (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(cache.weight(), 9);
  EXPECT_EQ(cache.stats().evictions, 2);
}

TEST(TtlCacheTest, ValueHeavierThanTheBoundIsReturnedButNotStored) {
  StringCache cache({.max_weight = 10, .weigher = WeighByLength});
  cache.Put("small", std::string(2, 'x'));
  auto r = cache.Get("huge", [](const std::string&) -> absl::StatusOr<std::string> {
    return std::string(11, 'x');
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->size(), 11u);
  EXPECT_EQ(cache.GetIfPresent("huge"), nullptr);
  EXPECT_NE(cache.GetIfPresent("small"), nullptr);  // nothing evicted for it
}

TEST(TtlCacheTest, ReplacingAnEntryUpdatesTheWeight) {
  StringCache cache({.weigher = WeighByLength});
  cache.Put("a", std::string(4, 'x'));
  cache.Put("a", std::string(7, 'x'));
  EXPECT_EQ(cache.weight(), 7);
  EXPECT_EQ(cache.size(), 1);
}

TEST(TtlCacheTest, SmallBoundsUseOneExactShard) {
  StringCache cache({.max_entries = 100});
  EXPECT_EQ(cache.shard_count(), 1);
}

TEST(TtlCacheTest, ShardedCacheNeverExceedsItsBound) {
  TtlCache<uint64_t, uint64_t>::Options o;
  o.max_entries = 8192;
  TtlCache<uint64_t, uint64_t> cache(std::move(o));
  EXPECT_GT(cache.shard_count(), 1);
  for (uint64_t k = 0; k < 50'000; ++k) cache.Put(k, k);
  EXPECT_LE(cache.size(), 8192);
  EXPECT_GT(cache.size(), 8192 * 9 / 10);  // and is not far below it
}

TEST(TtlCacheTest, EvictingAnExpiredEntryCountsAsExpiration) {
  ManualClock clock;
  StringCache::Options o = BasicOptions(&clock);
  o.max_entries = 1;
  StringCache cache(std::move(o));
  cache.Put("a", std::string("1"));
  clock.Advance(absl::Seconds(31));
  cache.Put("b", std::string("2"));
  EXPECT_EQ(cache.stats().expirations, 1);
  EXPECT_EQ(cache.stats().evictions, 0);
}

TEST_F(TtlCacheOnAClockTest, PurgeExpiredDropsOnlyExpiredEntries) {
  cache_.Put("old", std::string("1"));
  clock_.Advance(absl::Seconds(20));
  cache_.Put("new", std::string("2"));
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(cache_.PurgeExpired(), 1u);
  EXPECT_EQ(cache_.size(), 1);
  EXPECT_NE(cache_.GetIfPresent("new"), nullptr);
}

// ---- Stats -----------------------------------------------------------------

TEST(TtlCacheTest, StatsCountEveryKindOfEvent) {
  ManualClock clock;
  StringCache::Options o = BasicOptions(&clock);
  o.max_entries = 2;
  StringCache cache(std::move(o));
  std::atomic<int> calls{0};
  auto fail = [](const std::string&) -> absl::StatusOr<std::string> {
    return absl::UnavailableError("down");
  };
  auto missing = [](const std::string&) -> absl::StatusOr<std::string> {
    return absl::NotFoundError("gone");
  };
  (void)cache.Get("a", CountingLoader(&calls, "1"));  // miss, load
  (void)cache.Get("a", CountingLoader(&calls, "1"));  // hit
  (void)cache.Get("x", fail);                          // miss, load, failure
  (void)cache.Get("n", missing);                       // miss, load (negative entry)
  (void)cache.Get("n", missing);                       // negative hit
  (void)cache.Get("b", CountingLoader(&calls, "2"));  // miss, load, evicts a
  clock.Advance(absl::Seconds(30));
  (void)cache.Get("b", CountingLoader(&calls, "2"));  // expired: miss, load
  cache.Invalidate("b");                               // invalidation

  TtlCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.negative_hits, 1);
  EXPECT_EQ(s.misses, 5);
  EXPECT_EQ(s.loads, 5);
  EXPECT_EQ(s.load_failures, 1);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.expirations, 1);  // "b", found expired by the second Get
  EXPECT_EQ(s.invalidations, 1);
  EXPECT_EQ(s.loads_in_flight, 0);
  EXPECT_EQ(s.refreshes, 0);
}

TEST(TtlCacheTest, LoadsInFlightCountsRunningLoads) {
  StringCache cache;
  std::atomic<int> calls{0};
  BlockedLoad a(cache, "/a", "1", &calls);
  BlockedLoad b(cache, "/b", "2", &calls);
  EXPECT_EQ(cache.stats().loads_in_flight, 2);
  (void)a.Join();
  (void)b.Join();
  EXPECT_EQ(cache.stats().loads_in_flight, 0);
}

// ---- Concurrency soak (for the sanitizers) ---------------------------------

// Runs op(thread, i) for i in [0, ops) on each of `threads` threads at
// once; returns when all are done.
void RunOnThreads(int threads, int ops, absl::FunctionRef<void(int thread, int i)> op) {
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      for (int i = 0; i < ops; ++i) op(t, i);
    });
  }
  for (auto& th : running) th.join();
}

// Loads a key as its own value, but keys ending in "3" are NotFound, so the
// soaks see negative entries too.
absl::StatusOr<std::string> LoadKeyAsItselfUnlessItEndsIn3(const std::string& key) {
  if (key.ends_with("3")) return absl::NotFoundError("gone");
  return key;
}

TEST(TtlCacheTest, ConcurrentGetsPutsAndInvalidationsStayConsistent) {
  ManualClock clock;
  TtlCache<std::string, std::string>::Options o;
  o.max_entries = 16;
  o.clock = &clock;
  StringCache cache(std::move(o));
  RunOnThreads(/*threads=*/4, /*ops=*/2000, [&](int t, int i) {
    const std::string key = "/d/" + std::to_string((i * 7 + t) % 24);
    switch (i % 6) {
      case 0: cache.Invalidate(key); break;
      case 1: cache.Put(key, std::string("p")); break;
      case 2: cache.InvalidatePrefix("/d/1"); break;
      case 3: clock.Advance(absl::Seconds(1)); break;
      default: {
        auto r = cache.Get(key, LoadKeyAsItselfUnlessItEndsIn3);
        if (r.ok()) {
          EXPECT_TRUE(**r == key || **r == "p");
        }
      }
    }
  });
  EXPECT_LE(cache.size(), 16);
  EXPECT_EQ(cache.stats().loads_in_flight, 0);
}

// Every lookup is TryGetFresh, then Get when that returned null, as the
// Python binding does: each must count exactly one hit, negative hit or miss.
TEST(TtlCacheTest, ConcurrentTryGetFreshWithFallbackCountsEachLookupOnce) {
  ManualClock clock;
  StringCache cache({.max_entries = 8, .clock = &clock});
  std::atomic<int64_t> lookups{0};
  RunOnThreads(/*threads=*/4, /*ops=*/3000, [&](int t, int i) {
    const std::string key = "/d/" + std::to_string((i * 5 + t) % 12);
    switch (i % 8) {
      case 0: cache.Invalidate(key); break;
      case 1: cache.Put(key, std::string("p")); break;
      case 2: clock.Advance(absl::Seconds(1)); break;
      default: {
        lookups.fetch_add(1);
        StringCache::ValuePtr v = cache.TryGetFresh(key);
        if (v == nullptr) {
          auto r = cache.Get(key, LoadKeyAsItselfUnlessItEndsIn3);
          if (r.ok()) v = *r;
        }
        if (v != nullptr) {
          EXPECT_TRUE(*v == key || *v == "p");
        }
      }
    }
  });
  const TtlCacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.negative_hits + s.misses, lookups.load());
  EXPECT_LE(cache.size(), 8);
  EXPECT_EQ(s.loads_in_flight, 0);
}

}  // namespace
}  // namespace ferry
