// SharedLoader: the loader glue that puts a SharedTier (shared_tier.h)
// behind a TtlCache, so several processes share one origin load per key per
// TTL.
//
// A TtlCache keeps loads single-flight within its process; its loader calls
// SharedLoader::Load, which
//   1. looks the key up in the shared tier: a value there is decoded and
//      returned with its remaining time (the local entry must not outlive
//      the shared one);
//   2. else takes the key's load lease (one holder across processes), looks
//      again (the previous holder may have just stored it), loads from the
//      origin, stores the encoded value unless an invalidation happened
//      since (the epoch), and gives the lease back;
//   3. else (another process holds the lease) polls the tier for the value,
//      backing off from `poll_first` to `poll_max`, and takes the lease
//      itself if the holder gave it up without storing (an error, a
//      NotFound, a skipped store); after `max_wait` it loads from the origin
//      on its own: a slow peer never blocks a front end for longer.
// Any tier failure (down, slow) means "load from the origin, unshared": the
// tier implementation warns about its outages; Load never returns a tier
// error, only the origin's.
//
// Example, a listing cache whose values expire with the shared copy:
//
//   struct Timed { Listing listing; absl::Duration ttl; };
//   TtlCache<std::string, Timed> cache({.refresh_time_for =
//       [](const std::string&, const Timed& t) { return t.ttl; }});
//   ferry::SharedLoader shared(redis_tier);
//   cache.Get(key, [&](const std::string& k) -> absl::StatusOr<Timed> {
//     FERRY_ASSIGN_OR_RETURN(auto got, shared.Load<Listing>(k, absl::Seconds(30),
//         [&] { return ListFromOrigin(k); }, EncodeListing, DecodeListing));
//     return Timed{std::move(got.value), got.ttl};
//   });
//   ...
//   shared.Invalidate({}, {"/zone/home/alice/dir"}, "changed /zone/home/alice/dir");
//
// NotFound and other origin errors are not shared: each process caches its
// own NotFound locally (TtlCache's negative entries).
//
// Thread-safety: thread-safe. The tier must outlive the loader.
#ifndef FERRY_CACHE_SHARED_LOADER_H_
#define FERRY_CACHE_SHARED_LOADER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/cache/shared_tier.h"

namespace ferry {

struct SharedLoaderOptions {
  // How long a load lease lasts: a process that dies mid-load holds the
  // others up this long at most (and they stop waiting after max_wait).
  // Longer than the slowest origin load, or two processes may load at once.
  absl::Duration lock_lease = absl::Seconds(30);
  // How long to wait for another process's load before loading alone.
  absl::Duration max_wait = absl::Seconds(5);
  // Polling for another process's value: first interval, doubling to max.
  absl::Duration poll_first = absl::Milliseconds(1);
  absl::Duration poll_max = absl::Milliseconds(20);
};

// What Load counted since the loader was made.
struct SharedLoaderStats {
  int64_t tier_hits = 0;        // values taken from the shared tier
  int64_t origin_loads = 0;     // origin calls (shared or alone)
  int64_t waits = 0;            // loads that waited for another process
  int64_t wait_timeouts = 0;    // ... and gave up after max_wait
  int64_t tier_failures = 0;    // loads that found the tier down or slow
  int64_t stores_skipped = 0;   // values not stored: invalidated meanwhile
  int64_t undecodable = 0;      // tier values the decoder rejected
  int64_t invalidations = 0;    // Invalidate calls
  int64_t invalidations_lost = 0;  // ... that the tier failed to carry
};

// A value and how long the caller may keep it.
template <typename Value>
struct SharedLoaded {
  Value value;
  absl::Duration ttl;
  bool from_tier = false;  // another process loaded it
};

class SharedLoader {
 public:
  explicit SharedLoader(SharedTier& tier, SharedLoaderOptions options = {})
      : tier_(tier), options_(options) {}
  SharedLoader(const SharedLoader&) = delete;
  SharedLoader& operator=(const SharedLoader&) = delete;

  // Returns `key`'s value from the shared tier, or loads it with `origin`
  // (once across processes, where the tier allows) and shares it for `ttl`.
  //   origin: () -> absl::StatusOr<Value>
  //   encode: (const Value&) -> std::string
  //   decode: (std::string_view) -> absl::StatusOr<Value>
  // Errors are the origin's only.
  template <typename Value, typename Origin, typename Encode, typename Decode>
  absl::StatusOr<SharedLoaded<Value>> Load(std::string_view key, absl::Duration ttl,
                                           Origin&& origin, Encode&& encode, Decode&& decode) {
    Ticket t = Acquire(key);
    if (t.kind == Ticket::kHit) {
      absl::StatusOr<Value> v = decode(std::string_view(t.bytes));
      if (v.ok()) return SharedLoaded<Value>{*std::move(v), t.ttl_left, true};
      // Another version's encoding, or damage: load for ourselves and leave
      // the shared copy to whoever wrote it.
      undecodable_.fetch_add(1, std::memory_order_relaxed);
      t.kind = Ticket::kAlone;
    }
    // Gives the lease back however the origin call ends (exceptions too).
    LeaseGuard guard(*this, key, t);
    origin_loads_.fetch_add(1, std::memory_order_relaxed);
    absl::StatusOr<Value> r = origin();
    if (!r.ok()) return std::move(r).status();
    if (t.kind == Ticket::kShare) {
      guard.Release(std::optional<std::string>(encode(*r)), ttl);
    }
    return SharedLoaded<Value>{*std::move(r), ttl, false};
  }

  // Deletes `keys` and the keys under `prefixes` from the shared tier and
  // publishes `message` to every other front end (see SharedTier). The
  // caller invalidates its own local tier itself. Never fails: an outage
  // is the tier's to warn about (and the others resync when it is back).
  void Invalidate(absl::Span<const std::string> keys, absl::Span<const std::string> prefixes,
                  std::string_view message);

  SharedLoaderStats stats() const;

 private:
  // What Load does next.
  struct Ticket {
    enum Kind { kHit, kShare, kAlone } kind = kAlone;
    std::string bytes;        // kHit: the shared value
    absl::Duration ttl_left;  // kHit: its remaining time
    std::string token;        // kShare: our lease
    uint64_t epoch = 0;       // kShare: the epoch read under the lease
  };

  class LeaseGuard {
   public:
    LeaseGuard(SharedLoader& loader, std::string_view key, Ticket& t)
        : loader_(loader), key_(key), ticket_(t) {}
    LeaseGuard(const LeaseGuard&) = delete;
    LeaseGuard& operator=(const LeaseGuard&) = delete;
    ~LeaseGuard() {
      if (!released_) Release(std::nullopt, absl::ZeroDuration());
    }
    void Release(std::optional<std::string> bytes, absl::Duration ttl) {
      released_ = true;
      if (ticket_.kind == Ticket::kShare) loader_.Share(key_, ticket_, std::move(bytes), ttl);
    }

   private:
    SharedLoader& loader_;
    std::string_view key_;
    Ticket& ticket_;
    bool released_ = false;
  };

  // Steps 1-3 above, up to deciding who loads.
  Ticket Acquire(std::string_view key);
  // Stores `bytes` (if any) under the ticket's epoch and gives the lease back.
  void Share(std::string_view key, const Ticket& t, std::optional<std::string> bytes,
             absl::Duration ttl);

  SharedTier& tier_;
  const SharedLoaderOptions options_;
  std::atomic<int64_t> tier_hits_{0}, origin_loads_{0}, waits_{0}, wait_timeouts_{0},
      tier_failures_{0}, stores_skipped_{0}, undecodable_{0}, invalidations_{0},
      invalidations_lost_{0};
};

}  // namespace ferry

#endif  // FERRY_CACHE_SHARED_LOADER_H_
