// FileSystemRegistry: URL scheme -> filesystem, so tools and bindings name
// no protocol (fsspec's registry, Arrow's FileSystemFromUri).
//
// A registry belongs to one Runtime and is an object its user owns (no
// process-wide table). Adapters register a provider per scheme; Resolve()
// turns a URL into a filesystem and a path on it. Providers keep the
// filesystems they made, so URLs on one endpoint (one S3 endpoint, one NFS
// export) share one filesystem, its connections and its caches.
//
//   ferry::fs::FileSystemRegistry registry(runtime);   // knows file:// already
//   FERRY_RETURN_IF_ERROR(ferry::RegisterBuiltinFileSystems(registry));  // nfs, s3, ...
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Location src, registry.Resolve("nfs://h/export/a"));
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Location dst, registry.Resolve("/tmp/a"));
//
// A string with no "scheme://" is a local path (relative to the working
// directory); "file:///abs/path" is one too. A trailing '/' is kept in
// Location::names_directory: tools use it to decide "copy into".
//
// Thread-safety: thread-safe. Register before sharing the registry.
// REQUIRES: the Runtime outlives the registry and every filesystem it made.
#ifndef FERRY_FS_REGISTRY_H_
#define FERRY_FS_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ferry/base/mutex.h"
#include "ferry/fs/file_system.h"

namespace ferry {
class Runtime;
}  // namespace ferry

namespace ferry::fs {

// Where a URL points: a filesystem and a path on it.
struct Location {
  std::shared_ptr<FileSystem> fs;
  std::string path;              // normalised (see NormalizePath)
  bool names_directory = false;  // the URL ended in '/' (or is a root)
  std::string url;               // as given, for messages
};

// Makes the filesystems of one scheme. Implementations keep what they
// made and hand the same filesystem out for URLs on the same endpoint.
class FileSystemProvider {
 public:
  virtual ~FileSystemProvider() = default;
  // The filesystem `url` lives on and the path on it. InvalidArgument
  // naming the URL if it is malformed; the connection's error if the
  // endpoint cannot be reached.
  virtual absl::StatusOr<Location> Resolve(Runtime& runtime, std::string_view url) = 0;
};

class FileSystemRegistry {
 public:
  // Registers file:// (LocalFileSystem) and bare local paths.
  explicit FileSystemRegistry(Runtime& runtime);
  ~FileSystemRegistry();
  FileSystemRegistry(const FileSystemRegistry&) = delete;
  FileSystemRegistry& operator=(const FileSystemRegistry&) = delete;

  // Registers `scheme` ("nfs", without "://"). AlreadyExists if taken.
  absl::Status Register(std::string scheme, std::unique_ptr<FileSystemProvider> provider);

  // The filesystem and path `url` names. InvalidArgument for an empty URL
  // or an unknown scheme (the message lists the known ones).
  absl::StatusOr<Location> Resolve(std::string_view url);

  // The registered schemes, sorted.
  std::vector<std::string> schemes() const;

  Runtime& runtime() { return runtime_; }

 private:
  Runtime& runtime_;
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<FileSystemProvider>> providers_
      ABSL_GUARDED_BY(mu_);
};

// "s3://bucket/k" -> "s3"; "" if `url` has no "scheme://".
std::string_view UrlScheme(std::string_view url);

}  // namespace ferry::fs

#endif  // FERRY_FS_REGISTRY_H_
