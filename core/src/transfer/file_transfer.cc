// Design. Both transfers run a small loop on the caller's thread: it keeps
// the transfer fed, sleeps on a CondVar until something completes or the
// next progress report is due, and calls the progress callback itself, so
// the callback never runs on an I/O thread.
//
// Download: HEAD (MultipartDownloadManager::Open), StartDownload at once
// (the downloader then fetches `concurrency` chunks at a time and reads
// ahead on its own, all under the shared MemoryBudget), and a temporary
// file in the destination's directory. The loop keeps a read outstanding
// into each free buffer of a small pool (kDownloadBuffers x 1 MiB, under
// the same budget) and pwrite()s each filled buffer at its offset on the
// caller's thread, which then reads into it again. A read of bytes already
// landed completes inline, so the copy out of the chunk often runs on
// this thread too, leaving the I/O thread to the network. Resident memory
// is the downloader's chunks (at most its read-ahead, under the budget)
// plus the pool: a download's written bytes live only in the page cache.
// (An earlier version mapped each chunk's range of the file MAP_SHARED and
// read into the mapping. Mapped page-cache pages count in the process's
// RSS until unmapped, and since reads of landed chunks complete inline the
// feed loop mapped the whole file before it ever unmapped: RSS reached the
// file's size. Unmapping promptly bounds it, but the pool costs less CPU:
// the page faults, zeroing and unmap TLB flushes cost more than one copy
// through cache-sized buffers.) Only when every byte has been written is
// the file closed and renamed over the destination; any failure closes
// and unlinks the temporary (the destination is untouched). No fsync: like
// cp and the AWS CLI, durability is the page cache's business.
//
// Upload: each part (PartLayout of the uploader) of the source is mapped
// read-only (MAP_POPULATE) and written from the mapping, so each byte is copied
// once into a part buffer and sent from there. The caller's thread also
// computes each part's checksum (the uploader seals a part on the writer's
// thread). The uploader would let a fast reader queue sealed parts until
// the shared MemoryBudget is spent, starving concurrent downloads; unless
// the caller chose a limit, the upload runs with max_sealed_parts =
// concurrency + 2 (every request slot busy, two parts ready behind them),
// and the loop waits for room with WaitUntilWritable up to the next
// progress report, so a stop from the callback is seen even while the
// store is slow. Finish runs on the Runtime's blocking pool while the loop
// keeps reporting progress; a stop there aborts the upload.
#include "ferry/transfer/file_transfer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/temp_file.h"
#include "ferry/runtime/runtime.h"

namespace ferry {
namespace {

// The download's write-back pool: kDownloadBuffers buffers of
// kDownloadBufferBytes (or one chunk, if smaller). Buffers small enough to
// stay in the CPU cache between the copy out of the downloader's chunk and
// the pwrite that copies them into the page cache: measured on 1 GiB from
// versitygw, 4 x 1 MiB takes ~0.95 s of CPU against ~1.65 s for 4 buffers
// of a whole 8 MiB chunk, at the same or better speed. Four keep the
// writer busy while the downloader fills the next ones.
constexpr int64_t kDownloadBufferBytes = int64_t{1} << 20;
constexpr int kDownloadBuffers = 4;

// Calls the progress callback when one is set; OK otherwise.
absl::Status Report(TransferOptions& options, int64_t done, int64_t total, absl::Time start) {
  if (!options.progress) return absl::OkStatus();
  TransferProgress p;
  p.bytes_done = done;
  p.bytes_total = total;
  p.elapsed = MonotonicNow() - start;
  return options.progress(p);
}

// A mapping of bytes [offset, offset + len) of a file (any offset: the
// mapping starts at the page boundary below it). Unmapped on destruction.
class Region {
 public:
  Region() = default;
  Region(Region&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)), len_(o.len_), skew_(o.skew_) {}
  Region& operator=(Region&& o) noexcept {
    Unmap();
    base_ = std::exchange(o.base_, nullptr);
    len_ = o.len_;
    skew_ = o.skew_;
    return *this;
  }
  ~Region() { Unmap(); }

  absl::Status Map(int fd, const std::string& path, int64_t offset, int64_t len, int prot,
                   int flags) {
    const int64_t page = ::sysconf(_SC_PAGESIZE);
    skew_ = static_cast<size_t>(offset % page);
    len_ = static_cast<size_t>(len) + skew_;
    void* p = ::mmap(nullptr, len_, prot, flags, fd, offset - static_cast<int64_t>(skew_));
    if (p == MAP_FAILED) return ErrnoStatus(errno, absl::StrCat("mmap at ", offset, " of"), path);
    base_ = static_cast<char*>(p);
    return absl::OkStatus();
  }
  char* data() const { return base_ + skew_; }

 private:
  void Unmap() {
    if (base_ != nullptr) ::munmap(base_, len_);
    base_ = nullptr;
  }
  char* base_ = nullptr;
  size_t len_ = 0;
  size_t skew_ = 0;
};

// A source file, mapped part by part.
class SourceFile {
 public:
  ~SourceFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Open(const std::string& path) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return ErrnoStatus(errno, "open", path);
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus(errno, "fstat", path);
    if (!S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat("upload ", path, ": not a regular file"));
    }
    size_ = st.st_size;
    return absl::OkStatus();
  }

  int64_t size() const { return size_; }
  // Maps [offset, offset + len) read-only, its pages read in at once.
  absl::StatusOr<Region> Map(int64_t offset, int64_t len) const {
    Region r;
    FERRY_RETURN_IF_ERROR(r.Map(fd_, path_, offset, len, PROT_READ, MAP_SHARED | MAP_POPULATE));
    return r;
  }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// A piece read into a pool buffer, ready to be written to the file.
struct LandedPiece {
  int64_t piece = 0;
  int buffer = 0;
};

// Completions of a download's reads, shared with their callbacks (which
// may run after the loop gave up, when the downloader cancels them).
struct PoolTracker {
  Mutex mu;
  CondVar cv;
  int outstanding ABSL_GUARDED_BY(mu) = 0;
  absl::Status error ABSL_GUARDED_BY(mu);
  std::vector<LandedPiece> landed ABSL_GUARDED_BY(mu);
  std::vector<int> failed_buffers ABSL_GUARDED_BY(mu);  // reads that ended without data
};

}  // namespace

absl::StatusOr<TransferStats> DownloadToFile(MultipartDownloadManager& downloads,
                                             std::string_view key, const std::string& local_path,
                                             TransferOptions options) {
  const absl::Time start = MonotonicNow();
  const std::string where = absl::StrCat("download ", ToAbsl(key), " to ", local_path);
  absl::StatusOr<std::unique_ptr<MultipartDownloader>> opened = downloads.Open(key);
  if (!opened.ok()) return Annotate(opened.status(), where);
  std::unique_ptr<MultipartDownloader> object = *std::move(opened);
  const int64_t size = object->info().size;

  absl::StatusOr<io_internal::TempFile> created = io_internal::TempFile::CreateBeside(local_path);
  if (!created.ok()) return Annotate(created.status(), where);
  io_internal::TempFile temp = *std::move(created);
  if (absl::Status s = temp.Resize(size); !s.ok()) return Annotate(s, where);

  const int64_t chunk = downloads.options().chunk_bytes;
  // The pool, under the downloads' budget, taken before the download
  // starts (its read-ahead could otherwise hold all of a small budget while
  // no read of ours waits, and never give it back), never so much that the
  // downloader has no room for a chunk: the first buffer waits for budget,
  // the others are taken only if it is free at once.
  const int64_t buf_bytes = std::min(chunk, kDownloadBufferBytes);
  const int64_t pieces = (size + buf_bytes - 1) / buf_bytes;
  MemoryBudget& budget = downloads.memory_budget();
  // Buffers the budget can hold while leaving the downloader one chunk.
  const int64_t fit = std::max<int64_t>(0, (budget.capacity() - chunk) / buf_bytes);
  const int want_buffers = static_cast<int>(std::min<int64_t>({kDownloadBuffers, pieces, fit}));
  std::vector<std::unique_ptr<char[]>> buffers;
  std::vector<MemoryBudget::Ticket> tickets;
  for (int i = 0; i < want_buffers; ++i) {
    std::optional<MemoryBudget::Ticket> t = budget.TryAcquire(buf_bytes);
    if (!t && i == 0) {
      // Waiting is safe: other transfers give budget back, and there is
      // room for a chunk beside this buffer.
      absl::StatusOr<MemoryBudget::Ticket> got = budget.Acquire(buf_bytes);
      if (!got.ok()) return Annotate(got.status(), where);
      t = std::move(*got);
    }
    if (!t) break;
    tickets.push_back(std::move(*t));
    buffers.push_back(std::make_unique_for_overwrite<char[]>(static_cast<size_t>(buf_bytes)));
  }
  if (buffers.empty() && pieces > 0) {
    // A budget too small for a chunk and a buffer: one buffer outside it.
    buffers.push_back(std::make_unique_for_overwrite<char[]>(static_cast<size_t>(buf_bytes)));
  }
  std::vector<int> free_buffers;
  for (int i = static_cast<int>(buffers.size()) - 1; i >= 0; --i) free_buffers.push_back(i);
  object->StartDownload();

  auto tracker = std::make_shared<PoolTracker>();
  int64_t next = 0;  // next piece (buffer-sized range) to issue a read for
  absl::Time next_report = MonotonicNow() + options.progress_interval;
  int64_t done_bytes = 0;
  absl::Status failure;
  for (;;) {
    // Feed: one read per free buffer (issued without the tracker's lock:
    // a read of bytes already held completes inline and takes the lock).
    while (failure.ok() && next < pieces && !free_buffers.empty()) {
      const int b = free_buffers.back();
      free_buffers.pop_back();
      const int64_t c = next++;
      const int64_t off = c * buf_bytes;
      const int64_t len = std::min(buf_bytes, size - off);
      {
        MutexLock l(&tracker->mu);
        ++tracker->outstanding;
      }
      object->ReadAsync(off, std::span<char>(buffers[static_cast<size_t>(b)].get(),
                                             static_cast<size_t>(len)),
                        [tracker, c, b, len, off](absl::StatusOr<size_t> n) {
                          MutexLock l(&tracker->mu);
                          --tracker->outstanding;
                          if (n.ok() && static_cast<int64_t>(*n) != len) {
                            n = absl::DataLossError(absl::StrCat("short read: ", *n, " of ", len,
                                                                 " bytes at offset ", off));
                          }
                          if (n.ok()) {
                            tracker->landed.push_back({c, b});
                          } else {
                            tracker->failed_buffers.push_back(b);
                            if (tracker->error.ok()) tracker->error = n.status();
                          }
                          tracker->cv.Signal();
                        });
    }
    std::vector<LandedPiece> landed;
    bool finished;
    {
      MutexLock l(&tracker->mu);
      const absl::Duration wait = next_report - MonotonicNow();
      if (tracker->landed.empty() && tracker->outstanding > 0 && wait > absl::ZeroDuration() &&
          (free_buffers.empty() || next >= pieces || !failure.ok())) {
        tracker->cv.WaitWithDeadline(&tracker->mu, absl::Now() + wait);
      }
      if (failure.ok()) failure = tracker->error;
      landed.swap(tracker->landed);
      for (int b : tracker->failed_buffers) free_buffers.push_back(b);
      tracker->failed_buffers.clear();
      finished = tracker->outstanding == 0 && (next >= pieces || !failure.ok());
    }
    // Write what landed, on this thread; each buffer is then free again.
    for (const LandedPiece& l : landed) {
      const int64_t off = l.piece * buf_bytes;
      const int64_t len = std::min(buf_bytes, size - off);
      if (failure.ok()) {
        failure = temp.WriteAt(std::span<const char>(buffers[static_cast<size_t>(l.buffer)].get(),
                                                     static_cast<size_t>(len)),
                               off);
        if (failure.ok()) done_bytes += len;
      }
      free_buffers.push_back(l.buffer);
    }
    if (finished && landed.empty()) break;
    if (finished) continue;  // one more pass: nothing left, loop ends
    if (!failure.ok()) {
      // Cancels the reads still waiting (their callbacks see Cancelled);
      // after this no byte is copied into the buffers.
      object.reset();
      continue;
    }
    if (MonotonicNow() >= next_report) {
      next_report = MonotonicNow() + options.progress_interval;
      failure = Report(options, done_bytes, size, start);
      if (!failure.ok()) object.reset();
    }
  }
  if (failure.ok()) failure = Report(options, done_bytes, size, start);
  if (!failure.ok()) {
    object.reset();
    temp.Discard();
    return Annotate(failure, where);
  }
  TransferStats stats;
  const DownloadStats ds = object->stats();
  object.reset();
  FERRY_RETURN_IF_ERROR(Annotate(temp.Commit(local_path), where));
  stats.bytes = size;
  stats.bytes_fetched = ds.bytes_fetched;
  stats.requests = ds.requests;
  stats.retries = ds.retries;
  stats.elapsed = MonotonicNow() - start;
  stats.peak_memory_bytes = downloads.memory_budget().peak();
  return stats;
}

absl::StatusOr<TransferStats> UploadFromFile(ObjectStore& store, Runtime& runtime,
                                             const std::string& local_path, std::string_view key,
                                             TransferOptions options) {
  const absl::Time start = MonotonicNow();
  const std::string where = absl::StrCat("upload ", local_path, " to ", ToAbsl(key));
  SourceFile source;
  FERRY_RETURN_IF_ERROR(Annotate(source.Open(local_path), where));
  const int64_t size = source.size();
  MultipartUploaderOptions upload_options = options.upload;
  upload_options.total_bytes = size;
  if (upload_options.max_sealed_parts == 0) {
    upload_options.max_sealed_parts = std::max(1, upload_options.concurrency) + 2;
  }
  absl::StatusOr<std::unique_ptr<MultipartUploader>> created =
      MultipartUploader::Create(store, runtime, key, upload_options);
  if (!created.ok()) return Annotate(created.status(), where);
  std::unique_ptr<MultipartUploader> uploader = *std::move(created);
  const PartLayout& layout = uploader->layout();
  const int parts = size == 0 ? 0 : layout.PartAt(size - 1);
  absl::Time next_report = MonotonicNow() + options.progress_interval;

  // Reports progress if due; a stop aborts the upload.
  auto maybe_report = [&]() -> absl::Status {
    if (MonotonicNow() < next_report) return absl::OkStatus();
    next_report = MonotonicNow() + options.progress_interval;
    return Report(options, uploader->stats().bytes_uploaded, size, start);
  };

  absl::Status failure;
  for (int n = 1; n <= parts && failure.ok(); ++n) {
    // Room for a new part (or the upload failed and Write says why).
    while (!uploader->WaitUntilWritable(next_report - MonotonicNow())) {
      failure = maybe_report();
      if (!failure.ok()) break;
    }
    if (!failure.ok()) break;
    const int64_t part_start = layout.PartStart(n), part_len = layout.PartBytes(n);
    absl::StatusOr<Region> part = source.Map(part_start, part_len);
    failure = part.status();
    if (failure.ok()) {
      failure = uploader->Write(part_start, std::span<const char>(part->data(),
                                                                  static_cast<size_t>(part_len)));
    }
    if (failure.ok()) failure = maybe_report();
  }
  if (!failure.ok()) {
    uploader->Abort().IgnoreError();  // the write's error says more than the abort's
    return Annotate(failure, where);
  }

  // Finish on the blocking pool; keep reporting meanwhile.
  struct FinishState {
    Mutex mu;
    CondVar cv;
    std::optional<absl::StatusOr<std::string>> result ABSL_GUARDED_BY(mu);
  };
  auto fs = std::make_shared<FinishState>();
  uploader->FinishAsync([fs](absl::StatusOr<std::string> r) {
    MutexLock l(&fs->mu);
    fs->result = std::move(r);
    fs->cv.Signal();
  });
  absl::Status stop;
  absl::StatusOr<std::string> etag;
  for (;;) {
    {
      MutexLock l(&fs->mu);
      if (!fs->result.has_value()) {
        fs->cv.WaitWithDeadline(&fs->mu, absl::Now() + (next_report - MonotonicNow()));
      }
      if (fs->result.has_value()) {
        etag = std::move(*fs->result);
        break;
      }
    }
    if (stop.ok()) {
      stop = maybe_report();
      // Too late once the object is complete: Finish then still succeeds.
      if (!stop.ok()) uploader->Abort().IgnoreError();
    }
  }
  if (!etag.ok()) return Annotate(stop.ok() ? etag.status() : stop, where);
  const UploadStats us = uploader->stats();
  // The object exists now: the last report cannot stop anything.
  Report(options, size, size, start).IgnoreError();
  TransferStats stats;
  stats.bytes = size;
  stats.bytes_uploaded = us.bytes_uploaded;
  stats.requests = us.single_put ? 1 : us.parts_uploaded;
  stats.parts = us.parts_uploaded;
  stats.retries = us.retries;
  stats.elapsed = MonotonicNow() - start;
  stats.peak_memory_bytes = upload_options.memory_budget != nullptr
                                ? upload_options.memory_budget->peak()
                                : runtime.memory_budget().peak();
  return stats;
}

}  // namespace ferry
