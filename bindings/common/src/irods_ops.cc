#include "ferry/bindings/irods_ops.h"

#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/irods/irods_file_system.h"

namespace ferry::bindings {
namespace {

// Where `url` is, and that filesystem as the iRODS one it is.
struct IrodsLocation {
  fs::Location where;  // holds the filesystem for the call
  irods::IrodsFileSystem* fs;
  const std::string& path() const { return where.path; }
};

absl::StatusOr<IrodsLocation> ResolveIrods(fs::FileSystemRegistry& registry, std::string_view url,
                                           std::string_view op) {
  FERRY_ASSIGN_OR_RETURN(fs::Location where, registry.Resolve(url));
  auto* irods_fs = dynamic_cast<irods::IrodsFileSystem*>(where.fs.get());
  if (irods_fs == nullptr) {
    return absl::InvalidArgumentError(Cat(op, " ", url, ": not an irods:// URL (", op,
                                          " is iRODS's own call)"));
  }
  return IrodsLocation{std::move(where), irods_fs};
}

}  // namespace

absl::Status AddIrodsMetadata(fs::FileSystemRegistry& registry, std::string_view url,
                              const irods::IrodsAvu& avu) {
  FERRY_ASSIGN_OR_RETURN(IrodsLocation at, ResolveIrods(registry, url, "add metadata"));
  return at.fs->AddMetadata(at.path(), avu);
}

absl::Status RemoveIrodsMetadata(fs::FileSystemRegistry& registry, std::string_view url,
                                 const irods::IrodsAvu& avu) {
  FERRY_ASSIGN_OR_RETURN(IrodsLocation at, ResolveIrods(registry, url, "remove metadata"));
  return at.fs->RemoveMetadata(at.path(), avu);
}

absl::StatusOr<std::vector<irods::IrodsAvu>> ListIrodsMetadata(fs::FileSystemRegistry& registry,
                                                               std::string_view url) {
  FERRY_ASSIGN_OR_RETURN(IrodsLocation at, ResolveIrods(registry, url, "list metadata"));
  return at.fs->ListMetadata(at.path());
}

absl::Status SetIrodsAccess(fs::FileSystemRegistry& registry, std::string_view url,
                            std::string_view user, std::string_view level, bool recursive) {
  FERRY_ASSIGN_OR_RETURN(IrodsLocation at, ResolveIrods(registry, url, "set access"));
  return at.fs->SetAccess(at.path(), user, level, recursive);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GetIrodsAccess(
    fs::FileSystemRegistry& registry, std::string_view url) {
  FERRY_ASSIGN_OR_RETURN(IrodsLocation at, ResolveIrods(registry, url, "get access"));
  return at.fs->GetAccess(at.path());
}

absl::StatusOr<std::string> IrodsPathOfId(fs::FileSystemRegistry& registry, std::string_view url,
                                          int64_t id, bool is_collection) {
  FERRY_ASSIGN_OR_RETURN(IrodsLocation at, ResolveIrods(registry, url, "path of id"));
  return at.fs->client().PathOfId(id, is_collection);
}

}  // namespace ferry::bindings
