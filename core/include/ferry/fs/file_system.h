// FileSystem: the one protocol-neutral front every tool and binding holds.
//
// Each adapter implements it once (NFS, S3, iRODS; the core has the local
// disk, tests an in-memory one) and registers a URL scheme with a
// FileSystemRegistry (registry.h); ferry-cp, ferry-walk and the bindings
// get a FileSystem from a URL and never name a protocol. A copy between
// any two of them goes through the one transfer engine
// (ferry/transfer/copy_engine.h), never through a local file.
//
//   ferry::fs::FileSystemRegistry registry(runtime);
//   FERRY_RETURN_IF_ERROR(ferry::RegisterBuiltinFileSystems(registry));
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Location where,
//                          registry.Resolve("s3://bucket/dir/big.bin"));
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Entry e, where.fs->Stat(where.path));
//   FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::fs::File> f, where.fs->OpenRead(where.path));
//   FERRY_ASSIGN_OR_RETURN(size_t n, f->ReadAt(1 << 30, absl::MakeSpan(buf)));
//
// Paths are '/'-separated and relative to the filesystem's root (the export
// for NFS, the endpoint for S3 where the first component is the bucket,
// the zone for iRODS, '/' locally); "" is the root. A trailing '/' is
// ignored. Errors follow ferry's table (docs/architecture.md) and name the
// operation and Url(path).
//
// Like Arrow's arrow::fs::FileSystem and rclone's Fs: a handful of
// primitives every protocol fills in; what it lacks answers Unimplemented.
//
// Thread-safety: implementations are thread-safe; every method may be
// called from many threads at once. Methods block: REQUIRES not called on
// an I/O thread of the Runtime the filesystem was made with.
#ifndef FERRY_FS_FILE_SYSTEM_H_
#define FERRY_FS_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/base/mutex.h"
#include "ferry/fs/entry.h"
#include "ferry/transfer/checksum.h"

namespace ferry::fs {

// An open file: positional reads and writes (a ferry::FdHandle, so an
// FdTable gives it POSIX descriptors and offsets: see file_table.h).
//
// A file opened for writing is published by Close(): where the protocol
// allows it atomically (local and NFS: a temporary file renamed over the
// target; S3: a multipart upload completed), so readers see the old object
// or the whole new one, never a partial one. Destroying a written file
// that was not closed with OK discards what was written and leaves the
// target as it was.
//
// Thread-safety: ReadAt, WriteAt and Size may run on many threads at once
// (disjoint ranges for writes); Close must not race with them.
class File {
 public:
  virtual ~File() = default;

  // Up to buf.size() bytes at `offset`; fewer only at the end (0 at or past
  // it). FailedPrecondition on a file opened for writing only.
  virtual absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf);

  // All of `data` at `offset`; returns data.size(). Writes may arrive in
  // any order. FailedPrecondition on a file opened for reading only.
  virtual absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data);

  // Bytes straight from a descriptor, for a copy out of a local file: `n`
  // bytes of `fd` from `fd_offset`, written at `offset`, moved by the
  // kernel (sendfile) without passing through this process's memory.
  // Returns the bytes taken from `fd`: fewer than `n` (or FailedPrecondition
  // saying so) only if it ended first, and then the write failed (the
  // protocol's record was cut short) and the file must be discarded.
  // Unimplemented where this file cannot (the default; iRODS and NFS can,
  // unless sendfile cannot read `fd`): the caller writes the bytes with
  // WriteAt instead, and had better do so for the rest of the file.
  // Thread-safety: as WriteAt.
  virtual absl::StatusOr<size_t> WriteFromDescriptor(int64_t offset, int fd, int64_t fd_offset,
                                                     size_t n);

  // The mirror of WriteFromDescriptor, for a copy into a local file: `n`
  // bytes at `offset` of this file written into `fd` at `fd_offset` by the
  // kernel (NFS, iRODS: spliced from the socket) without passing through
  // this process's memory, each write under `write_lock` if given (the
  // destination's: its writers wait there asleep, not on the inode in the
  // kernel). Returns how many: fewer only at the end of the file. After an
  // error, any of the range may have been written. Unimplemented where
  // this file cannot (the default): read the bytes with ReadAt instead.
  // Thread-safety: as ReadAt.
  virtual absl::StatusOr<size_t> ReadIntoDescriptor(int64_t offset, size_t n, int fd,
                                                    int64_t fd_offset, Mutex* write_lock);

  // For a written file with a descriptor of its own (a local file's
  // temporary): `fill(fd, fd_offset, write_lock)` writes up to `n` bytes
  // at `offset` of it directly (another file's ReadIntoDescriptor), each
  // write under `write_lock`, and returns how many; they then count as
  // written, as WriteAt's would. Returns fill's answer. Unimplemented
  // where this file has no descriptor to fill (the default): write the
  // bytes with WriteAt. Thread-safety: as WriteAt.
  using DescriptorFill =
      absl::FunctionRef<absl::StatusOr<size_t>(int fd, int64_t fd_offset, Mutex* write_lock)>;
  virtual absl::StatusOr<size_t> WriteThroughDescriptor(int64_t offset, size_t n, DescriptorFill fill);

  // The descriptor a file opened for reading reads from, for another
  // file's WriteFromDescriptor; -1 if it has none (a remote file). Valid
  // until Close or destruction.
  virtual int descriptor() const { return -1; }

  // The size: as opened for a read file; the bytes written so far (the
  // highest offset reached) for a written one.
  virtual absl::StatusOr<int64_t> Size() = 0;

  // Ends the file. For a written file: publishes it, and an error means
  // the target was NOT replaced, except one whose message says the bytes
  // are in place (an NFS file whose modification time could not be set
  // after its rename: a sync copies it again). Aborted means the server
  // lost written data (an NFS write verifier changed: it restarted): every
  // byte must be written again, and then Close called again; the file
  // stays open. Idempotent once OK.
  virtual absl::Status Close() { return absl::OkStatus(); }

  // Ends a written file without publishing it (the temporary removed, the
  // upload aborted: the target stays as it was). Its status says whether
  // that clean-up worked (a server gone may leave a temporary behind; the
  // message names it). The destructor does the same, silently, for a file
  // neither closed nor discarded. Idempotent.
  virtual absl::Status Discard() { return absl::OkStatus(); }

  // What the protocol did for a written file beyond its bytes, known once
  // Close has published it: multipart parts uploaded, requests repeated
  // (S3). Zero where the protocol has nothing to tell. The copy engine
  // adds them to its TransferStats.
  struct Counters {
    int64_t parts = 0;
    int64_t retries = 0;
  };
  virtual Counters counters() const { return {}; }

  // For a written file opened with WriteOptions::resume_source: bytes
  // [0, n) that an interrupted earlier write of the same source left in
  // place and this one kept (local: its temporary), so the caller writes
  // from n on, after checking a few of them (ReadAt reads them back). 0
  // where nothing was kept or the protocol keeps nothing.
  virtual int64_t resumed_bytes() const { return 0; }

  // Forgets the kept bytes (resumed_bytes() becomes 0): the caller found
  // they are not the source's, and writes the whole file.
  virtual absl::Status ForgetResumed() { return absl::OkStatus(); }
};

struct WriteOptions {
  // The final size if known (object stores lay multipart parts out by it),
  // else -1.
  int64_t size = -1;
  // Permission bits of a new file, where the protocol has them. A file
  // that replaces another keeps the old one's rwx bits where it can.
  uint32_t mode = 0644;
  // A leftover of an interrupted earlier write of this same file (its
  // temporary, its unfinished multipart upload) last changed before this
  // time is removed when this write starts, so a rerun after a SIGKILL
  // leaves nothing behind. InfinitePast: leftovers are left alone. The
  // copy engine passes the time its run started: a writer still alive
  // keeps changing its temporary, a killed one does not.
  absl::Time reclaim_before = absl::InfinitePast();
  // The published file's modification time, where the protocol keeps one
  // the writer may set (local and NFS: the file's mtime; S3: the object's
  // x-amz-meta-mtime, as rclone keeps it): a copy keeps its source's, so a
  // later sync can tell it is up to date. InfinitePast: the server's clock.
  absl::Time mtime = absl::InfinitePast();
  // The content's 16-byte MD5 if the writer knows it, else empty: kept
  // where a protocol's own hash would not say it (S3: a multipart
  // upload's ETag is no MD5, so it goes in md5chksum, as rclone keeps it),
  // so a later checksum comparison needs no read.
  std::string content_md5;
  // What the bytes are, for resuming: a string naming the source's content
  // (its path, size, modification time and version; empty: no resuming).
  // A writer that can keep a half-written file through a crash (local: a
  // named temporary tagged with it) continues one an interrupted write of
  // the same content left: see File::resumed_bytes. A failed or discarded
  // write still leaves nothing; only a killed process (or a lost machine)
  // leaves something to resume.
  std::string resume_source;
  // What the caller found at the path just before, where it looked (the
  // copy engine's Stat for its skip rule, a listing of the directory). A
  // writer that would look itself takes this instead (NFS: the LOOKUP for
  // the permission bits a replaced file keeps). What changed since is
  // still refused where it matters (NFS: a directory put there meanwhile
  // fails the rename) but a file put there meanwhile is replaced with
  // `mode`. kUnknown: the writer looks.
  PathSeen target;
};

// What FileSystem::RemoveLeftovers found.
struct LeftoverStats {
  int64_t removed = 0;        // temporaries removed, uploads aborted
  int64_t bytes = 0;          // their bytes, where known
  int64_t kept_recent = 0;    // ferry's, but changed since `before`: left
  std::vector<std::string> removed_urls;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // "nfs", "s3", "file", ... as registered.
  virtual std::string_view scheme() const = 0;

  // `path` as a user would write it (a URL, or a local path), for messages.
  virtual std::string Url(std::string_view path) const = 0;

  // What `path` is. NotFound if nothing is there.
  virtual absl::StatusOr<Entry> Stat(std::string_view path) = 0;

  // The entries directly in directory `dir` (paths are their names), in
  // batches as the protocol pages them; `on_batch` may take the entries
  // and returns false to stop. NotFound for a missing directory;
  // FailedPrecondition if `dir` is a file.
  virtual absl::Status List(std::string_view dir,
                            absl::FunctionRef<bool(std::vector<Entry>&)> on_batch) = 0;

  // Every entry below `root` (not the root itself), once, paths relative to
  // it, in no particular order, in batches on this thread. Symlinks are
  // reported, never followed; a directory that cannot be read is a
  // WalkError and the walk goes on. The default reads one directory at a
  // time with List; adapters override it with parallel walks.
  virtual absl::StatusOr<WalkStats> Walk(std::string_view root, const WalkOptions& options,
                                         absl::FunctionRef<bool(WalkBatch&)> on_batch);

  // Opens an existing file for reading. NotFound; FailedPrecondition if it
  // is a directory.
  virtual absl::StatusOr<std::unique_ptr<File>> OpenRead(std::string_view path) = 0;

  // Opens `path` for reading as `listed` (its file entry from a Walk, List
  // or Stat just made) describes it. A protocol whose open costs a request
  // skips it: S3 opens with the listed size and ETag (no HEAD), and reads
  // carry that ETag, so an object replaced since the listing fails its
  // read (FailedPrecondition) instead of mixing versions; NFS opens by the
  // entry's file handle with the listed size (no LOOKUP), so it reads the
  // file that was listed: one removed since fails NotFound, one replaced
  // or whose size or mtime moved fails FailedPrecondition (seen in READ
  // replies' attributes, or at Close for a file nothing was read of). The
  // default, and an entry with neither a version nor a handle, is
  // OpenRead(path).
  virtual absl::StatusOr<std::unique_ptr<File>> OpenReadListed(std::string_view path,
                                                               const Entry& listed) {
    (void)listed;
    return OpenRead(path);
  }

  // Opens `path` for writing: creates it or (at Close) replaces it. The
  // parent directory must exist where the protocol has directories
  // (NotFound otherwise); FailedPrecondition if `path` is a directory.
  virtual absl::StatusOr<std::unique_ptr<File>> OpenWrite(std::string_view path,
                                                          const WriteOptions& options) = 0;

  // Creates directory `path` (and missing parents if `parents`); OK if it
  // exists. Protocols without directories (S3) succeed and do nothing.
  virtual absl::Status CreateDir(std::string_view path, bool parents);

  // Removes a file (not a directory). NotFound if missing.
  virtual absl::Status Remove(std::string_view path);

  // Removes an empty directory.
  virtual absl::Status RemoveDir(std::string_view path);

  // Renames a file or directory; replaces a file at `to`.
  virtual absl::Status Rename(std::string_view from, std::string_view to);

  // Copies file `from` to `to` on this filesystem without moving the bytes
  // through the client (S3 CopyObject / UploadPartCopy), when the protocol
  // can. Unimplemented otherwise: the engine then copies the bytes.
  virtual absl::Status CopyWithin(std::string_view from, std::string_view to);

  // Removes what interrupted ferry writes left below directory (prefix)
  // `dir`, recursively: temporaries named as ferry names them
  // (IsFerryTemporaryName) and, on S3, unfinished multipart uploads; only
  // those last changed (an upload: started) before `before`. Nothing else
  // is touched. The default walks `dir` and removes matching files; S3
  // lists the prefix's multipart uploads instead.
  virtual absl::StatusOr<LeftoverStats> RemoveLeftovers(std::string_view dir, absl::Time before);

  // Sets file `path`'s modification time (a sync that finds equal content
  // under another time sets the time instead of copying the bytes).
  // Unimplemented where the protocol cannot.
  virtual absl::Status SetModTime(std::string_view path, absl::Time mtime);

  // How finely this filesystem keeps modification times: two times closer
  // than the coarser side's precision are equal (iRODS keeps seconds).
  virtual absl::Duration mtime_precision() const { return absl::Nanoseconds(1); }

  // Whether List and Walk report the modification time a writer set
  // (WriteOptions::mtime). S3 listings carry the upload's time: the kept
  // one is in the object's metadata, which only Stat (a HEAD) reads.
  virtual bool lists_kept_mtime() const { return true; }

  // The 16-byte MD5 digest of file `path` (`listed`: its entry from a walk
  // or Stat just made). Where the server keeps one (S3: a single-part
  // upload's ETag, the md5chksum metadata ferry and rclone store) it costs
  // no read. Otherwise, with `read_if_needed`, the file is read and hashed
  // (the default; the local disk always does, a read being cheap there);
  // without, Unimplemented.
  virtual absl::StatusOr<std::string> Md5(std::string_view path, const Entry& listed,
                                          bool read_if_needed);

  // The content hash this filesystem's server keeps or computes itself, so
  // ContentHash of that kind moves no file bytes (S3: MD5, in ETags and
  // md5chksum; iRODS: SHA-256, its default checksum scheme); nullopt for
  // none (every hash is a read). A sync compares by a kind the two sides
  // share (see ComparisonHash in copy_engine.cc).
  virtual std::optional<HashKind> server_hash() const { return std::nullopt; }

  // The raw digest of kind `kind` of file `path`: for kMd5, Md5(). A kind
  // the server keeps comes from it; others are read and hashed with
  // `read_if_needed`, else Unimplemented.
  virtual absl::StatusOr<std::string> ContentHash(std::string_view path, const Entry& listed,
                                                  HashKind kind, bool read_if_needed);

  // The chunk size the engine should move this filesystem's bytes in, and
  // how many chunks of one file it should keep in flight; 0: no preference
  // (the local disk has none: the other side decides).
  virtual int64_t preferred_chunk_bytes() const { return 0; }
  virtual int preferred_parallelism() const { return 0; }

 protected:
  // `kind` of file `path`, read through OpenReadListed and hashed.
  absl::StatusOr<std::string> HashByReading(std::string_view path, const Entry& listed,
                                            HashKind kind);
};

// How a filesystem would have the copy engine move its files (what its
// preferred_chunk_bytes and preferred_parallelism answer): the bytes of one
// chunk and the chunks of one file in flight. The adapters' options take
// one, so each states these settings alike; 0 in either: the adapter's
// default.
struct ChunkPreferences {
  int64_t chunk_bytes = 0;
  int parallelism = 0;
};

// True for a name ferry gives its temporaries: ".<name>.ferry-<16 hex>"
// or ".ferry-<16 hex>" (io/internal/temp_file.h). Any other name is a
// user's file, whatever it looks like.
bool IsFerryTemporaryName(std::string_view name);

// "a/b" + "c" -> "a/b/c"; "" + "c" -> "c"; "a/" + "c" -> "a/c".
std::string JoinPath(std::string_view dir, std::string_view name);

// The last component of `path` ("a/b/" -> "b"; "" -> "").
std::string_view BaseName(std::string_view path);

// `path` without its last component ("a/b/c" -> "a/b"; "c" -> "").
std::string_view DirName(std::string_view path);

// `path` without leading and trailing '/' and with runs of '/' folded.
std::string NormalizePath(std::string_view path);

}  // namespace ferry::fs

#endif  // FERRY_FS_FILE_SYSTEM_H_
