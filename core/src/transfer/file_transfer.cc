// Design. Both transfers run a small loop on the caller's thread: it keeps
// the transfer fed, sleeps on a CondVar until something completes or the
// next progress report is due, and calls the progress callback itself, so
// the callback never runs on an I/O thread.
//
// Download: HEAD (MultipartDownloadManager::Open), StartDownload at once,
// then a temporary file in the destination's directory is sized with
// ftruncate. The loop maps each chunk's range of it MAP_SHARED and issues
// one ReadAsync per chunk (chunk-aligned, so each read is served by exactly
// one chunk fetch) straight into that mapping, unmapped again once the
// read ended (so resident memory stays at the chunks in flight): the downloader's copy of a landed chunk IS the
// write to the file, so bytes are copied twice in all (socket -> chunk
// buffer -> page cache) and no write(2) runs. Before a chunk's read is
// issued the caller's thread pre-faults its pages (MADV_POPULATE_WRITE),
// so the I/O thread that copies the chunk takes no page faults. At most
// 2 * concurrency reads are outstanding, which also bounds the pages
// populated ahead of the data. Only when every byte has landed is the file
// unmapped, closed and renamed over the destination; any failure unmaps,
// closes and unlinks the temporary (the destination is untouched). No
// fsync: like cp and the AWS CLI, durability is the page cache's business.
//
// Upload: each part (PartLayout of the uploader) of the source is mapped
// read-only (MAP_POPULATE) and written from the mapping, so each byte is copied
// once into a part buffer and sent from there. The caller's thread also
// computes each part's checksum (the uploader seals a part on the writer's
// thread). The uploader would let a fast reader queue sealed parts until
// the shared MemoryBudget is spent, starving concurrent downloads; the loop
// instead keeps at most concurrency + 2 parts written but not yet accepted
// (polling UploadStats every millisecond: the uploader has no event for
// "a part was accepted"). Finish runs on the Runtime's blocking pool while
// the loop keeps reporting progress; a stop there aborts the upload.
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

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"

namespace ferry {
namespace {

// madvise(MADV_POPULATE_WRITE) exists from Linux 5.14; older kernels answer
// EINVAL and the copy takes the page faults instead.
#ifndef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = 23;
#else
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#endif

// How often the upload loop looks at the uploader's progress while it
// waits for parts to be accepted. A part of 8 MiB takes ~50 ms to send, so
// 1 ms costs nothing measurable and adds at most 1 ms per part of delay.
constexpr absl::Duration kUploadPollInterval = absl::Milliseconds(1);

absl::Status ErrnoError(int err, std::string_view what, std::string_view path) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(ToAbsl(what), " ", ToAbsl(path), ": ", std::strerror(err)));
}

// Calls the progress callback when one is set; OK otherwise.
absl::Status Report(TransferOptions& options, int64_t done, int64_t total, absl::Time start) {
  if (!options.progress) return absl::OkStatus();
  TransferProgress p;
  p.bytes_done = done;
  p.bytes_total = total;
  p.elapsed = MonotonicNow() - start;
  return options.progress(p);
}

// A temporary file beside the destination, removed unless committed.
class TempFile {
 public:
  ~TempFile() { Discard(); }

  // Creates "<dir>/.<name>.ferry-<random>" with mode 0644 minus umask.
  absl::Status Create(const std::string& destination) {
    const size_t slash = destination.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : destination.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? destination : destination.substr(slash + 1);
    if (base.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("download to ", destination, ": the path names a directory"));
    }
    absl::BitGen gen;
    // A handful of tries: a collision of 64 random bits is a stale file of
    // an earlier crash with the same name, not a race to win.
    for (int attempt = 0; attempt < 8; ++attempt) {
      path_ = absl::StrFormat("%s.%s.ferry-%016x", dir, base, absl::Uniform<uint64_t>(gen));
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ >= 0) return absl::OkStatus();
      if (errno != EEXIST) break;
    }
    const int err = errno;
    absl::Status s = ErrnoError(err, "create temporary file", path_);
    path_.clear();
    return s;
  }

  // Sets the file's size (sparse until written).
  absl::Status Resize(int64_t size) {
    if (::ftruncate(fd_, size) != 0) return ErrnoError(errno, "ftruncate", path_);
    return absl::OkStatus();
  }

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Unmaps, closes and renames the file to `destination`.
  absl::Status Commit(const std::string& destination) {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) return ErrnoError(errno, "close", path_);
    if (::rename(path_.c_str(), destination.c_str()) != 0) {
      return ErrnoError(errno, absl::StrCat("rename ", path_, " to"), destination);
    }
    path_.clear();
    return absl::OkStatus();
  }

  void Discard() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    if (!path_.empty()) ::unlink(path_.c_str());
    path_.clear();
  }

 private:
  std::string path_;
  int fd_ = -1;
};

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
    if (p == MAP_FAILED) return ErrnoError(errno, absl::StrCat("mmap at ", offset, " of"), path);
    base_ = static_cast<char*>(p);
    return absl::OkStatus();
  }
  char* data() const { return base_ + skew_; }
  // Pre-faults the whole region for writing (advice only: errors ignored).
  void PopulateForWrite() { ::madvise(base_, len_, kMadvPopulateWrite); }

 private:
  void Unmap() {
    if (base_ != nullptr) ::munmap(base_, len_);
    base_ = nullptr;
  }
  char* base_ = nullptr;
  size_t len_ = 0;
  size_t skew_ = 0;
};

// Completions of a download's reads, shared with their callbacks (which
// may run after the loop gave up, when the downloader cancels them).
struct ReadTracker {
  Mutex mu;
  CondVar cv;
  int outstanding ABSL_GUARDED_BY(mu) = 0;
  int64_t bytes_done ABSL_GUARDED_BY(mu) = 0;
  absl::Status error ABSL_GUARDED_BY(mu);
  std::vector<int64_t> completed ABSL_GUARDED_BY(mu);  // chunks whose reads ended
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
    if (fd_ < 0) return ErrnoError(errno, "open", path);
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoError(errno, "fstat", path);
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

}  // namespace

absl::StatusOr<TransferStats> DownloadToFile(MultipartDownloadManager& downloads,
                                             std::string_view key, const std::string& local_path,
                                             TransferOptions options) {
  const absl::Time start = MonotonicNow();
  const std::string where = absl::StrCat("download ", ToAbsl(key), " to ", local_path);
  absl::StatusOr<std::unique_ptr<MultipartDownloader>> opened = downloads.Open(key);
  if (!opened.ok()) return Annotate(opened.status(), where);
  std::unique_ptr<MultipartDownloader> object = *std::move(opened);
  object->StartDownload();
  const int64_t size = object->info().size;

  TempFile temp;
  absl::Status s = temp.Create(local_path);
  if (s.ok()) s = temp.Resize(size);
  if (!s.ok()) return Annotate(s, where);

  const int64_t chunk = downloads.options().chunk_bytes;
  const int64_t chunks = (size + chunk - 1) / chunk;
  const int window = 2 * std::max(1, downloads.options().concurrency);
  auto tracker = std::make_shared<ReadTracker>();
  int64_t next = 0;  // next chunk to issue a read for
  // Mappings of the chunks being read (this thread's only).
  absl::flat_hash_map<int64_t, Region> mapped;
  absl::Time next_report = MonotonicNow() + options.progress_interval;
  int64_t done_bytes = 0;
  absl::Status failure;
  for (;;) {
    // Feed: reads are issued without the tracker's lock (a read of bytes
    // already held completes inline, and its callback takes the lock).
    while (failure.ok() && next < chunks) {
      {
        MutexLock l(&tracker->mu);
        if (tracker->outstanding >= window || !tracker->error.ok()) break;
        ++tracker->outstanding;
      }
      const int64_t c = next++;
      const int64_t off = c * chunk;
      const int64_t len = std::min(chunk, size - off);
      Region region;
      failure = region.Map(temp.fd(), temp.path(), off, len, PROT_READ | PROT_WRITE, MAP_SHARED);
      if (!failure.ok()) {
        MutexLock l(&tracker->mu);
        --tracker->outstanding;
        break;
      }
      region.PopulateForWrite();
      char* dst = region.data();
      mapped.emplace(c, std::move(region));
      object->ReadAsync(off, std::span<char>(dst, static_cast<size_t>(len)),
                        [tracker, c, len, off](absl::StatusOr<size_t> n) {
                          MutexLock l(&tracker->mu);
                          --tracker->outstanding;
                          tracker->completed.push_back(c);
                          if (n.ok() && static_cast<int64_t>(*n) != len) {
                            n = absl::DataLossError(absl::StrCat("short read: ", *n, " of ", len,
                                                                 " bytes at offset ", off));
                          }
                          if (n.ok()) {
                            tracker->bytes_done += len;
                          } else if (tracker->error.ok()) {
                            tracker->error = n.status();
                          }
                          tracker->cv.Signal();
                        });
    }
    bool finished;
    std::vector<int64_t> completed;
    {
      MutexLock l(&tracker->mu);
      const absl::Duration wait = next_report - MonotonicNow();
      if (tracker->outstanding > 0 && wait > absl::ZeroDuration() &&
          (tracker->outstanding >= window || next >= chunks || !tracker->error.ok() ||
           !failure.ok())) {
        tracker->cv.WaitWithDeadline(&tracker->mu, absl::Now() + wait);
      }
      done_bytes = tracker->bytes_done;
      if (failure.ok()) failure = tracker->error;
      finished = tracker->outstanding == 0 && (next >= chunks || !failure.ok());
      completed.swap(tracker->completed);
    }
    // A chunk's bytes are in the page cache once its read ended; unmapping
    // keeps this process's resident size at the chunks in flight.
    for (int64_t c : completed) mapped.erase(c);
    if (finished) break;
    if (!failure.ok()) {
      // Cancels the reads still waiting (their callbacks see Cancelled);
      // after this no byte is copied into the mapping.
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
  mapped.clear();
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
  absl::StatusOr<std::unique_ptr<MultipartUploader>> created =
      MultipartUploader::Create(store, runtime, key, upload_options);
  if (!created.ok()) return Annotate(created.status(), where);
  std::unique_ptr<MultipartUploader> uploader = *std::move(created);
  const PartLayout& layout = uploader->layout();
  const int parts = size == 0 ? 0 : layout.PartAt(size - 1);
  const int ahead = std::max(1, upload_options.concurrency) + 2;
  absl::Time next_report = MonotonicNow() + options.progress_interval;

  // Reports progress if due; a stop aborts the upload.
  auto maybe_report = [&]() -> absl::Status {
    if (MonotonicNow() < next_report) return absl::OkStatus();
    next_report = MonotonicNow() + options.progress_interval;
    return Report(options, uploader->stats().bytes_uploaded, size, start);
  };

  absl::Status failure;
  for (int n = 1; n <= parts && failure.ok(); ++n) {
    for (;;) {
      const UploadStats us = uploader->stats();
      if (us.failed || n - 1 - us.parts_uploaded < ahead) break;
      failure = maybe_report();
      if (!failure.ok()) break;
      absl::SleepFor(kUploadPollInterval);
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
