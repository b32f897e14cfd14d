// RpcPool: a pipelined pool of TCP connections for request/response protocols.
//
// The engine behind ferry's crawls: a userspace NFS client walks a tree 50x
// faster than the kernel's by keeping many calls in flight on several
// connections at once instead of one call at a time on one connection.
// RpcPool knows no protocol. It writes request records through a Framing,
// reads reply records back, and finds the call each reply belongs to:
//   - kById: bytes 0..3 of every record are a 32-bit id (the xid of ONC RPC).
//     The pool chooses the id and overwrites those 4 bytes of the request;
//     replies may come back in any order, up to max_in_flight_per_connection
//     calls share a connection.
//   - kInOrder: for protocols without ids (iRODS). One call in flight per
//     connection; the next record read is its reply.
//
//   ferry::Runtime rt;
//   ferry::RpcPoolOptions o;
//   o.host = "10.0.0.5";
//   o.port = 2049;
//   o.framing = ferry::NewRecordMarkingFraming({});
//   o.connections = 4;
//   o.max_in_flight_per_connection = 64;
//   FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::RpcPool> pool,
//                          ferry::RpcPool::Create(rt, std::move(o)));
//   // The first 4 bytes of `call` are overwritten with the pool's xid.
//   pool->CallAsync(std::move(call), [](absl::StatusOr<std::string> reply) {
//     if (!reply.ok()) { /* Unavailable, DeadlineExceeded, DataLoss... */ }
//   }, {.timeout = absl::Seconds(5), .idempotent = true});
//   absl::StatusOr<std::string> r = pool->CallBlocking(std::move(other_call));
//
// Connections are opened in the background when the pool is created and
// re-opened (capped exponential back-off) when lost. A call that finds a
// connection idle is written at once by the calling thread (a small one
// without a payload: one non-blocking send), so a caller making one call
// at a time costs the I/O thread only its reply's wake-up; calls that
// follow while it is busy are written together by the I/O thread. Calls that find every
// connection at its in-flight cap wait in a bounded queue (by count and by
// bytes) or, if the caller says so, fail with ResourceExhausted. A call ends
// exactly once: with its reply, or with an error:
//   DeadlineExceeded  its timeout passed: queued that long, or written and
//                     unanswered that long after the write (an idempotent
//                     call is first sent once more, with a new id and its
//                     timeout again; a connection that heard nothing since
//                     such a call went out is closed and replaced);
//   Cancelled         Cancel(), or the pool was destroyed;
//   Unavailable       its connection was lost while it was in flight and it
//                     was not idempotent (or ran out of attempts/retry
//                     budget), or no connection could be opened to host:port;
//   DataLoss          the server sent malformed data on its connection;
//   ResourceExhausted back-pressure, when the caller asked not to wait;
//   InvalidArgument   a kById request shorter than 4 bytes;
//   other codes       from the on-connect handshake, when it fails.
#ifndef FERRY_RPC_RPC_POOL_H_
#define FERRY_RPC_RPC_POOL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/base/clock.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_metrics.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"

namespace ferry {

// How a reply finds its call.
enum class RpcReplyMatching {
  // A 32-bit id in bytes 0..3 of each record (big-endian on the wire, as an
  // ONC RPC xid; the pool only compares the bytes). Many calls in flight.
  kById,
  // No id: one call in flight per connection and the next record is its reply.
  kInOrder,
};

// What a call does when every connection is at its in-flight cap.
enum class RpcWhenBusy {
  // Wait in the pool's bounded queue. If the queue itself is full (count or
  // bytes), CallAsync/Call complete with ResourceExhausted (they never
  // block); CallBlocking blocks until there is room or its deadline passes.
  kQueue,
  // Complete with ResourceExhausted unless a ready connection can take the
  // call now (and no earlier call is queued). For callers that shed load,
  // e.g. speculative read-ahead. Before the first connection is up, this
  // rejects every call.
  kFail,
};

// The raw record exchange offered to the on-connect handshake, before the
// connection carries calls. Records go through the pool's Framing; no id is
// stamped or matched. Valid until the hook's `done` is called (or dropped).
// Thread-safe; its callbacks run on the connection's strand.
class RpcHandshakeChannel {
 public:
  virtual ~RpcHandshakeChannel() = default;
  // Writes `record` and completes `done` with the next record the server
  // sends. One Exchange at a time: a second one before the first completes
  // gets FailedPrecondition. Unavailable if the connection fails meanwhile.
  virtual void Exchange(std::string record, Callback<std::string> done) = 0;
  // "host:port" of the peer, for messages.
  virtual std::string_view target() const = 0;
  // Which of the pool's connections this is (0-based), for logs.
  virtual int connection_index() const = 0;
};

// Runs once on each new connection before it carries calls (a login, a
// protocol version exchange). It must call `done` exactly once (from any
// thread); OK makes the connection ready, an error closes it and counts as a
// failed connect attempt (calls queued when every attempt has failed get
// this error, annotated with host:port). Bounded by connect_timeout. Called
// on an I/O thread: it must not block.
using RpcHandshake =
    std::function<void(RpcHandshakeChannel& channel, absl::AnyInvocable<void(absl::Status)> done)>;

struct RpcPoolOptions {
  // The server. `host` is an IP address or a name (names are resolved on the
  // Runtime's blocking pool at each connect attempt).
  std::string host;
  uint16_t port = 0;
  // How records are delimited. Required.
  std::shared_ptr<const Framing> framing;
  RpcReplyMatching matching = RpcReplyMatching::kById;

  // TCP connections kept open. 4 saturate a typical NFS server's per-client
  // queue without looking like a connection storm.
  int connections = 4;
  // Calls in flight on one connection (kById). 64 covers a 1 ms round trip
  // at 64k calls/s per connection; ganesha accepts far more. kInOrder: 1.
  int max_in_flight_per_connection = 64;
  // Connections opened when the pool is created; 0 (or >= `connections`):
  // all of them. The others open one at a time, each once every open
  // connection is ready and either calls queue or the least loaded one has
  // more than 3 calls in flight (1 for kInOrder): a caller making a few
  // calls at a time (a small get: MOUNT's answer, GETATTR, FSINFO and a
  // LOOKUP together, a READ) connects once, while a pipelined transfer or
  // crawl opens them all within its first calls.
  // WaitUntilReady(n) opens up to n.
  int connections_at_start = 0;

  // The queue of calls waiting for a connection slot, bounded by count and
  // by request bytes so memory never grows without bound. A single request
  // larger than max_queued_bytes is still accepted when the queue is empty.
  size_t max_queued_calls = 4096;
  size_t max_queued_bytes = size_t{64} << 20;
  // Default for RpcCallOptions::when_busy.
  RpcWhenBusy when_busy = RpcWhenBusy::kQueue;

  // Default per-call timeout: the longest a call waits in the queue, and
  // the longest it waits for its reply after it is written (measured from
  // each write, so a call queued behind a busy connection still gets the
  // whole timeout from the server). InfiniteDuration for none. A stalled
  // server must never hang a caller: keep one.
  absl::Duration default_timeout = absl::Seconds(60);

  // Each connect attempt (TCP connect + handshake) gets this long.
  absl::Duration connect_timeout = absl::Seconds(10);
  // Back-off between attempts: 0 before the first retry after losing a
  // healthy connection, then initial_backoff doubling up to max_backoff.
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(5);
  // When every connection has failed this many consecutive attempts (and
  // none has ever been ready), queued calls fail with Unavailable naming
  // host:port and new calls fail at once, until a connection succeeds
  // (connections keep retrying in the background). A pool that has been
  // connected rides out an outage instead: its calls wait for a reconnect
  // until their deadlines.
  int max_connect_attempts = 4;

  // Attempts for an idempotent call (RpcCallOptions::max_attempts = 0).
  int max_attempts = 3;
  // Pool-wide retry budget, a token bucket: each lost connection whose
  // calls are sent again takes one token (however many idempotent calls it
  // had in flight), each successful call gives back
  // `retry_budget_refill_per_success` (capped at `retry_budget_tokens`,
  // which is also the start). Stops retry storms against a server that
  // keeps resetting connections (as gRPC's throttle).
  double retry_budget_tokens = 10;
  double retry_budget_refill_per_success = 0.1;

  // Optional; see RpcHandshake.
  RpcHandshake on_connect;

  // Read for metrics (queue time, round trip). Deadlines and back-off run on
  // the io_context's steady timers (real time): sockets do not follow a
  // ManualClock. Null = the real monotonic clock.
  const Clock* clock = nullptr;

  // Bytes read from the socket at a time. 64 KiB holds hundreds of small
  // replies, so one read and one lock serve many calls.
  size_t read_buffer_bytes = size_t{64} << 10;
};

// Where a reply's bulk bytes go, decided by an RpcReplyPlacer.
struct RpcPlacement {
  enum class Decision {
    kReadWhole,  // the reply is read into its record as usual
    kAskAgain,   // ask again when more of the record has arrived
    kPlace,      // bytes [offset, offset + dest.size()) of the record go to dest
  };
  Decision decision = Decision::kReadWhole;
  size_t offset = 0;
  absl::Span<char> dest;
  // Or, with `dest` empty, the bytes [offset, offset + file.size) go into
  // a local file: `file.fd` from `file.offset`, moved by the kernel from
  // the socket (splice) without passing through this process where 64 KiB
  // or more are still to come (fewer are read and written), on the I/O
  // thread (a file the page cache takes without waiting for a disk is
  // best). A write of the file that fails ends the call with that error
  // once its reply is in (the reply's other bytes are still read, so the
  // connection and its other calls go on); it is not sent again: never
  // Unavailable (DataLoss instead), and named as the local file's. `fd`
  // must stay open until the call's callback runs, and not be in append
  // mode; a file whose writes may wait on another machine (a network or
  // FUSE filesystem) would hold up the I/O thread and is best not placed.
  FileRange file;
};

// Decides, from the first bytes of a call's reply record to arrive (its id
// included), whether the pool reads the reply's bulk bytes (an NFS READ's
// data) from the socket straight into the caller's memory, instead of
// copying them through the record: the bytes then cross user space once
// (or, placed in a file, never: RpcPlacement::file).
// The placed bytes are absent from the record the call ends with (its bytes
// after the range follow its bytes before it), so the caller must know
// whether it placed. A record that ends inside the range is DataLoss.
//
// Asked on an I/O thread under the pool's lock, only while the record is
// incomplete and only when the framing can place (record marking, length
// prefix; kById): it must be quick, must not block or call the pool, and
// may be asked again for each attempt of the call (then the bytes are
// placed again). A placement the call's reply does not complete (its
// connection was lost under it, and the call may be sent again) is voided
// by asking the placer once more with an empty prefix, whose answer is
// ignored. `dest` must stay valid until the call's callback runs;
// the pool writes it only before that. A call that ends in error may leave
// any bytes in `dest`.
using RpcReplyPlacer = std::function<RpcPlacement(std::string_view record_prefix)>;

struct RpcCallOptions {
  // Queue wait, and reply wait after each write (see
  // RpcPoolOptions::default_timeout). nullopt: that default.
  std::optional<absl::Duration> timeout;
  // May the call be sent again after its connection was lost while it was
  // in flight? Only for calls that are safe to repeat (NFS GETATTR, READ...).
  // A retry keeps its id, for the server's duplicate request cache. Never
  // retried when the connection was dropped for malformed data (DataLoss).
  bool idempotent = false;
  // Attempts in all, when idempotent; 0: RpcPoolOptions::max_attempts.
  int max_attempts = 0;
  // nullopt: RpcPoolOptions::when_busy.
  std::optional<RpcWhenBusy> when_busy;
  // Optional; see RpcReplyPlacer.
  RpcReplyPlacer placer;
  // Optional: bytes sent inside the request's record from where they are,
  // instead of being copied into `request` (an NFS WRITE's data). The
  // record on the wire is request[0, payload_at) + payload +
  // request[payload_at, end). `payload` must stay valid until the call's
  // callback runs: the pool ends a call only once no write of it is in
  // progress (a cancel or deadline during one closes the connection, and
  // the call ends when it is closed; a reply that comes first is held
  // until the write is done). InvalidArgument unless payload_at <=
  // request's size (and, for kById, payload_at >= 4: the id is stamped in
  // the request).
  std::string_view payload;
  size_t payload_at = 0;
  // Optional, instead of `payload`: the payload is `size` bytes of the file
  // `fd` from `offset`, sent with sendfile, never through this process (an
  // NFS WRITE from a local file). Same place (payload_at) and lifetime rule
  // (for `fd`) as `payload`. A file that ends before `size` bytes fails the
  // call with FailedPrecondition ("... ended after N of M bytes"); one that
  // cannot be read, DataLoss, or Unimplemented where its filesystem cannot
  // feed sendfile at all (send its bytes instead). Zeros complete the
  // record then (the server gets them), so the connection and its other
  // calls go on; the call is not sent again. Sent from the I/O thread: a
  // file not in the page cache should be read ahead by the caller. The
  // framing must be able to put all its bytes before the record
  // (Framing::PrefixFor): InvalidArgument otherwise, as for both payloads
  // or a negative offset.
  using FilePayload = FileRange;
  FilePayload payload_file;
};

// Identifies a call for Cancel. Never 0 for a real call; never reused within
// a pool in practice (a 32-bit generation per slot).
using RpcCallId = uint64_t;

// Thread-safe: every method may be called from any thread, including from
// completion callbacks (except the destructor). Completion callbacks run on
// the Runtime's I/O threads, never inside CallAsync or Cancel, and must not
// block. REQUIRES: the Runtime outlives the pool.
class RpcPool {
 public:
  // Validates `options` (InvalidArgument: no framing, empty host, port 0,
  // connections < 1, ...) and starts connecting in the background; returns
  // at once.
  static absl::StatusOr<std::unique_ptr<RpcPool>> Create(Runtime& runtime, RpcPoolOptions options);

  RpcPool(const RpcPool&) = delete;
  RpcPool& operator=(const RpcPool&) = delete;
  // Fails every pending call with Cancelled (their callbacks run before the
  // destructor returns), closes the connections and waits until no handler
  // touches the pool. REQUIRES: not called from a completion callback or the
  // handshake hook of this pool; no other thread is inside (or blocked in) a
  // method of the pool; the Runtime is still alive.
  ~RpcPool();

  // Starts a call; `done` gets the reply record (framing removed, id bytes
  // included) or an error. Returns an id for Cancel. For kById, bytes 0..3
  // of `request` are overwritten with the id.
  RpcCallId CallAsync(std::string request, Callback<std::string> done,
                      const RpcCallOptions& options = {});

  // As CallAsync, with a Future. `id`, if not null, receives the call's id.
  Future<std::string> Call(std::string request, const RpcCallOptions& options = {},
                           RpcCallId* id = nullptr);

  // As CallAsync, blocking until the call ends. With RpcWhenBusy::kQueue it
  // also blocks while the queue is full. REQUIRES: not on an I/O thread of
  // the Runtime.
  absl::StatusOr<std::string> CallBlocking(std::string request, const RpcCallOptions& options = {});

  // Ends the call with Cancelled if it has not ended yet (its callback runs
  // once, on an I/O thread); a reply arriving later is discarded. Returns
  // false if the call had already ended (or `id` is unknown), or is ending
  // already: its reply is in but its payload still being written, or it
  // was cancelled or timed out while its memory was in I/O. Either way its
  // callback may still be to come: memory given to the call (a placer's
  // buffer, a payload) stays the call's until the callback runs. Cancelling a
  // call in flight on a kInOrder connection closes that connection (its next
  // record would otherwise be taken for the next call's reply). So does
  // cancelling (or timing out) a call whose reply is being placed: the call
  // then ends once that connection has stopped reading into its memory.
  bool Cancel(RpcCallId id);

  // Blocks until at least min(`connections`, pool size) connections are
  // ready (handshake done). DeadlineExceeded if `deadline` (wall clock, as
  // absl::Now()) passes first, naming the last connect error if any.
  // Useful before a benchmark or for a kFail caller.
  absl::Status WaitUntilReady(int connections, absl::Time deadline);

  // A snapshot of the pool's and each connection's figures.
  RpcPoolMetrics metrics() const;

  // "host:port", as in messages.
  const std::string& target() const;

 private:
  struct Impl;
  explicit RpcPool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry

#endif  // FERRY_RPC_RPC_POOL_H_
