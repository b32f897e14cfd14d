// SessionPool: exclusive, stateful connections for protocols that answer
// one request at a time and keep state on the connection (iRODS: a login,
// open data-object descriptors).
//
// RpcPool multiplexes calls over shared connections; that cannot carry a
// protocol whose descriptors live on one connection. A SessionPool instead
// lends a whole connection: a caller leases a Session for one exchange (a
// stat, a query page) or for as long as server-side state lives on it (an
// open stream), and the lease returns it. The handshake and login run once
// per connection (on_connect), then the connection is reused: fixed costs
// paid once, as the rule-engine report in the seeds asks.
//
//   ferry::SessionPoolOptions o;
//   o.host = "127.0.0.1"; o.port = 1247;
//   o.framing = my_framing;            // how records are delimited
//   o.max_sessions = 8;
//   o.on_connect = [](ferry::Session& s) { return Login(s); };
//   FERRY_ASSIGN_OR_RETURN(auto pool, ferry::SessionPool::Create(std::move(o)));
//   FERRY_ASSIGN_OR_RETURN(ferry::SessionLease lease, pool->Acquire());
//   FERRY_ASSIGN_OR_RETURN(std::string reply, lease->Exchange(request));
//
// I/O is blocking with deadlines (poll), on the caller's thread: callers are
// the transfer engine's workers and binding threads, never I/O threads. A
// session whose exchange failed is closed when its lease ends, never reused
// (its stream position is unknown); the pool opens a fresh one on demand.
#ifndef FERRY_RPC_SESSION_POOL_H_
#define FERRY_RPC_SESSION_POOL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/base/mutex.h"
#include "ferry/rpc/framing.h"

namespace ferry {
namespace internal {
class SplicePipe;
}  // namespace internal

// One connection. Not thread-safe: it belongs to one lease holder at a time.
class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Writes one record (framed). Unavailable if the connection fails;
  // DeadlineExceeded after io_timeout. Either marks the session broken.
  absl::Status Send(std::string_view record);
  // Reads the next record. Unavailable if the peer closed (mid-record:
  // "truncated"), DataLoss for a malformed stream, DeadlineExceeded after
  // io_timeout; each marks the session broken.
  absl::StatusOr<std::string> Receive();
  // Send, then Receive.
  absl::StatusOr<std::string> Exchange(std::string_view record);
  // Writes raw bytes outside the framing (iRODS's 4-byte collection-stat
  // acknowledgement).
  absl::Status SendRaw(std::string_view bytes);
  // Writes `parts` back to back, outside the framing, in gather writes: a
  // protocol whose records carry their own framing (header-described, such
  // as iRODS) sends a large payload from the caller's buffer, uncopied.
  absl::Status SendRawParts(absl::Span<const std::string_view> parts);
  // Writes `n` bytes of the file `in_fd` from `offset`, outside the
  // framing, with sendfile: the kernel moves them from the page cache to
  // the socket, never through this process (an iRODS write's payload from
  // a local file). Returns the bytes sent: fewer than `n` only if the file
  // ended first, which breaks the session (the record it began is cut
  // short). Errors as SendRaw's. SIGPIPE, which sendfile raises on a reset
  // connection (it has no MSG_NOSIGNAL), is held for the calling thread
  // and taken back: the error is returned, the program gets no signal.
  absl::StatusOr<size_t> SendFileRange(int in_fd, int64_t offset, size_t n);
  // True when no received byte waits in the session (no record read ahead,
  // nothing of a partial one buffered): the next bytes on the connection
  // may then be read raw by ReceiveRaw.
  bool at_record_boundary() const;
  // Reads exactly `n` bytes from the connection into `dst`, outside the
  // framing (a protocol that parses its own header reads a large payload
  // straight into the caller's buffer). REQUIRES: at_record_boundary()
  // before the first raw read of a record. Errors as Receive's.
  absl::Status ReceiveRaw(char* dst, size_t n);
  // As ReceiveRaw, `to.size` bytes into the local file `to.fd` at
  // `to.offset` (each write under to.write_lock, if given): the bytes go
  // from the socket to the file by splice, through a pipe of the
  // session's, never through this process (through its memory where the
  // file or the socket takes no splice). A write of the file that fails
  // returns the file's error (never Unavailable, and naming the offset)
  // and breaks the session: the rest of the bytes are left unread. REQUIRES
  // as ReceiveRaw's; `to.fd` not in append mode.
  absl::Status ReceiveRawIntoFile(const FileRange& to);
  // Counts one exchange done by raw calls (as Receive does).
  void NoteRawExchange() { ++exchanges_; }

  // The session's state can no longer be trusted: close it at lease end.
  void MarkBroken() { broken_ = true; }
  bool broken() const { return broken_; }
  // Exchanges since the connection opened (0 right after on_connect).
  uint64_t exchanges() const { return exchanges_; }
  // "host:port", for messages.
  const std::string& target() const { return target_; }

 private:
  friend class SessionPool;
  Session(int fd, std::string target, std::shared_ptr<const Framing> framing,
          absl::Duration io_timeout);
  // One recv of up to n bytes, polling until `deadline`: how many came,
  // or an error (the peer closed: "mid-reply" if `mid_record`), which
  // marks the session broken.
  absl::StatusOr<size_t> RecvSome(char* dst, size_t n, absl::Time deadline, bool mid_record);
  // Writes every part, in gather writes, within io_timeout (by `deadline`).
  absl::Status WriteAll(absl::Span<const std::string_view> parts);
  absl::Status WriteAllBy(absl::Span<const std::string_view> parts, absl::Time deadline);
  // SendFileRange's way where sendfile cannot read the file: pread and
  // write, `n` bytes from `offset`; as SendFileRange otherwise.
  absl::StatusOr<size_t> SendFileRangeByCopy(int in_fd, int64_t offset, size_t n, absl::Time deadline);

  // ReceiveRawIntoFile's way where splice cannot be used: recv and
  // pwrite, `n` bytes to `offset`, by `deadline`.
  absl::Status ReceiveRawIntoFileByCopy(const FileRange& to, absl::Time deadline);

  int fd_;
  const std::string target_;
  std::unique_ptr<internal::SplicePipe> splice_;  // made by the first ReceiveRawIntoFile
  const std::shared_ptr<const Framing> framing_;
  std::unique_ptr<RecordReader> reader_;
  std::string out_;
  std::vector<std::string> ready_;  // records read ahead of their Receive
  size_t next_ready_ = 0;
  const absl::Duration io_timeout_;
  bool broken_ = false;
  uint64_t exchanges_ = 0;
};

struct SessionPoolOptions {
  // The server; `host` is an address or a name (resolved at each connect).
  std::string host;
  uint16_t port = 0;
  // How records are delimited. Required.
  std::shared_ptr<const Framing> framing;
  // Connections open at most; Acquire waits when all are leased.
  int max_sessions = 4;
  // Idle connections kept for reuse (the rest are closed when returned).
  int max_idle_sessions = 4;
  absl::Duration connect_timeout = absl::Seconds(10);
  // Each Send or Receive; a stalled server never hangs a caller.
  absl::Duration io_timeout = absl::Seconds(60);
  // Runs on each new connection before it is leased (handshake, login);
  // an error closes it and Acquire returns that error.
  std::function<absl::Status(Session&)> on_connect;
  // Runs on a healthy session before the pool closes it (a goodbye).
  std::function<void(Session&)> on_close;
};

class SessionPool;

// A leased session; returns it to its pool when destroyed. Move-only.
class SessionLease {
 public:
  SessionLease() = default;
  SessionLease(SessionLease&& other) noexcept;
  SessionLease& operator=(SessionLease&& other) noexcept;
  ~SessionLease();
  Session* operator->() const { return session_.get(); }
  Session& operator*() const { return *session_; }
  explicit operator bool() const { return session_ != nullptr; }
  // Returns the session now (to the idle list, or closed if broken).
  void Release();

 private:
  friend class SessionPool;
  SessionLease(SessionPool* pool, std::unique_ptr<Session> session)
      : pool_(pool), session_(std::move(session)) {}
  SessionPool* pool_ = nullptr;
  std::unique_ptr<Session> session_;
};

// Thread-safe. REQUIRES: every lease ends before the pool is destroyed.
class SessionPool {
 public:
  // InvalidArgument for a missing framing, empty host, port 0 or
  // max_sessions < 1. Opens nothing yet.
  static absl::StatusOr<std::unique_ptr<SessionPool>> Create(SessionPoolOptions options);
  ~SessionPool();
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // An idle session, or a new one (connect + on_connect) while fewer than
  // max_sessions are open, else waits for a lease to end. Unavailable (with
  // host:port) when the server cannot be reached; DeadlineExceeded when
  // `deadline` passes first.
  absl::StatusOr<SessionLease> Acquire(absl::Time deadline);
  // As above, without a fixed deadline but never stuck: DeadlineExceeded
  // once no lease has ended for io_timeout while every session is leased
  // (leases held as long as a caller likes, an open file's stream, must
  // not stall every other call for good; a pool whose leases turn over
  // keeps its waiters waiting).
  absl::StatusOr<SessionLease> Acquire();

  int open_sessions() const;
  int idle_sessions() const;
  const std::string& target() const { return target_; }

 private:
  friend class SessionLease;
  explicit SessionPool(SessionPoolOptions options);
  absl::StatusOr<SessionLease> AcquireUntil(absl::Time deadline, bool extend_on_return);
  absl::StatusOr<std::unique_ptr<Session>> Connect();
  void Return(std::unique_ptr<Session> session);
  void Close(std::unique_ptr<Session> session);

  const SessionPoolOptions options_;
  const std::string target_;
  mutable Mutex mu_;
  CondVar returned_;
  std::vector<std::unique_ptr<Session>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // idle + leased + connecting
};

}  // namespace ferry

#endif  // FERRY_RPC_SESSION_POOL_H_
