// RpcPool's connections: a Connection slot (strand, timers) outlives the
// Sessions (one TCP connection's socket and buffers) it reconnects through;
// ConnShared is the slot's call bookkeeping under PoolCore::mu_. The
// connecting, losing and reconnecting work is rpc_connection.cc's.
// Private to RpcPool (rpc_pool_core.h).
#ifndef FERRY_SRC_RPC_RPC_CONNECTION_H_
#define FERRY_SRC_RPC_RPC_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "asio/buffer.hpp"
#include "asio/io_context.hpp"
#include "asio/ip/tcp.hpp"
#include "asio/steady_timer.hpp"
#include "asio/strand.hpp"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_pool.h"
#include "rpc/rpc_call.h"
#include "rpc/splice_pipe.h"

namespace ferry::rpc_pool_internal {

using Strand = asio::strand<asio::io_context::executor_type>;

class PoolCore;
struct Session;

// kIdle: not opened yet (RpcPoolOptions::connections_at_start).
enum class ConnState : uint8_t { kIdle, kConnecting, kHandshaking, kReady, kBackoff, kClosed };

inline const char* ConnStateName(ConnState s) {
  switch (s) {
    case ConnState::kIdle: return "idle";
    case ConnState::kConnecting: return "connecting";
    case ConnState::kHandshaking: return "handshaking";
    case ConnState::kReady: return "ready";
    case ConnState::kBackoff: return "backoff";
    case ConnState::kClosed: return "closed";
  }
  return "unknown";
}

// A connection's call bookkeeping; guarded by PoolCore::mu_ (it lives in a
// guarded vector).
struct ConnShared {
  ConnState state = ConnState::kConnecting;
  uint64_t session_gen = 0;   // of the current session
  CallList pending;           // assigned here, not yet written
  absl::flat_hash_map<uint32_t, Call*> by_xid;  // kById in flight; null = abandoned
  CallList in_order;          // kInOrder in flight (at most one)
  int load = 0;               // pending + live in flight
  int abandoned = 0;          // tombstones in by_xid
  bool write_kicked = false;  // a DoWrite is posted or a write is running
  bool ever_ready = false;
  int consecutive_failures = 0;
  // When the current session last received a byte (or became ready): a
  // call unanswered past its deadline on a connection silent since it was
  // sent means the connection is dead, not the call slow.
  SteadyTime last_heard{};
  // The ready session, for a caller that writes its call itself
  // (PoolCore::SendByCallerLocked): set when it becomes ready, cleared
  // before its socket is closed (ClearSenderThenClose), so a caller
  // holding the lock writes to its open socket. Holding it keeps the
  // session, and so its descriptor, alive.
  std::shared_ptr<Session> sender;
  // The framed bytes of such a write that the socket did not take: the
  // strand's next DoWrite sends them first (write_kicked is set meanwhile).
  // Empty otherwise; the caller frames its record in it.
  std::string sent_by_caller_rest;
  RpcConnectionMetrics metrics;
};

// A connection slot. Strand-owned fields only; see ConnShared for the rest.
struct Connection {
  Connection(int i, asio::io_context& io)
      : index(i), strand(asio::make_strand(io)), backoff_timer(io), connect_timer(io) {}
  const int index;
  Strand strand;
  asio::steady_timer backoff_timer;
  asio::steady_timer connect_timer;  // bounds connect + handshake
  std::shared_ptr<Session> session;  // the current one, or null
  uint64_t next_session_gen = 0;
};

// Counts an asynchronous operation of the pool for the destructor to wait
// on; released when the handler holding it is destroyed.
class OpToken {
 public:
  explicit OpToken(PoolCore* pool);
  OpToken(OpToken&& o) noexcept : pool_(std::exchange(o.pool_, nullptr)) {}
  OpToken& operator=(OpToken&&) = delete;
  ~OpToken();

 private:
  PoolCore* pool_;
};

// A request taken for a write: its own bytes, or bytes shared with its call.
struct OutRecord {
  std::string owned;
  std::shared_ptr<const std::string> shared;
  // The caller's bytes that go inside the record at payload_at.
  std::string_view payload;
  size_t payload_at = 0;
  // Or the bytes of a file (fd -1: none).
  RpcCallOptions::FilePayload payload_file;
  std::string_view bytes() const { return shared ? std::string_view(*shared) : owned; }
};

// A write whose payload comes from a file (RpcCallOptions::payload_file),
// alone on its connection while it lasts: the framing and the request's
// head (in Session::write_buf), then the file's bytes by sendfile, then
// the request's tail.
struct FileWrite {
  Call* call = nullptr;     // pinned (Call::writing) until the write ends
  int fd = -1;
  off_t offset = 0;         // the next file byte to send
  size_t left = 0;          // file bytes not sent yet
  size_t size = 0;          // file bytes in all
  size_t sent = 0;          // bytes on the wire so far, for the metrics
};

// One TCP connection's lifetime: its socket and buffers. Shared by the
// handlers of its pending operations. Strand-owned (Connection::strand).
struct Session final : RpcHandshakeChannel, std::enable_shared_from_this<Session> {
  Session(PoolCore* pool, Connection* conn, uint64_t gen);
  ~Session() override;

  void Exchange(std::string record, Callback<std::string> done) override;
  std::string_view target() const override;
  int connection_index() const override { return conn->index; }

  PoolCore* const pool;
  Connection* const conn;
  const uint64_t gen;
  asio::ip::tcp::socket socket;
  std::unique_ptr<RecordReader> reader;
  std::unique_ptr<char[]> read_buf;
  // One write in progress: the framing bytes (and small records, copied),
  // the records it sends (owned, or shared with a call that may resend),
  // and the gather list over both. All kept until the write completes.
  std::string write_buf;
  std::vector<OutRecord> write_scratch;
  std::vector<WirePiece> write_pieces;
  std::vector<asio::const_buffer> write_iov;
  std::vector<std::string> records;        // records of one read
  // The call whose reply the reader is placing (Call::placing), ended only
  // by this strand: when its record is whole, or after the socket closed.
  Call* placing_call = nullptr;
  // The calls of the write in progress whose payload it sends from the
  // caller's memory (Call::writing): ended only by this strand, once the
  // write is done or the socket closed.
  std::vector<Call*> writing_calls;
  FileWrite file_write;
  // Moves placed bytes from the socket into a file (RpcPlacement::file);
  // its pipe is made on first use. splice_off: this socket takes no
  // splice; placement_splice_off: the current placement's file takes
  // none, or no pipe could be made for it. Placed bytes are then read
  // and written from memory.
  internal::SplicePipe splice;
  bool splice_off = false;
  bool placement_splice_off = false;
  // Spliced bytes not yet in RpcMetrics::bytes_spliced (added under the
  // pool's lock with the read's other counts).
  size_t spliced_unreported = 0;
  // Whether to place the incomplete record has been decided.
  bool placement_decided = false;
  // The last whole reply was placed: the next read at a record boundary is
  // short, so the next reply's bulk is placed rather than buffered first.
  bool expect_placed = false;
  std::vector<Completion> completions;     // of one read
  Kicks kicks;                  // connections to start writing
  bool dead = false;
  bool ready = false;
  bool writing = false;
  SteadyTime ready_at{};
  Callback<std::string> exchange_done;     // the handshake's pending Exchange
};

}  // namespace ferry::rpc_pool_internal

#endif  // FERRY_SRC_RPC_RPC_CONNECTION_H_
