// TtlCache: a thread-safe, bounded query cache with single-flight loading.
//
// Built for the caches NFSRODS 2.0 needed (stat, access, object type,
// permissions, user type, listings: each with its own "refresh time"), with
// the gaps it had closed:
//   - values are handed out as std::shared_ptr<const Value>: a cached
//     10,000-entry listing is shared by every reader, never copied;
//   - concurrent misses on one key run the loader once (single-flight); the
//     other callers wait and get the same value or the same error;
//   - NotFound answers are cached for their own, shorter time ("negative
//     hits"); other errors are never cached;
//   - optional refresh-ahead: a hot entry is reloaded in the background
//     before it expires while readers keep getting the current value;
//   - bounded by entry count and by weight, least recently used out first;
//   - invalidation by key, by path prefix, by predicate (so a write can drop
//     every user's keys for a path, not just the acting user's) and of
//     everything; an invalidation always wins over a load that was in flight.
//
// Example (a listing cache keyed by "<user>#<collection>"):
//
//   ferry::Runtime rt;
//   using ListingCache = ferry::TtlCache<std::string, std::vector<DirEntry>>;
//   ListingCache listings(ListingCache::Options{
//       .refresh_time = absl::Seconds(30),      // NFSRODS's list default
//       .refresh_after = absl::Seconds(20),     // reload hot listings early
//       .max_weight = 1'000'000,                // entries, across all listings
//       .weigher = [](const std::string&, const std::vector<DirEntry>& v) {
//         return static_cast<int64_t>(v.size()) + 1;
//       },
//       .executor = [&rt](auto fn) { rt.PostBlocking(std::move(fn)); },
//   });
//
//   absl::StatusOr<std::shared_ptr<const std::vector<DirEntry>>> entries =
//       listings.Get(key, [conn](const std::string& k) { return ListFromServer(conn, k); });
//   ...
//   listings.InvalidatePrefix("alice#/zone/home/alice/dir");   // after a create
//
// Loaders run on the thread that missed (foreground) or, for refresh-ahead,
// on the executor. A loader that throws is turned into an Internal error for
// every waiter (the one place ferry catches exceptions).
#ifndef FERRY_CACHE_TTL_CACHE_H_
#define FERRY_CACHE_TTL_CACHE_H_

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/cache/internal/ttl_cache_core.h"

namespace ferry {

// Runs background work (refresh-ahead reloads). It must run the task soon on
// some other thread, or destroy it unrun (a dropped reload is harmless: the
// entry then simply expires). It may be called from several threads at
// once. With a ferry::Runtime:
//   [&rt](auto fn) { rt.PostBlocking(std::move(fn)); }
using TtlCacheExecutor = absl::AnyInvocable<void(absl::AnyInvocable<void()>) const>;

// What a TtlCache counted since it was made.
struct TtlCacheStats {
  int64_t hits = 0;             // Get/GetIfPresent served a stored value
                                // (fresh, or stale while a refresh runs)
  int64_t negative_hits = 0;    // served a cached NotFound
  int64_t misses = 0;           // found nothing usable (ran or joined a load)
  int64_t loads = 0;            // loader runs, foreground and background
  int64_t load_failures = 0;    // loads that ended in an error other than
                                // NotFound (exceptions included)
  int64_t refreshes = 0;        // refresh-ahead reloads started
  int64_t evictions = 0;        // entries dropped to stay within the bounds
  int64_t expirations = 0;      // entries dropped because their time was up
  int64_t invalidations = 0;    // entries dropped by Invalidate*
  int64_t loads_in_flight = 0;  // loads running or queued right now
};

// Every counter of TtlCacheStats with its name (as records.proto and the
// bindings spell it), in declaration order.
inline constexpr std::pair<const char*, int64_t TtlCacheStats::*> kTtlCacheCounters[] = {
    {"hits", &TtlCacheStats::hits},
    {"negative_hits", &TtlCacheStats::negative_hits},
    {"misses", &TtlCacheStats::misses},
    {"loads", &TtlCacheStats::loads},
    {"load_failures", &TtlCacheStats::load_failures},
    {"refreshes", &TtlCacheStats::refreshes},
    {"evictions", &TtlCacheStats::evictions},
    {"expirations", &TtlCacheStats::expirations},
    {"invalidations", &TtlCacheStats::invalidations},
    {"loads_in_flight", &TtlCacheStats::loads_in_flight},
};

// Adds each counter of `b` to `a`'s (the shards' stats into the cache's).
inline TtlCacheStats& operator+=(TtlCacheStats& a, const TtlCacheStats& b) {
  for (const auto& [name, counter] : kTtlCacheCounters) a.*counter += b.*counter;
  return a;
}

// TtlCache<Key, Value>
//
// Key: copyable, hashable by Hash (absl::Hash by default), compared by
// KeyEqual. Value: any type; the cache stores it once and hands out
// std::shared_ptr<const Value>.
//
// Thread-safety: every method may be called concurrently from any thread.
// No lock is held while a loader, the weigher or the refresh-time hook runs
// (InvalidateIf's predicate is the exception: it runs under a shard lock and
// must not call the cache). A loader may use the cache for other keys, but
// must not Get its own key (it would wait for itself).
//
// Expiry is measured from when the load that produced a value started (or
// from Put), so a value is never older than its refresh time.
//
// REQUIRES: no call is in progress when the cache is destroyed. The
// destructor waits for background reloads that are running; reloads still
// queued on the executor do nothing when they run.
template <typename Key, typename Value, typename Hash = absl::Hash<Key>,
          typename KeyEqual = std::equal_to<Key>>
class TtlCache {
 public:
  using ValuePtr = std::shared_ptr<const Value>;

  // No bound (the default for max_weight).
  static constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

  struct Options {
    // How long an entry is served after its load started (NFSRODS's
    // "refresh time"). InfiniteDuration: until evicted or invalidated.
    // Zero or negative: values are never stored (loads stay single-flight).
    absl::Duration refresh_time = absl::Seconds(30);

    // Refresh-ahead: once an entry is this old (and not yet expired), the
    // next Get still returns it at once but also starts ONE background reload
    // on `executor`. Only in effect with an executor and when shorter than
    // the entry's refresh time. A failed reload keeps the old value until it
    // expires (no second reload is tried for it).
    absl::Duration refresh_after = absl::InfiniteDuration();

    // How long a NotFound from the loader is cached (a later Get returns the
    // same NotFound without loading: a "negative hit"). Zero: not cached.
    // One second matches NFSRODS's shortest refresh time (stat/access), so a
    // freshly created path shows up quickly even when nobody invalidates.
    absl::Duration negative_refresh_time = absl::Seconds(1);

    // Bounds; when either is exceeded the least recently used entries go.
    // A default bound because an unbounded cache was one of NFSRODS's gaps;
    // 100,000 stat-sized entries is tens of MB.
    int64_t max_entries = 100'000;
    int64_t max_weight = kUnbounded;

    // Weight of one entry (e.g. bytes, or listing entries). Null: every
    // entry weighs 1. Cached NotFounds weigh 1. Called without locks held.
    // REQUIRES: returns >= 0.
    absl::AnyInvocable<int64_t(const Key&, const Value&) const> weigher = nullptr;

    // Per-entry refresh time for loaded values and Put without a time (e.g.
    // shorter for listings of hot directories). Null: `refresh_time`.
    absl::AnyInvocable<absl::Duration(const Key&, const Value&) const> refresh_time_for = nullptr;

    // Where background reloads run. Null: refresh-ahead is off and entries
    // simply expire; nothing else needs an executor.
    TtlCacheExecutor executor = nullptr;

    // Time source; must outlive the cache. Null: the real monotonic clock,
    // read coarsely on Linux (CLOCK_MONOTONIC_COARSE: one kernel tick, 1-4
    // ms, of resolution for a quarter of steady_clock's cost per Get).
    const Clock* clock = nullptr;

    // Lock shards (rounded down to a power of two). 0: automatic, which is
    // one shard (exact, global LRU) when max_weight is bounded or
    // max_entries < 2048, else up to 16 with at least 1024 entries each.
    // With N shards each holds at most max_entries/N entries and
    // max_weight/N weight, so the totals never exceed the bounds, LRU order
    // is per shard, and a value heavier than max_weight/N is not stored.
    int shards = 0;
  };

  TtlCache() : TtlCache(Options()) {}
  explicit TtlCache(Options options)
      : core_(std::make_shared<Core>(std::move(options))) {}
  TtlCache(const TtlCache&) = delete;
  TtlCache& operator=(const TtlCache&) = delete;
  ~TtlCache() { core_->Close(); }

  // Returns the cached value for `key`, or loads it with `loader`.
  //
  // `loader` is callable as `loader(key)` and returns absl::StatusOr<Value>
  // (or absl::StatusOr<std::shared_ptr<const Value>> to hand over a value it
  // already shares). Concurrent misses on one key run one loader; the others
  // wait for it and get the same pointer or the same error. A NotFound
  // result is cached for negative_refresh_time; other errors are returned
  // to every waiter and not cached. An exception thrown by the loader is
  // returned as InternalError.
  //
  // When the entry is due for refresh-ahead, Get returns the current value
  // and hands (a move or copy of) `loader` to the executor for the reload:
  // with refresh-ahead on, loaders must not capture references to things
  // that may be gone by then.
  //
  // Hot path (a hit): one clock read, one hash, one lock, no allocation.
  template <typename LoaderFn>
    requires std::invocable<LoaderFn&, const Key&>
  absl::StatusOr<ValuePtr> Get(const Key& key, LoaderFn&& loader) {
    return core_->Get(key, std::forward<LoaderFn>(loader));
  }

  // Returns the cached value for `key` without loading: null when absent,
  // expired or cached as NotFound. Counts as a hit or miss and refreshes the
  // entry's LRU position; never starts a refresh.
  ValuePtr GetIfPresent(const Key& key) { return core_->GetIfPresent(key); }

  // A hit that never waits for a lock: the stored value for `key` if it is
  // fresh (present, not expired, not a cached NotFound, not due for
  // refresh-ahead) and its shard's lock is free at once. That is counted as
  // a hit and refreshes the entry's LRU position, as a hit of Get does.
  // Otherwise returns null and changes nothing (no miss counted, no load or
  // refresh started, an expired entry not dropped), so the caller can fall
  // back on Get or GetIfPresent, which then count the outcome once: a
  // try-then-fall-back lookup counts exactly what one Get would.
  //
  // For callers that must never block on a cache lock, e.g. a thread holding
  // an interpreter's global lock while another thread holds a shard lock and
  // waits for that global lock to drop a value (see the Python binding).
  // Never runs a loader, the weigher, the refresh-time hook or a value's
  // destructor while it holds the lock.
  ValuePtr TryGetFresh(const Key& key) { return core_->TryGetFresh(key); }

  // As TryGetFresh, but on a fresh hit calls `fn(const ValuePtr&)` with the
  // stored pointer while holding the shard lock, and returns true; returns
  // false, not calling `fn`, whenever TryGetFresh would return null. For a
  // caller that takes its own kind of reference (the Python binding increfs
  // the object) and so can skip a shared_ptr copy's atomic increment and
  // decrement. `fn` runs under the shard lock: it must be quick, must not
  // call the cache and must not throw.
  template <typename Fn>
    requires std::invocable<Fn&, const ValuePtr&>
  bool TryVisitFresh(const Key& key, Fn&& fn) {
    return core_->TryVisitFresh(key, std::forward<Fn>(fn));
  }

  // Stores `value` for `key` with the entry's refresh time (refresh_time_for
  // or refresh_time), replacing any entry. REQUIRES: `value` is not null. A load of `key` in flight is
  // superseded: its waiters get its result, but it is not stored.
  void Put(const Key& key, Value value) {
    Put(key, std::make_shared<Value>(std::move(value)));
  }
  void Put(const Key& key, ValuePtr value) { core_->Put(key, std::move(value), std::nullopt); }
  // As above, with this entry's own refresh time.
  void Put(const Key& key, ValuePtr value, absl::Duration refresh_time) {
    core_->Put(key, std::move(value), refresh_time);
  }

  // Drops `key`'s entry and supersedes a load of it in flight (its waiters
  // get its result, but it is not stored; the next Get loads afresh).
  // Returns true if there was an entry or a load to drop.
  bool Invalidate(const Key& key) { return core_->Invalidate(key); }

  // Drops the entry for the path `prefix` and every entry below it: with
  // prefix "/a/b", keys "/a/b" and "/a/b/c" go but "/a/bc" stays. Trailing
  // slashes of `prefix` are ignored; "/" matches every key starting with
  // "/"; "" matches nothing. Loads in flight for matching keys are
  // superseded. Returns the number of entries dropped. O(size()).
  size_t InvalidatePrefix(std::string_view prefix)
    requires std::is_convertible_v<const Key&, std::string_view>
  {
    return core_->InvalidateIf([prefix](const Key& k) {
      return cache_internal::IsPathAtOrBelow(std::string_view(k), prefix);
    });
  }

  // Drops every entry whose key satisfies `pred` and supersedes matching
  // loads in flight. `pred` runs under a shard lock: it must be quick and
  // must not call the cache. Returns the number of entries dropped. O(size()).
  size_t InvalidateIf(absl::FunctionRef<bool(const Key&)> pred) {
    return core_->InvalidateIf(pred);
  }

  // Drops every entry and supersedes every load in flight. Returns the
  // number of entries dropped.
  size_t InvalidateAll() {
    return core_->InvalidateIf([](const Key&) { return true; });
  }

  // Drops the entries whose time is up (they are otherwise dropped when next
  // looked up or when the LRU reaches them). Returns how many. O(size()).
  size_t PurgeExpired() { return core_->PurgeExpired(); }

  // Entries stored (including cached NotFounds and expired entries not yet
  // dropped), and their total weight.
  int64_t size() const { return core_->size(); }
  int64_t weight() const { return core_->weight(); }

  // Counters since construction (a consistent snapshot per shard).
  TtlCacheStats stats() const { return core_->stats(); }

  // The number of lock shards in use (see Options::shards).
  int shard_count() const { return core_->shard_count(); }

 private:
  using Core = cache_internal::TtlCacheCore<Key, Value, Hash, KeyEqual, Options, TtlCacheStats>;
  // Shared with queued background reloads, which hold it weakly.
  std::shared_ptr<Core> core_;
};

}  // namespace ferry

#endif  // FERRY_CACHE_TTL_CACHE_H_
