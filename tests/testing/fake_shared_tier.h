// An in-process SharedTier for unit tests of the glue (SharedLoader,
// IrodsCacheSet's shared listings): a FakeSharedStore plays the shared
// server, each FakeSharedTier is one front end's connection to it. The
// real thing (RedisTier against redis-server) has its own integration
// tests; this fake only lets the glue's logic be pinned down without
// timing.
//
// Thread-safety: thread-safe. Subscribers are called synchronously, on the
// invalidating thread, without the store's lock held.
#ifndef FERRY_TESTING_FAKE_SHARED_TIER_H_
#define FERRY_TESTING_FAKE_SHARED_TIER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/cache/shared_tier.h"

namespace ferry::testing {

class FakeSharedTier;

class FakeSharedStore {
 public:
  // While down, every call of every tier fails with Unavailable.
  void SetDown(bool down) {
    MutexLock l(&mu_);
    down_ = down;
  }
  // Calls to count: Lookup, PutIfEpoch, TryLock.
  int64_t lookups() const {
    MutexLock l(&mu_);
    return lookups_;
  }
  bool Has(const std::string& key) const {
    MutexLock l(&mu_);
    auto it = values_.find(key);
    return it != values_.end() && absl::Now() < it->second.expires;
  }

 private:
  friend class FakeSharedTier;
  struct Stored {
    std::string bytes;
    absl::Time expires;
  };
  struct Lease {
    std::string token;
    absl::Time expires;
  };
  struct Sub {
    const FakeSharedTier* owner;
    std::shared_ptr<absl::AnyInvocable<void(const SharedTierEvent&)>> fn;
  };
  mutable Mutex mu_;
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  int64_t lookups_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Stored> values_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Lease> leases_ ABSL_GUARDED_BY(mu_);
  std::vector<Sub> subs_ ABSL_GUARDED_BY(mu_);
};

class FakeSharedTier final : public SharedTier {
 public:
  explicit FakeSharedTier(FakeSharedStore& store) : s_(store) {}

  absl::StatusOr<SharedTierLookup> Lookup(std::string_view key) override {
    MutexLock l(&s_.mu_);
    if (s_.down_) return Down();
    ++s_.lookups_;
    SharedTierLookup r;
    r.epoch = s_.epoch_;
    auto it = s_.values_.find(std::string(key));
    if (it != s_.values_.end() && absl::Now() < it->second.expires) {
      r.value = it->second.bytes;
      r.ttl_left = it->second.expires - absl::Now();
    }
    return r;
  }
  absl::StatusOr<bool> PutIfEpoch(std::string_view key, std::string_view value, absl::Duration ttl,
                                  uint64_t epoch) override {
    MutexLock l(&s_.mu_);
    if (s_.down_) return Down();
    if (epoch != s_.epoch_) return false;
    s_.values_[std::string(key)] = {std::string(value), absl::Now() + ttl};
    return true;
  }
  absl::StatusOr<bool> TryLock(std::string_view key, std::string_view token,
                               absl::Duration lease) override {
    MutexLock l(&s_.mu_);
    if (s_.down_) return Down();
    auto& held = s_.leases_[std::string(key)];
    if (!held.token.empty() && absl::Now() < held.expires) return false;
    held = {std::string(token), absl::Now() + lease};
    return true;
  }
  absl::Status Unlock(std::string_view key, std::string_view token) override {
    MutexLock l(&s_.mu_);
    if (s_.down_) return Down();
    auto it = s_.leases_.find(std::string(key));
    if (it != s_.leases_.end() && it->second.token == token) s_.leases_.erase(it);
    return absl::OkStatus();
  }
  absl::Status Invalidate(absl::Span<const std::string> keys, absl::Span<const std::string> prefixes,
                          std::string_view message) override {
    std::vector<std::shared_ptr<absl::AnyInvocable<void(const SharedTierEvent&)>>> others;
    {
      MutexLock l(&s_.mu_);
      if (s_.down_) return Down();
      ++s_.epoch_;
      for (const auto& k : keys) s_.values_.erase(k);
      for (auto it = s_.values_.begin(); it != s_.values_.end();) {
        bool hit = false;
        for (const auto& p : prefixes) hit = hit || it->first.compare(0, p.size(), p) == 0;
        it = hit ? s_.values_.erase(it) : std::next(it);
      }
      for (const auto& sub : s_.subs_) {
        if (sub.owner != this) others.push_back(sub.fn);
      }
    }
    SharedTierEvent e{SharedTierEvent::Kind::kMessage, message};
    for (auto& fn : others) (*fn)(e);
    return absl::OkStatus();
  }
  std::unique_ptr<SharedTierSubscription> Subscribe(
      absl::AnyInvocable<void(const SharedTierEvent&)> on_event) override {
    auto fn = std::make_shared<absl::AnyInvocable<void(const SharedTierEvent&)>>(std::move(on_event));
    MutexLock l(&s_.mu_);
    s_.subs_.push_back({this, fn});
    return std::make_unique<Subscription>(s_, fn.get());
  }

 private:
  class Subscription final : public SharedTierSubscription {
   public:
    Subscription(FakeSharedStore& s, const void* fn) : s_(s), fn_(fn) {}
    ~Subscription() override {
      MutexLock l(&s_.mu_);
      std::erase_if(s_.subs_, [&](const FakeSharedStore::Sub& sub) { return sub.fn.get() == fn_; });
    }

   private:
    FakeSharedStore& s_;
    const void* fn_;
  };
  static absl::Status Down() { return absl::UnavailableError("fake shared tier is down"); }
  FakeSharedStore& s_;
};

}  // namespace ferry::testing

#endif  // FERRY_TESTING_FAKE_SHARED_TIER_H_
