// Internals of ferry::TtlCache. Not part of the public API: use
// ferry/cache/ttl_cache.h.
//
// Design. Keys are spread over a power-of-two number of shards by the top
// bits of their hash; each shard has one ferry::Mutex guarding
//   - `entries`: a node_hash_map (stable addresses) of stored values, each
//     also linked into an intrusive LRU list (most recent at the front), so
//     a hit is one lookup plus a few pointer writes under one lock;
//   - `flights`: the loads in flight per key. A Flight is the single-flight
//     rendezvous: the first miss creates it and runs the loader; later
//     misses find it and wait on its own mutex/condvar, so waiters never
//     hold the shard lock.
//   - the shard's counters (plain integers: they are only touched under the
//     lock that the operation holds anyway).
// Lock order: shard mutex, then a flight's mutex; the lifetime mutex is
// never held with either.
//
// Invalidation (and Put) wins over a load in flight by marking its Flight
// `superseded` and removing it from `flights`: the load's result still goes
// to its waiters, but is not stored, and the next Get creates a new Flight.
//
// Refresh-ahead creates a Flight in state kQueued and hands a RefreshTask to
// the executor. Whoever moves the Flight out of kQueued runs the load: the
// task when it runs, or a foreground Get that missed (the entry expired)
// before the task got a thread. That keeps a Get from waiting on an executor
// queue that may be full of Gets. A task destroyed unrun completes its
// Flight with Cancelled (not stored), so nobody waits forever.
//
// Times are int64 nanoseconds read once per call: from the coarse monotonic
// clock directly when no Clock is given (no virtual call, no absl::Time
// conversions; see NowNanos), else from Clock::Now().
#ifndef FERRY_CACHE_INTERNAL_TTL_CACHE_CORE_H_
#define FERRY_CACHE_INTERNAL_TTL_CACHE_CORE_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"

namespace ferry {
namespace cache_internal {

// A time that never comes.
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Nanoseconds on `clock`; null: the monotonic clock, read coarsely.
//
// On Linux the real clock is CLOCK_MONOTONIC_COARSE: ~9 ns a read against
// ~40 ns for steady_clock on our VMs (which is most of a cache hit), at the
// price of a resolution of one kernel tick (1-4 ms), nothing next to refresh
// times of a second or more.
inline int64_t NowNanos(const Clock* clock) {
  if (clock != nullptr) return absl::ToUnixNanos(clock->Now());
#if defined(CLOCK_MONOTONIC_COARSE)
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
#else
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
#endif
}

// `t` + `d`, saturating at kNever; a non-positive `d` gives `t` (due now).
inline int64_t AddDuration(int64_t t, absl::Duration d) {
  if (d <= absl::ZeroDuration()) return t;
  if (d == absl::InfiniteDuration()) return kNever;
  const int64_t dn = absl::ToInt64Nanoseconds(d);  // saturates itself
  return t > kNever - dn ? kNever : t + dn;
}

// True if `key` is the path `prefix` or a path below it ("/a/b" covers
// "/a/b" and "/a/b/c", not "/a/bc"). Trailing slashes of `prefix` are
// ignored; "/" covers every key starting with "/"; "" covers nothing.
inline bool IsPathAtOrBelow(std::string_view key, std::string_view prefix) {
  if (prefix.empty()) return false;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix == "/") return !key.empty() && key.front() == '/';
  if (key.size() < prefix.size() || key.compare(0, prefix.size(), prefix) != 0) return false;
  return key.size() == prefix.size() || key[prefix.size()] == '/';
}

// The automatic shard count (see TtlCache::Options::shards).
inline int ChooseShardCount(int requested, int64_t max_entries, int64_t max_weight) {
  // Up to 16 shards: more spreads 2-8 cores no better and costs memory.
  constexpr int kMaxShards = 16;
  // Below ~1024 entries per shard, per-shard LRU drifts visibly from a
  // global LRU; small caches are rarely hot enough to need more locks.
  constexpr int64_t kMinEntriesPerShard = 1024;
  int64_t want = requested;
  if (requested <= 0) {
    // Weighted caches stay exact: one heavy listing must fit the whole bound.
    if (max_weight != std::numeric_limits<int64_t>::max()) return 1;
    want = std::min<int64_t>(kMaxShards, max_entries / kMinEntriesPerShard);
  }
  // Never more shards than entries: every shard must hold at least one.
  want = std::clamp<int64_t>(std::min(want, max_entries), 1, 1 << 16);
  int shards = 1;
  while (int64_t{shards} * 2 <= want) shards *= 2;
  return shards;
}

// Doubly linked LRU list node; the shard owns a sentinel.
struct LruNode {
  LruNode* prev = this;
  LruNode* next = this;
};

enum class FlightState { kQueued, kRunning, kDone };

// A key with its hash computed once: the hash picks the shard and is reused
// by the shard's maps (heterogeneous lookup), so a hit hashes its key once.
template <typename Key>
struct Prehashed {
  const Key& key;
  size_t hash;
};

// The maps' hasher and equality: the caller's, plus Prehashed lookups.
template <typename Key, typename Hash>
struct PrehashedHash {
  using is_transparent = void;
  size_t operator()(const Key& k) const { return static_cast<size_t>(hash(k)); }
  size_t operator()(const Prehashed<Key>& p) const { return p.hash; }
  Hash hash;
};
template <typename Key, typename KeyEqual>
struct PrehashedEq {
  using is_transparent = void;
  bool operator()(const Key& a, const Key& b) const { return eq(a, b); }
  bool operator()(const Prehashed<Key>& a, const Key& b) const { return eq(a.key, b); }
  bool operator()(const Key& a, const Prehashed<Key>& b) const { return eq(a, b.key); }
  bool operator()(const Prehashed<Key>& a, const Prehashed<Key>& b) const {
    return eq(a.key, b.key);
  }
  KeyEqual eq;
};

template <typename Key, typename Value, typename Hash, typename KeyEqual, typename Options,
          typename Stats>
class TtlCacheCore : public std::enable_shared_from_this<
                         TtlCacheCore<Key, Value, Hash, KeyEqual, Options, Stats>> {
 public:
  using ValuePtr = std::shared_ptr<const Value>;
  using Result = absl::StatusOr<ValuePtr>;

  explicit TtlCacheCore(Options options)
      : options_(std::move(options)),
        refresh_ahead_(options_.executor != nullptr &&
                       options_.refresh_after != absl::InfiniteDuration()),
        shard_count_(ChooseShardCount(options_.shards, std::max<int64_t>(options_.max_entries, 1),
                                      options_.max_weight)),
        shard_shift_(64 - Log2(shard_count_)),
        shards_(new Shard[static_cast<size_t>(shard_count_)]) {
    for (int i = 0; i < shard_count_; ++i) {
      shards_[i].max_entries = std::max<int64_t>(options_.max_entries, 0) / shard_count_;
      shards_[i].max_weight = options_.max_weight == kNever
                                  ? kNever
                                  : std::max<int64_t>(options_.max_weight, 0) / shard_count_;
    }
  }

  // Waits for running background reloads; later ones do nothing.
  void Close() {
    MutexLock l(&life_mu_);
    closed_ = true;
    while (running_refreshes_ > 0) life_cv_.Wait(&life_mu_);
  }

  template <typename LoaderFn>
  Result Get(const Key& key, LoaderFn&& loader) {
    const int64_t now = Now();
    const Hashed hk = HashOf(key);
    Shard& s = ShardFor(hk);
    std::shared_ptr<Flight> flight;
    ValuePtr stale;  // set: a hit due for refresh-ahead
    bool run_here = false;
    {
      MutexLock l(&s.mu);
      auto it = s.entries.find(hk);
      if (it != s.entries.end()) {
        Entry& e = it->second;
        if (now < e.expires_at) [[likely]] {
          if (e.value == nullptr) {
            ++s.stats.negative_hits;
            return e.not_found;
          }
          ++s.stats.hits;
          MoveToFront(s, e);
          if (now < e.refresh_at) [[likely]] return e.value;
          // Due for refresh-ahead: this caller starts the one reload (after
          // unlocking: an executor may run the task inline).
          e.refresh_at = kNever;
          stale = e.value;
          if constexpr (std::is_constructible_v<std::decay_t<LoaderFn>, LoaderFn&&>) {
            if (!s.flights.contains(hk)) {
              flight = NewFlight(s, key, FlightState::kQueued);
              ++s.stats.refreshes;
            }
          }
        } else {
          RemoveLocked(s, it);
          ++s.stats.expirations;
        }
      }
      if (stale == nullptr) {
        ++s.stats.misses;
        auto fit = s.flights.find(hk);
        if (fit != s.flights.end()) {
          flight = fit->second;
          MutexLock fl(&flight->mu);
          if (flight->state == FlightState::kQueued) {
            // A refresh the executor has not started: run it here rather
            // than wait behind an executor queue that may be full of Gets.
            flight->state = FlightState::kRunning;
            run_here = true;
          }
        } else {
          flight = NewFlight(s, key, FlightState::kRunning);
          run_here = true;
        }
        if (run_here) ++s.stats.loads;
      }
    }
    if (stale != nullptr) {
      if constexpr (std::is_constructible_v<std::decay_t<LoaderFn>, LoaderFn&&>) {
        if (flight != nullptr) StartRefresh(key, std::move(flight), std::forward<LoaderFn>(loader));
      }
      return stale;
    }
    if (!run_here) return Await(*flight);
    Result r = RunLoader(key, loader);
    Finish(s, key, *flight, r, now, /*was_loaded=*/true);
    return r;
  }

  ValuePtr GetIfPresent(const Key& key) {
    const int64_t now = Now();
    const Hashed hk = HashOf(key);
    Shard& s = ShardFor(hk);
    MutexLock l(&s.mu);
    auto it = s.entries.find(hk);
    if (it != s.entries.end()) {
      Entry& e = it->second;
      if (now < e.expires_at) {
        if (e.value == nullptr) {
          ++s.stats.negative_hits;
          return nullptr;
        }
        ++s.stats.hits;
        MoveToFront(s, e);
        return e.value;
      }
      RemoveLocked(s, it);
      ++s.stats.expirations;
    }
    ++s.stats.misses;
    return nullptr;
  }

  // A hit that never waits: see TtlCache::TryGetFresh. Takes the shard lock
  // only if it is free; on anything but a fresh hit returns null having
  // changed nothing, so the caller's fallback counts that outcome once.
  ValuePtr TryGetFresh(const Key& key) {
    ValuePtr v;
    TryVisitFresh(key, [&v](const ValuePtr& p) { v = p; });
    return v;
  }

  // As TryGetFresh, but runs `fn(value_ptr)` under the shard lock instead of
  // copying the pointer out. See TtlCache::TryVisitFresh.
  template <typename Fn>
  bool TryVisitFresh(const Key& key, Fn&& fn) {
    const int64_t now = Now();
    const Hashed hk = HashOf(key);
    Shard& s = ShardFor(hk);
    if (!s.mu.TryLock()) return false;
    const ValuePtr* v = FreshHitLocked(s, hk, now);
    if (v != nullptr) fn(*v);
    s.mu.Unlock();
    return v != nullptr;
  }

  void Put(const Key& key, ValuePtr value, std::optional<absl::Duration> refresh_time) {
    const int64_t now = Now();
    const int64_t weight = Weigh(key, *value);
    const absl::Duration ttl = refresh_time ? *refresh_time : RefreshTimeFor(key, *value);
    Shard& s = ShardFor(key);
    MutexLock l(&s.mu);
    auto fit = s.flights.find(key);
    if (fit != s.flights.end()) {
      Supersede(*fit->second);
      s.flights.erase(fit);
    }
    StoreLocked(s, key, std::move(value), absl::OkStatus(), weight, now, ttl);
  }

  bool Invalidate(const Key& key) {
    Shard& s = ShardFor(key);
    MutexLock l(&s.mu);
    bool dropped = false;
    auto fit = s.flights.find(key);
    if (fit != s.flights.end()) {
      Supersede(*fit->second);
      s.flights.erase(fit);
      dropped = true;
    }
    auto it = s.entries.find(key);
    if (it != s.entries.end()) {
      RemoveLocked(s, it);
      ++s.stats.invalidations;
      dropped = true;
    }
    return dropped;
  }

  size_t InvalidateIf(absl::FunctionRef<bool(const Key&)> pred) {
    size_t dropped = 0;
    for (int i = 0; i < shard_count_; ++i) {
      Shard& s = shards_[i];
      MutexLock l(&s.mu);
      for (auto fit = s.flights.begin(); fit != s.flights.end();) {
        if (pred(fit->first)) {
          Supersede(*fit->second);
          s.flights.erase(fit++);
        } else {
          ++fit;
        }
      }
      dropped += RemoveEntriesLocked(
          s, [&](const auto& kv) { return pred(kv.first); }, &Stats::invalidations);
    }
    return dropped;
  }

  size_t PurgeExpired() {
    const int64_t now = Now();
    size_t dropped = 0;
    for (int i = 0; i < shard_count_; ++i) {
      Shard& s = shards_[i];
      MutexLock l(&s.mu);
      dropped += RemoveEntriesLocked(
          s, [&](const auto& kv) { return now >= kv.second.expires_at; }, &Stats::expirations);
    }
    return dropped;
  }

  int64_t size() const {
    int64_t n = 0;
    for (int i = 0; i < shard_count_; ++i) {
      MutexLock l(&shards_[i].mu);
      n += static_cast<int64_t>(shards_[i].entries.size());
    }
    return n;
  }

  int64_t weight() const {
    int64_t w = 0;
    for (int i = 0; i < shard_count_; ++i) {
      MutexLock l(&shards_[i].mu);
      w += shards_[i].weight;
    }
    return w;
  }

  Stats stats() const {
    Stats total;
    for (int i = 0; i < shard_count_; ++i) {
      const Shard& s = shards_[i];
      MutexLock l(&s.mu);
      total += s.stats;
    }
    return total;
  }

  int shard_count() const { return shard_count_; }

 private:
  using MapHash = PrehashedHash<Key, Hash>;
  using MapEq = PrehashedEq<Key, KeyEqual>;
  using Hashed = Prehashed<Key>;

  struct Entry : LruNode {
    ValuePtr value;           // null: a cached NotFound
    absl::Status not_found;   // the cached NotFound when value is null
    int64_t expires_at = 0;   // served while now < expires_at
    int64_t refresh_at = kNever;  // refresh-ahead due; kNever: off or started
    int64_t weight = 0;
    const Key* key = nullptr;  // the map node's key (stable in node_hash_map)
  };

  // One load in flight and its waiters.
  struct Flight {
    explicit Flight(FlightState s) : state(s) {}
    Mutex mu;
    CondVar done;
    FlightState state ABSL_GUARDED_BY(mu);
    // Invalidated or overwritten while loading: do not store the result.
    bool superseded ABSL_GUARDED_BY(mu) = false;
    std::optional<Result> result ABSL_GUARDED_BY(mu);
  };

  // Aligned to a cache line so two threads on different shards do not
  // bounce one line between cores.
  struct alignas(64) Shard {
    mutable Mutex mu;
    absl::node_hash_map<Key, Entry, MapHash, MapEq> entries ABSL_GUARDED_BY(mu);
    absl::flat_hash_map<Key, std::shared_ptr<Flight>, MapHash, MapEq> flights ABSL_GUARDED_BY(mu);
    LruNode lru ABSL_GUARDED_BY(mu);  // sentinel: next = most recently used
    int64_t weight ABSL_GUARDED_BY(mu) = 0;
    Stats stats ABSL_GUARDED_BY(mu);
    // This shard's share of the bounds (set once, before any sharing).
    int64_t max_entries = 0;
    int64_t max_weight = 0;
  };

  // The background reload handed to the executor.
  template <typename Loader>
  class RefreshTask {
   public:
    RefreshTask(std::weak_ptr<TtlCacheCore> core, Key key, std::shared_ptr<Flight> flight,
                Loader loader)
        : core_(std::move(core)),
          key_(std::move(key)),
          flight_(std::move(flight)),
          loader_(std::move(loader)) {}
    RefreshTask(RefreshTask&&) = default;
    RefreshTask& operator=(RefreshTask&&) = delete;
    ~RefreshTask() {
      if (flight_ == nullptr) return;  // ran, or moved from
      if (auto core = core_.lock()) core->AbandonRefresh(key_, *flight_);
    }
    void operator()() {
      std::shared_ptr<Flight> flight = std::move(flight_);
      if (flight == nullptr) return;
      if (auto core = core_.lock()) core->RunRefresh(key_, *flight, loader_);
    }

   private:
    std::weak_ptr<TtlCacheCore> core_;
    Key key_;
    std::shared_ptr<Flight> flight_;
    Loader loader_;
  };

  static int Log2(int n) {
    int b = 0;
    while ((1 << b) < n) ++b;
    return b;
  }

  int64_t Now() const { return NowNanos(options_.clock); }

  Hashed HashOf(const Key& key) const { return Hashed{key, static_cast<size_t>(hash_(key))}; }

  Shard& ShardFor(const Hashed& k) const {
    if (shard_count_ == 1) return shards_[0];
    // The top bits: the maps use the low ones.
    return shards_[static_cast<size_t>(static_cast<uint64_t>(k.hash) >> shard_shift_)];
  }
  Shard& ShardFor(const Key& key) const { return ShardFor(HashOf(key)); }

  int64_t Weigh(const Key& key, const Value& value) const {
    if (options_.weigher == nullptr) return 1;
    return std::max<int64_t>(options_.weigher(key, value), 0);
  }

  absl::Duration RefreshTimeFor(const Key& key, const Value& value) const {
    if (options_.refresh_time_for == nullptr) return options_.refresh_time;
    return options_.refresh_time_for(key, value);
  }

  // The value of `hk`'s entry if it is stored, unexpired and not due for
  // refresh-ahead (counted as a hit and moved to the LRU front); else null,
  // with nothing changed: an expired entry is left for Get to drop and count,
  // a cached NotFound for Get to count as a negative hit, an entry due for
  // refresh-ahead for Get to start its reload. Drops nothing, so it never
  // runs a value's destructor under the lock. The pointer is the entry's:
  // valid while the lock is held.
  const ValuePtr* FreshHitLocked(Shard& s, const Hashed& hk, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    auto it = s.entries.find(hk);
    if (it == s.entries.end()) return nullptr;
    Entry& e = it->second;
    if (e.value == nullptr || now >= e.expires_at || now >= e.refresh_at) return nullptr;
    ++s.stats.hits;
    MoveToFront(s, e);
    return &e.value;
  }

  std::shared_ptr<Flight> NewFlight(Shard& s, const Key& key, FlightState state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    auto flight = std::make_shared<Flight>(state);
    s.flights.insert_or_assign(key, flight);
    ++s.stats.loads_in_flight;
    return flight;
  }

  static void Supersede(Flight& f) {
    MutexLock fl(&f.mu);
    f.superseded = true;
  }

  static Result Await(Flight& f) {
    MutexLock fl(&f.mu);
    while (f.state != FlightState::kDone) f.done.Wait(&f.mu);
    return *f.result;
  }

  template <typename LoaderFn>
  Result RunLoader(const Key& key, LoaderFn& loader) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    try {
      return CallLoader(key, loader);
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("TtlCache loader threw: ", e.what()));
    } catch (...) {
      return absl::InternalError("TtlCache loader threw a non-std::exception");
    }
#else
    return CallLoader(key, loader);
#endif
  }

  template <typename LoaderFn>
  static Result CallLoader(const Key& key, LoaderFn& loader) {
    auto r = std::invoke(loader, key);
    using R = decltype(r);
    if constexpr (std::is_convertible_v<R, absl::StatusOr<std::shared_ptr<const Value>>> &&
                  !std::is_convertible_v<R, absl::StatusOr<Value>>) {
      Result shared = std::move(r);
      if (shared.ok() && *shared == nullptr) {
        return absl::InternalError("TtlCache loader returned a null value");
      }
      return shared;
    } else {
      static_assert(std::is_convertible_v<R, absl::StatusOr<Value>>,
                    "a TtlCache loader returns absl::StatusOr<Value> or "
                    "absl::StatusOr<std::shared_ptr<const Value>>");
      absl::StatusOr<Value> v = std::move(r);
      if (!v.ok()) return std::move(v).status();
      return ValuePtr(std::make_shared<Value>(std::move(*v)));
    }
  }

  // Completes `flight` with `r` and stores `r` unless the flight was
  // superseded. `start` is when the load started (expiry counts from it).
  void Finish(Shard& s, const Key& key, Flight& flight, const Result& r, int64_t start,
              bool was_loaded) {
    // Weigh and time the value before taking the lock.
    int64_t weight = 1;
    absl::Duration ttl = options_.negative_refresh_time;
    bool store = false;
    if (r.ok()) {
      weight = Weigh(key, **r);
      ttl = RefreshTimeFor(key, **r);
      store = true;
    } else if (r.status().code() == absl::StatusCode::kNotFound && was_loaded) {
      store = options_.negative_refresh_time > absl::ZeroDuration();
    }
    {
      MutexLock l(&s.mu);
      bool superseded;
      {
        MutexLock fl(&flight.mu);
        superseded = flight.superseded;
        flight.state = FlightState::kDone;
        flight.result = r;
      }
      --s.stats.loads_in_flight;
      if (was_loaded && !r.ok() && r.status().code() != absl::StatusCode::kNotFound) {
        ++s.stats.load_failures;
      }
      if (!superseded) {
        auto fit = s.flights.find(key);
        if (fit != s.flights.end() && fit->second.get() == &flight) s.flights.erase(fit);
        if (store) {
          StoreLocked(s, key, r.ok() ? *r : nullptr, r.status(), weight, start, ttl);
        }
      }
    }
    flight.done.SignalAll();
  }

  // Inserts or replaces `key`'s entry, then evicts least recently used
  // entries until the shard is within its bounds.
  void StoreLocked(Shard& s, const Key& key, ValuePtr value, const absl::Status& status,
                   int64_t weight, int64_t now, absl::Duration ttl)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    auto old = s.entries.find(key);
    if (ttl <= absl::ZeroDuration() || weight > s.max_weight || s.max_entries <= 0) {
      // Not storable (counted as evicted at once, unless it was never
      // meant to be kept); the old entry is outdated all the same.
      if (old != s.entries.end()) RemoveLocked(s, old);
      if (ttl > absl::ZeroDuration()) ++s.stats.evictions;
      return;
    }
    Entry* e;
    if (old != s.entries.end()) {
      e = &old->second;
      Unlink(*e);
      s.weight -= e->weight;
    } else {
      auto [it, inserted] = s.entries.try_emplace(key);
      e = &it->second;
      e->key = &it->first;
    }
    e->value = std::move(value);
    e->not_found = e->value == nullptr ? status : absl::OkStatus();
    e->expires_at = AddDuration(now, ttl);
    e->refresh_at = kNever;
    if (refresh_ahead_ && e->value != nullptr) {
      const int64_t refresh_at = AddDuration(now, options_.refresh_after);
      if (refresh_at < e->expires_at) e->refresh_at = refresh_at;
    }
    e->weight = weight;
    s.weight += weight;
    LinkFront(s, *e);
    while (static_cast<int64_t>(s.entries.size()) > s.max_entries || s.weight > s.max_weight) {
      Entry* victim = static_cast<Entry*>(s.lru.prev);
      if (victim == e) break;  // cannot happen: e alone fits; be safe anyway
      const bool expired = now >= victim->expires_at;
      RemoveLocked(s, s.entries.find(*victim->key));
      ++(expired ? s.stats.expirations : s.stats.evictions);
    }
  }

  // Removes the entries of `s` that `drop` picks, counting each in `counter`
  // (why they went); returns how many.
  template <typename Drop>
  size_t RemoveEntriesLocked(Shard& s, Drop drop, int64_t Stats::*counter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    size_t removed = 0;
    for (auto it = s.entries.begin(); it != s.entries.end();) {
      if (drop(*it)) {
        RemoveLocked(s, it++);
        ++(s.stats.*counter);
        ++removed;
      } else {
        ++it;
      }
    }
    return removed;
  }

  template <typename It>
  void RemoveLocked(Shard& s, It it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    Unlink(it->second);
    s.weight -= it->second.weight;
    s.entries.erase(it);
  }

  static void Unlink(LruNode& n) {
    n.prev->next = n.next;
    n.next->prev = n.prev;
    n.prev = n.next = &n;
  }

  static void LinkFront(Shard& s, LruNode& n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    n.next = s.lru.next;
    n.prev = &s.lru;
    s.lru.next->prev = &n;
    s.lru.next = &n;
  }

  static void MoveToFront(Shard& s, LruNode& n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    if (s.lru.next == &n) return;
    n.prev->next = n.next;
    n.next->prev = n.prev;
    LinkFront(s, n);
  }

  template <typename LoaderFn>
  void StartRefresh(const Key& key, std::shared_ptr<Flight> flight, LoaderFn&& loader) {
    using Loader = std::decay_t<LoaderFn>;
    options_.executor(absl::AnyInvocable<void()>(RefreshTask<Loader>(
        this->weak_from_this(), key, std::move(flight), Loader(std::forward<LoaderFn>(loader)))));
  }

  template <typename Loader>
  void RunRefresh(const Key& key, Flight& flight, Loader& loader) {
    {
      MutexLock l(&life_mu_);
      if (closed_) {
        AbandonRefresh(key, flight);
        return;
      }
      ++running_refreshes_;
    }
    const int64_t now = Now();
    Shard& s = ShardFor(key);
    bool run = false;
    {
      MutexLock l(&s.mu);
      MutexLock fl(&flight.mu);
      if (flight.state == FlightState::kQueued) {
        flight.state = FlightState::kRunning;
        ++s.stats.loads;
        run = true;
      }
    }
    if (run) {
      Result r = RunLoader(key, loader);
      Finish(s, key, flight, r, now, /*was_loaded=*/true);
    }
    MutexLock l(&life_mu_);
    if (--running_refreshes_ == 0) life_cv_.SignalAll();
  }

  // The executor dropped (or the closing cache skipped) a queued refresh.
  void AbandonRefresh(const Key& key, Flight& flight) {
    Shard& s = ShardFor(key);
    {
      MutexLock l(&s.mu);
      MutexLock fl(&flight.mu);
      if (flight.state != FlightState::kQueued) return;
      flight.state = FlightState::kRunning;
    }
    Finish(s, key, flight, absl::CancelledError("TtlCache: background refresh was dropped"), 0,
           /*was_loaded=*/false);
  }

  const Options options_;
  const bool refresh_ahead_;
  const int shard_count_;
  const int shard_shift_;
  const Hash hash_{};
  const std::unique_ptr<Shard[]> shards_;

  // Lifetime of background reloads versus the cache.
  Mutex life_mu_;
  CondVar life_cv_;
  bool closed_ ABSL_GUARDED_BY(life_mu_) = false;
  int running_refreshes_ ABSL_GUARDED_BY(life_mu_) = 0;
};

}  // namespace cache_internal
}  // namespace ferry

#endif  // FERRY_CACHE_INTERNAL_TTL_CACHE_CORE_H_
