// SharedTier: a cache tier shared by several processes (front ends), behind
// each one's local TtlCache.
//
// The core knows no protocol: this is the interface a shared store (Redis:
// ferry::redis::RedisTier, target ferry::redis_tier) implements, and the one
// SharedLoader (shared_loader.h) drives. Values are opaque bytes; the tier
// adds its own namespace to keys.
//
// What the interface has to offer, and why:
//   - Lookup returns the value with its remaining time, so a front end that
//     takes a value another one loaded keeps it no longer than the loader
//     would (values are never older than their TTL in any process);
//   - TryLock/Unlock: a lease per key, for one origin load per key across
//     processes; the lease expires by itself, so a crashed loader holds
//     nobody up for longer than the lease;
//   - an invalidation epoch: Invalidate bumps it before it deletes, and
//     PutIfEpoch stores only if no invalidation happened since the loader
//     read the epoch (Lookup). Without it, a load that raced a write could
//     put its stale value back into the shared tier after the write's
//     invalidation had deleted it, for every front end, for a whole TTL;
//   - Invalidate also publishes a message that every other front end's
//     Subscribe callback receives, so each drops its local tier.
//
// Errors: every call may fail (Unavailable, DeadlineExceeded, ...) when the
// shared store is down or slow. Callers treat a failure as "no shared tier
// right now" and carry on with their local tier and the origin: the tier
// is an optimisation, never a source of user-visible errors.
//
// Thread-safety: implementations are thread-safe (every method may be
// called concurrently).
#ifndef FERRY_CACHE_SHARED_TIER_H_
#define FERRY_CACHE_SHARED_TIER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace ferry {

// What Lookup found.
struct SharedTierLookup {
  std::optional<std::string> value;  // nullopt: absent (or expired)
  absl::Duration ttl_left;           // the value's remaining time
  uint64_t epoch = 0;                // the invalidation epoch, read with it
};

// Delivered to Subscribe callbacks.
struct SharedTierEvent {
  enum class Kind {
    // `message` is what another front end passed to Invalidate.
    kMessage,
    // The subscription was re-established after a gap (the store went away
    // or the connection broke): messages may have been missed, so the
    // receiver must drop whatever it cached from before.
    kResync,
  };
  Kind kind = Kind::kMessage;
  std::string_view message;  // kMessage only; valid during the callback
};

// Ends its subscription when destroyed: once the destructor returns, the
// callback is not running and never runs again.
class SharedTierSubscription {
 public:
  virtual ~SharedTierSubscription() = default;
};

class SharedTier {
 public:
  virtual ~SharedTier() = default;

  // The value stored for `key` (if any), its remaining time, and the
  // current invalidation epoch.
  virtual absl::StatusOr<SharedTierLookup> Lookup(std::string_view key) = 0;

  // Stores `value` for `ttl` unless the epoch is no longer `epoch` (an
  // invalidation happened since it was read). Returns whether it stored.
  virtual absl::StatusOr<bool> PutIfEpoch(std::string_view key, std::string_view value,
                                          absl::Duration ttl, uint64_t epoch) = 0;

  // Takes the load lease on `key` for `lease` under the caller's unique
  // `token`, if nobody holds it. Returns whether it was taken.
  virtual absl::StatusOr<bool> TryLock(std::string_view key, std::string_view token,
                                       absl::Duration lease) = 0;
  // Gives the lease back if `token` still holds it (a lease that ran out
  // and was taken by another process is left alone).
  virtual absl::Status Unlock(std::string_view key, std::string_view token) = 0;

  // Bumps the epoch, deletes `keys` and every key starting with one of
  // `prefixes` (plain byte prefixes), then publishes `message` to the
  // other front ends' subscriptions (never to this tier's own).
  virtual absl::Status Invalidate(absl::Span<const std::string> keys,
                                  absl::Span<const std::string> prefixes,
                                  std::string_view message) = 0;

  // Calls `on_event` for every message other front ends publish, on a
  // thread of the tier's, one call at a time, until the returned
  // subscription is destroyed. `on_event` must be quick and must not
  // destroy the subscription. Never fails: while the store is away the
  // subscription keeps trying to come back, then delivers kResync.
  virtual std::unique_ptr<SharedTierSubscription> Subscribe(
      absl::AnyInvocable<void(const SharedTierEvent&)> on_event) = 0;
};

}  // namespace ferry

#endif  // FERRY_CACHE_SHARED_TIER_H_
