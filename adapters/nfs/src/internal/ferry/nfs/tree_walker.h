// WalkTree: a parallel walk of an NFS directory tree, streamed in batches.
// Private to the adapter: users walk through NfsFileSystem::Walk (the
// protocol-neutral fs::Entry batches), which runs this.
//
// Many directories are read at once (READDIRPLUS, many calls in flight over
// the client's pool), each with large pages, and nothing else: READDIRPLUS
// carries every entry's attributes and handle, so there is no GETATTR or
// ACCESS per entry or per directory (the kernel client's "knock first"
// habit that makes it 50x slower). Entries reach the caller in batches on
// the caller's own thread; memory stays bounded however large a directory
// is, because no new READDIRPLUS is sent while the caller is behind.
//
//   ferry::nfs::WalkStats stats;
//   FERRY_ASSIGN_OR_RETURN(stats, ferry::nfs::WalkTree(*client, "", {},
//       [&](ferry::nfs::WalkBatch& batch) {
//         for (const ferry::nfs::WalkEntry& e : batch.entries) Print(e);
//         for (const ferry::nfs::WalkError& e : batch.errors) Warn(e.status);
//         return true;   // false stops the walk early
//       }));
//
// Semantics:
// - Every object below the root is reported once (the root itself is not),
//   with its path relative to the root ("a/b/c"), in no particular order.
// - Symlinks are reported, never followed. Only directories are descended.
// - A directory that cannot be read (NFS3ERR_ACCES, ...) is reported in
//   WalkBatch::errors, with its path and the status; the walk carries on.
//   Its own entry was reported by its parent's listing as usual.
// - NFS3ERR_BAD_COOKIE (the directory changed under a continued listing):
//   the directory is read again from the start, and the entries already
//   reported for it are skipped (a server lists an unchanged directory in
//   the same order), at most max_bad_cookie_restarts times; then an error.
// - Names are bytes as the server sends them (any byte but '/' and NUL).
#ifndef FERRY_NFS_TREE_WALKER_H_
#define FERRY_NFS_TREE_WALKER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/fs/entry.h"
#include "ferry/nfs/nfs3_types.h"
#include "ferry/nfs/nfs_client.h"

namespace ferry::nfs {

struct WalkEntry {
  std::string path;  // relative to the walk's root, '/'-separated
  FileType type = FileType::kRegular;
  uint64_t size = 0;
  uint32_t mode = 0;  // permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  NfsTime mtime;
  uint64_t fileid = 0;
  // Regular files: the handle the server listed (or LOOKUP returned), so
  // a reader opens it without a LOOKUP per path component; empty where
  // the server sent none, and for every other type.
  FileHandle handle;
};

// As fs::WalkBatch's, with the directory that could not be read ("" = the
// root).
using WalkError = fs::WalkError;

struct WalkBatch {
  std::vector<WalkEntry> entries;
  std::vector<WalkError> errors;
};

// fs::WalkStats: `bytes` sums the regular files' sizes, `requests` counts
// the READDIRPLUS (and fallback LOOKUP) calls completed, `retries` the
// BAD_COOKIE restarts and the pool's re-sent calls.
using WalkStats = fs::WalkStats;

struct WalkOptions {
  // The neutral settings: `walk.max_in_flight` is READDIRPLUS calls in
  // flight at once (256 keeps a 2-core ganesha busy: the server is the
  // bound past ~128), and the batching and queueing as fs::WalkOptions says.
  fs::WalkOptions walk;
  // READDIRPLUS sizes; 0: from FSINFO (NfsClient::readdir_dircount/maxcount).
  uint32_t dircount = 0;
  uint32_t maxcount = 0;
  int max_bad_cookie_restarts = 3;
};

// Walks the tree below `root` (relative to the client's URL path; "" = the
// URL's path). Blocks; calls `on_batch` on this thread, one batch at a time.
// Returns the statistics, or an error if the root cannot be resolved (an
// unreadable root is a WalkError like any other directory).
// REQUIRES: not on an I/O thread of the client's Runtime.
absl::StatusOr<WalkStats> WalkTree(NfsClient& client, std::string_view root,
                                   const WalkOptions& options,
                                   absl::FunctionRef<bool(WalkBatch&)> on_batch);

}  // namespace ferry::nfs

#endif  // FERRY_NFS_TREE_WALKER_H_
