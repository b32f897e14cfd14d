// FdTable: POSIX-style descriptors with their own offsets over object handles.
//
// Front ends that speak open/read/write/lseek/close (an iRODS resource, a
// FUSE or NFS server) over stores that only speak ranged GETs and PUTs need
// the bookkeeping the kernel normally does: a number for every open, an
// offset and an access mode per number, and how many opens each object has.
// FdTable<Handle> is that bookkeeping, as the iRODS S3 plugin's cacheless
// mode keeps it (a map of fake fds from 3 with an offset each), without its
// global state: every table is an object the caller owns, and calls on
// different descriptors do not serialize on one lock.
//
//   ferry::FdTable<S3File> table;
//   FERRY_ASSIGN_OR_RETURN(auto opened,
//       table.Open("bucket/big.bin", file, ferry::OpenMode::kRead));
//   if (opened.readers == 2) StartMultipartDownload(...);  // a second reader appeared
//   char buf[4096];
//   FERRY_ASSIGN_OR_RETURN(size_t n, table.Read(opened.fd, absl::MakeSpan(buf)));
//   FERRY_ASSIGN_OR_RETURN(auto closed, table.Close(opened.fd));
//   if (closed.last_close) FinishUpload(*closed.handle);
//
// Semantics, one line each:
// - Descriptors start at 3 and are never reused while open (they count up
//   and only wrap around after max_descriptor, skipping open ones).
// - Read/Write move the offset by the bytes actually transferred;
//   PRead/PWrite leave it alone; Lseek takes SEEK_SET, SEEK_CUR or SEEK_END
//   (END asks the handle for its Size()), may go past the end, and refuses a
//   negative or overflowing result.
// - A short read means end of object: Handle::ReadAt returns fewer bytes
//   than asked only at EOF, and 0 at or past it. FdTable does not loop.
//   A zero-byte Read/Write/PRead/PWrite returns 0 without calling the handle.
// - Errors about descriptors are all InvalidArgument (what EBADF and EINVAL
//   map to in absl::ErrnoToStatus): an unknown or closed fd, a read on a
//   write-only fd, a write on a read-only fd, a bad whence or offset. The
//   message names the call and the descriptor: "Read: fd 7 is not open".
// - A handle's own error comes back with its code, annotated with the call,
//   fd, object and offset; the offset does not move.
// - Close takes the fd out of the table at once, waits for calls on it that
//   were already in flight, and then reports whether it was the object's
//   last open, handing back the handle (to finish an upload, say).
//
// Not provided: O_APPEND (an object store has no atomic append; Lseek to
// SEEK_END before writing), dup, and truncation (the handle's business).
#ifndef FERRY_IO_FD_TABLE_H_
#define FERRY_IO_FD_TABLE_H_

#include <concepts>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/fd_table_core.h"

namespace ferry {

// What an FdTable needs of the object behind a descriptor. The handle may be
// shared by many descriptors and called from many threads at once, so its
// methods must be thread-safe.
//   ReadAt(offset, buf): copies bytes at `offset` into `buf`, returns how
//     many; fewer than buf.size() only at end of object, 0 at or past it.
//   WriteAt(offset, data): writes `data` at `offset` (past the end leaves a
//     hole the handle fills), returns how many bytes it took (may be fewer).
//   Size(): the object's current size in bytes.
template <typename H>
concept FdHandle = requires(H& h, int64_t offset, absl::Span<char> buf,
                            absl::Span<const char> data) {
  { h.ReadAt(offset, buf) } -> std::same_as<absl::StatusOr<size_t>>;
  { h.WriteAt(offset, data) } -> std::same_as<absl::StatusOr<size_t>>;
  { h.Size() } -> std::same_as<absl::StatusOr<int64_t>>;
};

// How a descriptor may be used (O_RDONLY, O_WRONLY, O_RDWR).
enum class OpenMode { kRead, kWrite, kReadWrite };

struct FdTableOptions {
  // The largest descriptor handed out before numbering wraps back to 3; the
  // table holds at most max_descriptor - 2 open descriptors. Tests lower it
  // to exercise the wrap-around.
  int max_descriptor = std::numeric_limits<int>::max();
};

// FdTable<Handle>: descriptor -> (object, handle, mode, offset).
//
// Thread-safe. Calls on different descriptors run in parallel (a sharded
// map, then a per-descriptor lock); Read, Write and Lseek on one descriptor
// serialize on that descriptor's offset lock, held across the handle call,
// like the kernel's f_pos lock, so concurrent readers of one fd get disjoint
// ranges. PRead and PWrite take no offset lock and run in parallel even on
// one descriptor.
// REQUIRES: no call is in flight when the table is destroyed; a Handle's
// methods do not call back into the table for the same descriptor (Close
// would wait for itself).
template <FdHandle Handle>
class FdTable {
 public:
  // What Open reports. The counts include this open, so `opens == 1` means
  // the first open of the object and `readers == 2` that a second concurrent
  // reader has just appeared (time to start a multipart download).
  struct OpenResult {
    int fd = -1;
    int opens = 0;    // descriptors open on the object
    int readers = 0;  // of which readable (kRead or kReadWrite)
    int writers = 0;  // of which writable (kWrite or kReadWrite)
  };

  // What Close reports. The counts exclude the closed descriptor.
  struct CloseResult {
    std::shared_ptr<Handle> handle;  // the handle the descriptor was opened with
    std::string object_key;
    bool last_close = false;  // no descriptor of object_key remains open
    int opens = 0;            // descriptors of object_key still open
    int readers = 0;
    int writers = 0;
  };

  explicit FdTable(const FdTableOptions& options = {}) : core_(options.max_descriptor) {}
  FdTable(const FdTable&) = delete;
  FdTable& operator=(const FdTable&) = delete;

  // Opens `object_key` through `handle` with offset 0, and counts the open
  // against the key: descriptors opened with equal keys are the same object
  // for the open/reader/writer counts, whatever their handles.
  // ResourceExhausted if every descriptor is in use (EMFILE);
  // InvalidArgument if `handle` is null.
  absl::StatusOr<OpenResult> Open(std::string object_key, std::shared_ptr<Handle> handle,
                                  OpenMode mode) {
    if (handle == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("Open: null handle for '", object_key, "'"));
    }
    const bool readable = mode != OpenMode::kWrite;
    const bool writable = mode != OpenMode::kRead;
    FERRY_ASSIGN_OR_RETURN(
        auto inserted,
        core_.Insert(object_key, readable, writable, [&](int fd) {
          return std::make_shared<Descriptor>(fd, object_key, readable, writable,
                                              std::move(handle));
        }));
    const fd_table_internal::ObjectCounts& counts = inserted.second;
    return OpenResult{inserted.first, counts.opens, counts.readers, counts.writers};
  }

  // Reads up to buf.size() bytes at the descriptor's offset and advances it
  // by the bytes read. Fewer bytes (0 included) means end of object.
  absl::StatusOr<size_t> Read(int fd, absl::Span<char> buf) {
    return WithPosition(fd, "Read", Access::kRead, [&](Descriptor& d, int64_t& offset) {
      return Transfer(d, "Read", offset, buf.size(), [&] { return d.handle->ReadAt(offset, buf); })
          .AdvancingOffset(offset);
    });
  }

  // Writes `data` at the descriptor's offset and advances it by the bytes
  // the handle took.
  absl::StatusOr<size_t> Write(int fd, absl::Span<const char> data) {
    return WithPosition(fd, "Write", Access::kWrite, [&](Descriptor& d, int64_t& offset) {
      return Transfer(d, "Write", offset, data.size(),
                      [&] { return d.handle->WriteAt(offset, data); })
          .AdvancingOffset(offset);
    });
  }

  // Reads at `offset` without using or moving the descriptor's offset.
  // InvalidArgument if `offset` is negative.
  absl::StatusOr<size_t> PRead(int fd, int64_t offset, absl::Span<char> buf) {
    return Positional(fd, "PRead", Access::kRead, offset, [&](Descriptor& d) {
      return Transfer(d, "PRead", offset, buf.size(),
                      [&] { return d.handle->ReadAt(offset, buf); }).value;
    });
  }

  // Writes at `offset` without using or moving the descriptor's offset.
  // InvalidArgument if `offset` is negative.
  absl::StatusOr<size_t> PWrite(int fd, int64_t offset, absl::Span<const char> data) {
    return Positional(fd, "PWrite", Access::kWrite, offset, [&](Descriptor& d) {
      return Transfer(d, "PWrite", offset, data.size(),
                      [&] { return d.handle->WriteAt(offset, data); }).value;
    });
  }

  // Moves the offset to `offset` relative to the start (SEEK_SET), the
  // current offset (SEEK_CUR) or the object's Size() (SEEK_END); returns the
  // new offset. Past the end is allowed; a negative or overflowing result
  // or another whence is InvalidArgument and leaves the offset alone.
  absl::StatusOr<int64_t> Lseek(int fd, int64_t offset, int whence) {
    return WithPosition(fd, "Lseek", Access::kAny,
                        [&](Descriptor& d, int64_t& current) -> absl::StatusOr<int64_t> {
      int64_t base = 0;
      switch (whence) {
        case SEEK_SET: break;
        case SEEK_CUR: base = current; break;
        case SEEK_END: {
          absl::StatusOr<int64_t> size = d.handle->Size();
          if (!size.ok()) return Annotate(size.status(), Context(d, "Lseek(SEEK_END): Size", -1));
          base = *size;
          break;
        }
        default:
          return absl::InvalidArgumentError(
              absl::StrCat(Context(d, "Lseek", -1), ": whence ", whence,
                           " is not SEEK_SET, SEEK_CUR or SEEK_END"));
      }
      int64_t target = 0;
      if (__builtin_add_overflow(base, offset, &target) || target < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(Context(d, "Lseek", -1), ": offset ", offset, " from ", base,
                         " gives a negative or overflowing position"));
      }
      current = target;
      return target;
    });
  }

  // Closes `fd`: from now on every call on it fails with "fd N is not open".
  // Calls on `fd` already in flight complete first (Close waits for them, so
  // it returns as soon as the handle's calls do: handles bound their calls
  // with deadlines). The handle is released by the table and handed back.
  absl::StatusOr<CloseResult> Close(int fd) {
    FERRY_ASSIGN_OR_RETURN(auto removed, core_.Remove(fd));
    auto& d = static_cast<Descriptor&>(*removed.first);
    const fd_table_internal::ObjectCounts& counts = removed.second;
    return CloseResult{std::move(d.handle), d.object_key(), counts.opens == 0,
                       counts.opens, counts.readers, counts.writers};
  }

  // How many descriptors are open on `object_key` (readers and writers); a
  // closing descriptor counts until its Close has drained. The fd is -1.
  OpenResult CountsFor(std::string_view object_key) const {
    const fd_table_internal::ObjectCounts c = core_.CountsFor(object_key);
    return OpenResult{-1, c.opens, c.readers, c.writers};
  }

  // Descriptors open in the whole table; one whose Close has begun (and may
  // still be waiting for calls in flight) no longer counts.
  int size() const { return core_.open_descriptors(); }

 private:
  struct Descriptor final : fd_table_internal::DescriptorBase {
    Descriptor(int fd, std::string key, bool readable, bool writable, std::shared_ptr<Handle> h)
        : DescriptorBase(fd, std::move(key), readable, writable), handle(std::move(h)) {}
    // Set at open; moved out only by Close, after every call has drained.
    std::shared_ptr<Handle> handle;
  };

  enum class Access { kRead, kWrite, kAny };

  // A checked transfer count (or error) from one handle call.
  struct Transferred {
    absl::StatusOr<size_t> value;
    // Moves `offset` by the count on success.
    absl::StatusOr<size_t> AdvancingOffset(int64_t& offset) && {
      if (value.ok()) offset += static_cast<int64_t>(*value);
      return std::move(value);
    }
  };

  static std::string Context(const Descriptor& d, std::string_view op, int64_t offset) {
    std::string s = absl::StrCat(ToAbsl(op), ": fd ", d.fd(), " ('", d.object_key(), "')");
    if (offset >= 0) absl::StrAppend(&s, " at offset ", offset);
    return s;
  }

  // Runs one ReadAt/WriteAt for `requested` bytes at `offset`, checks the
  // count it reports, and annotates its errors.
  template <typename Call>
  static Transferred Transfer(const Descriptor& d, std::string_view op, int64_t offset,
                              size_t requested, Call call) {
    if (requested == 0) return {size_t{0}};  // POSIX: nothing to do, no round trip
    absl::StatusOr<size_t> n = call();
    if (!n.ok()) return {Annotate(n.status(), Context(d, op, offset))};
    if (*n > requested ||
        *n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - offset)) {
      return {absl::DataLossError(absl::StrCat(Context(d, op, offset), ": handle reported ", *n,
                                               " bytes for a request of ", requested))};
    }
    return {n};
  }

  absl::StatusOr<std::shared_ptr<Descriptor>> Begin(int fd, std::string_view op, Access access) {
    FERRY_ASSIGN_OR_RETURN(std::shared_ptr<fd_table_internal::DescriptorBase> base,
                           core_.Find(fd, op));
    if ((access == Access::kRead && !base->readable()) ||
        (access == Access::kWrite && !base->writable())) {
      return fd_table_internal::WrongModeError(op, *base);
    }
    FERRY_RETURN_IF_ERROR(base->BeginCall(op));
    return std::static_pointer_cast<Descriptor>(std::move(base));
  }

  // Runs `fn(descriptor, offset)` holding the descriptor's offset lock.
  template <typename Fn>
  auto WithPosition(int fd, std::string_view op, Access access, Fn fn)
      -> decltype(fn(std::declval<Descriptor&>(), std::declval<int64_t&>())) {
    FERRY_ASSIGN_OR_RETURN(std::shared_ptr<Descriptor> d, Begin(fd, op, access));
    fd_table_internal::CallScope call(d.get());
    MutexLock lock(&d->position_mutex());
    return fn(*d, d->offset());
  }

  template <typename Fn>
  absl::StatusOr<size_t> Positional(int fd, std::string_view op, Access access, int64_t offset,
                                    Fn fn) {
    FERRY_ASSIGN_OR_RETURN(std::shared_ptr<Descriptor> d, Begin(fd, op, access));
    fd_table_internal::CallScope call(d.get());
    if (offset < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Context(*d, op, -1), ": negative offset ", offset));
    }
    return fn(*d);
  }

  fd_table_internal::FdTableCore core_;
};

}  // namespace ferry

#endif  // FERRY_IO_FD_TABLE_H_
