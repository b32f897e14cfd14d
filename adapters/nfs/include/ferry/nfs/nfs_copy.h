// Parallel whole-file copies between NFS and the local filesystem.
//
// The NFS file is opened in a ferry::FdTable<NfsFile>; `parallelism`
// workers from the Runtime's blocking pool each take the next chunk (FSINFO
// rtmax or wtmax bytes, at most 1 MiB by default), PRead/PWrite it through
// the table on the NFS side and pread/pwrite it on the local side, so that
// many READ or WRITE calls are in flight at once. Each worker's chunk
// buffer is taken from the Runtime's MemoryBudget first. READ data lands
// in that buffer straight from the reply (NfsClient::ReadIntoAsync).
// Uploads go out UNSTABLE and end with one COMMIT whose write verifier is
// checked (a changed verifier: the whole upload is sent again, once).
// An optional progress callback runs on the calling thread while it waits
// for the workers (the contract of ferry/transfer/file_transfer.h).
//
// Both directions replace the destination atomically, as `cp` to a
// temporary and `mv` over the destination would: the data lands in a
// temporary file "<dir>/.<name>.ferry-<16 random hex digits>" beside the
// destination (on the local disk for a download, created on the server for
// an upload), renamed over the destination only once every byte has been
// written (and, for an upload, COMMITted). Readers see the old file or the
// complete new one, never a partial one. On any error, or when the
// progress callback says stop, the temporary is removed and a file already
// at the destination is left as it was. Being a new file, the destination
// gets a new inode and (on NFS) a new file handle: a client still holding
// the old handle may find it stale, and the new file is owned by the
// copier's identity (the URL's uid/gid for an upload), not the old owner.
//
//   ferry::Runtime rt({.blocking_threads = 16});
//   FERRY_ASSIGN_OR_RETURN(ferry::nfs::CopyStats s,
//       ferry::nfs::CopyNfsToLocal(rt, *client, "big.bin", "/tmp/big.bin",
//                                  {.progress = [](const ferry::TransferProgress& p) {
//                                     Draw(p.bytes_done, p.bytes_total);
//                                     return absl::OkStatus();
//                                   }}));
//
// Thread-safety: the functions are thread-safe; they block the caller.
// REQUIRES: not on an I/O or blocking-pool thread of the client's Runtime.
#ifndef FERRY_NFS_NFS_COPY_H_
#define FERRY_NFS_NFS_COPY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/file_transfer.h"  // ProgressCallback, TransferProgress

namespace ferry::nfs {

struct CopyOptions {
  // Chunks in flight. The Runtime's blocking_threads caps it (each worker
  // is a blocking-pool thread). 16 x 1 MiB covers a 10 GbE link at 1 ms.
  int parallelism = 16;
  // Bytes per chunk, at most FSINFO's rtmax (reads) or wtmax (writes);
  // 0: that maximum capped at 1 MiB. A chunk over 1 MiB is sent as several
  // READ/WRITE calls of 1 MiB (see nfs_file.h).
  uint32_t chunk_bytes = 0;
  // Permission bits (minus the umask, locally) of files created on either
  // side. A download's local file is always a new file: it gets these bits
  // even when it replaces an existing one. An upload that replaces an NFS
  // file gives the new file the old one's rwx bits (set-id bits are
  // dropped, as a write would drop them); a new NFS file gets these bits.
  uint32_t mode = 0644;
  // Called on the calling thread (never on a worker or I/O thread) with the
  // bytes written to the destination so far, at most once per
  // progress_interval, and once more with the whole size when every byte has
  // been written (before the rename: a stop there still leaves the
  // destination untouched); bytes_done never decreases. A non-OK return
  // stops the copy, which fails with that status. May be empty. Move-only,
  // so the functions take CopyOptions by value (as TransferOptions).
  ProgressCallback progress;
  absl::Duration progress_interval = absl::Milliseconds(100);
};

struct CopyStats {
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  int rewrites = 0;  // uploads sent again after a write-verifier change
  absl::Duration elapsed;
};

// Copies NFS `nfs_path` (relative to the client's URL path) to `local_path`
// (created or replaced, through a temporary file as above). NotFound naming
// the NFS path for a missing source (nothing is created locally); the NFS
// error for a failed call; the errno status naming the local path (or the
// temporary's) for a local failure; the callback's status for a stop.
absl::StatusOr<CopyStats> CopyNfsToLocal(Runtime& runtime, NfsClient& client,
                                         std::string_view nfs_path, const std::string& local_path,
                                         CopyOptions options = {});

// Copies `local_path` to NFS `nfs_path`, created or replaced through a
// temporary file in its directory as above (the directory must exist, and
// be writable: a writable file in a read-only directory cannot be
// replaced). Errors: the errno status naming the local path for a local
// failure; NotFound for a missing directory; FailedPrecondition if the
// target is a directory or another non-regular file (nothing is created);
// the NFS error for a failed call, PermissionDenied for a directory where
// the temporary cannot be created (the message says why it was needed);
// the callback's status for a stop. A failed upload returns its first
// error; if removing the temporary failed as well (the server is gone),
// that is appended to the message and the temporary, whose name is
// ".<target name>.ferry-<hex>", stays on the server. A target name too
// long to prefix is shortened in the temporary's name (or ".ferry-<hex>"
// if the server still finds it too long).
absl::StatusOr<CopyStats> CopyLocalToNfs(Runtime& runtime, NfsClient& client,
                                         const std::string& local_path, std::string_view nfs_path,
                                         CopyOptions options = {});

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS_COPY_H_
