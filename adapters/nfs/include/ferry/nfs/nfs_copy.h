// Whole-file copies between NFS and the local filesystem: the core copy
// engine (ferry/transfer/copy_engine.h) over an NfsFileSystem on the
// caller's client and the local disk. Kept for callers that hold an
// NfsClient; tools and bindings use the registry and ferry::CopyFile.
//
// Many READ or WRITE calls are in flight (`parallelism` chunks of at most
// FSINFO's rtmax/wtmax, 1 MiB by default), each chunk's buffer under the
// Runtime's MemoryBudget; READ data lands in the chunk buffer straight from
// the reply. Both directions replace the destination atomically, as `cp`
// to a temporary and `mv` over the destination would: the data lands in a
// temporary "<dir>/.<name>.ferry-<16 random hex digits>" beside the
// destination (locally for a download, on the server for an upload),
// renamed over it only once every byte has been written (and, for an
// upload, COMMITted with a write-verifier check: a changed verifier sends
// everything again, once). On any error, or when the progress callback
// says stop, the temporary is removed and a file already at the
// destination is left as it was (an upload's error names a temporary it
// could not remove). The new file is owned by the copier's identity.
//
//   ferry::Runtime rt({.blocking_threads = 16});
//   FERRY_ASSIGN_OR_RETURN(ferry::TransferStats s,
//       ferry::nfs::CopyNfsToLocal(rt, *client, "big.bin", "/tmp/big.bin"));
//
// Thread-safety: the functions are thread-safe; they block the caller.
// REQUIRES: not on an I/O or blocking-pool thread of the client's Runtime.
#ifndef FERRY_NFS_NFS_COPY_H_
#define FERRY_NFS_NFS_COPY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"

namespace ferry::nfs {

// The engine's options: parallelism (0: 16), chunk_bytes (0: 1 MiB capped
// by FSINFO), mode of new files, progress (on the calling thread; a
// non-OK return stops the copy, which fails with that status).
using CopyOptions = ::ferry::CopyOptions;

// Copies NFS `nfs_path` (relative to the client's URL path) to
// `local_path`. NotFound naming the NFS path for a missing source (nothing
// is created locally); FailedPrecondition for a directory or a source that
// shrinks while read.
absl::StatusOr<TransferStats> CopyNfsToLocal(Runtime& runtime, NfsClient& client,
                                             std::string_view nfs_path,
                                             const std::string& local_path,
                                             CopyOptions options = {});

// Copies `local_path` to NFS `nfs_path`, created or replaced through a
// temporary in its directory (which must exist and be writable).
// FailedPrecondition if the target is a directory or another non-regular
// file (nothing is created); PermissionDenied, saying why, for a
// directory where the temporary cannot be created.
absl::StatusOr<TransferStats> CopyLocalToNfs(Runtime& runtime, NfsClient& client,
                                             const std::string& local_path,
                                             std::string_view nfs_path,
                                             CopyOptions options = {});

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS_COPY_H_
