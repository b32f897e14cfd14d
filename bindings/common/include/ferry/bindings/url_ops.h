// The namespace operations a binding offers by URL (mkdir, remove, rmdir,
// rename), once for every language: resolve through the registry, then the
// filesystem's own call. An NFS- or NFSRODS-shaped front end needs them
// beside open/stat/walk.
//
//   FERRY_RETURN_IF_ERROR(ferry::bindings::MakeDirectory(registry, "irods://h/zone/home/a/d", true));
//   FERRY_RETURN_IF_ERROR(ferry::bindings::Rename(registry, "s3://b/x", "s3://b/y"));
//
// Thread-safety: as the registry and the filesystems (thread-safe).
#ifndef FERRY_BINDINGS_URL_OPS_H_
#define FERRY_BINDINGS_URL_OPS_H_

#include <string_view>

#include "absl/status/status.h"
#include "ferry/fs/registry.h"

namespace ferry::bindings {

// Creates the directory `url` names (and, with `parents`, its missing
// parents; an existing directory is then not an error).
absl::Status MakeDirectory(fs::FileSystemRegistry& registry, std::string_view url, bool parents);
// Removes the file `url` names.
absl::Status RemoveFile(fs::FileSystemRegistry& registry, std::string_view url);
// Removes the empty directory `url` names.
absl::Status RemoveDirectory(fs::FileSystemRegistry& registry, std::string_view url);
// Renames `from` to `to`. InvalidArgument naming both when they are on
// different filesystems (copy, then remove, instead).
absl::Status Rename(fs::FileSystemRegistry& registry, std::string_view from, std::string_view to);

}  // namespace ferry::bindings

#endif  // FERRY_BINDINGS_URL_OPS_H_
