// The two NFS <-> local copies as calls of the core engine: the NFS side
// is an NfsFileSystem over the caller's client (its atomic writer), the
// local side the LocalFileSystem (its temporary renamed over the target).
#include "ferry/nfs/nfs_copy.h"

#include <memory>
#include <utility>

#include "ferry/fs/local_file_system.h"
#include "ferry/nfs/nfs_file_system.h"

namespace ferry::nfs {

absl::StatusOr<TransferStats> CopyNfsToLocal(Runtime& runtime, NfsClient& client,
                                             std::string_view nfs_path,
                                             const std::string& local_path,
                                             CopyOptions options) {
  std::unique_ptr<NfsFileSystem> nfs = NfsFileSystem::Over(client);
  fs::LocalFileSystem local;
  return CopyFile(runtime, *nfs, nfs_path, local, fs::LocalPathToFsPath(local_path),
                  std::move(options));
}

absl::StatusOr<TransferStats> CopyLocalToNfs(Runtime& runtime, NfsClient& client,
                                             const std::string& local_path,
                                             std::string_view nfs_path, CopyOptions options) {
  std::unique_ptr<NfsFileSystem> nfs = NfsFileSystem::Over(client);
  fs::LocalFileSystem local;
  return CopyFile(runtime, local, fs::LocalPathToFsPath(local_path), *nfs, nfs_path,
                  std::move(options));
}

}  // namespace ferry::nfs
