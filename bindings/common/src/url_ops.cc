#include "ferry/bindings/url_ops.h"

#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry::bindings {

absl::Status MakeDirectory(fs::FileSystemRegistry& registry, std::string_view url, bool parents) {
  FERRY_ASSIGN_OR_RETURN(fs::Location where, registry.Resolve(url));
  return where.fs->CreateDir(where.path, parents);
}

absl::Status RemoveFile(fs::FileSystemRegistry& registry, std::string_view url) {
  FERRY_ASSIGN_OR_RETURN(fs::Location where, registry.Resolve(url));
  return where.fs->Remove(where.path);
}

absl::Status RemoveDirectory(fs::FileSystemRegistry& registry, std::string_view url) {
  FERRY_ASSIGN_OR_RETURN(fs::Location where, registry.Resolve(url));
  return where.fs->RemoveDir(where.path);
}

absl::Status Rename(fs::FileSystemRegistry& registry, std::string_view from, std::string_view to) {
  FERRY_ASSIGN_OR_RETURN(fs::Location src, registry.Resolve(from));
  FERRY_ASSIGN_OR_RETURN(fs::Location dst, registry.Resolve(to));
  if (src.fs != dst.fs) {
    return absl::InvalidArgumentError(
        Cat("rename ", from, " -> ", to, ": not on one filesystem (copy, then remove)"));
  }
  return src.fs->Rename(src.path, dst.path);
}

}  // namespace ferry::bindings
