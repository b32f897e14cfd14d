// Design. Each open object has one DownloadState, shared (shared_ptr) by the
// MultipartDownloader handle and by every request in flight, so completions
// that arrive after the handle is gone find live memory and drop their
// bytes. One ferry::Mutex guards the state: a table of the chunks that are
// wanted, being fetched or landed (chunks nobody holds are absent), the
// readers waiting on each, and a FIFO of wanted chunks.
//
// A read no larger than one chunk, before any multipart download started,
// is one exact ranged GET straight into the reader's buffer ("direct
// read": no copy, no budget), a whole small object's included; a read of a
// whole larger object starts the download. Every other read registers on the
// chunks it spans: bytes of landed chunks are copied at once; each missing
// chunk becomes "wanted" (queued first) and keeps the read as a waiter. When
// a chunk lands it is copied into all its waiters and each waiter whose
// last chunk this was completes, so readers wake chunk by chunk.
//
// Pump() keeps up to `concurrency` fetches going: wanted chunks first, then
// (only once the download started) read-ahead just past where recent reads
// ended (one cursor per reading stream, served round robin), then the rest
// of the object in order. A lone reader whose direct reads run on from one
// another for kSequentialRunBytes starts the download in read-ahead-only
// mode: chunks ahead of it, never the rest of the object. Every fetch first takes a chunk-sized ticket from
// the shared MemoryBudget: TryAcquire, or else one AcquireAsync per
// download whose grant picks whatever chunk is most urgent by then. If a
// reader waits and the budget is spent, a landed chunk is dropped to make
// room (progress over read-ahead).
//
// Chunk memory. A chunk's bytes live in a ChunkBuffer (a LargeBuffer and
// the budget ticket that pays for it) into which the store writes
// (GetRangeInto). The fetch owns the buffer while the store writes, and
// hands it to the chunk when it lands; so a dropped or cancelled chunk's
// memory, still being written, is freed (and its ticket returned) only
// when its request ends. Buffers come from the Runtime's BufferPool and go
// back to it when their chunk is dropped, so the next fetch (of this or
// any download) reuses memory already touched (fresh memory costs a fault
// and zeroing per page; see buffer_pool.h).
//
// Locking rule: store calls, reader callbacks and ticket releases never run
// under the mutex. Releasing a ticket can run another waiter's grant
// callback inline, which may be this download's own; store fakes and
// callbacks may re-enter. So work found under the lock is gathered in a
// Deferred and done after the lock is dropped.
#include "ferry/transfer/multipart_downloader.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/base/large_buffer.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"
#include "transfer/deferred_work.h"
#include "transfer/interval_set.h"

namespace ferry {
namespace {

// Read-ahead cursors remembered per download: one per reading stream. 32
// covers iRODS parallel gets (16 threads at most by default) with room.
constexpr size_t kMaxCursors = 32;

// A lone reader is served exactly the bytes it asks for until its reads,
// each smaller than a chunk and starting where the one before ended, have
// covered this much: then it reads sequentially, and chunks are fetched
// ahead of it (Linux's
// readahead starts on the same evidence). Below it, a few small reads in
// order (a file's header, an NFS client's first READs) still move only
// their bytes.
constexpr int64_t kSequentialRunBytes = int64_t{1} << 20;

using internal::IntervalSet;

using Deferred = internal::DeferredWork;

// One read waiting for chunks.
struct PendingRead {
  int64_t offset = 0;
  std::span<char> dst;  // already clipped to the object
  int missing = 0;      // chunks still to copy
  bool finished = false;
  Callback<size_t> done;
};

// Memory for one chunk and the ticket that pays for it; `bytes` is empty
// until the fetch that takes it allocates (outside the lock).
struct ChunkBuffer {
  LargeBuffer bytes;
  MemoryBudget::Ticket ticket;
};

struct Chunk {
  enum class State { kWanted, kFetching, kLanded };
  State state = State::kWanted;
  uint64_t fetch_id = 0;
  ChunkBuffer buffer;  // kLanded only: a fetch owns it while the store writes
  IntervalSet copied;  // bytes handed to readers since it landed
  bool one_shot = false;  // fetched again: dropped once its waiters are served
  std::vector<std::shared_ptr<PendingRead>> waiters;
};

// What a chunk has been through, for read-ahead and completion.
enum class Visit : uint8_t { kNever, kLanded, kFailed };

class DownloadState : public std::enable_shared_from_this<DownloadState> {
 public:
  DownloadState(ObjectStore& store, MemoryBudget& budget, BufferPool& pool,
                std::shared_ptr<DelayScheduler> scheduler, const MultipartDownloaderOptions& options,
                std::string key, ObjectInfo info)
      : store_(store),
        budget_(budget),
        pool_(pool),
        scheduler_(std::move(scheduler)),
        options_(options),
        key_(std::move(key)),
        info_(std::move(info)),
        num_chunks_((info_.size + options.chunk_bytes - 1) / options.chunk_bytes),
        read_ahead_chunks_(std::max<int64_t>(
            1, (options.read_ahead_bytes > 0 ? options.read_ahead_bytes
                                             : 2 * options.concurrency * options.chunk_bytes) /
                   options.chunk_bytes)) {
    MutexLock l(&mu_);
    visited_.assign(static_cast<size_t>(num_chunks_), Visit::kNever);
  }

  const std::string& key() const { return key_; }
  const ObjectInfo& info() const { return info_; }

  void ReadAsync(int64_t offset, std::span<char> dst, Callback<size_t> done) {
    if (offset < 0) {
      done(absl::InvalidArgumentError(
          absl::StrCat("read ", ToAbsl(key_), ": negative offset ", offset)));
      return;
    }
    Deferred d;
    MutexLock l(&mu_);
    if (!poison_.ok()) {
      d.calls.push_back([done = std::move(done), s = poison_]() mutable { done(s); });
      return;
    }
    if (cancelled_) {
      d.calls.push_back([done = std::move(done), s = CancelledStatus()]() mutable { done(s); });
      return;
    }
    if (offset >= info_.size || dst.empty()) {
      d.calls.push_back([done = std::move(done)]() mutable { done(size_t{0}); });
      return;
    }
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(dst.size()), info_.size - offset);
    dst = dst.first(static_cast<size_t>(len));
    // Before any download started, a read goes straight into the reader's
    // buffer: no budget, no chunk buffers, no copy. One of a chunk or less
    // is one GET (a tree of small objects); a larger one (a whole-file
    // read) is ranged GETs into slices of that buffer, `concurrency` in
    // flight, which is what a Python read() of a whole object wants.
    if (!download_started_) {
      // Only reads smaller than a chunk: a chunk or more is already a
      // request worth its round trip (the copy engine's reads, a whole
      // read), and goes straight into its buffer.
      const bool continues = offset == direct_end_ && len < options_.chunk_bytes;
      sequential_run_ = continues ? sequential_run_ + len : len;
      direct_end_ = offset + len;
      if (continues && sequential_run_ >= kSequentialRunBytes) {
        // Read-ahead past this reader, not the whole object: no scan.
        read_ahead_only_ = true;
        StartLocked(d);
      }
    }
    if (!download_started_ && len <= options_.chunk_bytes) {
      d.calls.push_back([self = shared_from_this(), offset, dst, done = std::move(done)]() mutable {
        self->DirectRead(offset, dst, std::move(done));
      });
      return;
    }
    if (!download_started_) {
      d.calls.push_back([self = shared_from_this(), offset, dst, done = std::move(done)]() mutable {
        self->StripedDirectRead(offset, dst, std::move(done));
      });
      return;
    }
    ReadFromChunksLocked(offset, dst, std::move(done), d);
  }

  // Starts the download; with `readers` > 1, read-ahead begins at the
  // start of each of `readers` equal stripes, where iRODS parallel-get
  // threads start reading (thread i from i * size / readers).
  void StartDownload(int readers) {
    Deferred d;
    MutexLock l(&mu_);
    read_ahead_only_ = false;  // the whole object from now on
    if (download_started_) {
      PumpLocked(d);
      return;
    }
    if (readers > 1 && cursors_.empty()) {
      const int64_t stripe = (info_.size + readers - 1) / readers;
      for (int i = 0; i < readers && i < static_cast<int>(kMaxCursors); ++i) {
        const int64_t c = i * stripe / options_.chunk_bytes;
        if (c < num_chunks_ && (cursors_.empty() || cursors_.back() != c)) cursors_.push_back(c);
      }
    }
    StartLocked(d);
  }

  void Cancel() {
    Deferred d;
    MutexLock l(&mu_);
    cancelled_ = true;
    DropAllLocked(CancelledStatus(), d);
  }

  DownloadStats stats() const {
    MutexLock l(&mu_);
    DownloadStats s = stats_;
    s.download_started = download_started_;
    s.download_complete = visited_count_ == num_chunks_;
    return s;
  }

 private:
  absl::Status CancelledStatus() const {
    return absl::CancelledError(absl::StrCat("download ", ToAbsl(key_), ": downloader closed"));
  }

  int64_t ChunkBegin(int64_t c) const { return c * options_.chunk_bytes; }
  int64_t ChunkLength(int64_t c) const {
    return std::min(options_.chunk_bytes, info_.size - ChunkBegin(c));
  }

  void StartLocked(Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (download_started_ || cancelled_ || !poison_.ok() || info_.size == 0) return;
    download_started_ = true;
    PumpLocked(d);
  }

  // Exact ranged GET for a small read before any multipart download,
  // written by the store straight into the reader's buffer.
  void DirectRead(int64_t offset, std::span<char> dst, Callback<size_t> done) {
    auto self = shared_from_this();
    FetchWithRetry(offset, dst,
                   [self, offset, dst, done = std::move(done)](absl::StatusOr<size_t> r) mutable {
                     if (r.ok()) {
                       {
                         MutexLock l(&self->mu_);
                         self->stats_.bytes_fetched += static_cast<int64_t>(*r);
                         ++self->stats_.requests;
                       }
                       done(dst.size());
                       return;
                     }
                     absl::Status s = Annotate(
                         r.status(), absl::StrCat("read ", ToAbsl(self->key_), " [", offset, ", ",
                                                  offset + static_cast<int64_t>(dst.size()), ")"));
                     if (s.code() == absl::StatusCode::kFailedPrecondition) {
                       Deferred d;
                       MutexLock l(&self->mu_);
                       self->PoisonLocked(s, d);
                     }
                     done(std::move(s));
                   });
  }

  // A read larger than a chunk, before any download: slices of `dst`
  // fetched by DirectRead, `concurrency` lanes each taking the next slice
  // when its last one lands. The first error fails the read (the other
  // lanes stop taking slices); the read completes once every lane ended,
  // so no request still writes into `dst` after `done`.
  void StripedDirectRead(int64_t offset, std::span<char> dst, Callback<size_t> done) {
    struct Striped {
      std::span<char> dst;
      int64_t offset = 0;
      int64_t slice = 0;
      int64_t slices = 0;
      std::atomic<int64_t> next{0};
      std::atomic<int> lanes{0};
      Mutex mu;
      absl::Status error ABSL_GUARDED_BY(mu);
      std::atomic<bool> failed{false};
      Callback<size_t> done;
    };
    auto st = std::make_shared<Striped>();
    st->dst = dst;
    st->offset = offset;
    const int64_t len = static_cast<int64_t>(dst.size());
    const int64_t lanes = std::max<int64_t>(1, options_.concurrency);
    // Slices of at least 1 MiB (fewer, larger requests when the server is
    // the bottleneck), at most a chunk, spread over every lane.
    st->slice = std::clamp<int64_t>((len + lanes - 1) / lanes, int64_t{1} << 20,
                                    std::max<int64_t>(options_.chunk_bytes, int64_t{1} << 20));
    st->slices = (len + st->slice - 1) / st->slice;
    st->done = std::move(done);
    const int n = static_cast<int>(std::min<int64_t>(lanes, st->slices));
    st->lanes = n;
    auto self = shared_from_this();
    // One lane: fetch the next slice, then the one after, until none is
    // left or a slice failed; the last lane to end completes the read.
    auto lane = std::make_shared<std::function<void()>>();
    *lane = [self, st, weak = std::weak_ptr<std::function<void()>>(lane)]() {
      const int64_t i = st->failed ? st->slices : st->next.fetch_add(1);
      if (i >= st->slices) {
        if (st->lanes.fetch_sub(1) == 1) {
          absl::Status s;
          {
            MutexLock l(&st->mu);
            s = st->error;
          }
          if (s.ok()) {
            st->done(st->dst.size());
          } else {
            st->done(std::move(s));
          }
        }
        return;
      }
      const int64_t begin = i * st->slice;
      const int64_t end = std::min<int64_t>(begin + st->slice, st->dst.size());
      auto next = weak.lock();
      self->DirectRead(st->offset + begin,
                       st->dst.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)),
                       [st, next](absl::StatusOr<size_t> r) {
                         if (!r.ok()) {
                           MutexLock l(&st->mu);
                           if (st->error.ok()) st->error = r.status();
                           st->failed = true;
                         }
                         (*next)();
                       });
    };
    for (int k = 0; k < n; ++k) (*lane)();
  }

  // GetRangeInto `dst`, pinned to the open ETag, retried per the policy. A
  // reply of the wrong length is DataLoss (retried); once the downloader is
  // closed, errors turn into Cancelled so nothing is retried for nobody.
  void FetchWithRetry(int64_t offset, std::span<char> dst, Callback<size_t> done) {
    auto self = shared_from_this();
    CallWithRetry<size_t>(
        options_.retry, *scheduler_,
        [self, offset, dst](int attempt, Callback<size_t> cb) {
          if (attempt > 1) {
            MutexLock l(&self->mu_);
            ++self->stats_.retries;
          }
          self->store_.GetRangeInto(
              self->key_, offset, dst, self->info_.etag,
              [self, offset, dst, cb = std::move(cb)](absl::StatusOr<size_t> r) mutable {
                if (r.ok() && *r != dst.size()) {
                  r = absl::DataLossError(absl::StrCat("short reply: ", *r, " of ", dst.size(),
                                                       " bytes at offset ", offset));
                }
                if (!r.ok() && self->IsClosed()) r = self->CancelledStatus();
                cb(std::move(r));
              });
        },
        std::move(done));
  }

  bool IsClosed() const {
    MutexLock l(&mu_);
    return cancelled_ || !poison_.ok();
  }

  void ReadFromChunksLocked(int64_t offset, std::span<char> dst, Callback<size_t> done,
                            Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto r = std::make_shared<PendingRead>();
    r->offset = offset;
    r->dst = dst;
    r->done = std::move(done);
    const int64_t end = offset + static_cast<int64_t>(dst.size());
    const int64_t first = offset / options_.chunk_bytes;
    const int64_t last = (end - 1) / options_.chunk_bytes;
    NoteCursorLocked(first, last + 1);
    for (int64_t c = first; c <= last; ++c) {
      auto it = chunks_.find(c);
      if (it != chunks_.end() && it->second.state == Chunk::State::kLanded) {
        CopyLocked(c, it->second, *r);
        MaybeDropLocked(it, d);
        continue;
      }
      ++r->missing;
      if (it == chunks_.end()) {
        it = chunks_.emplace(c, Chunk()).first;
        wanted_.push_back(c);
      }
      it->second.waiters.push_back(r);
    }
    if (r->missing == 0) {
      r->finished = true;
      d.calls.push_back([r] { r->done(r->dst.size()); });
    }
    PumpLocked(d);
  }

  // Remembers that a stream read up to chunk `next`; read-ahead goes there.
  void NoteCursorLocked(int64_t first, int64_t next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (int64_t& cur : cursors_) {
      if (cur >= first && cur <= next) {
        cur = next;
        return;
      }
    }
    cursors_.push_back(next);
    if (cursors_.size() > kMaxCursors) cursors_.pop_front();
  }

  void CopyLocked(int64_t c, Chunk& chunk, PendingRead& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (r.finished) return;
    const int64_t cb = ChunkBegin(c);
    const int64_t b = std::max(cb, r.offset);
    const int64_t e = std::min(cb + ChunkLength(c), r.offset + static_cast<int64_t>(r.dst.size()));
    if (b >= e) return;
    std::memcpy(r.dst.data() + (b - r.offset), chunk.buffer.bytes.data() + (b - cb),
                static_cast<size_t>(e - b));
    chunk.copied.Add(b - cb, e - cb);
  }

  // Forgets a chunk; its buffer, if landed, goes back to the pool.
  void EraseChunkLocked(std::unordered_map<int64_t, Chunk>::iterator it, Deferred& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (it->second.state != Chunk::State::kWanted) --held_;
    ChunkBuffer buffer = std::move(it->second.buffer);
    chunks_.erase(it);
    ReleaseLocked(std::move(buffer), d);
  }

  // Gives the buffer back to the pool and its ticket to the budget, after
  // the lock is dropped.
  void ReleaseLocked(ChunkBuffer buffer, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!buffer.bytes.empty()) d.buffers.push_back({&pool_, std::move(buffer.bytes)});
    d.tickets.push_back(std::move(buffer.ticket));
  }

  // Drops a landed chunk once all of it has been copied to readers.
  void MaybeDropLocked(std::unordered_map<int64_t, Chunk>::iterator it, Deferred& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Chunk& ch = it->second;
    if (ch.state != Chunk::State::kLanded || !ch.waiters.empty()) return;
    if (!ch.copied.Covers(0, ChunkLength(it->first))) return;
    EraseChunkLocked(it, d);
  }

  // The chunk to fetch next, if any: wanted first, then read-ahead.
  std::optional<int64_t> PickChunkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!wanted_.empty()) {
      auto it = chunks_.find(wanted_.front());
      if (it != chunks_.end() && it->second.state == Chunk::State::kWanted) return it->first;
      wanted_.pop_front();
    }
    if (!download_started_ || held_ >= read_ahead_chunks_) return std::nullopt;
    auto free_chunk = [&](int64_t c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return visited_[static_cast<size_t>(c)] == Visit::kNever && !chunks_.contains(c);
    };
    // Read-ahead: just past each stream's last read, a window of one
    // round of requests deep, streams in turn.
    for (size_t k = 0; k < cursors_.size(); ++k) {
      const size_t i = (next_cursor_ + k) % cursors_.size();
      const int64_t end = std::min(num_chunks_, cursors_[i] + options_.concurrency);
      for (int64_t c = cursors_[i]; c < end; ++c) {
        if (free_chunk(c)) {
          next_cursor_ = i + 1;
          return c;
        }
      }
    }
    if (read_ahead_only_) return std::nullopt;
    while (scan_ < num_chunks_ && !free_chunk(scan_)) ++scan_;
    if (scan_ < num_chunks_) return scan_;
    return std::nullopt;
  }

  void PumpLocked(Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (cancelled_ || !poison_.ok()) return;
    while (in_flight_ < options_.concurrency && !budget_wait_) {
      std::optional<int64_t> c = PickChunkLocked();
      if (!c) return;
      std::optional<MemoryBudget::Ticket> t = budget_.TryAcquire(options_.chunk_bytes);
      if (!t) {
        auto it = chunks_.find(*c);
        if (it != chunks_.end() && !it->second.waiters.empty()) EvictForLocked(*c, d);
        budget_wait_ = true;
        d.calls.push_back([self = shared_from_this()] {
          self->budget_.AcquireAsync(self->options_.chunk_bytes,
                                     [self](absl::StatusOr<MemoryBudget::Ticket> granted) {
                                       self->OnBudget(std::move(granted));
                                     });
        });
        return;
      }
      StartFetchLocked(*c, ChunkBuffer{.ticket = std::move(*t)}, d);
    }
  }

  // Budget is spent and a reader waits on chunk `needed`: drop the landed
  // chunk farthest ahead (least likely to be read soon), if there is one.
  void EvictForLocked(int64_t needed, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto victim = chunks_.end();
    for (auto it = chunks_.begin(); it != chunks_.end(); ++it) {
      if (it->first == needed || it->second.state != Chunk::State::kLanded) continue;
      if (victim == chunks_.end() || it->first > victim->first) victim = it;
    }
    if (victim == chunks_.end()) return;
    ++stats_.chunks_evicted;
    EraseChunkLocked(victim, d);
  }

  void OnBudget(absl::StatusOr<MemoryBudget::Ticket> t) {
    Deferred d;
    MutexLock l(&mu_);
    budget_wait_ = false;
    if (!t.ok()) return;  // chunk_bytes <= capacity was checked at open
    std::optional<int64_t> c;
    if (!cancelled_ && poison_.ok()) c = PickChunkLocked();
    if (!c) {
      d.tickets.push_back(std::move(*t));
      return;
    }
    StartFetchLocked(*c, ChunkBuffer{.ticket = std::move(*t)}, d);
    PumpLocked(d);
  }

  void StartFetchLocked(int64_t c, ChunkBuffer buffer, Deferred& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Chunk& ch = chunks_[c];
    if (ch.state == Chunk::State::kWanted) ++held_;
    if (visited_[static_cast<size_t>(c)] != Visit::kNever) {
      ++stats_.chunks_refetched;
      ch.one_shot = true;
    }
    ch.state = Chunk::State::kFetching;
    ch.fetch_id = ++next_fetch_id_;
    ++in_flight_;
    const uint64_t id = ch.fetch_id;
    const int64_t begin = ChunkBegin(c), len = ChunkLength(c);
    d.calls.push_back([self = shared_from_this(), c, id, begin, len,
                       buffer = std::move(buffer)]() mutable {
      // Sized to the chunk, not chunk_bytes: a small object's only chunk
      // is small (a 4 KiB object must not cost a 2 MiB huge page's zeroing).
      absl::StatusOr<LargeBuffer> bytes = self->pool_.Take(static_cast<size_t>(len));
      if (!bytes.ok()) return self->OnFetched(c, id, std::move(buffer), bytes.status());
      buffer.bytes = *std::move(bytes);
      // The span stays valid while `buffer` moves into the callback.
      const std::span<char> dst = buffer.bytes.span().first(static_cast<size_t>(len));
      self->FetchWithRetry(begin, dst,
                           [self, c, id, buffer = std::move(buffer)](
                               absl::StatusOr<size_t> r) mutable {
                             self->OnFetched(c, id, std::move(buffer), std::move(r));
                           });
    });
  }

  void OnFetched(int64_t c, uint64_t id, ChunkBuffer buffer, absl::StatusOr<size_t> r) {
    Deferred d;
    MutexLock l(&mu_);
    --in_flight_;
    auto it = chunks_.find(c);
    if (it == chunks_.end() || it->second.fetch_id != id ||
        it->second.state != Chunk::State::kFetching) {
      ReleaseLocked(std::move(buffer), d);
      PumpLocked(d);  // dropped meanwhile (closed or object changed)
      return;
    }
    Chunk& ch = it->second;
    if (!r.ok()) {
      ReleaseLocked(std::move(buffer), d);
      absl::Status s =
          Annotate(r.status(), absl::StrCat("download ", ToAbsl(key_), " chunk ", c, " [",
                                            ChunkBegin(c), ", ", ChunkBegin(c) + ChunkLength(c),
                                            ") etag ", info_.etag));
      if (s.code() == absl::StatusCode::kFailedPrecondition) {
        PoisonLocked(s, d);
        return;
      }
      // This chunk only: its readers fail, read-ahead skips it, a later
      // read of it tries again.
      for (auto& w : ch.waiters) FailLocked(*w, s, d);
      MarkVisitedLocked(c, Visit::kFailed);
      EraseChunkLocked(it, d);
      PumpLocked(d);
      return;
    }
    stats_.bytes_fetched += static_cast<int64_t>(*r);
    ++stats_.requests;
    ch.buffer = std::move(buffer);
    ch.state = Chunk::State::kLanded;
    MarkVisitedLocked(c, Visit::kLanded);
    for (auto& w : ch.waiters) {
      if (w->finished) continue;
      CopyLocked(c, ch, *w);
      if (--w->missing == 0) {
        w->finished = true;
        d.calls.push_back([w] { w->done(w->dst.size()); });
      }
    }
    ch.waiters.clear();
    if (ch.one_shot) {
      EraseChunkLocked(it, d);
    } else {
      MaybeDropLocked(it, d);
    }
    PumpLocked(d);
  }

  void MarkVisitedLocked(int64_t c, Visit v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Visit& slot = visited_[static_cast<size_t>(c)];
    if (slot == Visit::kNever) ++visited_count_;
    if (slot != Visit::kLanded) slot = v;
  }

  void FailLocked(PendingRead& r, const absl::Status& s, Deferred& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (r.finished) return;
    r.finished = true;
    d.calls.push_back([done = std::move(r.done), s]() mutable { done(s); });
  }

  // The object changed under us: every read, now and later, fails.
  void PoisonLocked(const absl::Status& s, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!poison_.ok()) return;
    poison_ = absl::FailedPreconditionError(absl::StrCat(
        "download ", ToAbsl(key_), ": object changed since it was opened (etag ", info_.etag,
        "); reopen it to read the new version: ", s.message()));
    DropAllLocked(poison_, d);
  }

  void DropAllLocked(const absl::Status& s, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto& [c, ch] : chunks_) {
      for (auto& w : ch.waiters) FailLocked(*w, s, d);
      ReleaseLocked(std::move(ch.buffer), d);
    }
    chunks_.clear();
    wanted_.clear();
    held_ = 0;
  }

  ObjectStore& store_;
  MemoryBudget& budget_;
  BufferPool& pool_;
  const std::shared_ptr<DelayScheduler> scheduler_;
  const MultipartDownloaderOptions options_;
  const std::string key_;
  const ObjectInfo info_;
  const int64_t num_chunks_;
  const int64_t read_ahead_chunks_;

  mutable Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status poison_ ABSL_GUARDED_BY(mu_);  // FailedPrecondition once the object changed
  bool download_started_ ABSL_GUARDED_BY(mu_) = false;
  // Started by a sequential reader: chunks ahead of readers only, not the
  // rest of the object (StartDownload clears it).
  bool read_ahead_only_ ABSL_GUARDED_BY(mu_) = false;
  // Where the last direct read ended, and how many bytes the reads ending
  // there in a row covered (kSequentialRunBytes).
  int64_t direct_end_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t sequential_run_ ABSL_GUARDED_BY(mu_) = 0;
  std::unordered_map<int64_t, Chunk> chunks_ ABSL_GUARDED_BY(mu_);  // node-based: stable refs
  std::deque<int64_t> wanted_ ABSL_GUARDED_BY(mu_);  // chunks readers wait on, oldest first
  std::vector<Visit> visited_ ABSL_GUARDED_BY(mu_);
  int64_t visited_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<int64_t> cursors_ ABSL_GUARDED_BY(mu_);  // next chunk of each reading stream
  size_t next_cursor_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t scan_ ABSL_GUARDED_BY(mu_) = 0;  // no free chunk below this
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // chunk fetches, retry waits included
  int64_t held_ ABSL_GUARDED_BY(mu_) = 0;   // chunks fetching or landed
  bool budget_wait_ ABSL_GUARDED_BY(mu_) = false;  // an AcquireAsync is queued
  uint64_t next_fetch_id_ ABSL_GUARDED_BY(mu_) = 0;
  DownloadStats stats_ ABSL_GUARDED_BY(mu_);
};

class MultipartDownloaderImpl final : public MultipartDownloader {
 public:
  explicit MultipartDownloaderImpl(std::shared_ptr<DownloadState> state) : state_(std::move(state)) {}
  ~MultipartDownloaderImpl() override { state_->Cancel(); }

  absl::StatusOr<size_t> Read(int64_t offset, std::span<char> dst) override {
    return BlockOn<size_t>(
        [&](Callback<size_t> done) { state_->ReadAsync(offset, dst, std::move(done)); });
  }
  void ReadAsync(int64_t offset, std::span<char> dst, Callback<size_t> done) override {
    state_->ReadAsync(offset, dst, std::move(done));
  }
  void OnReaderCountChanged(int readers) override {
    if (readers >= 2) state_->StartDownload(readers);
  }
  void StartDownload() override { state_->StartDownload(1); }
  const std::string& key() const override { return state_->key(); }
  const ObjectInfo& info() const override { return state_->info(); }
  DownloadStats stats() const override { return state_->stats(); }

 private:
  std::shared_ptr<DownloadState> state_;
};

}  // namespace

MultipartDownloadManager::MultipartDownloadManager(ObjectStore& store, Runtime& runtime,
                                                   const MultipartDownloaderOptions& options)
    : store_(store),
      options_(options),
      budget_(options.memory_budget != nullptr ? options.memory_budget : &runtime.memory_budget()),
      pool_(options.buffer_pool != nullptr ? options.buffer_pool : &runtime.buffer_pool()) {
  if (options.scheduler != nullptr) {
    scheduler_ = std::shared_ptr<DelayScheduler>(options.scheduler, [](DelayScheduler*) {});
  } else {
    scheduler_ = std::make_shared<RuntimeDelayScheduler>(runtime);
  }
}

MultipartDownloadManager::~MultipartDownloadManager() = default;

absl::StatusOr<std::unique_ptr<MultipartDownloader>> MultipartDownloadManager::Open(
    std::string_view key) {
  return BlockOn<std::unique_ptr<MultipartDownloader>>(
      [&](Callback<std::unique_ptr<MultipartDownloader>> done) { OpenAsync(key, std::move(done)); });
}

void MultipartDownloadManager::OpenAsync(std::string_view key,
                                         Callback<std::unique_ptr<MultipartDownloader>> done) {
  store_.Head(key, [this, key = std::string(key),
                    done = std::move(done)](absl::StatusOr<ObjectInfo> info) mutable {
    if (!info.ok()) {
      done(Annotate(info.status(), absl::StrCat("open ", key)));
      return;
    }
    done(OpenWithInfo(key, *info));
  });
}

absl::StatusOr<std::unique_ptr<MultipartDownloader>> MultipartDownloadManager::OpenWithInfo(
    std::string_view key, const ObjectInfo& info) {
  if (options_.chunk_bytes < 1 || options_.chunk_bytes > budget_->capacity()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open ", ToAbsl(key), ": chunk_bytes ", options_.chunk_bytes,
        " must be between 1 and the memory budget (", budget_->capacity(), " bytes)"));
  }
  if (options_.concurrency < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("open ", ToAbsl(key), ": concurrency ", options_.concurrency, " below 1"));
  }
  if (info.size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("open ", ToAbsl(key), ": negative object size ", info.size));
  }
  auto state = std::make_shared<DownloadState>(store_, *budget_, *pool_, scheduler_, options_,
                                               std::string(key), info);
  return std::unique_ptr<MultipartDownloader>(new MultipartDownloaderImpl(std::move(state)));
}

}  // namespace ferry
