// IrodsCacheSet: NFSRODS 2.0's query caches, on TtlCache, with the
// invalidation NFSRODS lacks.
//
// The caches, their NFSRODS names, keys and defaults
// (shared/peers/irods/NFSRODS-AND-S3-PLUGIN.md):
//   stat_info_cache    (user, path)        1 s     file_information_refresh_time_in_milliseconds
//   object_type_cache  path                300 s   object_type_refresh_time_in_milliseconds
//   perms_cache        path                300 s   user_permissions_refresh_time_in_milliseconds
//   user_type_cache    user                300 s   user_type_refresh_time_in_milliseconds
//   list_op_cache      (user, collection)  30 s    list_operation_query_results_refresh_time_in_milliseconds
//
// Invalidation, for every user (NFSRODS drops only the acting user's keys,
// never clears permissions or object types, and keeps the type of a path
// re-created as the other kind for 5 minutes):
//   - a write, create or remove of P drops every user's listing of P's
//     collection and the stat and object type of P and of everything below
//     it, and the stat of its collection;
//   - a rename does that for both the old and the new path;
//   - an ACL change on P (recursive: and below) drops the permissions and
//     stats there.
// A load racing an invalidation never puts its stale value back (TtlCache
// supersedes it).
//
// Several front ends (NFSRODS-style servers over one zone) can share the
// listing cache through a SharedTier (options.shared_listings, e.g. a
// ferry::redis::RedisTier): a listing missing locally is taken from the
// shared tier, or loaded from iRODS once across the front ends
// (SharedLoader) and kept there for list_operation; and every Changed /
// Renamed / AclChanged goes to the other front ends, which apply it to all
// five of their caches (a message per change, so no front end serves a
// stale stat, type or permission after another one's write either). When
// the shared tier's subscription comes back after an outage, every cache is
// emptied (the changes made meanwhile were not heard). Listings go across
// as records.proto IrodsListing bytes.
//
// Thread-safety: thread-safe. The client (and the shared tier) must
// outlive the set.
#ifndef FERRY_IRODS_IRODS_CACHE_H_
#define FERRY_IRODS_IRODS_CACHE_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/cache/shared_loader.h"
#include "ferry/cache/shared_tier.h"
#include "ferry/cache/ttl_cache.h"
#include "ferry/irods/irods_client.h"

namespace ferry::irods {

struct IrodsCacheOptions {
  absl::Duration file_information = absl::Seconds(1);
  absl::Duration object_type = absl::Seconds(300);
  absl::Duration user_permissions = absl::Seconds(300);
  absl::Duration user_type = absl::Seconds(300);
  absl::Duration list_operation = absl::Seconds(30);
  // Entries per cache at most (listings count one per listing entry).
  int64_t max_entries = 1'000'000;

  // A second tier for the listing cache, shared with other front ends, and
  // the channel this set's invalidations reach them by (see above). One
  // namespace per zone's listings: every front end of the zone uses the
  // same. Null: all five caches are this process's alone.
  SharedTier* shared_listings = nullptr;
  SharedLoaderOptions shared_load;

  // The options NFSRODS's server.json sets: any of the
  // *_refresh_time_in_milliseconds keys above, found at any depth (NFSRODS
  // nests them under "irods_client"); absent keys keep their defaults.
  // InvalidArgument for JSON that does not parse or a negative time.
  static absl::StatusOr<IrodsCacheOptions> FromNfsrodsJson(std::string_view json);
};

using IrodsListing = std::vector<IrodsEntry>;
using IrodsAcl = std::vector<std::pair<std::string, std::string>>;

class IrodsCacheSet {
 public:
  IrodsCacheSet(IrodsClient& client, const IrodsCacheOptions& options = {});

  // Cached IrodsClient calls. `user` keys the per-user caches (the client
  // logs in as one account; a front end serving many users passes the one
  // it acts for).
  absl::StatusOr<std::shared_ptr<const IrodsStat>> Stat(std::string_view user, std::string_view path);
  absl::StatusOr<IrodsObjectType> ObjectType(std::string_view path);
  absl::StatusOr<std::shared_ptr<const IrodsAcl>> Permissions(std::string_view path, bool is_collection);
  absl::StatusOr<std::string> UserType(std::string_view user);
  absl::StatusOr<std::shared_ptr<const IrodsListing>> List(std::string_view user,
                                                           std::string_view collection);

  // Invalidation, after the change succeeded (or failed halfway).
  void Changed(std::string_view path);                       // write, create, remove
  void Renamed(std::string_view from, std::string_view to);
  void AclChanged(std::string_view path, bool recursive);

  // The listing cache's counters, listings held and their weight (entries).
  TtlCacheStats list_stats() const { return listings_.stats(); }
  int64_t list_entries() const { return listings_.size(); }
  int64_t list_weight() const { return listings_.weight(); }
  // The shared tier's counters (all zero without one).
  SharedLoaderStats shared_list_stats() const;

 private:
  using UserPath = std::pair<std::string, std::string>;
  // A listing and how long it may be kept: a listing another front end
  // loaded keeps only the shared copy's remaining time.
  struct TimedListing {
    IrodsListing entries;
    absl::Duration ttl;
  };
  void ChangedHere(std::string_view path);
  void AclChangedHere(std::string_view path, bool recursive);
  void OnSharedEvent(const SharedTierEvent& e);

  IrodsClient& client_;
  const absl::Duration list_ttl_;
  TtlCache<UserPath, IrodsStat> stats_;
  TtlCache<std::string, IrodsObjectType> types_;
  TtlCache<std::string, IrodsAcl> perms_;
  TtlCache<std::string, std::string> user_types_;
  TtlCache<UserPath, TimedListing> listings_;
  std::unique_ptr<SharedLoader> shared_;
  // Last: destroyed (its thread stopped) before the caches it invalidates.
  std::unique_ptr<SharedTierSubscription> subscription_;
};

}  // namespace ferry::irods

#endif  // FERRY_IRODS_IRODS_CACHE_H_
