// Copy engine design. A CopyRun holds the files waiting to be copied
// (tasks) and runs workers on the Runtime's blocking pool. A tree copy
// adds tasks as its walk lists them, so the first files are copied while
// the listing goes on (a bucket's first page arrives in a few ms, its
// whole listing may take minutes); at most kMaxPending wait at once, the
// walk pausing meanwhile, and a finished file leaves only its counts (and
// its failure, if any) behind: memory stays bounded whatever the tree's
// size. Each worker loops, taking under one lock the most useful action
// there is:
//   1. finish a file whose chunks are all moved (or that failed): close
//      the reader, publish the writer (Close) or discard it;
//   2. move the next chunk of an open file: ReadAt into the worker's
//      buffer, WriteAt out of it;
//   3. open the next file (Stat/OpenRead/OpenWrite, or a server-side copy)
//      while fewer than `jobs` files are open;
// and waits when none is ready (another worker is opening or moving the
// last chunks). Finishing first keeps few files open; chunks before opens
// keep the bytes of open files flowing. No worker ever waits for another
// pool task, so the pool cannot deadlock however small it is. Workers are
// started with work (tasks added, chunks of an opened file) and leave when
// there is none, so none holds a pool thread while a tree is listed.
//
// A single-file copy is finished by the caller instead, after the final
// progress report: a stop there still leaves the target untouched. A
// writer whose Close says Aborted (the server lost unstable writes) gets
// every chunk again, once. A single file known to fit in one chunk is
// opened and moved on the caller's thread too: handing it to a pool
// worker (a thread to start, two wake-ups) cost more than a small file's
// whole copy (#33: a 1-byte NFS get by ferry-cp), and a single chunk has
// no progress to report before the end.
//
// The caller waits on the condition variable, waking every
// progress_interval to report bytes moved so far (outside the lock: the
// callback may block on Python's GIL). A non-OK report is recorded as the
// stop status: workers fail the open files with it (so they are discarded)
// and open no more.
#include "ferry/transfer/copy_engine.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/clock.h"
#include "ferry/base/large_buffer.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/safe_path.h"
#include "ferry/runtime/buffer_pool.h"
#include "ferry/runtime/memory_budget.h"
#include "ferry/runtime/rate_limiter.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/internal/destination_index.h"

namespace ferry {
namespace {

constexpr int64_t kDefaultChunkBytes = int64_t{8} << 20;
constexpr int kDefaultParallelism = 16;
// Bytes at the end of a kept prefix read from both sides before it is
// trusted (CopyRun::KeptPrefix).
constexpr int64_t kResumeCheckBytes = int64_t{64} << 10;
// A worker's buffer while its chunks are this short: heap memory, below
// LargeBuffer::kHugePageBytes (see Worker).
constexpr size_t kSmallBufferBytes = size_t{1} << 20;
// Listed files waiting for a worker before a tree's walk pauses: a few
// listing pages (S3 pages hold 1,000), a few MB of names.
constexpr size_t kMaxPending = 8192;
// Entries the first listing request of a tree copy asks for: the workers
// start after a short reply (64 keys: ~2 ms on versitygw, 1,000: ~28 ms)
// and have enough to do while the full pages after it are listed.
constexpr size_t kFirstPageEntries = 64;
// Entries per walk batch: a walk that fills batches before handing them
// over (one directory after another) hands files to the workers this often.
constexpr size_t kWalkBatchEntries = 256;

struct Task {
  std::string src_path;
  std::string dst_path;
  // The walk's entry for the file (size, version), or the caller's for a
  // single file; none when the size is unknown until the file is opened.
  std::optional<fs::Entry> listed;
  // The path FileEvents name (relative to the tree's roots).
  std::string event_path;
  // What the caller found at dst_path, where it looked (CopyFile's
  // `destination`): the skip rule and the writer take it, not asking again.
  fs::PathSeen destination;
};

// One file being copied: its reader and writer and how far its chunks got.
struct ActiveFile {
  Task task;
  std::unique_ptr<fs::File> reader;
  std::unique_ptr<fs::File> writer;
  int64_t size = 0;
  // Where chunk 0 starts: bytes before it were kept from an interrupted
  // earlier copy (fs::File::resumed_bytes), not copied again.
  int64_t base = 0;
  int64_t chunks = 0;
  int64_t next_chunk = 0;
  int64_t chunks_done = 0;
  int in_flight = 0;
  bool finishing = false;
  int rewrites = 0;
  absl::Status error;
  int64_t bytes_written = 0;
  fs::File::Counters counters;  // the writer's, after its Close
  // The writer answered WriteFromDescriptor Unimplemented: bytes from then
  // on (an NFS WRITE from a file sendfile cannot read costs a connection's
  // worth of zeros each time). Read and set by the chunks' workers.
  std::atomic<bool> bytes_only{false};
  // The writer or the reader answered Unimplemented to a descriptor fill
  // (WriteThroughDescriptor, ReadIntoDescriptor): bytes from then on.
  std::atomic<bool> no_fill{false};
};

// The hash two filesystems' content is compared by: one both servers keep
// (no read on either side), else the one a side keeps (only the other side
// reads: a local file's SHA-256 against iRODS' checksum), else MD5.
HashKind ComparisonHash(const fs::FileSystem& src, const fs::FileSystem& dst) {
  const std::optional<HashKind> a = src.server_hash(), b = dst.server_hash();
  if (a && b) return *a == *b ? *a : HashKind::kMd5;
  if (a) return *a;
  if (b) return *b;
  return HashKind::kMd5;
}

int64_t ChooseChunk(const CopyOptions& o, const fs::FileSystem& src, const fs::FileSystem& dst) {
  if (o.chunk_bytes > 0) return o.chunk_bytes;
  const int64_t pref = std::max(src.preferred_chunk_bytes(), dst.preferred_chunk_bytes());
  return pref > 0 ? pref : kDefaultChunkBytes;
}

int ChooseParallelism(const CopyOptions& o, const fs::FileSystem& src,
                      const fs::FileSystem& dst) {
  if (o.parallelism > 0) return o.parallelism;
  const int a = src.preferred_parallelism();
  const int b = dst.preferred_parallelism();
  if (a > 0 && b > 0) return std::min(a, b);
  if (a > 0 || b > 0) return std::max(a, b);
  return kDefaultParallelism;
}

// One copy (a file or a tree): its tasks, workers and counts.
// Thread-safety: Add and Finish are the caller's (one thread); workers run
// on the blocking pool; shared state is under mu_. totals() and failures()
// are read after Finish, when every worker has returned.
class CopyRun {
 public:
  // kFile: one file, finished by the caller (see Finish). kTree: files
  // added while the run goes on, each finished by a worker.
  enum class Mode { kFile, kTree };

  CopyRun(Runtime& runtime, fs::FileSystem& src, fs::FileSystem& dst, CopyOptions& options,
          Mode mode)
      : throttle_(options.bandwidth_limit),
        index_(mode == Mode::kTree && options.skip != SkipRule::kNever
                   ? std::make_unique<transfer_internal::DestinationIndex>(dst)
                   : nullptr),
        runtime_(runtime),
        src_(src),
        dst_(dst),
        options_(options),
        chunk_(ChooseChunk(options, src, dst)),
        hash_(ComparisonHash(src, dst)),
        jobs_(std::max(options.jobs, 1)),
        finish_on_caller_(mode == Mode::kFile),
        start_(MonotonicNow()),
        reclaim_before_(options.reclaim_leftovers ? absl::Now() : absl::InfinitePast()) {
    const int parallelism = ChooseParallelism(options, src, dst);
    workers_ = std::max(1, std::min(std::max(parallelism, finish_on_caller_ ? 1 : jobs_),
                                    runtime.options().blocking_threads));
    // Each worker holds a chunk-sized buffer from the memory budget while it
    // runs; at most half the budget goes to them. Readers and writers take
    // theirs from the same budget (S3 download chunks, upload parts): with
    // all of it in workers' buffers, a worker whose read waits on budget
    // would wait forever (ferry-cp --jobs=64 hung so with 8 MiB chunks and
    // the default 512 MiB).
    const int64_t budget_workers = runtime.memory_budget().capacity() / 2 / chunk_;
    workers_ = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(workers_, budget_workers)));
  }

  // Queues `tasks` (on the caller's thread, before Finish) and starts
  // workers for them, reporting progress. Waits while kMaxPending tasks
  // wait for a worker.
  // Returns the stop status: non-OK once the progress callback stopped the
  // run (the caller adds no more).
  absl::Status Add(std::vector<Task> tasks) {
    {
      MutexLock lock(&mu_);
      for (Task& t : tasks) {
        if (!t.listed) {
          ++unknown_sizes_;
        } else {
          bytes_total_ += t.listed->size;
        }
        ++files_total_;
        pending_.push_back(std::move(t));
      }
      cv_.SignalAll();
      caller_works_ = finish_on_caller_ && tasks.size() == 1 && tasks.front().listed &&
                      tasks.front().listed->size <= chunk_;
      if (caller_works_) {
        // Counted as a worker now, so nothing else spawns for the task.
        ++available_;
        ++running_;
      } else {
        SpawnLocked(static_cast<int64_t>(tasks.size()));
      }
    }
    for (;;) {
      absl::Status s = ReportOrStop();
      if (!s.ok()) return s;
      MutexLock lock(&mu_);
      if (pending_.size() < kMaxPending || running_ == 0) return absl::OkStatus();
      // CondVar waits take wall-clock deadlines.
      room_cv_.WaitWithDeadline(&mu_, absl::Now() + options_.progress_interval);
    }
  }

  // Says no more tasks come, waits for every file, and returns the stop
  // status (OK unless the progress callback stopped the run). A kFile run's
  // one file is finished here, on the caller, after the final progress
  // report: a stop there still leaves the target untouched.
  absl::Status Finish() {
    {
      MutexLock lock(&mu_);
      adding_ = false;
      cv_.SignalAll();
    }
    if (caller_works_) Worker();
    absl::Status stop = WaitWorkers();
    if (finish_on_caller_) {
      for (;;) {
        std::shared_ptr<ActiveFile> f;
        {
          MutexLock lock(&mu_);
          if (!active_.empty()) f = active_.front();
        }
        if (f == nullptr) break;  // failed to open, or copied server-side
        if (f->error.ok()) f->error = stop;
        if (f->error.ok()) f->error = Report(/*final=*/true);
        if (f->error.ok() && f->reader != nullptr) f->error = f->reader->Close();
        if (FinishFile(*f)) {  // Aborted: every chunk again, once
          {
            MutexLock lock(&mu_);
            SpawnLocked(f->chunks);
          }
          stop = WaitWorkers();
          continue;
        }
        MutexLock lock(&mu_);
        active_.clear();
        break;
      }
      // The file's event comes after the final report; its failure is the
      // caller's to tell (CopyFile returns it).
      NoticeFailures(/*events_only=*/true);
    } else if (stop.ok()) {
      stop = Report(/*final=*/true);
    }
    return stop;
  }

  // The copied files' counts, and the files that failed (after Finish).
  const TransferStats& totals() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return totals_; }
  std::vector<FileCopyFailure>& failures() ABSL_NO_THREAD_SAFETY_ANALYSIS { return failures_; }
  int64_t up_to_date() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return up_to_date_; }
  int64_t times_updated() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return times_updated_; }

 private:
  enum class ActionKind { kExit, kOpen, kChunk, kFinish };
  struct Action {
    ActionKind kind = ActionKind::kExit;
    std::shared_ptr<ActiveFile> file;
    Task task;  // kOpen
    int64_t chunk = 0;
  };

  // Starts up to `n` more workers, at most workers_ taking work at once.
  // Workers come when there is work (tasks added, chunks of an opened file)
  // and leave when there is none: none of them sits on a blocking-pool
  // thread waiting for a tree's listing, which may itself need the pool (a
  // connection's name resolution runs there).
  void SpawnLocked(int64_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (; n > 0 && available_ < workers_; --n) {
      ++available_;
      ++running_;
      runtime_.PostBlocking([this] { Worker(); });
    }
  }

  // Waits for the workers to exit, reporting progress meanwhile.
  absl::Status WaitWorkers() {
    for (;;) {
      std::optional<absl::Status> done;
      {
        MutexLock lock(&mu_);
        if (running_ > 0) {
          if (options_.progress || options_.on_notice || options_.on_file) {
            // CondVar waits take wall-clock deadlines.
            done_cv_.WaitWithDeadline(&mu_, absl::Now() + options_.progress_interval);
          } else {
            done_cv_.Wait(&mu_);
          }
        }
        if (running_ == 0) done = stop_;
      }
      if (done) {
        NoticeFailures();  // the last files' failures too
        return *done;
      }
      (void)ReportOrStop();
    }
  }

  // Hands failures recorded since the last call to on_notice (on the
  // caller's thread, outside the lock), unless `events_only`, and the
  // FileEvents queued since to on_file.
  void NoticeFailures(bool events_only = false) {
    std::vector<CopyNotice> notices;
    std::vector<FileEvent> events;
    {
      MutexLock lock(&mu_);
      if (options_.on_notice && !events_only) {
        for (; failures_noticed_ < failures_.size(); ++failures_noticed_) {
          const FileCopyFailure& f = failures_[failures_noticed_];
          notices.push_back({CopyNotice::Kind::kFailed, DescribeFailure(f)});
        }
      }
      events.swap(events_);
    }
    for (const CopyNotice& n : notices) options_.on_notice(n);
    for (const FileEvent& e : events) options_.on_file(e);
  }

  // Reports progress if it is time; a non-OK report becomes the run's stop
  // status. Returns the stop status.
  absl::Status ReportOrStop() {
    NoticeFailures();
    {
      MutexLock lock(&mu_);
      if (!stop_.ok()) return stop_;
    }
    absl::Status s = Report(/*final=*/false);
    MutexLock lock(&mu_);
    if (!s.ok() && stop_.ok()) {
      stop_ = std::move(s);
      cv_.SignalAll();
    }
    return stop_;
  }

  // Calls the progress callback (on the caller's thread) if one is set and
  // the interval has passed, or always if `final`.
  absl::Status Report(bool final) {
    if (!options_.progress) return absl::OkStatus();
    const absl::Time now = MonotonicNow();
    if (!final && now - last_report_ < options_.progress_interval) return absl::OkStatus();
    last_report_ = now;
    TransferProgress p;
    {
      MutexLock lock(&mu_);
      p.bytes_done = std::max(bytes_done_, reported_bytes_);
      // Unknown (-1) while a tree is still listed and until every file of
      // unknown size has been opened.
      p.bytes_total =
          adding_ || unknown_sizes_ > 0 ? -1 : std::max(bytes_total_, p.bytes_done);
      p.files_done = files_done_;
      p.files_total = files_total_;
    }
    if (final && finish_on_caller_ && p.bytes_total >= 0) p.bytes_done = p.bytes_total;
    reported_bytes_ = p.bytes_done;
    p.elapsed = now - start_;
    return options_.progress(p);
  }

  // A worker carries its own file forward where it can: after an open it
  // takes the file's first chunk, after a chunk the file's finish, without
  // waking the others (a broadcast per step woke every idle worker three
  // times per small file: ~6 % of a 1,000-file copy's CPU in
  // pthread_cond_broadcast alone, more in the wake-ups). Others are woken
  // only when there is work beyond that follow-up: a file of several
  // chunks, an open slot, a failure, the end.
  void Worker() {
    std::optional<MemoryBudget::Ticket> ticket;
    LargeBuffer buffer;
    std::optional<Action> follow_up;
    for (;;) {
      Action action = follow_up ? *std::exchange(follow_up, std::nullopt) : NextAction();
      switch (action.kind) {
        case ActionKind::kExit: {
          if (!buffer.empty()) runtime_.buffer_pool().Give(std::move(buffer));
          ticket.reset();
          MutexLock lock(&mu_);
          if (--running_ == 0) done_cv_.Signal();
          return;
        }
        case ActionKind::kOpen:
          follow_up = Open(std::move(action.task));
          break;
        case ActionKind::kChunk: {
          absl::Status s;
          const size_t len = ChunkLength(*action.file, action.chunk);
          if (buffer.empty() || buffer.size() < len) {
            // A buffer (and its budget) once per worker, reused for every
            // chunk; grown to a chunk the first time a chunk needs it.
            // Small files keep a small one: a chunk-sized buffer is
            // huge-page memory whose first touch zeroes 2 MiB per worker
            // (about 3 ms each on this VM, 7 % of a 1,000 x 64 KiB
            // download) to hold 64 KiB.
            const size_t chunk = static_cast<size_t>(chunk_);
            const size_t want = len < kSmallBufferBytes ? std::min(kSmallBufferBytes, chunk) : chunk;
            if (!buffer.empty()) runtime_.buffer_pool().Give(std::move(buffer));
            ticket.reset();
            absl::StatusOr<MemoryBudget::Ticket> t =
                runtime_.memory_budget().Acquire(static_cast<int64_t>(want));
            if (t.ok()) {
              ticket.emplace(*std::move(t));
              absl::StatusOr<LargeBuffer> b = runtime_.buffer_pool().Take(want);
              if (b.ok()) buffer = *std::move(b);
              s = b.status();
            } else {
              s = t.status();
            }
          }
          int64_t moved = 0;
          if (s.ok()) s = MoveChunk(*action.file, action.chunk, buffer, &moved);
          MutexLock lock(&mu_);
          ActiveFile& f = *action.file;
          --f.in_flight;
          if (s.ok()) {
            ++f.chunks_done;
            f.bytes_written += moved;
            bytes_done_ += moved;
          } else if (f.error.ok()) {
            f.error = std::move(s);
          }
          follow_up = ClaimFinish(action.file);
          // A failure stops the file's other chunks: whoever waits on them
          // (or on the finish someone else now takes) must look again.
          if (!follow_up || !f.error.ok()) cv_.SignalAll();
          break;
        }
        case ActionKind::kFinish: {
          ActiveFile& f = *action.file;
          if (f.error.ok() && f.reader != nullptr) f.error = f.reader->Close();
          if (FinishFile(f)) {  // every chunk again: others may help
            MutexLock lock(&mu_);
            cv_.SignalAll();
            SpawnLocked(f.chunks);
            break;
          }
          MutexLock lock(&mu_);
          active_.erase(std::find(active_.begin(), active_.end(), action.file));
          cv_.SignalAll();
          break;
        }
      }
    }
  }

  Action NextAction() {
    MutexLock lock(&mu_);
    for (;;) {
      if (!stop_.ok()) {
        // A file being finished is left to its finisher, who reads its
        // error without the lock: every chunk of it has moved, so it is
        // published (or, after a failure, discarded) as if no stop came.
        for (auto& f : active_) {
          if (f->error.ok() && !f->finishing) f->error = stop_;
        }
      }
      for (auto& f : active_) {
        if (std::optional<Action> finish = ClaimFinish(f)) return *std::move(finish);
      }
      for (auto& f : active_) {
        if (std::optional<Action> chunk = ClaimChunk(f)) return *std::move(chunk);
      }
      if (stop_.ok() && !pending_.empty() &&
          static_cast<int>(active_.size()) + opening_ < jobs_) {
        ++opening_;
        Action open{ActionKind::kOpen, nullptr, std::move(pending_.front()), 0};
        pending_.pop_front();
        if (pending_.size() == kMaxPending / 2) room_cv_.Signal();  // the walk may go on
        return open;
      }
      // Nothing to take now. Wait if work may still appear: an open under
      // way, a chunk in flight (its file may become finishable), a file
      // being finished (a rewrite resets its chunks); otherwise exit (a
      // tree's next tasks start workers of their own).
      bool work_may_appear = opening_ > 0;
      for (auto& f : active_) {
        if (f->in_flight > 0 || f->finishing) work_may_appear = true;
      }
      if (!work_may_appear && (pending_.empty() || !stop_.ok())) {
        // Decided under the lock that decides spawning: tasks added from
        // now on get a worker of their own.
        --available_;
        return {};
      }
      cv_.Wait(&mu_);
    }
  }

  // The next chunk of `f`, claimed for the caller, if it has one to take
  // (none once the run is stopped or the file failed).
  std::optional<Action> ClaimChunk(const std::shared_ptr<ActiveFile>& f)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!stop_.ok() || !f->error.ok() || f->next_chunk >= f->chunks) return std::nullopt;
    ++f->in_flight;
    return Action{ActionKind::kChunk, f, {}, f->next_chunk++};
  }

  // The finish of `f`, claimed for the caller, if `f` is ready for it: its
  // chunks are over (all done, or one failed), none is in flight, and no
  // one finishes it yet (nor will the caller, in Finish).
  std::optional<Action> ClaimFinish(const std::shared_ptr<ActiveFile>& f)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool chunks_over = !f->error.ok() || f->chunks_done == f->chunks;
    if (finish_on_caller_ || f->finishing || f->in_flight > 0 || !chunks_over) return std::nullopt;
    f->finishing = true;
    return Action{ActionKind::kFinish, f, {}, 0};
  }

  // Opens `task` and installs it as an active file, or records its
  // outcome at once (an open that failed, an empty file, a server-side
  // copy). Returns the opener's follow-up: the file's first chunk, claimed
  // (or its finish, if it has none).
  std::optional<Action> Open(Task task) {
    auto f = std::make_shared<ActiveFile>();
    f->task = std::move(task);
    absl::Status s = OpenFile(*f);
    MutexLock lock(&mu_);
    --opening_;
    const bool listed = f->task.listed.has_value();
    if (!listed) --unknown_sizes_;
    std::optional<Action> follow_up;
    if (!s.ok()) {
      Record(*f, std::move(s));
    } else if (f->writer != nullptr) {
      if (!listed) bytes_total_ += f->size;
      bytes_done_ += f->base;
      active_.push_back(f);
      follow_up = ClaimChunk(f);
      if (!follow_up) follow_up = ClaimFinish(f);
    }
    // Others are needed for the file's other chunks, or for the next open
    // (this one's slot is free, or it gave a file nothing to do).
    if (!follow_up || f->next_chunk < f->chunks) cv_.SignalAll();
    if (s.ok()) SpawnLocked(f->chunks - f->next_chunk);
    return follow_up;
  }

  absl::Status OpenFile(ActiveFile& f) {
    const Task& task = f.task;
    // The source's entry: listed by the walk, else asked for when a rule
    // or the kept time needs it.
    std::optional<fs::Entry> source = task.listed;
    if (!source && (options_.skip != SkipRule::kNever || options_.preserve_mtime ||
                    options_.dry_run)) {
      FERRY_ASSIGN_OR_RETURN(source, src_.Stat(task.src_path));
      if (source->kind != fs::EntryKind::kFile) return NotAFile(*source);
    }
    // The source's MD5 when the comparison computed it (kept with the copy
    // below: a checksum sync reads the source once).
    std::string md5;
    // What is at the destination, as the caller or the comparison found it.
    fs::PathSeen target = task.destination;
    if (options_.skip != SkipRule::kNever) {
      FERRY_ASSIGN_OR_RETURN(const Verdict verdict, Compare(task, *source, &md5, &target));
      if (verdict != Verdict::kCopy) {
        FileEvent::Kind kind = verdict == Verdict::kSetTime ? FileEvent::Kind::kTimeUpdated
                                                            : FileEvent::Kind::kUpToDate;
        if (verdict == Verdict::kSetTime && !options_.dry_run) {
          absl::Status set = dst_.SetModTime(task.dst_path, source->mtime);
          // Equal content is up to date even where its time cannot be set.
          if (absl::IsUnimplemented(set)) {
            kind = FileEvent::Kind::kUpToDate;
          } else {
            FERRY_RETURN_IF_ERROR(set);
          }
        }
        MutexLock lock(&mu_);
        RecordSettled(f, kind, source->size);
        return absl::OkStatus();
      }
    }
    if (options_.dry_run) {
      MutexLock lock(&mu_);
      f.size = source->size;
      if (!task.listed) bytes_total_ += source->size;
      Record(f, absl::OkStatus());
      return absl::OkStatus();
    }
    if (options_.server_side && &src_ == &dst_) {
      FERRY_ASSIGN_OR_RETURN(fs::Entry e, src_.Stat(task.src_path));
      if (e.kind != fs::EntryKind::kFile) return NotAFile(e);
      absl::Status s = dst_.CopyWithin(task.src_path, task.dst_path);
      if (s.code() != absl::StatusCode::kUnimplemented) {
        f.size = e.size;
        FERRY_RETURN_IF_ERROR(s);
        MutexLock lock(&mu_);
        bytes_done_ += e.size;
        if (!task.listed) bytes_total_ += e.size;
        Record(f, absl::OkStatus());
        return absl::OkStatus();
      }
    }
    if (task.listed) {
      // Opened as the walk listed it: an object store skips its HEAD.
      FERRY_ASSIGN_OR_RETURN(f.reader, src_.OpenReadListed(task.src_path, *task.listed));
    } else {
      FERRY_ASSIGN_OR_RETURN(f.reader, src_.OpenRead(task.src_path));
    }
    FERRY_ASSIGN_OR_RETURN(f.size, f.reader->Size());
    const absl::Time mtime =
        options_.preserve_mtime && source ? source->mtime : absl::InfinitePast();
    // A checksum sync keeps the content's MD5 with the copy where the
    // source tells it without a transfer (a local read, a stored one), so
    // the next one compares without reading the copy back.
    if (options_.skip == SkipRule::kChecksum && source && md5.empty()) {
      md5 = src_.Md5(task.src_path, *source, false).value_or("");
    }
    FERRY_ASSIGN_OR_RETURN(f.writer,
                           dst_.OpenWrite(task.dst_path, {.size = f.size,
                                                          .mode = options_.mode,
                                                          .reclaim_before = reclaim_before_,
                                                          .mtime = mtime,
                                                          .content_md5 = std::move(md5),
                                                          .resume_source = ResumeSource(f, source),
                                                          .target = std::move(target)}));
    FERRY_ASSIGN_OR_RETURN(f.base, KeptPrefix(f));
    f.chunks = (f.size - f.base + chunk_ - 1) / chunk_;
    return absl::OkStatus();
  }

  // What names `f`'s content for resuming (fs::WriteOptions::
  // resume_source), or "" where it is too small to resume or its source
  // tells neither a time nor a version.
  std::string ResumeSource(const ActiveFile& f, const std::optional<fs::Entry>& source) const {
    if (options_.resume_min_bytes <= 0 || f.size < options_.resume_min_bytes || !source ||
        (source->mtime == absl::InfinitePast() && source->version.empty())) {
      return "";
    }
    return absl::StrCat(ToAbsl(f.task.src_path), "\n", f.size, "\n",
                        absl::ToUnixNanos(source->mtime), "\n", ToAbsl(source->version));
  }

  // Bytes of `f` an interrupted earlier copy left that its writer kept
  // and that end as the source's do: the copy goes on from there. Any
  // other bytes kept are forgotten (the whole file is copied).
  absl::StatusOr<int64_t> KeptPrefix(ActiveFile& f) {
    const int64_t kept = f.writer->resumed_bytes();
    if (kept <= 0) return 0;
    // The source named the same (path, size, time) could still have
    // changed in place; its last kept bytes would then differ, unless the
    // change was earlier in the file (which rclone's rules would not see
    // either).
    const int64_t tail = std::min<int64_t>(kept, kResumeCheckBytes);
    std::string ours(static_cast<size_t>(tail), '\0'), theirs(static_cast<size_t>(tail), '\0');
    FERRY_ASSIGN_OR_RETURN(const size_t n,
                           f.reader->ReadAt(kept - tail, absl::MakeSpan(theirs)));
    absl::StatusOr<size_t> m = f.writer->ReadAt(kept - tail, absl::MakeSpan(ours));
    if (kept <= f.size && n == theirs.size() && m.ok() && *m == ours.size() && ours == theirs) {
      return kept;
    }
    FERRY_RETURN_IF_ERROR(f.writer->ForgetResumed());
    return 0;
  }

  enum class Verdict { kCopy, kUpToDate, kSetTime };

  // What the skip rule says of `task`, whose source is `source`, against
  // what the destination holds now. `*source_md5`: the source's MD5 if a
  // comparison computed it. `*target`: what is at the destination, where
  // the caller knew it (else looked up here, and set for the writer).
  absl::StatusOr<Verdict> Compare(const Task& task, const fs::Entry& source,
                                  std::string* source_md5, fs::PathSeen* target) {
    // A tree's destination is read a directory listing at a time; a file
    // the listing cannot settle is asked for by itself.
    std::optional<fs::Entry> listed;
    std::optional<fs::Entry> stat;  // the caller's Stat of it
    if (index_ != nullptr) {
      transfer_internal::DestinationIndex::Answer a = index_->Lookup(task.dst_path);
      if (a.found == transfer_internal::DestinationIndex::Found::kMissing) {
        *target = fs::PathSeen::Missing();
        return Verdict::kCopy;
      }
      if (a.found == transfer_internal::DestinationIndex::Found::kPresent) {
        listed = std::move(a.entry);
      }
    } else if (target->state == fs::PathSeen::State::kMissing) {
      return Verdict::kCopy;
    } else if (target->state == fs::PathSeen::State::kFound) {
      stat = target->entry;
    }
    if (listed && listed->kind == fs::EntryKind::kFile && options_.skip == SkipRule::kSizeAndTime &&
        !dst_.lists_kept_mtime()) {
      // The listing has the size but not the kept time (S3). Equal content
      // by hashes neither side reads for (a local source's, a listed
      // ETag) settles it without a request per file; else Stat.
      if (listed->size != source.size) return Verdict::kCopy;
      absl::StatusOr<bool> same = SameContent(task, source, *listed, false, source_md5);
      if (same.ok()) return *same ? Verdict::kUpToDate : Verdict::kCopy;
      listed.reset();
    }
    absl::StatusOr<fs::Entry> there = listed ? *std::move(listed)
                                      : stat ? *std::move(stat)
                                             : dst_.Stat(task.dst_path);
    *target = fs::PathSeen::Of(there);
    if (absl::IsNotFound(there.status())) return Verdict::kCopy;
    FERRY_RETURN_IF_ERROR(there.status());
    if (there->kind != fs::EntryKind::kFile) {
      return absl::FailedPreconditionError(absl::StrCat(
          "copy to ", dst_.Url(task.dst_path), ": a ", ToAbsl(fs::EntryKindName(there->kind)),
          " is in the way"));
    }
    if (options_.skip == SkipRule::kExisting) return Verdict::kUpToDate;
    if (there->size != source.size) return Verdict::kCopy;
    switch (options_.skip) {
      case SkipRule::kSizeOnly:
        return Verdict::kUpToDate;
      case SkipRule::kChecksum: {
        FERRY_ASSIGN_OR_RETURN(const bool same, SameContent(task, source, *there, true, source_md5));
        return same ? Verdict::kUpToDate : Verdict::kCopy;
      }
      case SkipRule::kSizeAndTime: {
        const absl::Duration precision =
            std::max(src_.mtime_precision(), dst_.mtime_precision());
        const bool known =
            source.mtime != absl::InfinitePast() && there->mtime != absl::InfinitePast();
        if (known && absl::AbsDuration(source.mtime - there->mtime) < precision) {
          return Verdict::kUpToDate;
        }
        // Other times: the same bytes need no copy, if both sides can tell
        // their hashes without moving the files.
        absl::StatusOr<bool> same = SameContent(task, source, *there, false, source_md5);
        if (same.ok() && *same) return known ? Verdict::kSetTime : Verdict::kUpToDate;
        return Verdict::kCopy;
      }
      default:
        return Verdict::kCopy;
    }
  }

  // Whether source and destination hold the same bytes, by hash_ (stored
  // or server-computed ones; read and hashed too with `read`); the
  // source's MD5 to `*source_md5` when hash_ is MD5, else "".
  absl::StatusOr<bool> SameContent(const Task& task, const fs::Entry& source,
                                   const fs::Entry& there, bool read, std::string* source_md5) {
    FERRY_ASSIGN_OR_RETURN(const std::string a,
                           dst_.ContentHash(task.dst_path, there, hash_, read));
    FERRY_ASSIGN_OR_RETURN(std::string b, src_.ContentHash(task.src_path, source, hash_, read));
    const bool same = a == b;
    *source_md5 = hash_ == HashKind::kMd5 ? std::move(b) : std::string();
    return same;
  }

  // Counts `f` as left as it was (or with only its time set).
  void RecordSettled(const ActiveFile& f, FileEvent::Kind kind, int64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++files_done_;
    ++up_to_date_;
    if (kind == FileEvent::Kind::kTimeUpdated) ++times_updated_;
    if (options_.on_file) events_.push_back({kind, f.task.event_path, bytes});
  }

  absl::Status NotAFile(const fs::Entry& e) const {
    return absl::FailedPreconditionError(absl::StrCat(
        "copy ", src_.Url(e.path), ": not a file (", ToAbsl(fs::EntryKindName(e.kind)), ")"));
  }

  // Bytes of chunk `index` of `f` (the last one may be short).
  size_t ChunkLength(const ActiveFile& f, int64_t index) const {
    return static_cast<size_t>(std::min(chunk_, f.size - f.base - index * chunk_));
  }

  absl::Status MoveChunk(ActiveFile& f, int64_t index, const LargeBuffer& buffer,
                         int64_t* moved) {
    const int64_t offset = f.base + index * chunk_;
    const size_t len = ChunkLength(f, index);
    absl::Span<char> buf(buffer.data(), len);
    throttle_.Take(static_cast<int64_t>(len));
    auto shrank = [&](size_t n) {
      return absl::FailedPreconditionError(absl::StrCat(
          "copy ", src_.Url(f.task.src_path), ": the file shrank while being read (",
          n, " of ", len, " bytes at offset ", offset, ")"));
    };
    // A local source's bytes go to a destination that takes them from its
    // descriptor without passing through this process (iRODS: sendfile);
    // the buffer stays untouched. Others answer Unimplemented: bytes.
    if (const int fd = f.reader->descriptor(); fd >= 0 && !f.bytes_only.load(std::memory_order_relaxed)) {
      absl::StatusOr<size_t> n = f.writer->WriteFromDescriptor(offset, fd, offset, len);
      if (n.ok()) {
        if (*n != len) return shrank(*n);
        *moved = static_cast<int64_t>(len);
        return absl::OkStatus();
      }
      if (absl::IsUnimplemented(n.status())) {
        f.bytes_only.store(true, std::memory_order_relaxed);
      } else {
        // A protocol may fail the write rather than count what it took
        // (NFS: the call's record was cut short): the file says which.
        struct stat st;
        if (::fstat(fd, &st) == 0 && st.st_size < offset + static_cast<int64_t>(len)) {
          return shrank(static_cast<size_t>(std::max<int64_t>(0, st.st_size - offset)));
        }
        return n.status();
      }
    }
    // A remote source's bytes go into a local destination's descriptor
    // without passing through this process (NFS: spliced from the
    // socket); the buffer stays untouched. Others answer Unimplemented.
    if (!f.no_fill.load(std::memory_order_relaxed)) {
      absl::StatusOr<size_t> n = f.writer->WriteThroughDescriptor(
          offset, len, [&](int fd, int64_t at, Mutex* write_lock) {
            return f.reader->ReadIntoDescriptor(offset, len, fd, at, write_lock);
          });
      if (n.ok()) {
        if (*n != len) return shrank(*n);
        *moved = static_cast<int64_t>(len);
        return absl::OkStatus();
      }
      if (!absl::IsUnimplemented(n.status())) return n.status();
      f.no_fill.store(true, std::memory_order_relaxed);
    }
    FERRY_ASSIGN_OR_RETURN(size_t n, f.reader->ReadAt(offset, buf));
    if (n != len) return shrank(n);
    FERRY_RETURN_IF_ERROR(f.writer->WriteAt(offset, buf).status());
    *moved = static_cast<int64_t>(len);
    return absl::OkStatus();
  }

  // Publishes or discards `f`'s writer and records the outcome. True if
  // the file must be written again (Close said Aborted the first time):
  // its chunks are reset and it stays active.
  bool FinishFile(ActiveFile& f) {
    absl::Status s = f.error;
    if (s.ok()) {
      s = f.writer->Close();
      if (s.ok()) f.counters = f.writer->counters();
      if (s.ok() && options_.verify) s = Verify(f);
    }
    if (s.code() == absl::StatusCode::kAborted && f.rewrites == 0) {
      MutexLock lock(&mu_);
      ++f.rewrites;
      f.base = 0;  // every byte again, kept ones too
      f.chunks = (f.size + chunk_ - 1) / chunk_;
      f.next_chunk = 0;
      f.chunks_done = 0;
      f.finishing = false;
      return true;
    }
    if (!s.ok()) {
      // The target stays as it was (or, as its message says, holds the
      // bytes with the wrong time); a clean-up that failed too (a server
      // gone) is told after the failure, which stays what the caller sees.
      const absl::Status discarded = f.writer->Discard();
      if (!discarded.ok()) s = AppendToMessage(s, absl::StrCat("; then ", discarded.message()));
    }
    f.reader.reset();
    f.writer.reset();
    MutexLock lock(&mu_);
    Record(f, std::move(s));
    return false;
  }

  // Both sides of a published file, hashed by hash_ (stored or
  // server-computed hashes where the servers have them, else read back).
  absl::Status Verify(const ActiveFile& f) {
    fs::Entry src_entry = f.task.listed.value_or(fs::Entry{});
    FERRY_ASSIGN_OR_RETURN(const fs::Entry dst_entry, dst_.Stat(f.task.dst_path));
    FERRY_ASSIGN_OR_RETURN(const std::string a,
                           src_.ContentHash(f.task.src_path, src_entry, hash_, true));
    FERRY_ASSIGN_OR_RETURN(const std::string b,
                           dst_.ContentHash(f.task.dst_path, dst_entry, hash_, true));
    if (a == b) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(
        "verify ", dst_.Url(f.task.dst_path), ": its ", HashKindName(hash_), " ",
        absl::BytesToHexString(b), " is not the source's ", absl::BytesToHexString(a)));
  }

  // Counts `f` as done: its bytes in the totals, or its failure.
  void Record(const ActiveFile& f, absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++files_done_;
    if (!s.ok()) {
      failures_.push_back({src_.Url(f.task.src_path), dst_.Url(f.task.dst_path), std::move(s)});
      return;
    }
    totals_.bytes += f.size;
    totals_.bytes_resumed += f.base;
    totals_.bytes_fetched += f.bytes_written;
    totals_.bytes_uploaded += f.bytes_written;
    totals_.requests += f.chunks * (f.rewrites + 1);
    totals_.parts += static_cast<int>(f.counters.parts);
    totals_.retries += f.rewrites + f.counters.retries;
    totals_.files += 1;
    if (options_.on_file) events_.push_back({FileEvent::Kind::kCopied, f.task.event_path, f.size});
  }

  RateLimiter throttle_;  // --bwlimit (no limit when 0)
  // What a tree's destination holds, by directory listings (skip rules).
  const std::unique_ptr<transfer_internal::DestinationIndex> index_;
  Runtime& runtime_;
  fs::FileSystem& src_;
  fs::FileSystem& dst_;
  CopyOptions& options_;
  const int64_t chunk_;
  const HashKind hash_;  // what content comparisons and --verify hash by
  const int jobs_;
  const bool finish_on_caller_;
  const absl::Time start_;
  const absl::Time reclaim_before_;  // wall clock: compared with servers' mtimes
  int workers_ = 1;
  // A kFile run whose one file fits in a chunk: the caller runs its worker
  // (in Finish). Set by Add, on the caller's thread.
  bool caller_works_ = false;
  // The caller's own (progress runs on it alone). The first report comes
  // one interval in: a copy shorter than that reports once, at the end.
  absl::Time last_report_ = start_;
  int64_t reported_bytes_ = 0;

  Mutex mu_;
  CondVar cv_;       // workers wait here for work (NextAction)
  CondVar done_cv_;  // the caller waits here for the last worker (WaitWorkers)
  CondVar room_cv_;  // the caller waits here for room in pending_ (Add)
  std::deque<Task> pending_ ABSL_GUARDED_BY(mu_);
  bool adding_ ABSL_GUARDED_BY(mu_) = true;
  int opening_ ABSL_GUARDED_BY(mu_) = 0;
  int running_ ABSL_GUARDED_BY(mu_) = 0;    // workers not yet returned
  int available_ ABSL_GUARDED_BY(mu_) = 0;  // workers that still take work
  std::vector<std::shared_ptr<ActiveFile>> active_ ABSL_GUARDED_BY(mu_);
  absl::Status stop_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_done_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_total_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t files_done_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t files_total_ ABSL_GUARDED_BY(mu_) = 0;
  TransferStats totals_ ABSL_GUARDED_BY(mu_);
  std::vector<FileCopyFailure> failures_ ABSL_GUARDED_BY(mu_);
  size_t failures_noticed_ ABSL_GUARDED_BY(mu_) = 0;  // handed to on_notice
  std::vector<FileEvent> events_ ABSL_GUARDED_BY(mu_);  // for on_file, not yet handed
  int64_t up_to_date_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t times_updated_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t unknown_sizes_ ABSL_GUARDED_BY(mu_) = 0;  // unopened files of unknown size
};

// delete_extraneous's walk of the destination, on a thread of its own from
// the start of the copy pass: a no-op sync then lists the destination once
// beside its comparisons instead of again after them (a 10,000-object S3
// prefix: 0.5 s of a 1.1 s no-op sync). It keeps what deletion may remove,
// files (path and size) and directories; ferry's temporaries and the
// filter's excluded files are left out at once. Which of those the source
// lacks is settled after the pass. Thread-safety: the owner calls Wait,
// then reads; the destructor stops the walk and joins.
class DestinationSurvey {
 public:
  DestinationSurvey(fs::FileSystem& dst, std::string root, const fs::PathFilter* filter)
      : thread_([this, &dst, root = std::move(root), filter] {
          walked_ = dst.Walk(root, {}, [&](fs::WalkBatch& batch) {
            for (fs::Entry& e : batch.entries) {
              if (e.kind == fs::EntryKind::kDirectory) {
                dirs_.push_back(std::move(e.path));
              } else if (e.kind == fs::EntryKind::kFile &&
                         !fs::IsFerryTemporaryName(fs::BaseName(e.path)) &&
                         (filter == nullptr || filter->Includes(e.path))) {
                AddFile(e.path, e.size);
              }
            }
            return !cancelled_.load(std::memory_order_relaxed);
          });
        }) {}
  ~DestinationSurvey() {
    cancelled_ = true;
    if (thread_.joinable()) thread_.join();
  }
  DestinationSurvey(const DestinationSurvey&) = delete;
  DestinationSurvey& operator=(const DestinationSurvey&) = delete;

  // The walk's outcome, once it has ended.
  const absl::StatusOr<fs::WalkStats>& Wait() {
    if (thread_.joinable()) thread_.join();
    return walked_;
  }
  // Calls `visit(path, size)` for every file found, in walk order.
  template <typename Visit>
  void ForEachFile(Visit visit) const {
    size_t at = 0;
    for (int64_t size : sizes_) {
      uint32_t n;
      std::memcpy(&n, names_.data() + at, sizeof(n));
      visit(std::string_view(names_.data() + at + sizeof(n), n), size);
      at += sizeof(n) + n;
    }
  }
  std::vector<std::string>& dirs() { return dirs_; }

 private:
  // Names packed as (length, bytes) in one string: a 10^6-file
  // destination costs its names' bytes, not a std::string each.
  void AddFile(std::string_view path, int64_t size) {
    const uint32_t n = static_cast<uint32_t>(path.size());
    names_.append(reinterpret_cast<const char*>(&n), sizeof(n));
    names_.append(path.data(), path.size());
    sizes_.push_back(size);
  }

  std::atomic<bool> cancelled_{false};
  absl::StatusOr<fs::WalkStats> walked_ = absl::UnknownError("not walked");
  std::string names_;            // the files' relative paths, packed
  std::vector<int64_t> sizes_;   // their sizes, in the same order
  std::vector<std::string> dirs_;
  std::thread thread_;  // last: starts once the members above exist
};

// delete_extraneous: the destination's files (then directories) below
// `dst_root` that the source lacks, as `survey` found them, removed `jobs`
// at once; the filter's excluded files and ferry's temporaries are kept.
// Fails, removing nothing, when they are more than max_delete.
absl::Status DeleteExtraneous(Runtime& runtime, fs::FileSystem& dst, const std::string& dst_root,
                              const absl::flat_hash_set<std::string>& source_names,
                              std::optional<DestinationSurvey>& survey,
                              const fs::PathFilter* filter, CopyOptions& options,
                              TreeCopyResult& result) {
  const absl::StatusOr<fs::WalkStats>* early = &survey->Wait();
  if (!early->ok() || (*early)->errors > 0) {
    // Listed while the pass changed the destination (an NFS cookie that
    // went stale): listed again, now that nothing else writes there.
    survey.reset();
    survey.emplace(dst, dst_root, filter);
    early = &survey->Wait();
  }
  const absl::StatusOr<fs::WalkStats>& walked = *early;
  if (absl::IsNotFound(walked.status())) return absl::OkStatus();  // nothing there yet
  FERRY_RETURN_IF_ERROR(walked.status());
  if (walked->errors > 0) {
    result.warnings.push_back(absl::StrCat("nothing deleted from ", dst.Url(dst_root), ": ",
                                           walked->errors, " part(s) of it could not be listed"));
    return absl::OkStatus();
  }
  std::vector<fs::Entry> files;
  survey->ForEachFile([&](std::string_view path, int64_t size) {
    if (source_names.contains(ToAbsl(path))) return;
    fs::Entry e;
    e.path = std::string(path);
    e.size = size;
    e.kind = fs::EntryKind::kFile;
    files.push_back(std::move(e));
  });
  std::vector<std::string> dirs;
  for (std::string& d : survey->dirs()) {
    if (!source_names.contains(d)) dirs.push_back(std::move(d));
  }
  if (options.max_delete >= 0 && static_cast<int64_t>(files.size()) > options.max_delete) {
    return absl::FailedPreconditionError(absl::StrCat(
        "delete from ", dst.Url(dst_root), ": ", files.size(),
        " files the source lacks, more than the ", options.max_delete,
        " allowed (max_delete): nothing deleted"));
  }
  std::sort(files.begin(), files.end(),
            [](const fs::Entry& a, const fs::Entry& b) { return a.path < b.path; });
  // Removals on the blocking pool, `jobs` at once (each is a round trip).
  Mutex mu;
  CondVar cv;
  size_t next = 0;
  int running = 0;
  std::vector<std::optional<absl::Status>> outcome(files.size());
  auto remove_some = [&] {
    for (;;) {
      size_t i;
      {
        MutexLock lock(&mu);
        if (next == files.size()) {
          if (--running == 0) cv.Signal();
          return;
        }
        i = next++;
      }
      absl::Status s = dst.Remove(fs::JoinPath(dst_root, files[i].path));
      MutexLock lock(&mu);
      outcome[i] = std::move(s);
    }
  };
  if (!options.dry_run && !files.empty()) {
    const int workers = std::max(1, std::min<int>(options.jobs, static_cast<int>(files.size())));
    {
      MutexLock lock(&mu);
      running = workers;
    }
    for (int w = 0; w < workers; ++w) runtime.PostBlocking(remove_some);
    MutexLock lock(&mu);
    while (running > 0) cv.Wait(&mu);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const absl::Status s = options.dry_run ? absl::OkStatus() : *outcome[i];
    if (!s.ok()) {
      FileCopyFailure f{"", dst.Url(fs::JoinPath(dst_root, files[i].path)),
                        AppendToMessage(s, " (deleting a file the source lacks)")};
      if (options.on_notice) options.on_notice({CopyNotice::Kind::kFailed, DescribeFailure(f)});
      result.failures.push_back(std::move(f));
      ++result.files_failed;
      continue;
    }
    ++result.files_deleted;
    result.bytes_deleted += files[i].size;
    if (options.on_file) options.on_file({FileEvent::Kind::kDeleted, files[i].path, files[i].size});
  }
  // Directories the source lacks, deepest first, once empty (a directory
  // holding an excluded file stays).
  if (!options.dry_run) {
    std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
      return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    for (const std::string& d : dirs) (void)dst.RemoveDir(fs::JoinPath(dst_root, d));
  }
  return absl::OkStatus();
}

}  // namespace

void FileEventLists::Add(const FileEvent& e) {
  switch (e.kind) {
    case FileEvent::Kind::kCopied:
    case FileEvent::Kind::kDeleted: {
      const bool copied = e.kind == FileEvent::Kind::kCopied;
      std::vector<std::string>& into = copied ? this->copied : deleted;
      if (into.size() < max_listed) {
        into.push_back(e.path);
      } else {
        ++(copied ? copied_unlisted : deleted_unlisted);
      }
      break;
    }
    case FileEvent::Kind::kTimeUpdated:
      ++times_updated;
      ++up_to_date;
      break;
    case FileEvent::Kind::kUpToDate:
      ++up_to_date;
      break;
  }
}

std::string DescribeFailure(const FileCopyFailure& f) {
  return absl::StrCat(f.source, " -> ", f.destination.empty() ? "(not copied)" : f.destination,
                      ": ", absl::StatusCodeToString(f.status.code()), ": ", f.status.message());
}

namespace {

absl::StatusOr<TransferStats> CopyOneTask(Runtime& runtime, fs::FileSystem& src,
                                          std::string_view src_path, std::optional<fs::Entry> source,
                                          fs::FileSystem& dst, std::string_view dst_path,
                                          fs::PathSeen destination, CopyOptions options) {
  const absl::Time start = MonotonicNow();
  CopyRun run(runtime, src, dst, options, CopyRun::Mode::kFile);
  std::vector<Task> task;
  const std::string dst_normal = fs::NormalizePath(dst_path);
  const std::string event_path(fs::BaseName(dst_normal));
  task.push_back({fs::NormalizePath(src_path), dst_normal, std::move(source), event_path,
                  std::move(destination)});
  absl::Status stop = run.Add(std::move(task));
  const absl::Status finished = run.Finish();
  if (stop.ok()) stop = finished;
  if (!run.failures().empty()) return run.failures().front().status;
  FERRY_RETURN_IF_ERROR(stop);
  TransferStats stats = run.totals();
  stats.elapsed = MonotonicNow() - start;
  stats.peak_memory_bytes = runtime.memory_budget().peak();
  return stats;
}

}  // namespace

absl::StatusOr<TransferStats> CopyFile(Runtime& runtime, fs::FileSystem& src,
                                       std::string_view src_path, fs::FileSystem& dst,
                                       std::string_view dst_path, CopyOptions options) {
  return CopyOneTask(runtime, src, src_path, std::nullopt, dst, dst_path, {}, std::move(options));
}

absl::StatusOr<TransferStats> CopyFile(Runtime& runtime, fs::FileSystem& src,
                                       std::string_view src_path, const fs::Entry& source,
                                       fs::FileSystem& dst, std::string_view dst_path,
                                       CopyOptions options) {
  return CopyFile(runtime, src, src_path, source, dst, dst_path, fs::PathSeen{}, std::move(options));
}

absl::StatusOr<TransferStats> CopyFile(Runtime& runtime, fs::FileSystem& src,
                                       std::string_view src_path, const fs::Entry& source,
                                       fs::FileSystem& dst, std::string_view dst_path,
                                       const fs::PathSeen& destination, CopyOptions options) {
  // Only a file is taken as listed: anything else gets the unlisted path's
  // own look and error.
  std::optional<fs::Entry> listed;
  if (source.kind == fs::EntryKind::kFile) listed = source;
  return CopyOneTask(runtime, src, src_path, std::move(listed), dst, dst_path, destination,
                     std::move(options));
}

absl::StatusOr<TreeCopyResult> CopyTree(Runtime& runtime, fs::FileSystem& src,
                                        std::string_view src_dir, fs::FileSystem& dst,
                                        std::string_view dst_dir, CopyOptions options) {
  const absl::Time start = MonotonicNow();
  const std::string src_root = fs::NormalizePath(src_dir);
  const std::string dst_root = fs::NormalizePath(dst_dir);
  TreeCopyResult result;
  std::vector<FileCopyFailure> dir_failures;
  // Each refused or skipped entry is one warning, told at once.
  auto warn = [&](CopyNotice::Kind kind, std::string line) {
    if (options.on_notice) options.on_notice({kind, line});
    result.warnings.push_back(std::move(line));
  };
  auto skip = [&](const std::string& rel, std::string_view why) {
    ++result.files_skipped;
    warn(CopyNotice::Kind::kSkipped,
         absl::StrCat("skipped ", src.Url(fs::JoinPath(src_root, rel)), ": ", ToAbsl(why)));
  };
  // `parent`: the listing directory, relative to the source root.
  auto refuse = [&](std::string_view parent, absl::string_view message) {
    ++result.entries_refused;
    warn(CopyNotice::Kind::kRefused,
         absl::StrCat(src.Url(fs::JoinPath(src_root, parent)), ": ", message));
  };
  auto fail = [&](FileCopyFailure f, std::vector<FileCopyFailure>& into) {
    if (options.on_notice) options.on_notice({CopyNotice::Kind::kFailed, DescribeFailure(f)});
    into.push_back(std::move(f));
  };
  // Destination directories are made as the walk finds them, each once,
  // before any file in them is queued (object stores list no directories:
  // a file's parent is made for it). The root is made with the first
  // entries, or after an empty walk, so a missing source creates nothing.
  // A dry run makes none. With a filter, only the directories of files it
  // takes are made (an excluded directory's files are not copied; its
  // empty shell should not appear either).
  const fs::PathFilter* filter =
      options.filter != nullptr && !options.filter->empty() ? options.filter : nullptr;
  absl::flat_hash_set<std::string> dirs_made;
  absl::Status root_status;
  auto make_dir = [&](std::string_view d) {
    if (dirs_made.contains(ToAbsl(d))) return;  // most files' parent: no string made
    dirs_made.emplace(d);
    if (options.dry_run) return;
    absl::Status s = dst.CreateDir(d, /*parents=*/true);
    if (!s.ok()) fail({src.Url(d), dst.Url(d), std::move(s)}, dir_failures);
  };
  auto make_root = [&] {
    if (!dirs_made.insert(dst_root).second) return true;
    if (options.dry_run) return true;
    root_status = dst.CreateDir(dst_root, /*parents=*/true);
    return root_status.ok();
  };
  // What the source holds (relative paths), for delete_extraneous: files
  // taken or skipped, and directories.
  const bool deleting = options.delete_extraneous;
  absl::flat_hash_set<std::string> source_names;
  std::optional<DestinationSurvey> survey;
  if (deleting) survey.emplace(dst, dst_root, filter);
  CopyRun run(runtime, src, dst, options, CopyRun::Mode::kTree);
  absl::Status stop;
  fs::WalkOptions walk;
  walk.first_page_entries = kFirstPageEntries;
  walk.with_handles = true;  // each file is opened as listed (no NFS LOOKUPs)
  walk.batch_entries = kWalkBatchEntries;
  absl::StatusOr<fs::WalkStats> walked = src.Walk(src_root, walk, [&](fs::WalkBatch& batch) {
    if (!make_root()) return false;
    std::vector<Task> tasks;
    for (fs::Entry& e : batch.entries) {
      // The walk refused unsafe names already; this holds for any adapter's.
      absl::StatusOr<std::string> rel = fs::SafeRelativePath(e.path);
      if (!rel.ok()) {
        refuse(fs::DirName(e.path), rel.status().message());
        continue;
      }
      if (deleting) source_names.insert(*rel);
      switch (e.kind) {
        case fs::EntryKind::kFile: {
          if (filter != nullptr && !filter->Includes(*rel)) {
            ++result.files_excluded;
            break;
          }
          std::string dst_path = fs::JoinPath(dst_root, *rel);
          make_dir(fs::DirName(dst_path));
          tasks.push_back(
              {fs::JoinPath(src_root, *rel), std::move(dst_path), std::move(e), *rel});
          break;
        }
        case fs::EntryKind::kDirectory:
          if (filter == nullptr) make_dir(fs::JoinPath(dst_root, *rel));
          break;
        default:
          skip(*rel, absl::StrCat("a ", ToAbsl(fs::EntryKindName(e.kind)), ", not copied"));
          break;
      }
    }
    for (fs::WalkError& err : batch.errors) {
      if (err.refused) {
        refuse(err.path, err.status.message());
        continue;
      }
      ++result.files_failed;
      fail({src.Url(fs::JoinPath(src_root, err.path)), "", std::move(err.status)}, result.failures);
    }
    stop = run.Add(std::move(tasks));
    return stop.ok();
  });
  if (walked.ok() && stop.ok()) make_root();  // an empty tree still makes its root
  const absl::Status finished = run.Finish();
  FERRY_RETURN_IF_ERROR(walked.status());
  FERRY_RETURN_IF_ERROR(root_status);
  FERRY_RETURN_IF_ERROR(stop);
  FERRY_RETURN_IF_ERROR(finished);
  // Failures in a stable order (walk problems, directories, then files by
  // source), whatever order the workers finished in.
  std::vector<FileCopyFailure>& file_failures = run.failures();
  std::sort(file_failures.begin(), file_failures.end(),
            [](const FileCopyFailure& a, const FileCopyFailure& b) { return a.source < b.source; });
  result.files_failed += static_cast<int64_t>(file_failures.size());
  for (FileCopyFailure& f : dir_failures) result.failures.push_back(std::move(f));
  for (FileCopyFailure& f : file_failures) result.failures.push_back(std::move(f));
  result.totals = run.totals();
  result.files_up_to_date = run.up_to_date();
  result.times_updated = run.times_updated();
  result.dry_run = options.dry_run;
  if (deleting) {
    // Only after a complete, clean pass: a source that was not read whole
    // (a failed directory, a refused name) or a file that did not copy
    // must never cost the destination a file.
    if (result.files_failed > 0 || result.entries_refused > 0 || !dir_failures.empty()) {
      result.warnings.push_back(absl::StrCat(
          "nothing deleted from ", dst.Url(dst_root), ": ",
          result.files_failed + static_cast<int64_t>(dir_failures.size()),
          " failure(s) and ", result.entries_refused, " refused name(s) in this run"));
    } else {
      FERRY_RETURN_IF_ERROR(DeleteExtraneous(runtime, dst, dst_root, source_names, survey,
                                             filter, options, result));
    }
  }
  result.totals.elapsed = MonotonicNow() - start;
  result.totals.peak_memory_bytes = runtime.memory_budget().peak();
  return result;
}

}  // namespace ferry
