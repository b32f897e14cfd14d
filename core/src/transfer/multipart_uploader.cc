// Design. The uploader's state (MultipartUploader::State) is shared by the
// handle and every request in flight. One ferry::Mutex guards the part
// table (std::map by part number: ordered for Finish, node-stable so a
// writer may copy into a part's buffer with the lock dropped), the queue of
// sealed parts, the upload id and the first error.
//
// A Write is split at part boundaries. For each piece the writer, under the
// lock, finds or creates the part (in memory under a budget ticket, or
// spilled to the scratch file per the rule in the header) and registers as
// one of the part's writers; it copies (memcpy or pwrite) without the
// lock; then, under the lock again, marks the bytes written. The writer
// that completes a part, when no other writer is copying into it, seals it,
// computes its checksum on its own thread (not an I/O thread) and queues it.
//
// Pump() creates the multipart upload on the first sealed part and keeps
// `concurrency` UploadPart calls going, each retried by CallWithRetry. The
// first failure stops new parts; once no part is in flight the upload is
// aborted, so the store never keeps orphan parts. Finish() waits on a
// CondVar for all of that, and so does a Write held back by
// max_sealed_parts: `sealed` counts parts from the moment they are sealed
// until their upload ends, and each end signals the CondVar. Store calls,
// ticket releases and callbacks run after the lock is dropped (gathered in
// a Deferred), as in the downloader.
#include "ferry/transfer/multipart_uploader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
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

// ---------------------------------------------------------------- PartLayout

absl::StatusOr<PartLayout> PartLayout::ForKnownSize(int64_t total_bytes, int64_t part_bytes,
                                                    const MultipartLimits& limits) {
  if (total_bytes < 0 || part_bytes < 1 || limits.max_parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("part layout: bad total ", total_bytes,
                                                   " or part size ", part_bytes));
  }
  PartLayout l;
  l.total_bytes_ = total_bytes;
  l.max_part_bytes_ = limits.max_part_bytes;
  const int64_t needed = (total_bytes + limits.max_parts - 1) / limits.max_parts;
  l.base_bytes_ = std::max({part_bytes, limits.min_part_bytes, needed, int64_t{1}});
  if (l.base_bytes_ > limits.max_part_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "part layout: an object of ", total_bytes, " bytes needs parts of ", l.base_bytes_,
        " bytes, above the store's limit of ", limits.max_part_bytes));
  }
  l.max_parts_ = static_cast<int>(std::max<int64_t>(1, (total_bytes + l.base_bytes_ - 1) / l.base_bytes_));
  return l;
}

absl::StatusOr<PartLayout> PartLayout::ForUnknownSize(int64_t part_bytes,
                                                      const MultipartLimits& limits) {
  if (part_bytes < 1 || limits.max_parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("part layout: bad part size ", part_bytes));
  }
  PartLayout l;
  l.base_bytes_ = std::max(part_bytes, limits.min_part_bytes);
  l.max_part_bytes_ = limits.max_part_bytes;
  if (l.base_bytes_ > limits.max_part_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("part layout: part size ", l.base_bytes_,
                                                   " above the store's limit of ",
                                                   limits.max_part_bytes));
  }
  l.max_parts_ = limits.max_parts;
  // Ten doublings over all the parts (see the header for the arithmetic).
  l.parts_per_doubling_ = std::max(1, limits.max_parts / 10);
  return l;
}

int64_t PartLayout::GrowthSize(int group) const {
  // Doubling stops at the store's largest part; 40 doublings would already
  // exceed any 64-bit size, so the loop is short.
  int64_t s = base_bytes_;
  for (int i = 0; i < group && s < max_part_bytes_; ++i) s *= 2;
  return std::min(s, max_part_bytes_);
}

int64_t PartLayout::capacity() const {
  if (known_size()) return total_bytes_;
  return PartStart(max_parts_) + PartBytes(max_parts_);
}

int64_t PartLayout::PartStart(int n) const {
  if (known_size()) return static_cast<int64_t>(n - 1) * base_bytes_;
  int64_t start = 0;
  int before = n - 1;  // parts ahead of n
  for (int g = 0; before > 0; ++g) {
    const int in_group = std::min(before, parts_per_doubling_);
    start += in_group * GrowthSize(g);
    before -= in_group;
  }
  return start;
}

int64_t PartLayout::PartBytes(int n) const {
  if (known_size()) return std::min(base_bytes_, total_bytes_ - PartStart(n));
  return GrowthSize((n - 1) / parts_per_doubling_);
}

int PartLayout::PartAt(int64_t offset) const {
  if (offset < 0) return 0;
  if (known_size()) {
    return offset < total_bytes_ ? static_cast<int>(offset / base_bytes_) + 1 : 0;
  }
  int first = 1;
  for (int g = 0; first <= max_parts_; ++g) {
    const int in_group = std::min(parts_per_doubling_, max_parts_ - first + 1);
    const int64_t size = GrowthSize(g);
    if (offset < in_group * size) return first + static_cast<int>(offset / size);
    offset -= in_group * size;
    first += in_group;
  }
  return 0;
}

// ---------------------------------------------------------- MultipartUploader

namespace {

using internal::IntervalSet;

using Deferred = internal::DeferredWork;

struct Part {
  enum class State { kFilling, kSpilled, kSealed, kUploading, kDone };
  State state = State::kFilling;
  int64_t start = 0;
  int64_t len = 0;
  LargeBuffer buf;  // kFilling .. kUploading (huge pages: see large_buffer.h)
  MemoryBudget::Ticket ticket;
  IntervalSet written;  // relative to start
  int writers = 0;      // writes copying into buf / the scratch file now
  Checksum checksum;
};

const char* StateName(Part::State s) {
  switch (s) {
    case Part::State::kFilling: return "filling";
    case Part::State::kSpilled: return "spilled";
    case Part::State::kSealed: return "sealed";
    case Part::State::kUploading: return "uploading";
    case Part::State::kDone: return "uploaded";
  }
  return "?";
}

}  // namespace

struct MultipartUploader::State : std::enable_shared_from_this<MultipartUploader::State> {
  State(ObjectStore& s, Runtime& rt, MemoryBudget& b, std::shared_ptr<DelayScheduler> sched,
        const MultipartUploaderOptions& o, std::string k, PartLayout l)
      : store(s), runtime(rt), budget(b),
        pool(o.buffer_pool != nullptr ? *o.buffer_pool : rt.buffer_pool()),
        scheduler(std::move(sched)), options(o), key(std::move(k)), layout(std::move(l)) {}

  ~State() {
    MutexLock lock(&mu);
    if (scratch_fd >= 0) ::close(scratch_fd);
  }

  ObjectStore& store;
  Runtime& runtime;
  MemoryBudget& budget;
  BufferPool& pool;  // part buffers come from it and go back to it
  const std::shared_ptr<DelayScheduler> scheduler;
  const MultipartUploaderOptions options;
  const std::string key;
  const PartLayout layout;

  mutable Mutex mu;
  CondVar cv;  // signalled on part completion, failure, creation and abort
  std::map<int, Part> parts ABSL_GUARDED_BY(mu);
  int buffered ABSL_GUARDED_BY(mu) = 0;  // parts kFilling in memory
  std::deque<int> queue ABSL_GUARDED_BY(mu);  // sealed, waiting to upload
  int in_flight ABSL_GUARDED_BY(mu) = 0;
  // Parts sealed and not yet accepted or dropped: being checksummed (in
  // SealAndQueue), queued or in flight.
  int sealed ABSL_GUARDED_BY(mu) = 0;
  int releasing ABSL_GUARDED_BY(mu) = 0;  // tickets handed to a Deferred, not yet back
  enum class Create { kNone, kCreating, kReady, kFailed };
  Create create ABSL_GUARDED_BY(mu) = Create::kNone;
  std::string upload_id ABSL_GUARDED_BY(mu);
  // A resumed upload's stored parts by number: set at creation, read-only.
  std::map<int, StoredPart> stored_parts;
  std::map<int, std::string> etags ABSL_GUARDED_BY(mu);
  absl::Status error ABSL_GUARDED_BY(mu);  // first failure
  bool finishing ABSL_GUARDED_BY(mu) = false;
  bool finished ABSL_GUARDED_BY(mu) = false;
  bool abort_sent ABSL_GUARDED_BY(mu) = false;
  bool abort_done ABSL_GUARDED_BY(mu) = false;
  absl::Status abort_status ABSL_GUARDED_BY(mu);
  int64_t max_end ABSL_GUARDED_BY(mu) = 0;
  int scratch_fd ABSL_GUARDED_BY(mu) = -1;
  UploadStats stats ABSL_GUARDED_BY(mu);

  std::string Where(int n) const {
    return absl::StrCat("upload ", ToAbsl(key), " part ", n);
  }

  // The part sealed (or written) in full? For a known size of one part,
  // parts are never sealed early: the object goes up as one Put at Finish.
  bool SingleKnownPart() const { return layout.known_size() && layout.max_parts() == 1; }

  absl::Status OpenScratchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (scratch_fd >= 0) return absl::OkStatus();
    std::string dir = options.scratch_dir;
    if (dir.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      dir = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
    }
    std::string path = dir + "/ferry-upload-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
      return absl::InternalError(absl::StrCat("upload ", ToAbsl(key), ": scratch file in ", dir,
                                              ": ", std::strerror(errno)));
    }
    ::unlink(path.c_str());  // nothing to clean up, even after a crash
    scratch_fd = fd;
    return absl::OkStatus();
  }

  // Gives `t` back once the lock is dropped (a release may run another
  // transfer's budget callback, which must not run under our lock). Until
  // it is back, `releasing` counts it as work in flight, so Finish() and
  // Abort() return only when every byte of budget has been returned.
  void ReleaseLater(MemoryBudget::Ticket t, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (t.bytes() == 0) return;
    d.tickets.push_back(std::move(t));
    ++releasing;
    // Deferred runs its calls after releasing its tickets.
    d.calls.push_back([self = shared_from_this()] {
      MutexLock l(&self->mu);
      if (--self->releasing == 0) self->cv.SignalAll();
    });
  }

  // Gives a part's buffer back to the pool and its ticket to the budget,
  // once the lock is dropped.
  void ReleasePartLater(Part& p, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    ReleaseLater(std::move(p.ticket), d);
    d.buffers.push_back({&pool, std::move(p.buf)});
  }

  // Records the first error; queued parts will not be sent.
  void FailLocked(absl::Status s, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (error.ok()) error = std::move(s);
    for (int n : queue) ReleasePartLater(parts[n], d);
    sealed -= static_cast<int>(queue.size());
    queue.clear();
    for (auto& [n, p] : parts) DropIdleFillingPartLocked(p, d);
    MaybeAbortLocked(d);
    cv.SignalAll();
  }

  // After a failure, a part still filling holds memory for bytes that will
  // never be sent: give it back now (not when the uploader is destroyed),
  // unless a writer is copying into it; CommitLocked drops it when that
  // writer is done.
  void DropIdleFillingPartLocked(Part& p, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (p.state != Part::State::kFilling || p.writers > 0 || p.buf.empty()) return;
    ReleasePartLater(p, d);
    --buffered;
  }

  // After a failure, once nothing is in flight: AbortMultipart.
  void MaybeAbortLocked(Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (error.ok() || in_flight > 0 || create != Create::kReady || abort_sent) return;
    abort_sent = true;
    stats.aborted = true;
    d.calls.push_back([self = shared_from_this(), id = upload_id] {
      CallWithRetry<bool>(
          self->options.retry, *self->scheduler,
          [self, id](int, Callback<bool> cb) {
            self->store.AbortMultipart(self->key, id, [cb = std::move(cb)](absl::Status s) mutable {
              if (s.ok()) {
                cb(true);
              } else {
                cb(s);
              }
            });
          },
          [self](absl::StatusOr<bool> r) {
            MutexLock l(&self->mu);
            self->abort_done = true;
            if (!r.ok()) {
              self->abort_status = Annotate(r.status(), absl::StrCat("abort upload ",
                                                                     ToAbsl(self->key)));
            }
            self->cv.SignalAll();
          });
    });
  }

  void PumpLocked(Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!error.ok() || queue.empty()) return;
    if (create == Create::kNone) {
      create = Create::kCreating;
      d.calls.push_back([self = shared_from_this()] {
        CallWithRetry<std::string>(
            self->options.retry, *self->scheduler,
            [self](int, Callback<std::string> cb) { self->store.CreateMultipart(self->key, self->options.metadata, std::move(cb)); },
            [self](absl::StatusOr<std::string> id) { self->OnCreated(std::move(id)); });
      });
      return;
    }
    if (create != Create::kReady) return;
    while (in_flight < options.concurrency && !queue.empty()) {
      const int n = queue.front();
      queue.pop_front();
      Part& p = parts[n];
      p.state = Part::State::kUploading;
      ++in_flight;
      d.calls.push_back([self = shared_from_this(), n, id = upload_id,
                         bytes = std::span<const char>(p.buf.data(), static_cast<size_t>(p.len)),
                         checksum = p.checksum] {
        CallWithRetry<std::string>(
            self->options.retry, *self->scheduler,
            [self, n, id, bytes, checksum](int attempt, Callback<std::string> cb) {
              if (attempt > 1) {
                MutexLock l(&self->mu);
                ++self->stats.retries;
              }
              self->store.UploadPart(self->key, id, n, bytes, checksum, std::move(cb));
            },
            [self, n](absl::StatusOr<std::string> etag) { self->OnPartDone(n, std::move(etag)); });
      });
    }
  }

  void OnCreated(absl::StatusOr<std::string> id) {
    Deferred d;
    MutexLock l(&mu);
    if (!id.ok()) {
      create = Create::kFailed;
      FailLocked(Annotate(id.status(), absl::StrCat("create multipart upload ", ToAbsl(key))), d);
      return;
    }
    upload_id = std::move(*id);
    create = Create::kReady;
    MaybeAbortLocked(d);  // failed (or abandoned) while it was being created
    PumpLocked(d);
    cv.SignalAll();
  }

  void OnPartDone(int n, absl::StatusOr<std::string> etag) {
    Deferred d;
    MutexLock l(&mu);
    --in_flight;
    --sealed;
    Part& p = parts[n];
    ReleasePartLater(p, d);
    if (!etag.ok()) {
      FailLocked(Annotate(etag.status(), absl::StrCat(Where(n), " (", p.len, " bytes at offset ",
                                                      p.start, ")")),
                 d);
      return;
    }
    p.state = Part::State::kDone;
    etags[n] = std::move(*etag);
    ++stats.parts_uploaded;
    stats.bytes_uploaded += p.len;
    MaybeAbortLocked(d);
    PumpLocked(d);
    cv.SignalAll();
  }

  // The stored part `n` of a resumed upload if it holds exactly `bytes`
  // (its ETag is their MD5), else null.
  const StoredPart* StoredCopyOf(int n, std::span<const char> bytes) const {
    auto it = stored_parts.find(n);
    if (it == stored_parts.end() || it->second.size != static_cast<int64_t>(bytes.size())) {
      return nullptr;
    }
    const std::string stated = Md5OfEtag(it->second.etag);
    return !stated.empty() && stated == Md5(bytes) ? &it->second : nullptr;
  }

  // Seals part `n` (all written, no writer copying): checksum on this
  // thread, then queue it, unless a resumed upload already holds it.
  void SealAndQueue(int n) {
    std::span<const char> bytes;
    {
      MutexLock l(&mu);
      bytes = std::span<const char>(parts[n].buf.data(), static_cast<size_t>(parts[n].len));
    }
    // The buffer no longer changes (sealed), so it is read without the lock.
    // stored_parts is set before the first Write and never changes.
    const StoredPart* kept = StoredCopyOf(n, bytes);
    Checksum c = kept != nullptr ? Checksum() : ComputeChecksum(options.checksum, bytes);
    Deferred d;
    MutexLock l(&mu);
    Part& p = parts[n];
    p.checksum = std::move(c);
    if (!error.ok()) {
      ReleasePartLater(p, d);
      --sealed;
      return;
    }
    if (kept != nullptr) {
      ReleasePartLater(p, d);
      --sealed;
      p.state = Part::State::kDone;
      etags[n] = kept->etag;
      ++stats.parts_kept;
      stats.bytes_kept += p.len;
      cv.SignalAll();
      return;
    }
    queue.push_back(n);
    PumpLocked(d);
  }

  // What a writer does with one piece of a write.
  struct Piece {
    int part = 0;
    int64_t offset = 0;
    size_t bytes = 0;
    char* dst = nullptr;  // in-memory part, or
    int fd = -1;          // the scratch file (written at `offset`)
    int64_t need_budget = 0;  // > 0: block for this many bytes, then retry
  };

  // Finds or creates the part for [offset, offset + bytes) and registers the
  // writer. `spare` is a ticket the caller waited for on an earlier try.
  absl::StatusOr<Piece> ReserveLocked(int64_t offset, size_t bytes,
                                      std::optional<MemoryBudget::Ticket>& spare)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!error.ok()) return error;
    if (finishing) {
      return absl::FailedPreconditionError(
          absl::StrCat("write ", ToAbsl(key), " at offset ", offset, ": upload already finishing"));
    }
    Piece piece;
    piece.part = layout.PartAt(offset);
    if (piece.part == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "write ", ToAbsl(key), " at offset ", offset, ": past the ",
          layout.known_size() ? "declared size " : "largest object the part layout holds, ",
          layout.capacity(), " bytes"));
    }
    const int64_t start = layout.PartStart(piece.part);
    const int64_t len = layout.PartBytes(piece.part);
    piece.offset = offset;
    piece.bytes = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(bytes), start + len - offset));
    auto it = parts.find(piece.part);
    if (it == parts.end()) {
      if (len > budget.capacity()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            Where(piece.part), ": part of ", len, " bytes exceeds the whole memory budget (",
            budget.capacity(), " bytes); declare the total size or raise the budget"));
      }
      bool spill = options.scratch_only || buffered >= options.max_buffered_parts;
      std::optional<MemoryBudget::Ticket> ticket;
      if (!spill) {
        if (spare && spare->bytes() >= len) {
          ticket = std::move(spare);
          spare.reset();
        } else {
          ticket = budget.TryAcquire(len);
        }
        if (!ticket) {
          if (in_flight > 0 || !queue.empty()) {
            piece.need_budget = len;  // uploads in flight will give budget back
            return piece;
          }
          spill = true;
        }
      }
      Part p;
      p.start = start;
      p.len = len;
      if (spill) {
        FERRY_RETURN_IF_ERROR(OpenScratchLocked());
        p.state = Part::State::kSpilled;
        ++stats.parts_spilled;
      } else {
        p.state = Part::State::kFilling;
        absl::StatusOr<LargeBuffer> buf = pool.Take(static_cast<size_t>(len));
        if (!buf.ok()) {
          spare = std::move(ticket);  // returned by the caller, outside the lock
          return Annotate(buf.status(), Where(piece.part));
        }
        p.buf = *std::move(buf);
        p.ticket = std::move(*ticket);
        ++buffered;
      }
      it = parts.emplace(piece.part, std::move(p)).first;
    }
    Part& p = it->second;
    if (p.state != Part::State::kFilling && p.state != Part::State::kSpilled) {
      return absl::InvalidArgumentError(absl::StrCat(
          "write ", ToAbsl(key), " [", offset, ", ", offset + static_cast<int64_t>(piece.bytes),
          "): rewrites part ", piece.part, " which is already ", StateName(p.state),
          "; parts stream once (use scratch_only for rewrites)"));
    }
    ++p.writers;
    if (p.state == Part::State::kFilling) {
      piece.dst = p.buf.data() + (offset - start);
    } else {
      piece.fd = scratch_fd;
    }
    return piece;
  }

  // Marks a piece written; true if the caller must now seal the part.
  bool CommitLocked(const Piece& piece, Deferred& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Part& p = parts[piece.part];
    --p.writers;
    if (!error.ok()) {
      DropIdleFillingPartLocked(p, d);
      return false;
    }
    p.written.Add(piece.offset - p.start, piece.offset - p.start + static_cast<int64_t>(piece.bytes));
    max_end = std::max(max_end, piece.offset + static_cast<int64_t>(piece.bytes));
    if (p.state != Part::State::kFilling || p.writers > 0 || SingleKnownPart() || !error.ok() ||
        !p.written.Covers(0, p.len)) {
      return false;
    }
    p.state = Part::State::kSealed;
    --buffered;
    ++sealed;
    return true;
  }

  absl::Status Write(int64_t offset, std::span<const char> data) {
    if (offset < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("write ", ToAbsl(key), ": negative offset ", offset));
    }
    if (layout.known_size() && offset + static_cast<int64_t>(data.size()) > layout.total_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "write ", ToAbsl(key), " [", offset, ", ", offset + static_cast<int64_t>(data.size()),
          "): past the declared size of ", layout.total_bytes(), " bytes"));
    }
    std::optional<MemoryBudget::Ticket> spare;
    while (!data.empty()) {
      absl::StatusOr<Piece> piece;
      {
        MutexLock l(&mu);
        if (MustWaitForSealedLocked(offset)) {
          ++stats.sealed_waits;
          while (MustWaitForSealedLocked(offset)) cv.Wait(&mu);
        }
        piece = ReserveLocked(offset, data.size(), spare);
      }
      if (!piece.ok()) return piece.status();
      if (piece->need_budget > 0) {
        spare.reset();
        absl::StatusOr<MemoryBudget::Ticket> t = budget.Acquire(piece->need_budget);
        if (!t.ok()) return Annotate(t.status(), Where(piece->part));
        spare = std::move(*t);
        continue;
      }
      absl::Status copied;
      if (piece->dst != nullptr) {
        std::memcpy(piece->dst, data.data(), piece->bytes);
      } else {
        copied = PwriteAll(piece->fd, data.first(piece->bytes), piece->offset);
      }
      bool seal;
      {
        Deferred d;
        MutexLock l(&mu);
        seal = CommitLocked(*piece, d);
        if (!copied.ok()) {
          FailLocked(copied, d);
          return copied;
        }
      }
      if (seal) SealAndQueue(piece->part);
      offset += static_cast<int64_t>(piece->bytes);
      data = data.subspan(piece->bytes);
    }
    return absl::OkStatus();
  }

  // True while a write at `offset` would start a new part and
  // max_sealed_parts sealed parts are not yet accepted. A write into a part
  // already being filled never waits: that part holds its memory already.
  bool MustWaitForSealedLocked(int64_t offset) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return SealedPartsFullLocked() && !parts.contains(layout.PartAt(offset));
  }

  // True while max_sealed_parts sealed parts are not yet accepted and the
  // upload can still take writes (after a failure or Finish, Write fails
  // at once instead of waiting).
  bool SealedPartsFullLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return options.max_sealed_parts > 0 && sealed >= options.max_sealed_parts && error.ok() &&
           !finishing;
  }

  bool WaitUntilWritable(absl::Duration timeout) {
    // CondVar deadlines are wall-clock times.
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock l(&mu);
    while (SealedPartsFullLocked()) {
      if (!cv.WaitWithDeadline(&mu, deadline)) return !SealedPartsFullLocked();
    }
    return true;
  }

  absl::Status PwriteAll(int fd, std::span<const char> data, int64_t offset) {
    while (!data.empty()) {
      const ssize_t n = ::pwrite(fd, data.data(), data.size(), offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return absl::InternalError(absl::StrCat("upload ", ToAbsl(key),
                                                ": scratch file write at ", offset, ": ",
                                                std::strerror(errno)));
      }
      data = data.subspan(static_cast<size_t>(n));
      offset += n;
    }
    return absl::OkStatus();
  }

  // Reads [offset, offset + dst.size()) of the scratch file; bytes past its
  // end (never written) read as zeros.
  absl::Status PreadAll(int fd, std::span<char> dst, int64_t offset) {
    std::memset(dst.data(), 0, dst.size());
    while (!dst.empty()) {
      const ssize_t n = ::pread(fd, dst.data(), dst.size(), offset);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return absl::InternalError(absl::StrCat("upload ", ToAbsl(key), ": scratch file read at ",
                                                offset, ": ", std::strerror(errno)));
      }
      if (n == 0) break;  // sparse tail
      dst = dst.subspan(static_cast<size_t>(n));
      offset += n;
    }
    return absl::OkStatus();
  }

  // Nothing in flight, no upload being created, no abort unanswered.
  bool QuietLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return in_flight == 0 && releasing == 0 && create != Create::kCreating &&
           (!abort_sent || abort_done);
  }

  // Waits for nothing to be in flight, for the upload id if one is being
  // created, and for the abort if one was sent; returns the first error
  // (with the abort's failure, if any, appended).
  absl::Status WaitForFailureLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (!QuietLocked()) cv.Wait(&mu);
    if (abort_status.ok()) return error;
    return absl::Status(error.code(),
                        absl::StrCat(error.message(), "; and ", abort_status.message()));
  }

  // Records `s` as the upload's failure, lets the abort go out (the lock
  // must be dropped for that), then waits for it.
  absl::Status FailAndWait(absl::Status s) {
    {
      Deferred d;
      MutexLock l(&mu);
      FailLocked(std::move(s), d);
    }
    MutexLock l(&mu);
    return WaitForFailureLocked();
  }

  // Finish, first step: checks every part up to the last byte, seals the
  // ones in memory and lists the spilled ones. Known size: every byte must
  // have been written. Unknown size: holes become zeros (a part never
  // touched is read from the sparse scratch file).
  absl::Status PrepareFinishLocked(int64_t final_size, std::vector<int>& to_seal,
                                   std::vector<int>& spilled) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const int last = final_size == 0 ? 0 : layout.PartAt(final_size - 1);
    for (int n = 1; n <= last; ++n) {
      auto it = parts.find(n);
      const int64_t start = layout.PartStart(n);
      if (layout.known_size()) {
        const int64_t len = layout.PartBytes(n);
        const bool sealed = it != parts.end() && it->second.state != Part::State::kFilling &&
                            it->second.state != Part::State::kSpilled;
        if (!sealed) {
          const auto gaps = it == parts.end() ? std::vector<std::pair<int64_t, int64_t>>{{0, len}}
                                              : it->second.written.Gaps(0, len);
          if (!gaps.empty()) {
            return absl::DataLossError(absl::StrCat(
                "finish upload ", ToAbsl(key), ": bytes [", start + gaps[0].first, ", ",
                start + gaps[0].second, ") of the declared ", final_size, " were never written"));
          }
        }
      }
      if (it == parts.end()) {
        FERRY_RETURN_IF_ERROR(OpenScratchLocked());
        Part p;
        p.state = Part::State::kSpilled;
        p.start = start;
        p.len = layout.PartBytes(n);
        it = parts.emplace(n, std::move(p)).first;
      }
      Part& p = it->second;
      if (n == last) p.len = final_size - p.start;  // unknown size: the last part is short
      if (p.state == Part::State::kFilling) {
        for (const auto& [b, e] : p.written.Gaps(0, p.len)) {
          std::memset(p.buf.data() + b, 0, static_cast<size_t>(e - b));
        }
        p.state = Part::State::kSealed;
        --buffered;
        ++sealed;
        to_seal.push_back(n);
      } else if (p.state == Part::State::kSpilled) {
        spilled.push_back(n);
      }
    }
    // A small object (one part, nothing sent yet) goes up as one Put.
    if (last <= 1 && create == Create::kNone && queue.empty() && in_flight == 0) {
      stats.single_put = true;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Finish() {
    int64_t final_size;
    std::vector<int> to_seal, spilled;
    absl::Status prepared;
    {
      MutexLock l(&mu);
      if (finishing) {
        return absl::FailedPreconditionError(
            absl::StrCat("finish upload ", ToAbsl(key), ": already finished"));
      }
      finishing = true;
      if (!error.ok()) return WaitForFailureLocked();
      final_size = layout.known_size() ? layout.total_bytes() : max_end;
      prepared = PrepareFinishLocked(final_size, to_seal, spilled);
    }
    if (!prepared.ok()) return FailAndWait(prepared);
    bool single_put;
    {
      MutexLock l(&mu);
      single_put = stats.single_put;
    }
    // Parts already in memory go first: their uploads give budget back.
    if (!single_put) {
      for (int n : to_seal) SealAndQueue(n);
    }
    // Then spilled parts, read back and queued one at a time. Waiting for
    // budget is safe here: everything else is sealed, so uploads in flight
    // return it.
    for (int n : spilled) {
      int64_t len, start;
      int fd;
      {
        MutexLock l(&mu);
        if (!error.ok()) break;
        len = parts[n].len;
        start = parts[n].start;
        fd = scratch_fd;
      }
      absl::StatusOr<MemoryBudget::Ticket> t = budget.Acquire(len);
      LargeBuffer buf;
      absl::Status s = Annotate(t.status(), Where(n));
      if (t.ok()) {
        absl::StatusOr<LargeBuffer> got = pool.Take(static_cast<size_t>(len));
        if (got.ok()) {
          buf = *std::move(got);
          s = PreadAll(fd, buf.span().first(static_cast<size_t>(len)), start);
        } else {
          s = Annotate(got.status(), Where(n));
        }
      }
      {
        Deferred d;
        MutexLock l(&mu);
        if (!s.ok()) {
          FailLocked(s, d);
          break;
        }
        Part& p = parts[n];
        p.buf = std::move(buf);
        p.ticket = std::move(*t);
        p.state = Part::State::kSealed;
        ++sealed;
      }
      if (!single_put) SealAndQueue(n);
    }
    if (single_put) return PutSmall(final_size);

    std::vector<CompletedPart> completed;
    std::string id;
    {
      MutexLock l(&mu);
      const int last = final_size == 0 ? 0 : layout.PartAt(final_size - 1);
      while (error.ok() && static_cast<int>(etags.size()) < last) cv.Wait(&mu);
      if (!error.ok()) return WaitForFailureLocked();
      for (const auto& [n, etag] : etags) completed.push_back({n, etag});
      id = upload_id;
    }
    absl::StatusOr<std::string> etag =
        EtagWithRetry([self = shared_from_this(), id, completed](int, Callback<std::string> cb) {
          self->store.CompleteMultipart(self->key, id, completed, std::move(cb));
        });
    if (!etag.ok()) {
      return FailAndWait(Annotate(etag.status(), absl::StrCat("complete multipart upload ",
                                                              ToAbsl(key), " (", completed.size(),
                                                              " parts)")));
    }
    MutexLock l(&mu);
    while (releasing > 0) cv.Wait(&mu);  // every part's budget is back
    finished = true;
    return etag;
  }

  // Runs `request` (a Put or a CompleteMultipart) with the upload's retry
  // policy, blocking; the object's ETag.
  absl::StatusOr<std::string> EtagWithRetry(
      absl::AnyInvocable<void(int attempt, Callback<std::string> cb)> request) {
    return BlockOn<std::string>([&](Callback<std::string> done) {
      CallWithRetry<std::string>(options.retry, *scheduler, std::move(request), std::move(done));
    });
  }

  // One Put of the whole (small) object from part 1's buffer.
  absl::StatusOr<std::string> PutSmall(int64_t size) {
    std::span<const char> bytes;
    {
      MutexLock l(&mu);
      if (!error.ok()) return error;
      auto it = parts.find(1);
      if (it != parts.end() && size > 0) {
        bytes = std::span<const char>(it->second.buf.data(), static_cast<size_t>(size));
      }
    }
    const Checksum checksum = ComputeChecksum(options.checksum, bytes);
    absl::StatusOr<std::string> etag =
        EtagWithRetry([self = shared_from_this(), bytes, checksum](int, Callback<std::string> cb) {
          self->store.Put(self->key, bytes, checksum, self->options.metadata, std::move(cb));
        });
    Deferred d;
    MutexLock l(&mu);
    auto it = parts.find(1);
    if (it != parts.end()) {
      ReleasePartLater(it->second, d);
    }
    if (!etag.ok()) {
      error = Annotate(etag.status(), absl::StrCat("put ", ToAbsl(key), " (", size, " bytes)"));
      return error;
    }
    finished = true;
    stats.bytes_uploaded += size;
    return etag;
  }

  absl::Status Abort() {
    {
      Deferred d;
      MutexLock l(&mu);
      if (finished) return absl::OkStatus();
      finishing = true;
      FailLocked(absl::CancelledError(absl::StrCat("upload ", ToAbsl(key), ": aborted")), d);
    }
    MutexLock l(&mu);
    while (!QuietLocked()) cv.Wait(&mu);
    return abort_status;
  }

  // The handle went away without Finish: abort in the background.
  void Abandon() {
    Deferred d;
    MutexLock l(&mu);
    if (finished || !error.ok()) return;
    finishing = true;
    FailLocked(absl::CancelledError(absl::StrCat("upload ", ToAbsl(key),
                                                 ": uploader destroyed before Finish")),
               d);
  }
};

absl::StatusOr<std::unique_ptr<MultipartUploader>> MultipartUploader::Create(
    ObjectStore& store, Runtime& runtime, std::string_view key,
    const MultipartUploaderOptions& options) {
  if (options.part_bytes < 1 || options.concurrency < 1 || options.max_buffered_parts < 0 ||
      options.max_sealed_parts < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upload ", ToAbsl(key), ": part_bytes ", options.part_bytes, ", concurrency ",
        options.concurrency, ", max_buffered_parts ", options.max_buffered_parts,
        " and max_sealed_parts ", options.max_sealed_parts, " must be positive"));
  }
  const MultipartLimits limits = store.multipart_limits();
  absl::StatusOr<PartLayout> layout =
      options.total_bytes >= 0
          ? PartLayout::ForKnownSize(options.total_bytes, options.part_bytes, limits)
          : PartLayout::ForUnknownSize(options.part_bytes, limits);
  if (!layout.ok()) return Annotate(layout.status(), absl::StrCat("upload ", ToAbsl(key)));
  MemoryBudget& budget =
      options.memory_budget != nullptr ? *options.memory_budget : runtime.memory_budget();
  std::shared_ptr<DelayScheduler> scheduler =
      options.scheduler != nullptr
          ? std::shared_ptr<DelayScheduler>(options.scheduler, [](DelayScheduler*) {})
          : std::make_shared<RuntimeDelayScheduler>(runtime);
  auto state = std::make_shared<State>(store, runtime, budget, std::move(scheduler), options,
                                       std::string(key), *std::move(layout));
  // A resumed upload exists already: no CreateMultipart. An object of one
  // known part goes up as a Put instead, and the upload it cannot use is
  // aborted so its parts are not left to bill.
  if (!options.resume.upload_id.empty()) {
    if (state->layout.max_parts() > 1) {
      for (const StoredPart& p : options.resume.parts) state->stored_parts[p.part_number] = p;
      MutexLock l(&state->mu);
      state->upload_id = options.resume.upload_id;
      state->create = State::Create::kReady;
      state->stats.resumed = true;
    } else {
      store.AbortMultipart(key, options.resume.upload_id, [](absl::Status) {});
    }
  }
  return std::unique_ptr<MultipartUploader>(new MultipartUploader(std::move(state)));
}

MultipartUploader::MultipartUploader(std::shared_ptr<State> state) : state_(std::move(state)) {}

MultipartUploader::~MultipartUploader() { state_->Abandon(); }

absl::Status MultipartUploader::Write(int64_t offset, std::span<const char> data) {
  return state_->Write(offset, data);
}

bool MultipartUploader::WaitUntilWritable(absl::Duration timeout) {
  return state_->WaitUntilWritable(timeout);
}

absl::StatusOr<std::string> MultipartUploader::Finish() { return state_->Finish(); }

void MultipartUploader::FinishAsync(Callback<std::string> done) {
  state_->runtime.PostBlocking(
      [state = state_, done = std::move(done)]() mutable { done(state->Finish()); });
}

absl::Status MultipartUploader::Abort() { return state_->Abort(); }

const std::string& MultipartUploader::key() const { return state_->key; }

const PartLayout& MultipartUploader::layout() const { return state_->layout; }

UploadStats MultipartUploader::stats() const {
  MutexLock l(&state_->mu);
  UploadStats s = state_->stats;
  s.failed = !state_->error.ok();
  return s;
}

}  // namespace ferry
