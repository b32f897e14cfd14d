#include "ferry/cache/shared_loader.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "ferry/base/random.h"

namespace ferry {

SharedLoader::Ticket SharedLoader::Acquire(std::string_view key) {
  Ticket t;
  // Unique per load: a lease that ran out and was taken over is never given
  // back by its first holder (Unlock compares the token).
  t.token = absl::StrFormat("%016x%016x", RandomUint64(), RandomUint64());
  const absl::Time deadline = absl::Now() + options_.max_wait;
  absl::Duration poll = options_.poll_first;
  bool waited = false;
  for (;;) {
    absl::StatusOr<SharedTierLookup> look = tier_.Lookup(key);
    if (!look.ok()) {
      tier_failures_.fetch_add(1, std::memory_order_relaxed);
      t.kind = Ticket::kAlone;
      return t;
    }
    if (look->value.has_value() && look->ttl_left > absl::ZeroDuration()) {
      tier_hits_.fetch_add(1, std::memory_order_relaxed);
      t.kind = Ticket::kHit;
      t.bytes = *std::move(look->value);
      t.ttl_left = look->ttl_left;
      return t;
    }
    absl::StatusOr<bool> locked = tier_.TryLock(key, t.token, options_.lock_lease);
    if (!locked.ok()) {
      tier_failures_.fetch_add(1, std::memory_order_relaxed);
      t.kind = Ticket::kAlone;
      return t;
    }
    if (*locked) {
      // The previous holder may have stored the value and let go between
      // our lookup and our lock: look once more before calling the origin.
      // The epoch read here, under the lease and before the origin call,
      // is what PutIfEpoch checks.
      absl::StatusOr<SharedTierLookup> again = tier_.Lookup(key);
      if (again.ok() && again->value.has_value() && again->ttl_left > absl::ZeroDuration()) {
        (void)tier_.Unlock(key, t.token);
        tier_hits_.fetch_add(1, std::memory_order_relaxed);
        t.kind = Ticket::kHit;
        t.bytes = *std::move(again->value);
        t.ttl_left = again->ttl_left;
        return t;
      }
      if (!again.ok()) {
        (void)tier_.Unlock(key, t.token);
        tier_failures_.fetch_add(1, std::memory_order_relaxed);
        t.kind = Ticket::kAlone;
        return t;
      }
      t.kind = Ticket::kShare;
      t.epoch = again->epoch;
      return t;
    }
    // Someone else is loading it.
    if (!waited) {
      waited = true;
      waits_.fetch_add(1, std::memory_order_relaxed);
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      wait_timeouts_.fetch_add(1, std::memory_order_relaxed);
      t.kind = Ticket::kAlone;
      return t;
    }
    absl::SleepFor(std::min(poll, deadline - now));
    poll = std::min(poll * 2, options_.poll_max);
  }
}

void SharedLoader::Share(std::string_view key, const Ticket& t, std::optional<std::string> bytes,
                         absl::Duration ttl) {
  if (bytes.has_value() && ttl > absl::ZeroDuration()) {
    absl::StatusOr<bool> stored = tier_.PutIfEpoch(key, *bytes, ttl, t.epoch);
    if (stored.ok() && !*stored) stores_skipped_.fetch_add(1, std::memory_order_relaxed);
  }
  // After the store, so a waiter that finds the lease free finds the value.
  (void)tier_.Unlock(key, t.token);
}

void SharedLoader::Invalidate(absl::Span<const std::string> keys,
                              absl::Span<const std::string> prefixes, std::string_view message) {
  invalidations_.fetch_add(1, std::memory_order_relaxed);
  if (!tier_.Invalidate(keys, prefixes, message).ok()) {
    invalidations_lost_.fetch_add(1, std::memory_order_relaxed);
  }
}

SharedLoaderStats SharedLoader::stats() const {
  SharedLoaderStats s;
  s.tier_hits = tier_hits_.load(std::memory_order_relaxed);
  s.origin_loads = origin_loads_.load(std::memory_order_relaxed);
  s.waits = waits_.load(std::memory_order_relaxed);
  s.wait_timeouts = wait_timeouts_.load(std::memory_order_relaxed);
  s.tier_failures = tier_failures_.load(std::memory_order_relaxed);
  s.stores_skipped = stores_skipped_.load(std::memory_order_relaxed);
  s.undecodable = undecodable_.load(std::memory_order_relaxed);
  s.invalidations = invalidations_.load(std::memory_order_relaxed);
  s.invalidations_lost = invalidations_lost_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ferry
