// The one transfer engine: chunked, parallel copies of files and whole
// trees between any two filesystems (ferry/fs/file_system.h), on the
// Runtime, under its memory budget, with one progress callback (which is
// also how a caller cancels) and one statistics type.
//
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Location src, registry.Resolve("s3://b/big.bin"));
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Location dst, registry.Resolve("nfs://h/export/big.bin"));
//   FERRY_ASSIGN_OR_RETURN(ferry::TransferStats stats,
//       ferry::CopyFile(runtime, *src.fs, src.path, *dst.fs, dst.path,
//                       {.progress = [](const ferry::TransferProgress& p) {
//                          Draw(p.bytes_done, p.bytes_total);
//                          return absl::OkStatus();   // non-OK: stop
//                        }}));
//
// How it works: workers on the Runtime's blocking pool take chunks of the
// open files (positional ReadAt on the source's File, WriteAt on the
// destination's), each worker holding one chunk buffer under a
// MemoryBudget ticket. Up to `jobs` files are open at once, so a tree of
// small files keeps as many opens, chunks and closes in flight as a large
// file keeps chunks. A destination File publishes the file at Close
// (a local or NFS temporary renamed over the target, an S3 multipart
// upload completed): a failed or stopped copy never leaves a partial file
// that looks complete, and the old target stays as it was. When source and
// destination are one filesystem that can copy server-side (S3), no byte
// passes through the client.
//
// Every remote name of a tree is one safe component (the walk's
// fs::WalkGuard, then fs::SafeRelativePath): a listed "../x", an absolute
// name, an empty one, a NUL or a directory listed twice is refused with a
// warning, once (never written outside the destination, never walked
// twice), and counted in TreeCopyResult::entries_refused.
//
// A copy can leave alone what is already there (SkipRule: rclone's rules,
// size and modification time by default, so a rerun moves only what
// changed), take only some files (fs::PathFilter), show what it would do
// (dry_run) and make the destination a mirror (delete_extraneous): a sync
// is a tree copy with these set. Each file is checked against the
// destination as it is opened, `jobs` at once, so a sync of millions
// starts copying at once and holds no listing of either side.
//
// Thread-safety: thread-safe; the functions block the caller.
// REQUIRES: not called on an I/O or blocking-pool thread of `runtime`.
#ifndef FERRY_TRANSFER_COPY_ENGINE_H_
#define FERRY_TRANSFER_COPY_ENGINE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/path_filter.h"
#include "ferry/transfer/transfer_stats.h"

namespace ferry {

class Runtime;

// One piece of trouble a tree copy reports as it happens (on_notice).
struct CopyNotice {
  enum class Kind {
    kRefused,  // a listed name the walk refused (not copied)
    kSkipped,  // a symlink or special file (not copied)
    kFailed,   // a file or directory that failed
  };
  Kind kind;
  std::string text;  // one line: the URL and why, as TreeCopyResult says it
};

// When a file already at the destination is left as it is.
enum class SkipRule {
  kNever,  // copy every file (cp's rule)
  // rclone's default: same size and modification time, within the coarser
  // side's precision (fs::FileSystem::mtime_precision). When only the time
  // differs and both sides tell an MD5 without moving the file (S3's
  // stored ones, the local disk), equal content is kept and its time set:
  // a `touch` costs no transfer.
  kSizeAndTime,
  kSizeOnly,   // same size (rclone --size-only)
  kChecksum,   // same size and MD5: stored ones, else both files read and hashed
  kExisting,   // any file there (rclone --ignore-existing)
};

// One file's outcome, for a listing of what a sync did (or, in a dry run,
// would do). `path` is relative to the tree's roots (a single file's: its
// name in the destination's directory).
struct FileEvent {
  enum class Kind {
    kCopied,       // copied (dry run: would be)
    kUpToDate,     // left as it was
    kTimeUpdated,  // same content: only its modification time set (dry run: would be)
    kDeleted,      // removed from the destination (dry run: would be)
  };
  Kind kind;
  std::string path;
  int64_t bytes = 0;
};

// What a copy's FileEvents came to, for a listing of what a sync did (or
// would do): the paths copied and deleted, the first `max_listed` of each
// and how many more (a sync of millions lists a sample), and the files
// left up to date. Fed by CopyOptions::on_file:
//
//   FileEventLists lists(10000);
//   options.on_file = [&lists](const FileEvent& e) { lists.Add(e); };
//
// Thread-safety: thread-compatible (on_file runs on the caller's thread).
struct FileEventLists {
  explicit FileEventLists(size_t max_listed) : max_listed(max_listed) {}
  void Add(const FileEvent& e);

  size_t max_listed;
  std::vector<std::string> copied, deleted;
  int64_t copied_unlisted = 0, deleted_unlisted = 0;
  int64_t up_to_date = 0;     // kUpToDate and kTimeUpdated
  int64_t times_updated = 0;  // kTimeUpdated
};

struct CopyOptions {
  // Bytes per chunk; 0: the larger of the two filesystems' preferences
  // (S3 8 MiB, NFS 1 MiB), else 8 MiB.
  int64_t chunk_bytes = 0;
  // Chunks in flight at once (for one file or spread over several); 0:
  // the smaller of the two filesystems' non-zero preferences, else 16. The
  // Runtime's blocking_threads caps it (each is a blocking-pool worker).
  int parallelism = 0;
  // Files open at once in a tree copy. 16: a tree of small files is a
  // chain of round trips per file (open, write, commit, rename), so files
  // in flight are what hides latency; at +1 ms 16 took 1,000 NFS uploads
  // of 64 KiB from 9.1 s (4 at once) to 3.6 s. Large files are bounded by
  // `parallelism` and the memory budget, not by this.
  int jobs = 16;
  // Permission bits of new files where the destination has them.
  uint32_t mode = 0644;
  // Called on the calling thread, at most once per progress_interval and
  // once at the end with every byte done; a non-OK return stops the copy
  // (files in flight are discarded) and the copy returns that status.
  ProgressCallback progress;
  absl::Duration progress_interval = absl::Milliseconds(100);
  // Copy server-side when source and destination are one filesystem that
  // can (FileSystem::CopyWithin).
  bool server_side = true;
  // Called on the calling thread as a tree copy finds trouble, so a long
  // copy shows it while it runs: each entry refused or skipped at once,
  // each failed file within a progress_interval of its failure. The result
  // still holds every one of them.
  std::function<void(const CopyNotice&)> on_notice;
  // What an interrupted earlier copy left of a file this run writes (its
  // temporary, its unfinished multipart upload), unchanged since before
  // this run started, is removed as the file is written
  // (fs::WriteOptions::reclaim_before); fs::FileSystem::RemoveLeftovers
  // finds the rest on demand.
  bool reclaim_leftovers = true;
  // Files this large or larger are written so that a killed copy's rerun
  // continues them where the destination can (fs::WriteOptions::
  // resume_source; local destinations): the bytes it finds in place for
  // the same source (path, size, time, version) are checked at their end
  // (64 KiB read from both sides: one small request) and kept; the rest
  // is copied. 0: never.
  int64_t resume_min_bytes = int64_t{64} << 20;

  // Sync. What decides that a destination file needs no copy.
  SkipRule skip = SkipRule::kNever;
  // A copied file keeps its source's modification time where the
  // destination keeps one (fs::WriteOptions::mtime): what kSizeAndTime
  // compares on the next run.
  bool preserve_mtime = true;
  // Trees: only files the filter includes are copied (and deleted); the
  // others count in TreeCopyResult::files_excluded. Not owned; null: all.
  const fs::PathFilter* filter = nullptr;
  // Decides everything and reports it (on_file, the result's counts) but
  // writes, sets and deletes nothing.
  bool dry_run = false;
  // Trees: once every file is copied, destination files (and then empty
  // directories) the source lacks are removed, the filter's excluded ones
  // and ferry's temporaries kept. Nothing is removed when anything failed,
  // a name was refused or the copy was stopped.
  bool delete_extraneous = false;
  // More removals than this: none is made and the copy fails
  // (FailedPrecondition). Negative: no limit.
  int64_t max_delete = -1;
  // Called on the calling thread (within a progress_interval) for each
  // file copied, left or deleted.
  std::function<void(const FileEvent&)> on_file;
  // After each file is published, both sides are read back (or their
  // stored MD5s taken) and compared; a mismatch fails the file (DataLoss).
  bool verify = false;
  // Bytes per second the whole copy moves at most (every file and worker
  // together); 0: no limit.
  int64_t bandwidth_limit = 0;
};

// Copies file `src_path` of `src` to `dst_path` of `dst` (created or
// replaced at the end; the parent must exist). NotFound naming the source
// for a missing source (nothing is created); FailedPrecondition if the
// source is a directory or shrinks while it is read; either side's error
// otherwise, annotated with both URLs.
absl::StatusOr<TransferStats> CopyFile(Runtime& runtime, fs::FileSystem& src,
                                       std::string_view src_path, fs::FileSystem& dst,
                                       std::string_view dst_path, CopyOptions options = {});
// The same, for a source the caller has already stat'ed (`source` is its
// Stat entry): the copy does not ask again (a round trip per file on NFS),
// and a filesystem that opens from an entry skips its own look-up (S3: the
// HEAD). A `source` that is not a file is looked at again as above.
absl::StatusOr<TransferStats> CopyFile(Runtime& runtime, fs::FileSystem& src,
                                       std::string_view src_path, const fs::Entry& source,
                                       fs::FileSystem& dst, std::string_view dst_path,
                                       CopyOptions options = {});
// The same, for a destination the caller has looked at too (`destination`:
// what its Stat of `dst_path` found, fs::PathSeen::Of): the skip rule
// compares with it and the writer takes it (fs::WriteOptions::target), so
// neither asks the server again (NFS: two LOOKUPs of a one-file copy).
absl::StatusOr<TransferStats> CopyFile(Runtime& runtime, fs::FileSystem& src,
                                       std::string_view src_path, const fs::Entry& source,
                                       fs::FileSystem& dst, std::string_view dst_path,
                                       const fs::PathSeen& destination, CopyOptions options = {});

// One file of a tree copy that did not make it.
struct FileCopyFailure {
  std::string source;       // URL
  std::string destination;  // URL; empty for a name refused as unsafe
  absl::Status status;
};

// "SRC -> DST: CODE: message" ("(not copied)" for an empty destination),
// the line a tool prints for a failure.
std::string DescribeFailure(const FileCopyFailure& f);

// Every entry the source listed is in exactly one of: copied (totals), up
// to date, excluded, failed (failures), refused or skipped (warnings).
struct TreeCopyResult {
  TransferStats totals;  // files copied (dry run: to copy), their bytes and chunks
  int64_t files_failed = 0;     // files (and unreadable directories) that failed
  int64_t files_skipped = 0;    // symlinks and other non-files
  int64_t entries_refused = 0;  // names refused (walk_guard.h), never copied
  int64_t files_up_to_date = 0; // left as they were (SkipRule), times set included
  int64_t times_updated = 0;    // of those, equal content whose time was set
  int64_t files_excluded = 0;   // left out by the filter
  int64_t files_deleted = 0;    // removed by delete_extraneous (dry run: to remove)
  int64_t bytes_deleted = 0;
  bool dry_run = false;
  std::vector<FileCopyFailure> failures;  // failed files and directories
  std::vector<std::string> warnings;      // one line per refused or skipped entry
};

// Copies every file below directory `src_dir` to the same relative path
// below `dst_dir`, creating directories as needed (empty ones included);
// `jobs` files at once, starting while the source is still listed (a
// bucket of millions starts copying after its first listing reply, and
// memory stays bounded: the listing pauses while 8,192 files wait). A
// file that fails is reported in the result and the others go on; the
// function itself fails only if the source cannot be walked at all
// (NotFound for a missing `src_dir`), the destination directory cannot be
// created, or the progress callback stopped it.
// Symlinks and special files are skipped with a warning.
absl::StatusOr<TreeCopyResult> CopyTree(Runtime& runtime, fs::FileSystem& src,
                                        std::string_view src_dir, fs::FileSystem& dst,
                                        std::string_view dst_dir, CopyOptions options = {});

}  // namespace ferry

#endif  // FERRY_TRANSFER_COPY_ENGINE_H_
