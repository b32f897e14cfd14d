// NfsFile: an open NFS file as a ferry::FdTable handle (ReadAt, WriteAt,
// Size), plus the UNSTABLE-write / COMMIT protocol with write-verifier
// checks.
//
//   FERRY_ASSIGN_OR_RETURN(std::shared_ptr<ferry::nfs::NfsFile> f,
//                          ferry::nfs::NfsFile::Open(*client, "dir/big.bin"));
//   ferry::FdTable<ferry::nfs::NfsFile> table;
//   FERRY_ASSIGN_OR_RETURN(auto opened, table.Open("dir/big.bin", f, ferry::OpenMode::kRead));
//   FERRY_ASSIGN_OR_RETURN(size_t n, table.PRead(opened.fd, offset, absl::MakeSpan(buf)));
//
// Reads and writes are split into calls of at most 1 MiB (and at most
// FSINFO's rtmax / wtmax: servers advertise up to 64 MiB, more than a
// reply record may hold). A read sends up to 16 of its calls at once.
// Writes go out UNSTABLE (the server may cache them; FILE_SYNC for a
// file written whole in one call, see set_final_size) and remember the
// server's write verifier; Commit() makes them durable and fails with
// DataLoss if the verifier changed (the server restarted and may have lost
// unstable data: the caller must write it again).
//
// Thread-safety: thread-safe; concurrent ReadAt/WriteAt on disjoint ranges
// run in parallel (they are independent RPCs). Blocking: REQUIRES not on an
// I/O thread of the client's Runtime. REQUIRES: the client outlives the file.
#ifndef FERRY_NFS_NFS_FILE_H_
#define FERRY_NFS_NFS_FILE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/base/large_buffer.h"
#include "ferry/base/mutex.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/runtime/future.h"

namespace ferry::nfs {

class NfsFile {
 public:
  // Opens an existing regular file (LOOKUP). FailedPrecondition if it is not
  // a regular file.
  static absl::StatusOr<std::shared_ptr<NfsFile>> Open(NfsClient& client,
                                                       std::string_view relative_path);
  // Creates the file (or truncates an existing one to 0 bytes) with
  // permission bits `mode`. The parent directory must exist.
  static absl::StatusOr<std::shared_ptr<NfsFile>> Create(NfsClient& client,
                                                         std::string_view relative_path,
                                                         uint32_t mode = 0644);

  // Opens by `handle` as a listing described the file, with no LOOKUP:
  // `size` and, where known, `mtime`. The attributes each READ reply
  // brings must still say so; where they show another size or
  // modification time, reads answer FailedPrecondition (the file changed
  // since it was listed). A stale handle reads as NotFound when the path
  // is gone and FailedPrecondition when it names another file now (the
  // file was replaced). What this sees: a change of size or mtime (at the
  // server's time precision) before the last READ, or before
  // ConfirmStillAsListed.
  static std::shared_ptr<NfsFile> OpenListed(NfsClient& client, FileHandle handle,
                                             std::string path, uint64_t size,
                                             std::optional<absl::Time> mtime);

  NfsFile(NfsClient& client, FileHandle handle, std::string path, uint64_t size);
  NfsFile(const NfsFile&) = delete;
  NfsFile& operator=(const NfsFile&) = delete;

  // FdHandle: up to buf.size() bytes at `offset`; fewer only at the end.
  // A lone reader of pieces of at most one call (1 MiB), going through the
  // file in order, is read ahead: once a read continues the one before it,
  // READs for the next windows (1 MiB, doubling to 8 MiB; two at most, never
  // past the size at open) are sent before it asks, into buffers from the
  // Runtime's pool, and its reads are copied from them. Once two ReadAt
  // calls have overlapped (the copy engine's workers), the file never reads
  // ahead again; a read outside the windows drops them. Bytes read ahead
  // are never served after a write through this handle, past a short or
  // failed READ (the server is asked again), or when older than 3 s (the
  // Linux client's acregmin: what another client wrote shows as soon).
  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf);
  // FdHandle: writes all of `data` at `offset` (UNSTABLE, see
  // set_final_size) and returns its size.
  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data);
  // As ReadAt, into a local file: up to `n` bytes at `offset`, written to
  // `fd` at `fd_offset` as they come off the socket (splice, by the pool's
  // I/O thread: NfsClient::ReadIntoFileAsync). Returns how many; fewer
  // only at the end. Each write under `write_lock`, if given.
  // InvalidArgument for a descriptor in append mode.
  absl::StatusOr<size_t> ReadIntoDescriptor(int64_t offset, size_t n, int fd, int64_t fd_offset,
                                            Mutex* write_lock = nullptr);
  // As WriteAt, with the data `n` bytes of the local file `fd` from
  // `fd_offset`, sent by sendfile (NfsClient::WriteFromFile).
  absl::StatusOr<size_t> WriteFromDescriptor(int64_t offset, int fd, int64_t fd_offset, size_t n);
  // FdHandle: the size (GETATTR; includes this handle's writes).
  absl::StatusOr<int64_t> Size();

  // For a file opened listed: where no READ reply has shown its attributes
  // yet (an empty file reads nothing; a server may send none), one
  // GETATTR checks it as a READ would. OK for any other file.
  absl::Status ConfirmStillAsListed();

  // COMMITs every write made through this handle; DataLoss if the server's
  // write verifier changed since a write (data must be written again).
  // Nothing to do (no round trip) where every write went FILE_SYNC.
  absl::Status Commit();

  // The size the file is being written to, where the writer knows it. A
  // write of all of it in one WRITE then goes FILE_SYNC, leaving Commit
  // nothing to do: a small file's copy makes one round trip fewer (the
  // server syncs once either way). Call before the writes.
  void set_final_size(uint64_t size) { final_size_.store(size, std::memory_order_relaxed); }

  const FileHandle& handle() const { return handle_; }
  const std::string& path() const { return path_; }
  // The size when opened (from LOOKUP's attributes, or the listing's).
  uint64_t size_at_open() const { return size_at_open_; }

 private:
  // READs sent ahead for bytes [start, start + size) into `buffer` (shared
  // with their callbacks: a window let go before its READs end stays
  // alive until they do, then goes back to the pool). Once settled: the
  // first `valid` bytes are the file's (none after a failed READ, or a
  // listed file's attributes that no longer match).
  struct Window {
    int64_t start = 0;
    size_t size = 0;
    absl::Time sent;
    uint64_t writes = 0;  // writes_ when sent: a write since makes it stale
    std::shared_ptr<LargeBuffer> buffer;
    std::vector<Future<ReadIntoReply>> calls;
    bool settled = false;
    size_t valid = 0;
  };
  // ReadAt for a piece of at most one call: from the windows where they hold
  // it, the rest from the server; then the next windows sent if the read
  // was sequential. REQUIRES: offset >= 0.
  absl::StatusOr<size_t> ReadThroughWindows(int64_t offset, absl::Span<char> buf)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_ahead_mu_);
  // False if no buffer could be had (then nothing was sent).
  bool SendWindow(int64_t start, size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_ahead_mu_);
  // Waits for `w`'s READs and finds how many bytes from its start are
  // good: up to the first short, final or failed READ (whose error the
  // server gives again when the reader is sent to it).
  void Settle(Window& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_ahead_mu_);
  // As ReadAt, from the server.
  absl::StatusOr<size_t> ReadFromServer(int64_t offset, absl::Span<char> buf);
  // Bytes one READ asks for at most: 1 MiB, or the server's rtmax if less.
  size_t MaxReadCall() const;

  // What OpenListed was told; reads check the server's attributes against it.
  struct Listed {
    uint64_t size = 0;
    std::optional<absl::Time> mtime;
  };
  absl::Status CheckStillAsListed(const Fattr3& now) const;
  // Up to `n` bytes at `offset` in READs of at most rtmax, up to
  // kReadsInFlight at once, each sent by `read(at, want, done)` for the
  // bytes [at, at + want) of the destination.
  absl::StatusOr<size_t> ReadInCalls(
      int64_t offset, size_t n,
      absl::FunctionRef<void(size_t at, size_t want, Callback<ReadIntoReply> done)> read);
  // `n` bytes at `offset` in WRITEs of at most wtmax, each sent by
  // `write(done, want)`; a short one is followed by the rest.
  absl::StatusOr<size_t> WriteInCalls(
      int64_t offset, size_t n,
      absl::FunctionRef<absl::StatusOr<WriteReply>(size_t done, size_t want, StableHow stable)>
          write);
  // Records a WRITE's reply (unstable data, the verifier); DataLoss if the
  // server took none of the `want` bytes.
  absl::Status NoteWrite(const WriteReply& w, size_t want);
  // What a listed file's STALE handle means: removed (NotFound) or
  // replaced (FailedPrecondition), by a LOOKUP of its path.
  absl::Status GoneSinceListed(const absl::Status& stale);

  NfsClient& client_;
  const FileHandle handle_;
  const std::string path_;
  const uint64_t size_at_open_;
  std::optional<Listed> listed_;  // set once, by OpenListed, before any read
  std::atomic<bool> confirmed_{false};  // a READ reply's attributes matched
  // set_final_size's; kNoFinalSize: not known.
  static constexpr uint64_t kNoFinalSize = ~uint64_t{0};
  std::atomic<uint64_t> final_size_{kNoFinalSize};

  // Read-ahead: one sequential reader at a time holds read_ahead_mu_ (a
  // ReadAt that finds it held reads straight from the server).
  Mutex read_ahead_mu_;
  int64_t last_end_ ABSL_GUARDED_BY(read_ahead_mu_) = -1;  // where the last read ended
  size_t window_bytes_ ABSL_GUARDED_BY(read_ahead_mu_) = 0;  // the last window's size
  int short_windows_ ABSL_GUARDED_BY(read_ahead_mu_) = 0;  // cut short before the size at open
  std::deque<Window> windows_ ABSL_GUARDED_BY(read_ahead_mu_);  // in file order, contiguous
  std::atomic<int> reading_{0};         // ReadAt calls under way
  std::atomic<bool> shared_{false};     // two have overlapped: no more read-ahead
  std::atomic<uint64_t> writes_{0};     // +1 as each WRITE starts and as it ends

  Mutex mu_;
  std::optional<uint64_t> write_verifier_ ABSL_GUARDED_BY(mu_);
  bool verifier_changed_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS_FILE_H_
