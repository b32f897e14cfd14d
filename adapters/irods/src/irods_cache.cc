#include "ferry/irods/irods_cache.h"

#include <functional>
#include <nlohmann/json.hpp>

#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "irods_listing_codec.h"

namespace ferry::irods {
namespace {

// `p` is `root` or below it ("/a/b" covers "/a/b/c", not "/a/bc").
bool AtOrBelow(std::string_view p, std::string_view root) {
  if (root == "/") return !p.empty() && p[0] == '/';
  return p == root || (p.size() > root.size() && p.substr(0, root.size()) == root && p[root.size()] == '/');
}

std::string_view Parent(std::string_view path) {
  size_t i = path.rfind('/');
  if (i == std::string_view::npos || i == 0) return "/";
  return path.substr(0, i);
}

// The shared tier's key for a listing: "<collection>\0<user>", so that every
// user's listing of a collection, and the listings below it, are byte
// prefixes (iRODS paths hold no NUL).
std::string SharedKey(std::string_view collection, std::string_view user) {
  return Cat(collection, std::string_view("\0", 1), user);
}

// The shared keys a change of `path` drops: the listings of its collection
// and of `path` itself, for every user, and (subtree) those below it.
void ListingPrefixes(std::string_view path, bool subtree, std::vector<std::string>* out) {
  if (path == "/") {
    out->push_back("/");
    return;
  }
  out->push_back(SharedKey(Parent(path), ""));
  out->push_back(SharedKey(path, ""));
  if (subtree) out->push_back(Cat(path, "/"));
}

// Messages to the other front ends: a kind letter, then NUL-separated paths.
std::string Message(char kind, std::string_view a, std::string_view b = {}) {
  std::string m(1, kind);
  CatAppend(&m, std::string_view("\0", 1), a);
  if (!b.empty()) CatAppend(&m, std::string_view("\0", 1), b);
  return m;
}

template <typename Cache>
typename Cache::Options Bounded(absl::Duration ttl, int64_t max_entries) {
  typename Cache::Options o;
  o.refresh_time = ttl;
  o.max_entries = max_entries;
  return o;
}

}  // namespace

absl::StatusOr<IrodsCacheOptions> IrodsCacheOptions::FromNfsrodsJson(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("NFSRODS cache settings are not JSON");
  IrodsCacheOptions o;
  const std::pair<const char*, absl::Duration*> keys[] = {
      {"file_information_refresh_time_in_milliseconds", &o.file_information},
      {"object_type_refresh_time_in_milliseconds", &o.object_type},
      {"user_permissions_refresh_time_in_milliseconds", &o.user_permissions},
      {"user_type_refresh_time_in_milliseconds", &o.user_type},
      {"list_operation_query_results_refresh_time_in_milliseconds", &o.list_operation},
  };
  absl::Status bad;
  // NFSRODS nests the keys (under "irods_client"): look at every level.
  std::function<void(const nlohmann::json&)> visit = [&](const nlohmann::json& node) {
    if (!node.is_object()) return;
    for (const auto& [key, value] : node.items()) {
      for (const auto& [name, dst] : keys) {
        if (key != name) continue;
        if (!value.is_number_integer() || value.get<int64_t>() < 0) {
          bad = absl::InvalidArgumentError(Cat(name, " must be a whole number of milliseconds >= 0"));
        } else {
          *dst = absl::Milliseconds(value.get<int64_t>());
        }
      }
      visit(value);
    }
  };
  visit(j);
  if (!bad.ok()) return bad;
  return o;
}

IrodsCacheSet::IrodsCacheSet(IrodsClient& client, const IrodsCacheOptions& o)
    : client_(client),
      list_ttl_(o.list_operation),
      stats_(Bounded<decltype(stats_)>(o.file_information, o.max_entries)),
      types_(Bounded<decltype(types_)>(o.object_type, o.max_entries)),
      perms_(Bounded<decltype(perms_)>(o.user_permissions, o.max_entries)),
      user_types_(Bounded<decltype(user_types_)>(o.user_type, o.max_entries)),
      listings_([&] {
        auto lo = Bounded<decltype(listings_)>(o.list_operation, decltype(listings_)::kUnbounded);
        lo.max_weight = o.max_entries;
        lo.weigher = [](const UserPath&, const TimedListing& l) {
          return static_cast<int64_t>(l.entries.size()) + 1;
        };
        lo.refresh_time_for = [](const UserPath&, const TimedListing& l) { return l.ttl; };
        return lo;
      }()) {
  if (o.shared_listings != nullptr) {
    shared_ = std::make_unique<SharedLoader>(*o.shared_listings, o.shared_load);
    subscription_ = o.shared_listings->Subscribe([this](const SharedTierEvent& e) { OnSharedEvent(e); });
  }
}

SharedLoaderStats IrodsCacheSet::shared_list_stats() const {
  return shared_ != nullptr ? shared_->stats() : SharedLoaderStats{};
}

absl::StatusOr<std::shared_ptr<const IrodsStat>> IrodsCacheSet::Stat(std::string_view user,
                                                                      std::string_view path) {
  return stats_.Get(UserPath(user, path),
                    [this](const UserPath& k) { return client_.Stat(k.second); });
}

absl::StatusOr<IrodsObjectType> IrodsCacheSet::ObjectType(std::string_view path) {
  FERRY_ASSIGN_OR_RETURN(auto t, types_.Get(std::string(path), [this](const std::string& k)
                                                -> absl::StatusOr<IrodsObjectType> {
    FERRY_ASSIGN_OR_RETURN(IrodsStat st, client_.Stat(k));
    return st.type;
  }));
  return *t;
}

absl::StatusOr<std::shared_ptr<const IrodsAcl>> IrodsCacheSet::Permissions(std::string_view path,
                                                                             bool is_collection) {
  return perms_.Get(std::string(path), [this, is_collection](const std::string& k) {
    return client_.GetAccess(k, is_collection);
  });
}

absl::StatusOr<std::string> IrodsCacheSet::UserType(std::string_view user) {
  FERRY_ASSIGN_OR_RETURN(auto t, user_types_.Get(std::string(user), [this](const std::string& k) {
    return client_.UserType(k);
  }));
  return *t;
}

absl::StatusOr<std::shared_ptr<const IrodsListing>> IrodsCacheSet::List(std::string_view user,
                                                                         std::string_view collection) {
  auto from_irods = [this](const UserPath& k) -> absl::StatusOr<IrodsListing> {
    IrodsListing all;
    FERRY_RETURN_IF_ERROR(client_.List(k.second, [&](std::vector<IrodsEntry>& batch) {
      for (auto& e : batch) all.push_back(std::move(e));
      return true;
    }));
    return all;
  };
  FERRY_ASSIGN_OR_RETURN(
      std::shared_ptr<const TimedListing> got,
      listings_.Get(UserPath(user, collection), [&](const UserPath& k) -> absl::StatusOr<TimedListing> {
        if (shared_ == nullptr) {
          FERRY_ASSIGN_OR_RETURN(IrodsListing l, from_irods(k));
          return TimedListing{std::move(l), list_ttl_};
        }
        FERRY_ASSIGN_OR_RETURN(auto l, shared_->Load<IrodsListing>(
                                           SharedKey(k.second, k.first), list_ttl_,
                                           [&] { return from_irods(k); }, EncodeIrodsListing,
                                           DecodeIrodsListing));
        return TimedListing{std::move(l.value), l.ttl};
      }));
  // Shares the cached entry's ownership: no copy of the listing.
  return std::shared_ptr<const IrodsListing>(got, &got->entries);
}

void IrodsCacheSet::Changed(std::string_view path) {
  ChangedHere(path);
  if (shared_ == nullptr) return;
  std::vector<std::string> prefixes;
  ListingPrefixes(path, /*subtree=*/true, &prefixes);
  shared_->Invalidate({}, prefixes, Message('C', path));
}

void IrodsCacheSet::ChangedHere(std::string_view path) {
  const std::string_view parent = Parent(path);
  listings_.InvalidateIf([&](const UserPath& k) { return k.second == parent || AtOrBelow(k.second, path); });
  stats_.InvalidateIf([&](const UserPath& k) { return k.second == parent || AtOrBelow(k.second, path); });
  types_.InvalidateIf([&](const std::string& k) { return AtOrBelow(k, path); });
  perms_.InvalidateIf([&](const std::string& k) { return AtOrBelow(k, path); });
}

void IrodsCacheSet::Renamed(std::string_view from, std::string_view to) {
  ChangedHere(from);
  ChangedHere(to);
  if (shared_ == nullptr) return;
  std::vector<std::string> prefixes;
  ListingPrefixes(from, /*subtree=*/true, &prefixes);
  ListingPrefixes(to, /*subtree=*/true, &prefixes);
  shared_->Invalidate({}, prefixes, Message('R', from, to));
}

void IrodsCacheSet::AclChanged(std::string_view path, bool recursive) {
  AclChangedHere(path, recursive);
  if (shared_ == nullptr) return;
  std::vector<std::string> prefixes;
  ListingPrefixes(path, recursive, &prefixes);
  shared_->Invalidate({}, prefixes, Message(recursive ? 'T' : 'A', path));
}

void IrodsCacheSet::OnSharedEvent(const SharedTierEvent& e) {
  if (e.kind == SharedTierEvent::Kind::kResync) {
    stats_.InvalidateAll();
    types_.InvalidateAll();
    perms_.InvalidateAll();
    user_types_.InvalidateAll();
    listings_.InvalidateAll();
    return;
  }
  // "<kind>\0<path>[\0<path>]" (Message above); anything else is ignored.
  const std::string_view m = e.message;
  if (m.size() < 2 || m[1] != '\0') return;
  const std::string_view rest = m.substr(2);
  const size_t nul = rest.find('\0');
  const std::string_view a = rest.substr(0, nul);
  switch (m[0]) {
    case 'C': ChangedHere(a); break;
    case 'R':
      ChangedHere(a);
      if (nul != std::string_view::npos) ChangedHere(rest.substr(nul + 1));
      break;
    case 'A': AclChangedHere(a, false); break;
    case 'T': AclChangedHere(a, true); break;
    default: break;
  }
}

void IrodsCacheSet::AclChangedHere(std::string_view path, bool recursive) {
  auto hit = [&](std::string_view k) { return recursive ? AtOrBelow(k, path) : k == path; };
  perms_.InvalidateIf([&](const std::string& k) { return hit(k); });
  stats_.InvalidateIf([&](const UserPath& k) { return hit(k.second); });
  // What a user may see in a listing can change with the ACL.
  listings_.InvalidateIf([&](const UserPath& k) { return k.second == Parent(path) || hit(k.second); });
}

}  // namespace ferry::irods
