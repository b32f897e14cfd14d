// NfsFile: blocking positional I/O over NfsClient's READ/WRITE/COMMIT.
// Parallelism comes mostly from the callers (an FdTable's PRead/PWrite on
// many threads, as the copier does). Calls carry at most 1 MiB (and at
// most rtmax/wtmax). A ReadAt of more than one call's worth sends up to 16
// READs at once; a WriteAt is a short sequence of calls. READ data is
// read from the socket straight into the caller's buffer
// (NfsClient::ReadIntoAsync): no copy in user space, except for a reader
// of pieces of up to one call in order, who is read ahead (ReadAt).
#include "ferry/nfs/nfs_file.h"

#include <fcntl.h>  // readahead

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/positional_io.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_error.h"
#include "ferry/nfs/nfs_url.h"
#include "ferry/runtime/buffer_pool.h"
#include "ferry/runtime/memory_budget.h"
#include "ferry/runtime/runtime.h"

namespace ferry::nfs {
namespace {

// Bytes per READ/WRITE call, below the server's rtmax/wtmax: servers
// advertise up to 64 MiB (ganesha), whose reply would not even fit in the
// pool's 64 MiB record limit, and 1 MiB calls (the Linux client's cap)
// already amortise the per-call cost while many of them are in flight.
constexpr size_t kMaxCallBytes = 1 << 20;
// READs one ReadAt keeps in flight: 16 x 1 MiB covers a 10 GbE link at
// 1 ms (as the copier's parallelism does) and bounds the reply records
// received at once for a huge buffer.
constexpr size_t kReadsInFlight = 16;
// Read-ahead windows (ReadAt of pieces of at most one call, in order):
// the first, the largest (each doubles the last), how many are in flight
// at most, how long their bytes may be served, and how many windows cut
// short stop a file's read-ahead. A reply cannot wait in the socket for the
// reader's buffer (the pool reads every connection's replies as they
// come), so the pieces are copied out of the windows: for 1 MiB pieces
// (64 MiB from ganesha) ~40 % more client CPU for ~20 % less wall on
// loopback, and a third less wall at 1 ms.
constexpr size_t kFirstWindow = size_t{1} << 20;
constexpr size_t kMaxWindow = size_t{8} << 20;
constexpr size_t kWindowsAhead = 2;
constexpr absl::Duration kWindowLife = absl::Seconds(3);
constexpr int kMaxShortWindows = 2;

// InvalidArgument naming `op` and the file for a negative offset.
absl::Status CheckOffset(int64_t offset, std::string_view op, const NfsClient& client,
                         std::string_view path) {
  if (offset >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(ToAbsl(op), " ", client.DisplayPath(path), ": negative offset ", offset));
}

}  // namespace

absl::StatusOr<std::shared_ptr<NfsFile>> NfsFile::Open(NfsClient& client,
                                                       std::string_view relative_path) {
  FERRY_ASSIGN_OR_RETURN(NfsObject o, client.LookupPath(relative_path));
  Fattr3 attrs;
  if (o.attributes) {
    attrs = *o.attributes;
  } else {
    FERRY_ASSIGN_OR_RETURN(attrs, client.GetAttr(o.handle, relative_path));
  }
  if (attrs.type != FileType::kRegular) {
    return absl::FailedPreconditionError(absl::StrCat("open ", client.DisplayPath(relative_path),
                                                      ": not a regular file (",
                                                      FileTypeName(attrs.type), ")"));
  }
  return std::make_shared<NfsFile>(client, std::move(o.handle), std::string(relative_path),
                                   attrs.size);
}

absl::StatusOr<std::shared_ptr<NfsFile>> NfsFile::Create(NfsClient& client,
                                                         std::string_view relative_path,
                                                         uint32_t mode) {
  auto [parent, name] = SplitNfsPath(relative_path);
  if (name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("create ", client.DisplayPath(relative_path), ": no file name"));
  }
  FERRY_ASSIGN_OR_RETURN(NfsObject dir, client.LookupPath(parent));
  FERRY_ASSIGN_OR_RETURN(NfsObject f, client.Create(dir.handle, name, mode, /*exclusive=*/false,
                                                    /*truncate=*/true, relative_path));
  return std::make_shared<NfsFile>(client, std::move(f.handle), std::string(relative_path), 0);
}

std::shared_ptr<NfsFile> NfsFile::OpenListed(NfsClient& client, FileHandle handle,
                                             std::string path, uint64_t size,
                                             std::optional<absl::Time> mtime) {
  auto file = std::make_shared<NfsFile>(client, std::move(handle), std::move(path), size);
  file->listed_ = Listed{size, mtime};
  return file;
}

NfsFile::NfsFile(NfsClient& client, FileHandle handle, std::string path, uint64_t size)
    : client_(client), handle_(std::move(handle)), path_(std::move(path)), size_at_open_(size) {}

absl::Status NfsFile::CheckStillAsListed(const Fattr3& now) const {
  if (!listed_) return absl::OkStatus();
  // Compared as times, not raw nfstime3: the listing's went through
  // absl::Time, which normalizes what a server may send unnormalized.
  const absl::Time modified = ToAbslTime(now.mtime);
  const bool same_mtime = !listed_->mtime || *listed_->mtime == modified;
  if (now.size == listed_->size && same_mtime) return absl::OkStatus();
  const auto time = [](absl::Time t) {
    return absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", t, absl::UTCTimeZone());
  };
  return absl::FailedPreconditionError(absl::StrCat(
      "NFS3 READ ", client_.DisplayPath(path_), ": the file changed since it was listed (",
      listed_->size, " bytes",
      listed_->mtime ? absl::StrCat(", modified ", time(*listed_->mtime)) : "", "; now ",
      now.size, " bytes, modified ", time(modified), ")"));
}

absl::Status NfsFile::GoneSinceListed(const absl::Status& stale) {
  absl::StatusOr<NfsObject> now = client_.LookupPath(path_);
  if (absl::IsNotFound(now.status())) {
    return absl::NotFoundError(absl::StrCat("NFS3 READ ", client_.DisplayPath(path_),
                                            ": the file was removed since it was listed (",
                                            stale.message(), ")"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("NFS3 READ ", client_.DisplayPath(path_),
                   ": the file was replaced since it was listed (", stale.message(), ")"));
}

absl::Status NfsFile::ConfirmStillAsListed() {
  if (!listed_ || confirmed_.load(std::memory_order_relaxed)) return absl::OkStatus();
  absl::StatusOr<Fattr3> now = client_.GetAttr(handle_, path_);
  if (GetNfs3Status(now.status()) == Nfs3Status::kStale) return GoneSinceListed(now.status());
  FERRY_RETURN_IF_ERROR(now.status());
  FERRY_RETURN_IF_ERROR(CheckStillAsListed(*now));
  confirmed_.store(true, std::memory_order_relaxed);
  return absl::OkStatus();
}

size_t NfsFile::MaxReadCall() const { return std::min<size_t>(client_.fsinfo().rtmax, kMaxCallBytes); }

absl::StatusOr<size_t> NfsFile::ReadAt(int64_t offset, absl::Span<char> buf) {
  const int others = reading_.fetch_add(1, std::memory_order_acq_rel);
  absl::Cleanup done = [this] { reading_.fetch_sub(1, std::memory_order_acq_rel); };
  if (others > 0 && !shared_.exchange(true, std::memory_order_acq_rel)) {
    // Readers at once (an engine's workers): their pieces are scattered,
    // and windows would be read twice. The ones sent are let go.
    MutexLock lock(&read_ahead_mu_);
    windows_.clear();
  }
  const size_t max_call = MaxReadCall();
  if (offset >= 0 && !buf.empty() && buf.size() <= max_call && !shared_.load(std::memory_order_acquire)) {
    if (read_ahead_mu_.TryLock()) {
      absl::StatusOr<size_t> got = ReadThroughWindows(offset, buf);
      read_ahead_mu_.Unlock();
      return got;
    }
  }
  return ReadFromServer(offset, buf);
}

absl::StatusOr<size_t> NfsFile::ReadFromServer(int64_t offset, absl::Span<char> buf) {
  return ReadInCalls(offset, buf.size(), [&](size_t at, size_t want, Callback<ReadIntoReply> done) {
    client_.ReadIntoAsync(handle_, static_cast<uint64_t>(offset) + at, buf.subspan(at, want), path_,
                          std::move(done));
  });
}

absl::StatusOr<size_t> NfsFile::ReadThroughWindows(int64_t offset, absl::Span<char> buf) {
  const bool sequential = offset == last_end_;
  size_t done = 0;
  while (done < buf.size() && !windows_.empty()) {
    Window& w = windows_.front();
    const int64_t at = offset + static_cast<int64_t>(done);
    if (at < w.start) break;  // behind the windows: out of order
    if (at >= w.start + static_cast<int64_t>(w.size)) {  // skipped past it
      windows_.pop_front();
      continue;
    }
    if (w.writes != writes_.load(std::memory_order_acquire) || absl::Now() - w.sent > kWindowLife) break;
    Settle(w);
    const int64_t valid_end = w.start + static_cast<int64_t>(w.valid);
    if (at >= valid_end) break;
    const size_t take = std::min(buf.size() - done, static_cast<size_t>(valid_end - at));
    std::memcpy(buf.data() + done, w.buffer->data() + (at - w.start), take);
    done += take;
    if (at + static_cast<int64_t>(take) == valid_end) {
      const bool whole = w.valid == w.size;
      windows_.pop_front();
      // After a short or failed window, the server says what follows.
      if (!whole) {
        ++short_windows_;
        break;
      }
    }
  }
  if (done < buf.size()) {
    windows_.clear();  // out of order, stale or cut short: none of them is trusted
    window_bytes_ = 0;
    FERRY_ASSIGN_OR_RETURN(size_t got, ReadFromServer(offset + static_cast<int64_t>(done), buf.subspan(done)));
    done += got;
  }
  last_end_ = offset + static_cast<int64_t>(done);
  // A server whose READs keep coming short (or a file that shrank) would
  // have every window sent again for a piece of it.
  if (!sequential || short_windows_ >= kMaxShortWindows) return done;
  // The next windows, before the reader asks: up to two, never past the
  // size the file had at open (a file that grew is read past it as asked).
  const int64_t limit = static_cast<int64_t>(size_at_open_);
  int64_t next = windows_.empty() ? last_end_
                                  : windows_.back().start + static_cast<int64_t>(windows_.back().size);
  while (windows_.size() < kWindowsAhead && next < limit) {
    // Grown only when sent: a file refused read-ahead bytes asks again
    // for the window it was refused, not for a larger one.
    const size_t grown = std::min(kMaxWindow, std::max(kFirstWindow, window_bytes_ * 2));
    const size_t size = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(grown), limit - next));
    if (!SendWindow(next, size)) break;
    window_bytes_ = grown;
    next += static_cast<int64_t>(size);
  }
  return done;
}

bool NfsFile::SendWindow(int64_t start, size_t size) {
  Runtime& runtime = client_.runtime();
  BufferPool& pool = runtime.buffer_pool();
  // Under the Runtime's read-ahead bound, taken only if free: many files
  // read at once share it, and one that finds none (or no memory to read
  // ahead into) reads from the server as asked.
  std::optional<BoundedBuffer> taken =
      pool.TryTakeWithin(runtime.read_ahead_budget(), std::max(size, LargeBuffer::kHugePageBytes));
  if (!taken) return false;
  // The ticket goes with the buffer, which READs still in flight may hold.
  auto* held = new BoundedBuffer(*std::move(taken));
  std::shared_ptr<LargeBuffer> buffer(&held->buffer, [&pool, held](LargeBuffer*) {
    pool.Give(std::move(*held));
    delete held;
  });
  Window& w = windows_.emplace_back();
  w.start = start;
  w.size = size;
  w.sent = absl::Now();
  w.writes = writes_.load(std::memory_order_acquire);
  w.buffer = buffer;
  const size_t max_call = MaxReadCall();
  for (size_t at = 0; at < size; at += max_call) {
    Promise<ReadIntoReply> p;
    w.calls.push_back(p.GetFuture());
    client_.ReadIntoAsync(handle_, static_cast<uint64_t>(start) + at,
                          absl::MakeSpan(buffer->data() + at, std::min(max_call, size - at)), path_,
                          [p = std::move(p), buffer](absl::StatusOr<ReadIntoReply> r) mutable {
                            p.Set(std::move(r));
                          });
  }
  return true;
}

void NfsFile::Settle(Window& w) {
  if (w.settled) return;
  w.settled = true;
  const size_t max_call = MaxReadCall();
  std::vector<absl::StatusOr<ReadIntoReply>> results;
  results.reserve(w.calls.size());
  for (Future<ReadIntoReply>& f : w.calls) results.push_back(std::move(f).Get());
  w.calls.clear();
  // Taken in order: the valid bytes end at the first error, end of file or
  // short READ. An error, or a listed file's change, is not reported here
  // but by the server again, when the reader is sent to it.
  for (size_t i = 0; i < results.size(); ++i) {
    const absl::StatusOr<ReadIntoReply>& r = results[i];
    if (!r.ok() || (listed_ && r->attributes && !CheckStillAsListed(*r->attributes).ok())) {
      w.valid = 0;
      return;
    }
    w.valid += r->count;
    if (r->eof || r->count < std::min(max_call, w.size - i * max_call)) return;
  }
}

absl::StatusOr<size_t> NfsFile::ReadIntoDescriptor(int64_t offset, size_t n, int fd,
                                                   int64_t fd_offset, Mutex* write_lock) {
  FERRY_RETURN_IF_ERROR(
      io_internal::CheckFillDescriptor(fd, fd_offset, absl::StrCat("read ", client_.DisplayPath(path_))));
  return ReadInCalls(offset, n, [&](size_t at, size_t want, Callback<ReadIntoReply> done) {
    client_.ReadIntoFileAsync(
        handle_, static_cast<uint64_t>(offset) + at,
        FileRange{.fd = fd,
                  .offset = fd_offset + static_cast<int64_t>(at),
                  .size = want,
                  .write_lock = write_lock},
        path_,
        std::move(done));
  });
}

absl::StatusOr<size_t> NfsFile::ReadInCalls(
    int64_t offset, size_t n,
    absl::FunctionRef<void(size_t at, size_t want, Callback<ReadIntoReply> done)> read) {
  FERRY_RETURN_IF_ERROR(CheckOffset(offset, "read", client_, path_));
  const size_t max_call = MaxReadCall();
  size_t done = 0;
  // Windows of up to kReadsInFlight calls, all sent at once, each landing
  // in its place. All of a window are waited for (they write into the
  // destination), then taken in order, as one call at a time would be: the
  // first error wins, end of file stops, and a short piece (a server that
  // sent less than asked) makes the next window start right after its
  // bytes.
  while (done < n) {
    const size_t window_end = std::min(n, done + kReadsInFlight * max_call);
    std::vector<Future<ReadIntoReply>> pieces;
    for (size_t at = done; at < window_end; at += max_call) {
      Promise<ReadIntoReply> p;
      pieces.push_back(p.GetFuture());
      read(at, std::min(max_call, window_end - at),
           std::move(p).AsCallback());
    }
    std::vector<absl::StatusOr<ReadIntoReply>> results;
    results.reserve(pieces.size());
    for (Future<ReadIntoReply>& f : pieces) results.push_back(std::move(f).Get());
    for (absl::StatusOr<ReadIntoReply>& r : results) {
      if (listed_ && GetNfs3Status(r.status()) == Nfs3Status::kStale) {
        return GoneSinceListed(r.status());
      }
      FERRY_RETURN_IF_ERROR(r.status());
      if (r->attributes && listed_) {
        FERRY_RETURN_IF_ERROR(CheckStillAsListed(*r->attributes));
        confirmed_.store(true, std::memory_order_relaxed);
      }
      const size_t want = std::min(max_call, window_end - done);
      done += r->count;
      if (r->eof || r->count == 0) return done;
      if (r->count < want) break;  // short: the next window starts here
    }
  }
  return done;
}

absl::StatusOr<size_t> NfsFile::WriteAt(int64_t offset, absl::Span<const char> data) {
  return WriteInCalls(offset, data.size(), [&](size_t done, size_t want, StableHow stable) {
    return client_.Write(handle_, offset + done, std::string_view(data.data() + done, want),
                         stable, path_);
  });
}

absl::StatusOr<size_t> NfsFile::WriteFromDescriptor(int64_t offset, int fd, int64_t fd_offset,
                                                    size_t n) {
  return WriteInCalls(offset, n, [&](size_t done, size_t want, StableHow stable) {
    // The pool sends the bytes from its I/O thread, which must not wait on
    // a disk: they are brought into the page cache here, on the caller's.
    const int64_t from = fd_offset + static_cast<int64_t>(done);
    ::readahead(fd, from, want);
    return client_.WriteFromFile(handle_, offset + done, fd, from, want, stable, path_);
  });
}

absl::StatusOr<size_t> NfsFile::WriteInCalls(
    int64_t offset, size_t n,
    absl::FunctionRef<absl::StatusOr<WriteReply>(size_t done, size_t want, StableHow stable)>
        write) {
  FERRY_RETURN_IF_ERROR(CheckOffset(offset, "write", client_, path_));
  const size_t max_call = std::min<size_t>(client_.fsinfo().wtmax, kMaxCallBytes);
  // The whole file in one call: durable in it, no COMMIT after.
  const StableHow stable = offset == 0 && n <= max_call &&
                                   n == final_size_.load(std::memory_order_relaxed)
                               ? StableHow::kFileSync
                               : StableHow::kUnstable;
  size_t done = 0;
  while (done < n) {
    const size_t want = std::min(max_call, n - done);
    // Counted before and after: bytes read ahead before the write ends,
    // even by a READ sent while it was under way, are stale once it has.
    writes_.fetch_add(1, std::memory_order_acq_rel);
    absl::StatusOr<WriteReply> w = write(done, want, stable);
    writes_.fetch_add(1, std::memory_order_acq_rel);
    FERRY_RETURN_IF_ERROR(w.status());
    FERRY_RETURN_IF_ERROR(NoteWrite(*w, want));
    done += std::min<size_t>(w->count, want);
  }
  return done;
}

absl::Status NfsFile::NoteWrite(const WriteReply& w, size_t want) {
  if (w.count == 0) {
    return absl::DataLossError(absl::StrCat("NFS3 WRITE ", client_.DisplayPath(path_),
                                            ": the server took 0 of ", want, " bytes"));
  }
  MutexLock l(&mu_);
  if (w.committed == StableHow::kUnstable) dirty_ = true;
  if (write_verifier_ && *write_verifier_ != w.verifier) verifier_changed_ = true;
  write_verifier_ = w.verifier;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NfsFile::Size() {
  FERRY_ASSIGN_OR_RETURN(Fattr3 a, client_.GetAttr(handle_, path_));
  return static_cast<int64_t>(a.size);
}

absl::Status NfsFile::Commit() {
  std::optional<uint64_t> expected;
  {
    MutexLock l(&mu_);
    if (verifier_changed_) {
      return absl::DataLossError(absl::StrCat(
          "NFS3 WRITE ", client_.DisplayPath(path_),
          ": the server's write verifier changed between writes (it restarted); "
          "unstable data may be lost and must be written again"));
    }
    if (!dirty_) return absl::OkStatus();
    expected = write_verifier_;
  }
  FERRY_ASSIGN_OR_RETURN(uint64_t verifier, client_.Commit(handle_, 0, 0, path_));
  if (expected && verifier != *expected) {
    MutexLock l(&mu_);
    verifier_changed_ = true;
    return absl::DataLossError(absl::StrCat(
        "NFS3 COMMIT ", client_.DisplayPath(path_),
        ": the server's write verifier changed since the writes (it restarted); "
        "unstable data may be lost and must be written again"));
  }
  MutexLock l(&mu_);
  dirty_ = false;
  return absl::OkStatus();
}

}  // namespace ferry::nfs
