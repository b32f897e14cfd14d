// MultipartDownloader: reads of one open object, served by exact ranged GETs
// until parallel readers show up, then by ONE shared multipart download
// whose chunks wake each waiting reader as soon as its own bytes land.
//
// The iRODS S3 plugin blocks every reader until the whole object is in a
// cache file; ferry instead:
//  - serves a lone reader with ranged GETs of exactly the bytes it asked
//    for (no read-ahead): 1 KiB from a 100 GiB object moves 1 KiB; once
//    its reads have run on from one another for 1 MiB it reads
//    sequentially, and chunks are fetched ahead of it (never the rest of
//    the object);
//  - when a second reader appears (OnReaderCountChanged(2+)), a reader asks
//    for the whole object, or StartDownload() is called, starts one
//    multipart download of the object, `chunk_bytes` per request,
//    `concurrency` requests in flight (S3_MPU_CHUNK / S3_MPU_THREADS);
//  - fetches chunks a waiting reader needs before any read-ahead chunk, and
//    otherwise reads ahead of where readers are reading;
//  - copies a landed chunk into every reader waiting on it at once and
//    completes each reader when its last byte has landed;
//  - pins every request to the ETag seen at open (If-Match): an object that
//    changes mid-download fails reads with FailedPrecondition, never mixes
//    old and new bytes;
//  - holds chunks only under tickets of one MemoryBudget shared by every
//    download (and upload): when it is spent, chunk requests wait for
//    budget instead of allocating; the store writes each chunk straight
//    into its buffer (ObjectStore::GetRangeInto), and a consumed chunk's
//    buffer goes back to a pool for the next fetch (see "Chunk memory");
//  - retries a failing chunk with exponential back-off and jitter; a chunk
//    that keeps failing fails only the reads that need it.
//
// Chunk lifetime (documented policy). A landed chunk is kept until every
// byte of it has been copied to some reader, then dropped and its budget
// returned: iRODS parallel gets and one-pass readers read each byte once,
// so held memory follows the readers rather than the object. A reader that
// later reads bytes of a dropped chunk gets that chunk fetched again (one
// ranged GET, still If-Match pinned), and the copy is dropped as soon as the
// reads waiting on it are served. When the budget is spent and a reader
// waits on a chunk, the landed chunk farthest ahead is dropped to make room
// (and fetched again if read later), so a waiting reader always makes
// progress. Landed chunks nobody reads stay until then or until the
// downloader is destroyed; read-ahead stops at `read_ahead_bytes` held.
//
// Chunk memory. Chunk buffers, sized to their chunk, come from the
// Runtime's BufferPool (huge-page mappings recycled between transfers:
// ferry/runtime/buffer_pool.h) and the store writes into them directly; a
// dropped chunk's buffer goes back to the pool. A direct read lands in the
// reader's own buffer: no copy and no budget.
//
// Example:
//
//   ferry::MultipartDownloadManager downloads(store, runtime, {.chunk_bytes = 8 << 20});
//   FERRY_ASSIGN_OR_RETURN(auto object, downloads.Open("bucket/key"));  // one HEAD
//   std::vector<char> buf(1 << 20);
//   FERRY_ASSIGN_OR_RETURN(size_t n, object->Read(0, buf));            // one ranged GET
//   object->OnReaderCountChanged(8);   // iRODS parallel get opened 8 handles
//   // ... 8 threads each Read() their own stripe, woken chunk by chunk.
#ifndef FERRY_TRANSFER_MULTIPART_DOWNLOADER_H_
#define FERRY_TRANSFER_MULTIPART_DOWNLOADER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/runtime/buffer_pool.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/memory_budget.h"
#include "ferry/transfer/object_store.h"
#include "ferry/runtime/retry_policy.h"

namespace ferry {

class Runtime;

struct MultipartDownloaderOptions {
  // Bytes per chunk request of a multipart download, and the largest
  // single ranged GET of a direct read (S3_MPU_CHUNK). 8 MiB is the AWS
  // CLI's default chunk: long enough that a 20 ms round trip costs little
  // at 1 GB/s, short enough that the first waiting reader wakes early.
  int64_t chunk_bytes = int64_t{8} << 20;
  // Chunk requests in flight per download (S3_MPU_THREADS). Ten is the AWS
  // CLI's default max_concurrent_requests.
  int concurrency = 10;
  // Most bytes one download holds for read-ahead (landed or in flight, not
  // yet read); chunks a reader waits on are fetched regardless. Bounds one
  // download's share of the shared budget when its readers stop reading.
  // 0 = two rounds of requests: 2 * concurrency * chunk_bytes.
  int64_t read_ahead_bytes = 0;
  // Per-chunk (and per direct-read piece) retries.
  RetryPolicy retry;
  // Budget every chunk is held under; null = the Runtime's memory_budget().
  MemoryBudget* memory_budget = nullptr;
  // Where chunk buffers come from and go back to; null = the Runtime's
  // buffer_pool().
  BufferPool* buffer_pool = nullptr;
  // Where back-off waits run; null = timers on the Runtime's io_context.
  DelayScheduler* scheduler = nullptr;
};

// What one downloader has done so far (for tests, benchmarks and stats).
struct DownloadStats {
  int64_t bytes_fetched = 0;    // bytes received from the store
  int64_t requests = 0;         // GetRange calls that succeeded
  int64_t retries = 0;          // GetRange attempts retried
  int64_t chunks_refetched = 0; // chunks fetched again after being dropped
  int64_t chunks_evicted = 0;   // landed chunks dropped unread to make room
  bool download_started = false;
  bool download_complete = false;  // every chunk landed at least once
};

// Reads of one object. Thread-safe: any number of threads may read
// concurrently. Destroying it fails reads still waiting with Cancelled and
// frees every chunk it holds, returning their tickets, at once; a request
// still in flight keeps its chunk's buffer and ticket until it ends (the
// store may still be writing into it), then frees both.
// REQUIRES: the ObjectStore, the MemoryBudget and the Runtime outlive every
// request in flight (destroy downloaders before their manager's store).
class MultipartDownloader {
 public:
  virtual ~MultipartDownloader() = default;

  // Copies up to dst.size() bytes at `offset` into `dst`; returns how many:
  // dst.size() unless the object ends first, 0 at or past the end (POSIX
  // read semantics). Blocks until the bytes are there.
  // REQUIRES: not called on an I/O thread of the store's Runtime.
  virtual absl::StatusOr<size_t> Read(int64_t offset, std::span<char> dst) = 0;

  // As Read, completing `done` (on an I/O thread, or inline when every
  // byte is already held) instead of blocking.
  // REQUIRES: `dst` stays valid until `done` runs.
  virtual void ReadAsync(int64_t offset, std::span<char> dst, Callback<size_t> done) = 0;

  // Tells how many handles have the object open (FdTable's per-object open
  // count). Two or more start the multipart download (once); fewer never
  // stop it. Read-ahead then begins at the start of each of `readers` equal
  // stripes, where iRODS parallel-get threads begin, and follows the reads.
  virtual void OnReaderCountChanged(int readers) = 0;

  // Starts the multipart download now (idempotent).
  virtual void StartDownload() = 0;

  virtual const std::string& key() const = 0;
  // The HEAD result every request is pinned to.
  virtual const ObjectInfo& info() const = 0;
  virtual DownloadStats stats() const = 0;
};

// Opens MultipartDownloaders over one store, sharing one memory budget,
// back-off timer and set of options. Thread-safe.
// REQUIRES: outlives the downloaders it opens; `store` and `runtime`
// outlive it.
class MultipartDownloadManager {
 public:
  MultipartDownloadManager(ObjectStore& store, Runtime& runtime,
                           const MultipartDownloaderOptions& options = {});
  ~MultipartDownloadManager();
  MultipartDownloadManager(const MultipartDownloadManager&) = delete;
  MultipartDownloadManager& operator=(const MultipartDownloadManager&) = delete;

  // HEADs `key` and opens it. Blocks; REQUIRES: not on an I/O thread.
  absl::StatusOr<std::unique_ptr<MultipartDownloader>> Open(std::string_view key);
  // As Open, completing through `done`.
  void OpenAsync(std::string_view key, Callback<std::unique_ptr<MultipartDownloader>> done);
  // Opens `key` with a HEAD result the caller already has (e.g. from stat):
  // no request. InvalidArgument if the options are unusable (chunk_bytes
  // below 1 or above the budget, concurrency below 1) or info.size < 0.
  absl::StatusOr<std::unique_ptr<MultipartDownloader>> OpenWithInfo(std::string_view key,
                                                                    const ObjectInfo& info);

  MemoryBudget& memory_budget() const { return *budget_; }
  const MultipartDownloaderOptions& options() const { return options_; }

 private:
  ObjectStore& store_;
  MultipartDownloaderOptions options_;
  MemoryBudget* budget_;
  BufferPool* pool_;
  std::shared_ptr<DelayScheduler> scheduler_;  // shared with the downloads' requests
};

}  // namespace ferry

#endif  // FERRY_TRANSFER_MULTIPART_DOWNLOADER_H_
