// NfsFileSystem: one NFS export as a ferry::fs::FileSystem (scheme "nfs").
//
// Paths are relative to the client's root (the export, when made by the
// provider that RegisterBuiltinFileSystems registers: see
// NfsClientOptions::root_at_export). Stat is LOOKUP with the attributes it
// returns; List pages READDIRPLUS; Walk is the parallel WalkTree; files
// read and write through NfsFile (many READ/WRITE calls in flight). A file's
// entry from Stat, or from a Walk asked for handles, keeps its file handle,
// and OpenReadListed opens by it: no LOOKUP per path component (a tree
// copy of files two levels down made three calls per file, now one). A
// file changed, replaced or removed since its listing fails its read
// (see fs::FileSystem::OpenReadListed).
//
// A written file is atomic, as `cp` to a temporary and `mv` over the
// target would be: OpenWrite LOOKUPs the target (refusing a directory),
// CREATEs a temporary ".<name>.ferry-<hex>" beside it (GUARDED, with the old
// file's rwx bits or WriteOptions::mode), writes go out UNSTABLE, and Close
// COMMITs, checks the write verifier and RENAMEs the temporary over the
// target. A verifier that changed (the server restarted and may have lost
// unstable writes) makes Close answer Aborted, so the engine writes every
// byte again and closes once more. A writer destroyed unclosed REMOVEs its
// temporary (once more after a dropped connection). A writable file in a
// read-only directory cannot be replaced this way: PermissionDenied says so.
//
//   FERRY_ASSIGN_OR_RETURN(auto nfs, ferry::nfs::NfsFileSystem::Connect(runtime, url));
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Entry e, nfs->Stat("dir/big.bin"));
//
// Thread-safety: thread-safe. REQUIRES: the Runtime (and a borrowed
// client) outlive the filesystem; not called on an I/O thread.
#ifndef FERRY_NFS_NFS_FILE_SYSTEM_H_
#define FERRY_NFS_NFS_FILE_SYSTEM_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_url.h"

namespace ferry::nfs {

struct NfsFileSystemOptions {
  NfsClientOptions client;
  // Chunks of one file the copy engine keeps in flight; 0: by the round
  // trip seen so far: 4 for a server within half a millisecond, else 16
  // (16 x 1 MiB cover a 10 GbE link at 1 ms).
  int parallelism = 0;
};

// The fs::FileSystem operations are those of the interface (see the top of
// this file for how NFS carries them out); this class adds only what is
// NFS's own. Made by Connect or Over.
class NfsFileSystem : public fs::FileSystem {
 public:
  // Mounts the export holding `url`'s path and roots the filesystem there.
  static absl::StatusOr<std::shared_ptr<NfsFileSystem>> Connect(
      Runtime& runtime, const NfsUrl& url, const NfsFileSystemOptions& options = {});

  // Over a client the caller owns (rooted wherever it is rooted).
  static std::unique_ptr<NfsFileSystem> Over(NfsClient& client,
                                             const NfsFileSystemOptions& options = {});
  // Over a client it then owns.
  static std::unique_ptr<NfsFileSystem> Over(std::unique_ptr<NfsClient> client,
                                             const NfsFileSystemOptions& options = {});

  virtual NfsClient& client() = 0;
};

// nfs:// URLs -> one NfsFileSystem per (host, ports, uid, gid, export),
// rooted at the export; Location::path is the URL's path below it.
std::unique_ptr<fs::FileSystemProvider> NewNfsProvider(const NfsFileSystemOptions& options = {});

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS_FILE_SYSTEM_H_
