// NfsClient: a userspace NFSv3 client over a pipelined RpcPool.
//
// Connect() finds the ports (the URL's nfsport/mountport, else the
// portmapper), lists the server's exports (MOUNT EXPORT), mounts the one
// that holds the URL's path (MOUNT MNT), LOOKUPs the rest of the path, and
// reads FSINFO (rtmax, wtmax, dtpref size the walker's and the copier's
// calls). Every NFS procedure then has an async form, completing through a
// callback on an I/O thread with many calls in flight over the pool's
// connections, and a blocking twin.
//
//   ferry::Runtime rt;
//   FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::nfs::NfsClient> nfs,
//       ferry::nfs::NfsClient::Connect(rt, "nfs://127.0.0.1/export?nfsport=2049&mountport=20048"));
//   FERRY_ASSIGN_OR_RETURN(ferry::nfs::NfsObject f, nfs->LookupPath("dir/file1.txt"));
//   FERRY_ASSIGN_OR_RETURN(ferry::nfs::ReadReply r, nfs->Read(f.handle, 0, 4096, "dir/file1.txt"));
//
// Paths: every method takes `path`, the object's path relative to the
// URL's path, only to name it in errors:
//   NFS3 LOOKUP nfs://127.0.0.1/export/dir/nope: NFS3ERR_NOENT (no such file or directory)
// Errors: NFS3ERR_* as nfs_error.h maps them (GetNfs3Status recovers the
// server's code); transport errors as RpcPool's (Unavailable,
// DeadlineExceeded, DataLoss), annotated with the procedure and the path.
//
// Calls that are safe to repeat (GETATTR, LOOKUP, ACCESS, READDIRPLUS,
// READ, WRITE at an offset, COMMIT, FSINFO, FSSTAT) are retried by the pool
// when a connection drops; CREATE, MKDIR, REMOVE, RMDIR and RENAME are not.
//
// Thread-safety: thread-safe; callbacks run on the Runtime's I/O threads and
// must not block. REQUIRES: the Runtime outlives the client; blocking
// methods are not called on an I/O thread.
#ifndef FERRY_NFS_NFS_CLIENT_H_
#define FERRY_NFS_NFS_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/nfs/nfs3_types.h"
#include "ferry/nfs/nfs_error.h"
#include "ferry/nfs/nfs_url.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_metrics.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/retry_policy.h"
#include "ferry/runtime/runtime.h"

namespace ferry::nfs {

struct NfsClientOptions {
  // TCP connections to the NFS port and calls in flight on each. 4 x 64
  // keeps ~256 directory reads in flight, which saturates ganesha on two
  // cores (docs: 256 in flight on one connection walks 100,000 files in
  // ~0.33 s); more connections spread the server's per-connection work.
  int connections = 4;
  int max_in_flight_per_connection = 64;
  // Connects (portmapper, MOUNT and NFS), calls, and the retry window.
  // Retried within the window when the pool's own quick resends did not
  // cure a lost connection: NULL, GETATTR, LOOKUP, ACCESS, READDIRPLUS,
  // READ, WRITE, COMMIT, FSSTAT, FSINFO. CREATE, MKDIR, REMOVE, RMDIR and
  // RENAME are never sent twice by ferry. WRITE is UNSTABLE and checked by
  // COMMIT's verifier, so resending it is safe.
  CallTimeouts timeouts;
  // AUTH_SYS machinename.
  std::string machine_name = "ferry";
  // Root the client at the export holding the URL's path rather than at
  // the path itself (which then need not exist): NfsFileSystem's paths are
  // relative to the export, so a copy's target may be a file not yet made.
  // url() and DisplayPath then name paths from the export.
  bool root_at_export = false;
  // How long the handle of a directory a path passes through (every
  // component but the last: "a" and "a/b" of "a/b/c") is reused by
  // LookupPath instead of a LOOKUP. A tree upload then sends one LOOKUP
  // for a file's parent, not one per level. This client's own renames and
  // removals of directories drop what they touch at once (ForgetDirectory);
  // another client's rename is seen once the time is up (the kernel
  // client's default is 30-60 s), and a handle that went stale is looked
  // up again. Zero: every component is looked up every time.
  absl::Duration directory_handle_time = absl::Seconds(1);
};

// An object found by LOOKUP, CREATE or MKDIR.
struct NfsObject {
  FileHandle handle;
  std::optional<Fattr3> attributes;  // servers almost always send them
};

// One READDIRPLUS reply. `result`'s names and handles view `record`, which
// the page owns (on the heap, so moving the page keeps the views valid).
struct ReaddirplusPage {
  std::unique_ptr<std::string> record;
  ReaddirplusResult result;
};

struct ReadReply {
  std::string data;
  bool eof = false;
};

// ReadIntoAsync's result: `count` bytes were stored at the start of the
// destination.
struct ReadIntoReply {
  size_t count = 0;
  bool eof = false;
  std::optional<Fattr3> attributes;  // the file's after the read, if sent
};

struct WriteReply {
  uint32_t count = 0;
  StableHow committed = StableHow::kUnstable;
  uint64_t verifier = 0;  // compare with COMMIT's: a change means a server reboot
};

// An empty value for calls that only succeed or fail.
struct NfsDone {};

class NfsClient {
 public:
  // Parses `url` (InvalidArgument naming it), mounts and resolves it. Blocks.
  // Rooted at the export, it may return with one LOOKUP still in flight
  // (the URL's path, see LookupPath), counted in metrics().
  // REQUIRES: not on an I/O thread of `runtime`.
  static absl::StatusOr<std::unique_ptr<NfsClient>> Connect(Runtime& runtime, std::string_view url,
                                                            const NfsClientOptions& options = {});
  static absl::StatusOr<std::unique_ptr<NfsClient>> Connect(Runtime& runtime, const NfsUrl& url,
                                                            const NfsClientOptions& options = {});

  NfsClient(const NfsClient&) = delete;
  NfsClient& operator=(const NfsClient&) = delete;
  // Fails calls still in flight with Cancelled (their callbacks run first).
  // Does not UMNT (see Unmount). REQUIRES: not called from a callback.
  ~NfsClient();

  const NfsUrl& url() const;
  // The export MNT mounted (e.g. "/export") and the handle and attributes of
  // the URL's path (the export or a directory below it).
  const std::string& export_path() const;
  const FileHandle& root_handle() const;
  const Fattr3& root_attributes() const;
  // FSINFO of the export, read at Connect.
  const FsInfo& fsinfo() const;
  // The Runtime the client runs on (its buffer pool lends read-ahead windows).
  Runtime& runtime() const;
  // "nfs://host/export/sub/<relative>", as errors name paths.
  std::string DisplayPath(std::string_view relative) const;
  // The NFS pool's figures (calls, retries, round trips).
  RpcPoolMetrics metrics() const;

  // --- MOUNT ----------------------------------------------------------------
  // EXPORT: the server's export list.
  absl::StatusOr<std::vector<ExportEntry>> Exports();
  // UMNT of export_path() (a courtesy: servers keep no state that matters).
  absl::Status Unmount();

  // --- NFSv3, async ---------------------------------------------------------
  void NullAsync(Callback<NfsDone> done);
  void GetAttrAsync(const FileHandle& fh, std::string path, Callback<Fattr3> done);
  void LookupAsync(const FileHandle& dir, std::string_view name, std::string path,
                   Callback<NfsObject> done);
  // Granted ACCESS3 bits among `mask`.
  void AccessAsync(const FileHandle& fh, uint32_t mask, std::string path, Callback<uint32_t> done);
  // One page of `dir` from `cookie` (0 = start; then the last entry's cookie
  // with the page's cookieverf). dircount/maxcount 0: from FSINFO (see
  // readdir_dircount() and readdir_maxcount()). A NFS3ERR_* (BAD_COOKIE
  // included) is the callback's error, carrying the code for GetNfs3Status.
  void ReaddirplusAsync(const FileHandle& dir, uint64_t cookie, uint64_t cookieverf,
                        uint32_t dircount, uint32_t maxcount, std::string path,
                        Callback<ReaddirplusPage> done);
  // READ of up to `count` bytes (at most fsinfo().rtmax, and well under the
  // pool's 64 MiB record limit, which a 64 MiB rtmax reply exceeds: NfsFile
  // reads 1 MiB per call).
  void ReadAsync(const FileHandle& fh, uint64_t offset, uint32_t count, std::string path,
                 Callback<ReadReply> done);
  // As ReadAsync, but the data goes from the socket straight into `dest`
  // (READ of dest.size() bytes, sized as for ReadAsync; RpcReplyPlacer):
  // no copy in user space (one, from the reply record, when the whole
  // reply arrived in one socket read). A reply with more bytes than asked
  // is DataLoss. REQUIRES: `dest` stays valid and untouched until `done`
  // runs; after an error it may hold any bytes.
  void ReadIntoAsync(const FileHandle& fh, uint64_t offset, absl::Span<char> dest,
                     std::string path, Callback<ReadIntoReply> done);
  // As ReadIntoAsync, into a local file: READ of `to.size` bytes whose data
  // goes from the socket into `to.fd` at `to.offset` by splice (through
  // this process only when the reply arrived whole), written by the pool's
  // I/O thread: a file whose writes may wait on another machine should be
  // written otherwise. A write of the file that fails ends the call with
  // why; the call is then not retried. REQUIRES: `to.fd` stays open until
  // `done` runs, and is not in append mode.
  void ReadIntoFileAsync(const FileHandle& fh, uint64_t offset, FileRange to, std::string path,
                         Callback<ReadIntoReply> done);
  // WRITE of `data` (at most fsinfo().wtmax bytes), sent from where it is
  // (RpcCallOptions::payload): REQUIRES `data` stays valid and unchanged
  // until `done` runs. The server may take fewer bytes (WriteReply::count).
  void WriteAsync(const FileHandle& fh, uint64_t offset, std::string_view data, StableHow stable,
                  std::string path, Callback<WriteReply> done);
  // COMMIT of [offset, offset+count) (count 0: to the end); the verifier.
  void CommitAsync(const FileHandle& fh, uint64_t offset, uint32_t count, std::string path,
                   Callback<uint64_t> done);

  // --- NFSv3, blocking ------------------------------------------------------
  absl::Status Null();
  absl::StatusOr<Fattr3> GetAttr(const FileHandle& fh, std::string_view path);
  absl::StatusOr<NfsObject> Lookup(const FileHandle& dir, std::string_view name,
                                   std::string_view path);
  // LOOKUP of each component of `relative` ("a/b/c") from root_handle();
  // "" is the root itself. The directories on the way ("a", "a/b") may
  // come from the directory handle cache (directory_handle_time); the
  // last component is always looked up, so its attributes are fresh. One
  // exception: a client rooted at the export looks the URL's own path up
  // while it connects (in the round trip of the root's GETATTR and
  // FSINFO), and if the client's first call is LookupPath or
  // LookupDirectory of that path, within a second of the connect (and
  // within directory_handle_time), it takes that answer when it found the
  // path, found it missing, or went unanswered for its whole timeout.
  absl::StatusOr<NfsObject> LookupPath(std::string_view relative);
  // LookupPath for a path that must name a directory, whose handle is all
  // the caller needs (the parent of a file to create, rename or remove):
  // the last component may come from the cache too (then without
  // attributes). A stale cached handle is found by the caller's next call
  // (NFS3ERR_STALE); it then forgets the directory and asks again.
  absl::StatusOr<NfsObject> LookupDirectory(std::string_view relative);
  // Whether `relative` is a directory whose handle is in the cache (passed
  // through, looked up or mounted within directory_handle_time, and at
  // most `max_age` ago); no call is made.
  bool HasCachedDirectory(std::string_view relative,
                          absl::Duration max_age = absl::InfiniteDuration());
  // Drops the cached handles of `relative` and every directory below it
  // ("" drops all): called after renaming or removing it.
  void ForgetDirectory(std::string_view relative);
  absl::StatusOr<uint32_t> Access(const FileHandle& fh, uint32_t mask, std::string_view path);
  absl::StatusOr<ReaddirplusPage> Readdirplus(const FileHandle& dir, uint64_t cookie,
                                              uint64_t cookieverf, std::string_view path);
  absl::StatusOr<ReadReply> Read(const FileHandle& fh, uint64_t offset, uint32_t count,
                                 std::string_view path);
  absl::StatusOr<ReadIntoReply> ReadInto(const FileHandle& fh, uint64_t offset,
                                         absl::Span<char> dest, std::string_view path);
  absl::StatusOr<WriteReply> Write(const FileHandle& fh, uint64_t offset, std::string_view data,
                                   StableHow stable, std::string_view path);
  // As Write, with the data `n` bytes of the local file `fd` from
  // `fd_offset`, sent by sendfile (never through this process). A file that
  // ends first fails it FailedPrecondition ("... ended after ..."), not
  // retried.
  absl::StatusOr<WriteReply> WriteFromFile(const FileHandle& fh, uint64_t offset, int fd,
                                           int64_t fd_offset, size_t n, StableHow stable,
                                           std::string_view path);
  absl::StatusOr<uint64_t> Commit(const FileHandle& fh, uint64_t offset, uint32_t count,
                                  std::string_view path);
  // CREATE `name` in `dir` with permission bits `mode`. `exclusive`: GUARDED
  // (AlreadyExists if it exists); otherwise UNCHECKED (an existing file is
  // kept, and truncated if `truncate`).
  absl::StatusOr<NfsObject> Create(const FileHandle& dir, std::string_view name, uint32_t mode,
                                   bool exclusive, bool truncate, std::string_view path);
  absl::StatusOr<NfsObject> Mkdir(const FileHandle& dir, std::string_view name, uint32_t mode,
                                  std::string_view path);
  absl::Status Remove(const FileHandle& dir, std::string_view name, std::string_view path);
  absl::Status Rmdir(const FileHandle& dir, std::string_view name, std::string_view path);
  absl::Status SetAttr(const FileHandle& fh, const Sattr3& attrs, std::string_view path);
  absl::Status Rename(const FileHandle& from_dir, std::string_view from_name,
                      const FileHandle& to_dir, std::string_view to_name,
                      std::string_view from_path, std::string_view to_path);
  // SETATTR of the file `fh` and the RENAME of that same file (named
  // `path`, `from_name` in `from_dir`) to `to_name` in `to_dir` (named
  // `to_path`), sent together: one round trip where SetAttr then Rename
  // take two. The server may carry them out in either order, which is
  // fine for attributes a rename keeps, e.g. a written file's time set as
  // it is renamed into place. Each call's own status.
  struct SetAttrAndRenameResult {
    absl::Status set_attr;
    absl::Status rename;
  };
  SetAttrAndRenameResult SetAttrAndRename(const FileHandle& fh, const Sattr3& attrs,
                                          std::string_view path, const FileHandle& from_dir,
                                          std::string_view from_name, const FileHandle& to_dir,
                                          std::string_view to_name, std::string_view to_path);
  absl::StatusOr<FsInfo> FsInfoOf(const FileHandle& fh, std::string_view path);
  absl::StatusOr<FsStat> FsStatOf(const FileHandle& fh, std::string_view path);

  // READDIRPLUS sizes from FSINFO: dircount = max(dtpref, 32 KiB) and
  // maxcount = 8 x dircount capped at 1 MiB (and at rtmax when known):
  // large pages cut the round trips per directory.
  uint32_t readdir_dircount() const;
  uint32_t readdir_maxcount() const;

  struct Impl;

 private:
  explicit NfsClient(std::unique_ptr<Impl> impl);
  // LookupPath's walk; `use_cache` false looks every component up, and
  // `cache_last` lets the last one come from the cache too. `used_cached`
  // is set when a cached handle was used.
  absl::StatusOr<NfsObject> LookupPathOnce(std::string_view relative, bool use_cache,
                                           bool cache_last, bool* used_cached);
  absl::StatusOr<NfsObject> LookupPathRetryingStale(std::string_view relative, bool cache_last);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS_CLIENT_H_
