// iRODS's own calls by URL (AVU metadata, access control), once for every
// language binding: resolve through the registry, check that the URL is on
// an iRODS filesystem, then IrodsFileSystem's call. The protocol-neutral
// front has no metadata or ACL; these are what iRODS users reach for next.
//
//   FERRY_RETURN_IF_ERROR(ferry::bindings::AddIrodsMetadata(
//       registry, "irods://alice@h/zone/home/alice/x", {"color", "blue", ""}));
//
// Errors: InvalidArgument for a URL on another filesystem; otherwise the
// call's own (NotFound for a missing path, PermissionDenied...).
//
// Thread-safety: as the registry and the filesystems (thread-safe).
#ifndef FERRY_BINDINGS_IRODS_OPS_H_
#define FERRY_BINDINGS_IRODS_OPS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ferry/fs/registry.h"
#include "ferry/irods/irods_client.h"

namespace ferry::bindings {

absl::Status AddIrodsMetadata(fs::FileSystemRegistry& registry, std::string_view url,
                              const irods::IrodsAvu& avu);
absl::Status RemoveIrodsMetadata(fs::FileSystemRegistry& registry, std::string_view url,
                                 const irods::IrodsAvu& avu);
absl::StatusOr<std::vector<irods::IrodsAvu>> ListIrodsMetadata(fs::FileSystemRegistry& registry,
                                                               std::string_view url);
// `level`: "read", "write", "own", or "null" to revoke.
absl::Status SetIrodsAccess(fs::FileSystemRegistry& registry, std::string_view url,
                            std::string_view user, std::string_view level, bool recursive);
// (user, access name) pairs.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GetIrodsAccess(
    fs::FileSystemRegistry& registry, std::string_view url);
// The logical path ("/zone/home/...") of the data object or collection
// whose catalog id is `id`, on the zone `url` names (any path of it);
// NotFound when no such object exists.
absl::StatusOr<std::string> IrodsPathOfId(fs::FileSystemRegistry& registry, std::string_view url,
                                          int64_t id, bool is_collection);

}  // namespace ferry::bindings

#endif  // FERRY_BINDINGS_IRODS_OPS_H_
