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
#include "ferry/nfs/nfs_copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/fd_table.h"
#include "ferry/io/internal/temp_file.h"
#include "ferry/nfs/nfs_file.h"

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

  const int out = temp->fd();
  const std::string& out_path = temp->path();
  const std::string display = client.DisplayPath(nfs_path);
  ProgressReporter progress(options, size);
  s = RunChunks(
      runtime, options.parallelism, size, chunk,
      [&table, fd, out, &out_path, &display](int64_t offset, absl::Span<char> buf) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(size_t n, table.PRead(fd, offset, buf));
        if (n != buf.size()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "copy ", display, ": the file shrank while being read (", n, " of ", buf.size(),
              " bytes at offset ", offset, ")"));
        }
        for (size_t done = 0; done < n;) {
          ssize_t w = pwrite(out, buf.data() + done, n - done, offset + done);
          if (w < 0) {
            if (errno == EINTR) continue;
            return ErrnoStatus(errno, "write", out_path);
          }
          done += static_cast<size_t>(w);
        }
        return absl::OkStatus();
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

  CopyStats stats;
  ProgressReporter progress(options, size);
  // A changed write verifier means the server may have dropped unstable
  // data: send everything again, once.
  for (int attempt = 0;; ++attempt) {
    FERRY_ASSIGN_OR_RETURN(std::shared_ptr<NfsFile> file,
                           NfsFile::Create(client, nfs_path, options.mode));
    FdTable<NfsFile> table;
    FERRY_ASSIGN_OR_RETURN(auto opened, table.Open(std::string(nfs_path), file, OpenMode::kWrite));
    const int fd = opened.fd;
    absl::Status s = RunChunks(
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
    FERRY_RETURN_IF_ERROR(s);
    FERRY_RETURN_IF_ERROR(closed.status());
    absl::Status committed = closed->handle->Commit();
    if (committed.code() == absl::StatusCode::kDataLoss && attempt == 0) {
      ++stats.rewrites;
      continue;
    }
    FERRY_RETURN_IF_ERROR(committed);
    break;
  }
  FERRY_RETURN_IF_ERROR(progress.Report(size, /*final=*/true));
  stats.bytes = static_cast<uint64_t>(size);
  stats.chunks = static_cast<uint64_t>((size + chunk - 1) / chunk);
  stats.elapsed = MonotonicNow() - start;
  return stats;
}

}  // namespace ferry::nfs
