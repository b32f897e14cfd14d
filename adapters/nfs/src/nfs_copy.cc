// Parallel copy design: a chunk counter shared by `parallelism` workers on
// the Runtime's blocking pool. A worker takes a MemoryBudget ticket and a
// buffer for one chunk once, then loops: take the next chunk index, move
// the chunk (NFS PRead/PWrite through the FdTable, local pread/pwrite).
// The first error stops every worker at its next chunk. The caller waits on
// a condition variable for the last worker; with a progress callback it
// wakes every progress_interval, reads the bytes the workers have counted
// and calls the callback outside the lock (it may block, e.g. on Python's
// GIL, and must not hold up the workers). A callback that says stop is
// recorded as the first error. No thread of our own: the Runtime's
// blocking pool runs the workers and bounds the parallelism.
//
// A download writes into an io_internal::TempFile beside the destination
// (DownloadToFile's rules) and renames it only after the workers are done,
// the NFS file is closed and the final progress report has passed; every
// early return drops the TempFile, which unlinks it. RunChunks returns
// only once every worker has finished, so no pwrite can reach the
// temporary after it is gone.
//
// An upload does the same on the server: LOOKUP the target (refusing a
// directory before anything is created), CREATE GUARDED a temporary with
// the same naming rules in the target's directory, WRITE into it, COMMIT,
// the final progress report, then RENAME it over the target (atomic on the
// server). Any failure REMOVEs the temporary once every worker is done (no
// WRITE of ours is in flight then); a failed REMOVE is added to the first
// error's message, never replaces it. There is no SETATTR: the temporary
// is created with its final mode.
#include "ferry/nfs/nfs_copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/fd_table.h"
#include "ferry/io/internal/temp_file.h"
#include "ferry/nfs/nfs_file.h"
#include "ferry/nfs/nfs_url.h"

namespace ferry::nfs {
namespace {

// Default chunk cap: servers advertise up to 64 MiB rtmax/wtmax (ganesha),
// but 1 MiB calls already amortise the per-call cost, and smaller chunks
// keep many calls in flight and memory low.
constexpr uint32_t kMaxDefaultChunk = 1 << 20;

uint32_t ChunkSize(const CopyOptions& o, uint32_t server_max) {
  if (o.chunk_bytes != 0) return std::min(o.chunk_bytes, server_max);
  return std::min(server_max, kMaxDefaultChunk);
}

// Closes a local descriptor on scope exit.
struct LocalFd {
  int fd = -1;
  ~LocalFd() {
    if (fd >= 0) close(fd);
  }
};

// CopyOptions::progress for one copy, called on the caller's thread only.
// bytes_done never goes down: an upload sent again (write-verifier change)
// reports nothing new until it passes what was reported before.
class ProgressReporter {
 public:
  ProgressReporter(CopyOptions& options, int64_t total)
      : callback_(options.progress ? &options.progress : nullptr),
        interval_(options.progress_interval),
        total_(total),
        start_(MonotonicNow()) {}

  bool enabled() const { return callback_ != nullptr; }
  absl::Duration interval() const { return interval_; }

  // Calls the callback with `bytes_done` if progress_interval has passed
  // since the last call, or always if `final`. Its status (OK if not called).
  absl::Status Report(int64_t bytes_done, bool final) {
    if (callback_ == nullptr) return absl::OkStatus();
    const absl::Time now = MonotonicNow();
    if (!final && now - last_ < interval_) return absl::OkStatus();
    last_ = now;
    reported_ = std::max(reported_, bytes_done);
    return (*callback_)(TransferProgress{reported_, total_, now - start_});
  }

 private:
  ProgressCallback* const callback_;  // null: no progress wanted
  const absl::Duration interval_;
  const int64_t total_;
  const absl::Time start_;
  absl::Time last_ = absl::InfinitePast();
  int64_t reported_ = 0;
};

// Moves chunk [offset, offset + buf.size()) using `buf` as scratch.
using MoveChunk = std::function<absl::Status(int64_t offset, absl::Span<char> buf)>;

// Runs MoveChunk over every chunk of [0, size) on `parallelism` blocking
// workers, reporting progress from the calling thread meanwhile; returns
// the first error (a worker's or the progress callback's).
absl::Status RunChunks(Runtime& runtime, int parallelism, int64_t size, uint32_t chunk,
                       MoveChunk move, ProgressReporter& progress) {
  if (size == 0) return absl::OkStatus();
  struct Shared {
    Mutex mu;
    CondVar cv;
    int64_t next ABSL_GUARDED_BY(mu) = 0;
    int running ABSL_GUARDED_BY(mu) = 0;
    int64_t bytes_done ABSL_GUARDED_BY(mu) = 0;  // chunks moved, in bytes
    absl::Status error ABSL_GUARDED_BY(mu);
  };
  auto shared = std::make_shared<Shared>();
  const int64_t chunks = (size + chunk - 1) / chunk;
  const int workers = static_cast<int>(std::min<int64_t>(std::max(parallelism, 1), chunks));
  {
    MutexLock l(&shared->mu);
    shared->running = workers;
  }
  auto fail = [shared](absl::Status s) {
    MutexLock l(&shared->mu);
    if (shared->error.ok()) shared->error = std::move(s);
  };
  for (int w = 0; w < workers; ++w) {
    runtime.PostBlocking([&runtime, shared, fail, move, size, chunk, chunks] {
      absl::StatusOr<MemoryBudget::Ticket> ticket = runtime.memory_budget().Acquire(chunk);
      if (!ticket.ok()) fail(ticket.status());
      // Uninitialised: every byte is read or received before it is used.
      std::unique_ptr<char[]> buf(ticket.ok() ? new char[chunk] : nullptr);
      while (ticket.ok()) {
        int64_t index;
        {
          MutexLock l(&shared->mu);
          if (!shared->error.ok() || shared->next >= chunks) break;
          index = shared->next++;
        }
        const int64_t offset = index * chunk;
        const size_t len = static_cast<size_t>(std::min<int64_t>(chunk, size - offset));
        absl::Status s = move(offset, absl::MakeSpan(buf.get(), len));
        if (!s.ok()) {
          fail(std::move(s));
          break;
        }
        MutexLock l(&shared->mu);
        shared->bytes_done += static_cast<int64_t>(len);
      }
      MutexLock l(&shared->mu);
      if (--shared->running == 0) shared->cv.SignalAll();
    });
  }
  // The error is moved out, not copied: the last worker may destroy
  // `shared`, and a status whose payload two threads reference would be
  // freed there through Debian's uninstrumented absl (a TSan report).
  if (!progress.enabled()) {
    MutexLock l(&shared->mu);
    while (shared->running > 0) shared->cv.Wait(&shared->mu);
    return std::move(shared->error);
  }
  for (;;) {
    int64_t bytes_done;
    {
      MutexLock l(&shared->mu);
      // Wall-clock deadline: CondVar waits on the system clock.
      if (shared->running > 0) {
        shared->cv.WaitWithDeadline(&shared->mu, absl::Now() + progress.interval());
      }
      if (shared->running == 0) return std::move(shared->error);
      if (!shared->error.ok()) continue;  // stopping: no more progress calls
      bytes_done = shared->bytes_done;
    }
    absl::Status s = progress.Report(bytes_done, /*final=*/false);
    if (!s.ok()) fail(std::move(s));  // workers stop at their next chunk
  }
}

// --- Uploads through a temporary file on the server -------------------------

// Longest file name we expect a server to take: NAME_MAX is 255 bytes on
// every server we know (NFSv3 has no way to ask short of PATHCONF).
constexpr size_t kMaxNameBytes = 255;

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  return absl::StrCat(ToAbsl(dir), "/", ToAbsl(name));
}

// The temporary's name for target `name`: io_internal::TempNameFor (the
// local downloads' rules), with `name` cut (at a UTF-8 character boundary)
// so that the whole fits in kMaxNameBytes; ".ferry-<hex>" alone if `bare`.
std::string UploadTempName(std::string_view name, bool bare) {
  if (bare) return io_internal::TempNameFor("");
  if (name.size() + io_internal::kTempNameExtraBytes > kMaxNameBytes) {
    size_t keep = kMaxNameBytes - io_internal::kTempNameExtraBytes;
    // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is cut.
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    name = name.substr(0, keep);
  }
  return io_internal::TempNameFor(name);
}

// `status` with `note` appended to its message; code and payloads kept.
absl::Status AppendToMessage(const absl::Status& status, std::string_view note) {
  absl::Status out(status.code(), absl::StrCat(status.message(), ToAbsl(note)));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

// `failure`, noting a failed clean-up after it: the failure stays what the
// caller sees (code, payloads, message first).
absl::Status WithCleanupNote(absl::Status failure, const absl::Status& cleanup) {
  if (cleanup.ok()) return failure;
  return AppendToMessage(
      failure, absl::StrCat("; then removing the temporary file failed too (it may be left "
                            "on the server): ",
                            cleanup.message()));
}

// Where an upload goes: the directory (LOOKUPed once) and the name in it.
struct UploadTarget {
  FileHandle dir;
  std::string dir_path;  // relative to the client's URL path; "" = its root
  std::string name;
  std::string path;     // dir_path/name (the caller's path without trailing '/')
  std::string context;  // "copy <local path> to <DisplayPath(path)>", for messages
  // The permission bits of the file being replaced; nullopt: a new file.
  std::optional<uint32_t> existing_mode;
};

// LOOKUPs the target's directory and the target. NotFound for a missing
// directory; FailedPrecondition if the directory is not one, or the target
// exists and is not a regular file (a directory above all: replacing it is
// never what a copy means).
absl::StatusOr<UploadTarget> ResolveUploadTarget(NfsClient& client,
                                                 const std::string& local_path,
                                                 std::string_view nfs_path) {
  auto [dir_path, name] = SplitNfsPath(nfs_path);
  UploadTarget t;
  t.path = JoinPath(dir_path, name);
  t.context = absl::StrCat("copy ", local_path, " to ", client.DisplayPath(t.path));
  const std::string& context = t.context;
  if (name.empty() || name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat(context, ": the path names no file"));
  }
  t.dir_path = std::string(dir_path);
  t.name = std::string(name);
  FERRY_ASSIGN_OR_RETURN(NfsObject dir, client.LookupPath(t.dir_path));
  if (dir.attributes && dir.attributes->type != FileType::kDirectory) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, ": ", client.DisplayPath(t.dir_path), " is not a directory (",
        FileTypeName(dir.attributes->type), ")"));
  }
  t.dir = std::move(dir.handle);
  absl::StatusOr<NfsObject> existing = client.Lookup(t.dir, t.name, t.path);
  if (existing.status().code() == absl::StatusCode::kNotFound) return t;
  FERRY_RETURN_IF_ERROR(existing.status());
  Fattr3 attrs;
  if (existing->attributes) {
    attrs = *existing->attributes;
  } else {
    FERRY_ASSIGN_OR_RETURN(attrs, client.GetAttr(existing->handle, t.path));
  }
  if (attrs.type == FileType::kDirectory) {
    return absl::FailedPreconditionError(absl::StrCat(context, ": the target is a directory"));
  }
  if (attrs.type != FileType::kRegular) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, ": the target is not a regular file (", FileTypeName(attrs.type), ")"));
  }
  // rwx bits only: set-id bits would survive onto new content (a write
  // clears them), and the sticky bit means nothing on a file.
  t.existing_mode = attrs.mode & 0777;
  return t;
}

// An upload's temporary: created in the target's directory, renamed over
// the target at the end, removed on failure.
struct UploadTemp {
  std::string name;
  std::string path;  // relative, as the target's
  NfsObject object;
};

// REMOVEs the temporary (best effort: OK if it is already gone). A REMOVE
// lost to a dropped connection is sent once more on a new one (the pool
// reconnects); NotFound then means the first one did its work.
absl::Status RemoveUploadTemp(NfsClient& client, const UploadTarget& target,
                              const UploadTemp& temp) {
  absl::Status s = client.Remove(target.dir, temp.name, temp.path);
  if (s.code() == absl::StatusCode::kUnavailable ||
      s.code() == absl::StatusCode::kDeadlineExceeded) {
    s = client.Remove(target.dir, temp.name, temp.path);
  }
  if (s.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  return s;
}

// CREATE GUARDED of a fresh temporary with permission bits `mode`. GUARDED
// rather than EXCLUSIVE: it sets the mode in the same call (EXCLUSIVE needs
// a SETATTR after), and the pool never resends a CREATE, so an EXIST reply
// always means another file of that name. A name too long for the server
// falls back to the bare ".ferry-<hex>".
absl::StatusOr<UploadTemp> CreateUploadTemp(NfsClient& client, const UploadTarget& target,
                                            uint32_t mode) {
  bool bare = false;
  absl::Status last;
  for (int attempt = 0; attempt < io_internal::kTempCreateAttempts; ++attempt) {
    UploadTemp temp;
    temp.name = UploadTempName(target.name, bare);
    temp.path = JoinPath(target.dir_path, temp.name);
    absl::StatusOr<NfsObject> created =
        client.Create(target.dir, temp.name, mode, /*exclusive=*/true, /*truncate=*/false,
                      temp.path);
    if (created.ok()) {
      temp.object = *std::move(created);
      return temp;
    }
    last = created.status();
    const std::optional<Nfs3Status> nfs = GetNfs3Status(last);
    if (nfs == Nfs3Status::kExist) continue;
    if (nfs == Nfs3Status::kNameTooLong && !bare) {
      bare = true;
      continue;
    }
    if (!nfs) {
      // No reply (connection lost, timeout): the server may have created it.
      last = WithCleanupNote(std::move(last), RemoveUploadTemp(client, target, temp));
    }
    break;
  }
  std::string why =
      absl::StrCat(target.context, ": cannot create its temporary file in the same directory");
  if (last.code() == absl::StatusCode::kPermissionDenied) {
    // The one surprise of atomic uploads: a writable file in a read-only
    // directory could be overwritten in place, but not replaced.
    absl::StrAppend(&why, " (an upload writes a temporary file and renames it over the target, "
                          "so the directory must be writable)");
  }
  return Annotate(last, why);
}

// RENAMEs the temporary over the target (atomic on the server: readers see
// the old file or the new one). RENAME is never resent, so when its reply
// is lost the target is LOOKUPed: holding the temporary's handle, the
// rename was done.
absl::Status RenameOverTarget(NfsClient& client, const UploadTarget& target,
                              const UploadTemp& temp) {
  absl::Status s = client.Rename(target.dir, temp.name, target.dir, target.name,
                                 client.DisplayPath(temp.path), target.path);
  if (s.ok() || GetNfs3Status(s)) return s;
  absl::StatusOr<NfsObject> now = client.Lookup(target.dir, target.name, target.path);
  if (now.ok() && now->handle == temp.object.handle) return absl::OkStatus();
  return s;
}

}  // namespace

absl::StatusOr<CopyStats> CopyNfsToLocal(Runtime& runtime, NfsClient& client,
                                         std::string_view nfs_path, const std::string& local_path,
                                         CopyOptions options) {
  const absl::Time start = MonotonicNow();
  FERRY_ASSIGN_OR_RETURN(std::shared_ptr<NfsFile> file, NfsFile::Open(client, nfs_path));
  const int64_t size = static_cast<int64_t>(file->size_at_open());
  const uint32_t chunk = ChunkSize(options, client.fsinfo().rtmax);

  FdTable<NfsFile> table;
  FERRY_ASSIGN_OR_RETURN(auto opened, table.Open(std::string(nfs_path), file, OpenMode::kRead));
  const int fd = opened.fd;
  // Created only once the source is known to exist: a missing source
  // leaves nothing behind.
  absl::StatusOr<io_internal::TempFile> temp =
      io_internal::TempFile::CreateBeside(local_path, options.mode);
  absl::Status s = temp.status();
  if (s.ok()) s = temp->Resize(size);
  if (!s.ok()) {
    (void)table.Close(fd);
    return s;
  }

  const io_internal::TempFile& out = *temp;
  const std::string display = client.DisplayPath(nfs_path);
  ProgressReporter progress(options, size);
  s = RunChunks(
      runtime, options.parallelism, size, chunk,
      [&table, fd, &out, &display](int64_t offset, absl::Span<char> buf) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(size_t n, table.PRead(fd, offset, buf));
        if (n != buf.size()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "copy ", display, ": the file shrank while being read (", n, " of ", buf.size(),
              " bytes at offset ", offset, ")"));
        }
        return out.WriteAt(std::span<const char>(buf.data(), n), offset);
      },
      progress);
  (void)table.Close(fd);
  // The last report comes before the rename: a stop there still leaves
  // the destination as it was.
  if (s.ok()) s = progress.Report(size, /*final=*/true);
  FERRY_RETURN_IF_ERROR(s);  // ~TempFile removes the temporary
  FERRY_RETURN_IF_ERROR(temp->Commit(local_path));
  return CopyStats{static_cast<uint64_t>(size), static_cast<uint64_t>((size + chunk - 1) / chunk),
                   0, MonotonicNow() - start};
}

absl::StatusOr<CopyStats> CopyLocalToNfs(Runtime& runtime, NfsClient& client,
                                         const std::string& local_path, std::string_view nfs_path,
                                         CopyOptions options) {
  const absl::Time start = MonotonicNow();
  LocalFd in{open(local_path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) return ErrnoStatus(errno, "open", local_path);
  struct stat st;
  if (fstat(in.fd, &st) != 0) return ErrnoStatus(errno, "stat", local_path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("copy ", local_path, ": not a regular file"));
  }
  const int64_t size = st.st_size;
  const uint32_t chunk = ChunkSize(options, client.fsinfo().wtmax);

  FERRY_ASSIGN_OR_RETURN(UploadTarget target, ResolveUploadTarget(client, local_path, nfs_path));
  FERRY_ASSIGN_OR_RETURN(
      UploadTemp temp,
      CreateUploadTemp(client, target, target.existing_mode.value_or(options.mode)));

  CopyStats stats;
  ProgressReporter progress(options, size);
  // A changed write verifier means the server may have dropped unstable
  // data: send everything again, once, into the same temporary (every byte
  // is rewritten, so nothing needs truncating).
  absl::Status s;
  for (int attempt = 0;; ++attempt) {
    auto file = std::make_shared<NfsFile>(client, temp.object.handle, temp.path, 0);
    FdTable<NfsFile> table;
    absl::StatusOr<FdTable<NfsFile>::OpenResult> opened =
        table.Open(temp.path, file, OpenMode::kWrite);
    if (!opened.ok()) {
      s = opened.status();
      break;
    }
    const int fd = opened->fd;
    s = RunChunks(
        runtime, options.parallelism, size, chunk,
        [&table, fd, &in, &local_path](int64_t offset, absl::Span<char> buf) -> absl::Status {
          for (size_t done = 0; done < buf.size();) {
            ssize_t r = pread(in.fd, buf.data() + done, buf.size() - done, offset + done);
            if (r < 0) {
              if (errno == EINTR) continue;
              return ErrnoStatus(errno, "read", local_path);
            }
            if (r == 0) {
              return absl::FailedPreconditionError(
                  absl::StrCat("copy ", local_path, ": the file shrank while being read"));
            }
            done += static_cast<size_t>(r);
          }
          FERRY_ASSIGN_OR_RETURN(size_t n, table.PWrite(fd, offset, buf));
          (void)n;  // NfsFile::WriteAt writes everything or fails
          return absl::OkStatus();
        },
        progress);
    absl::StatusOr<FdTable<NfsFile>::CloseResult> closed = table.Close(fd);
    if (s.ok()) s = closed.status();
    if (!s.ok()) break;
    s = closed->handle->Commit();
    if (s.code() == absl::StatusCode::kDataLoss && attempt == 0) {
      ++stats.rewrites;
      continue;
    }
    break;
  }
  // The last report comes before the rename: a stop there still leaves
  // the target as it was.
  if (s.ok()) s = progress.Report(size, /*final=*/true);
  if (s.ok()) s = RenameOverTarget(client, target, temp);
  if (!s.ok()) return WithCleanupNote(std::move(s), RemoveUploadTemp(client, target, temp));
  stats.bytes = static_cast<uint64_t>(size);
  stats.chunks = static_cast<uint64_t>((size + chunk - 1) / chunk);
  stats.elapsed = MonotonicNow() - start;
  return stats;
}

}  // namespace ferry::nfs
