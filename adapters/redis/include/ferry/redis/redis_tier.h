// RedisTier: ferry::SharedTier on a Redis server (hiredis), the second tier
// several front ends' TtlCaches share (see ferry/cache/shared_loader.h).
//
//   ferry::redis::RedisTier tier({.port = 6379, .name_space = "nfsrods:list"});
//   ferry::irods::IrodsCacheSet caches(client, {.shared_listings = &tier});
//
// Keys, all under the namespace N (one tier per cache; several tiers may
// share one server):
//   N:v:<key>   a value (SET ... PX ttl)
//   N:l:<key>   a load lease (SET ... NX PX lease, the holder's token)
//   N:epoch     the invalidation epoch (INCR)
//   N:inv       the pub/sub channel invalidations go out on
// Published messages are "<sender id><message>", the sender id being this
// tier's 16 random hex digits, so a tier's own messages are not handed to
// its own subscriptions.
//
// Redis down or slow: connects and commands have short timeouts; a failed
// call drops the connection and fails (Unavailable / DeadlineExceeded);
// for `retry_after` after that, calls fail at once instead of trying to
// connect again (a dead server must not cost every cache miss a connect
// timeout). The first failure of an outage, and the recovery, are reported
// once each through `on_warning` (default: a line on stderr). Callers
// (SharedLoader) then use their local tier and the origin.
//
// Subscribe starts one thread per subscription: it blocks reading the
// subscription's own connection for as long as the subscription lives,
// which a shared pool thread could not do without being lost to the pool.
// It reconnects after `retry_after` when the server goes away, then
// delivers kResync; the subscription's destructor wakes and joins it.
//
// Thread-safety: thread-safe; the tier must outlive its subscriptions. Commands share one connection, one at a
// time (hiredis contexts are not thread-safe): a round trip on localhost is
// tens of microseconds, and the tier is only asked on local misses.
#ifndef FERRY_REDIS_REDIS_TIER_H_
#define FERRY_REDIS_REDIS_TIER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/mutex.h"
#include "ferry/cache/shared_tier.h"

struct redisContext;

namespace ferry::redis {

struct RedisTierOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  // Prefix of every key and of the channel: one per cache.
  std::string name_space = "ferry";
  absl::Duration connect_timeout = absl::Milliseconds(200);
  absl::Duration command_timeout = absl::Milliseconds(250);
  // After a failure, how long calls fail fast before reconnecting.
  absl::Duration retry_after = absl::Seconds(1);
  // Outage begins (a non-OK status) and ends (OkStatus). Called without
  // the tier's locks held, from whichever thread saw it. Null: stderr.
  absl::AnyInvocable<void(const absl::Status&) const> on_warning = nullptr;
};

class RedisTier final : public SharedTier {
 public:
  // Connects lazily: never fails, even with no server yet.
  explicit RedisTier(RedisTierOptions options);
  ~RedisTier() override;
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  absl::StatusOr<SharedTierLookup> Lookup(std::string_view key) override;
  absl::StatusOr<bool> PutIfEpoch(std::string_view key, std::string_view value, absl::Duration ttl,
                                  uint64_t epoch) override;
  absl::StatusOr<bool> TryLock(std::string_view key, std::string_view token,
                               absl::Duration lease) override;
  absl::Status Unlock(std::string_view key, std::string_view token) override;
  absl::Status Invalidate(absl::Span<const std::string> keys, absl::Span<const std::string> prefixes,
                          std::string_view message) override;
  std::unique_ptr<SharedTierSubscription> Subscribe(
      absl::AnyInvocable<void(const SharedTierEvent&)> on_event) override;

  // Whether the last command reached the server (false before the first).
  bool connected() const;

 private:
  class Reply;
  class Subscription;
  // Runs the commands (pipelined) and returns their replies, or the
  // failure that ended the connection.
  absl::StatusOr<std::vector<Reply>> Run(const std::vector<std::vector<std::string>>& commands);
  absl::Status Connect() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pipelines `commands` on ctx_ and appends their replies.
  absl::Status Send(const std::vector<std::vector<std::string>>& commands, std::vector<Reply>* replies)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Warn(const absl::Status& s) const;

  const RedisTierOptions options_;
  const std::string id_;  // sender id on published messages
  mutable Mutex mu_;
  redisContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Time retry_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool down_ ABSL_GUARDED_BY(mu_) = false;  // an outage was reported
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ferry::redis

#endif  // FERRY_REDIS_REDIS_TIER_H_
