// RpcPool design.
//
// One mutex (PoolCore::mu_) guards every piece of call bookkeeping: the call
// slab, the wait queue, each connection's pending and in-flight sets, the
// deadline heap, the retry budget and the metrics. Socket work runs on one
// asio strand per connection, on the Runtime's io_context, and touches only
// strand-owned state (the Session: socket, buffers, record reader) outside
// the lock. The hot path takes the lock once per call (CallAsync) and once
// per batch elsewhere: a write takes every call pending on its connection,
// stamps ids and moves them in flight under one lock, then frames them
// outside it into one buffer for one async_write; a read fills a large
// buffer, splits it into records, and matches all of them under one lock.
// Callbacks run outside the lock. One exception to "socket work runs on
// the strand": a call on an idle connection is written by the calling
// thread, one non-blocking send under the lock (SendByCallerLocked), to
// the session ConnShared::sender keeps; the strand takes that session off
// under the lock before it closes the socket, and sends what the socket
// did not take before anything else.
//
// No per-call heap allocation beyond the request/reply strings and the
// callback: Call records come from a slab and are recycled; queues are
// intrusive lists; deadlines live in one indexed binary heap served by one
// steady_timer per pool (re-armed only when a call has an earlier deadline
// than every call before it, rare with one timeout per pool); the in-flight
// map per connection is an open-addressing hash map that keeps its capacity.
//
// Deadlines: a queued call's runs from its acceptance, a written call's from
// its write (DoWrite moves it later), so every request on the wire has the
// whole timeout for its reply. A call still unanswered at its deadline
// ends DeadlineExceeded, except that an idempotent one is first taken off
// its connection and queued again, once, with a new id and a fresh
// deadline. A connection on which nothing arrived since such a call was
// written is silent: it is closed and replaced (ConnShared::last_heard).
//
// A TCP connection's lifetime is a Session, shared by the handlers of its
// pending operations; a Connection slot outlives its sessions and reconnects
// with capped exponential back-off. A call abandoned (deadline, Cancel) while
// in flight leaves a tombstone under its id so that a late reply is
// discarded rather than taken for a protocol error; too many tombstones mean
// the server has stalled and the connection is recycled. kInOrder has no id
// to tombstone, so abandoning its in-flight call recycles the connection.
//
// Shutdown: the destructor fails every call with Cancelled, closes sessions
// and timers on their strands, and waits for the count of live operations
// (posted handlers, timers, sessions) to reach zero.
//
// The files: rpc_call.h (call records, queue, deadline heap, slab),
// rpc_connection.h/.cc (connection slots, sessions, connecting, losing a
// connection), rpc_dispatch.cc (accepting, queueing and dispatching calls;
// abandoning them: deadlines, Cancel), rpc_wire.cc (writing and reading:
// xid stamping and reply matching), rpc_pool_core.cc (construction,
// shutdown, readiness, metrics) and rpc_pool.cc (the public RpcPool).
#ifndef FERRY_SRC_RPC_RPC_POOL_CORE_H_
#define FERRY_SRC_RPC_RPC_POOL_CORE_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "asio/io_context.hpp"
#include "asio/ip/address.hpp"
#include "asio/steady_timer.hpp"
#include "ferry/base/mutex.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/runtime.h"
#include "rpc/rpc_call.h"
#include "rpc/rpc_connection.h"

namespace ferry::rpc_pool_internal {

// Everything behind RpcPool. Thread-safe.
class PoolCore {
 public:
  PoolCore(Runtime& runtime, RpcPoolOptions options);
  ~PoolCore();

  void Start();
  void Shutdown();
  RpcCallId Submit(std::string request, Callback<std::string> done, const RpcCallOptions& o,
                   bool blocking_caller);
  bool Cancel(RpcCallId id);
  absl::Status WaitUntilReady(int n, absl::Time deadline);
  RpcPoolMetrics Metrics() const;
  const std::string& target() const { return target_; }

  // For OpToken and Session.
  void BeginOp() { ops_.fetch_add(1, std::memory_order_relaxed); }
  void EndOp();
  const Framing& framing() const { return *options_.framing; }
  size_t read_buffer_bytes() const { return options_.read_buffer_bytes; }
  void FailAttempt(const std::shared_ptr<Session>& s, absl::Status status);
  // Writes every call pending on `c` (strand); `bytes_written` by the write
  // that just completed, for the metrics.
  void DoWrite(Connection* c, size_t bytes_written);
  // A call's request for the write being built: its bytes moved out, or,
  // when it may be resent, copied (small) or shared (large).
  static OutRecord TakeRequest(Call& call);
  // Frames the session's write_scratch into write_buf and write_iov.
  void FrameWrite(Session& s) const;
  // The write of a record whose payload is a file (FileWrite): the head,
  // then SendFileSome until the file's bytes are out, then the tail.
  void StartFileWrite(const std::shared_ptr<Session>& s);
  void SendFileSome(const std::shared_ptr<Session>& s);
  void SendFileTail(const std::shared_ptr<Session>& s);
  // Completes with zeros a record whose file ended or failed (the call is
  // marked failed): the connection stays in step.
  void SendFileZeros(const std::shared_ptr<Session>& s);
  // Ends a file write, done (`ec` clear: its bytes counted) or failed.
  void EndFileWrite(const std::shared_ptr<Session>& s, const std::error_code& ec);

 private:
  // Strand work of one connection.
  void StartConnect(Connection* c);
  void ConnectTo(const std::shared_ptr<Session>& s, std::vector<asio::ip::tcp::endpoint> endpoints);
  void OnConnected(const std::shared_ptr<Session>& s);
  void BecomeReady(const std::shared_ptr<Session>& s);
  void StartRead(const std::shared_ptr<Session>& s);
  // `direct`: the bytes were read into the reader's DirectTarget.
  void OnRead(const std::shared_ptr<Session>& s, const std::error_code& ec, size_t n, bool direct);
  // The socket is readable and the next bytes go to the reader's
  // DirectFile: splices them there.
  void OnSpliceReady(const std::shared_ptr<Session>& s, const std::error_code& ec);
  // A read's bytes were taken by the reader (framing_status: how that
  // went): handles the records it completed and reads on.
  void AfterRead(const std::shared_ptr<Session>& s, absl::Status framing_status, size_t n);
  // Asks the placer of the call whose reply is arriving whether its bulk
  // goes straight into the caller's memory or a file (RpcReplyPlacer).
  void MaybePlace(const std::shared_ptr<Session>& s);
  // Matches a read's records to calls; returns the error that must drop the
  // connection, if any.
  absl::Status ProcessReplies(const std::shared_ptr<Session>& s, size_t nbytes);
  void OnWritten(const std::shared_ptr<Session>& s, const std::error_code& ec, size_t n);
  // The connection failed after it was established: re-queue, retry or fail
  // its calls and reconnect. `failure`: counts towards back-off.
  void Lost(const std::shared_ptr<Session>& s, absl::StatusCode code, std::string reason,
            bool failure = true);
  void ScheduleReconnect(Connection* c, absl::Duration delay);
  void CloseOnStrand(Connection* c);
  // Strand: takes `s` from the callers' writers (ConnShared::sender), then
  // closes its socket.
  void ClearSenderThenClose(Session& s);
  void ResetSession(Connection* c, uint64_t gen, std::string reason);
  void RunKicks(const Kicks& kicks, const Connection* current);
  void PostCompletion(Callback<std::string> done, absl::Status status);

  // Deadline timer work (timer strand).
  void ArmTimer();
  void OnDeadlines();

  // Under the lock.
  ConnShared& shared(int i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return conn_shared_[i]; }
  int PickLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The idle connection to open next (marked connecting), or null: see
  // RpcPoolOptions::connections_at_start. The caller passes it to Open.
  Connection* OpenNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Open(Connection* c);
  void AssignLocked(int conn, Call* call, Kicks* kicks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `call` on idle connection `conn` from the calling thread, in
  // one non-blocking send under the lock (what the socket does not take,
  // the strand sends: `kicks`); false, touching nothing, when the
  // connection is not idle or the call not small and payload-free (the
  // caller assigns it as usual).
  bool SendByCallerLocked(int conn, Call* call, Kicks* kicks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `call` written on `sh` now: its xid, its place among the
  // connection's calls in flight, its deadline from now.
  void MarkSentLocked(ConnShared& sh, Call* call, absl::Time now, SteadyTime steady_now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchLocked(Kicks* kicks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool QueueFullLocked(size_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends `call` with `status` (moved to `completions`) and frees it, from
  // wherever it is. Connections that must be recycled go to `resets`.
  void AbandonLocked(Call* call, absl::Status status, std::vector<Completion>* completions,
                     Resets* resets) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes an in-flight call off its connection: a tombstone under its id
  // (its late reply is dropped; too many recycle the connection), or, for
  // kInOrder, out of the connection's order, which is then recycled.
  void DetachInFlightLocked(Call* call, Resets* resets) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks connection `conn` for a reset (into `resets`, unless null) if it
  // is ready; a connection already being recycled is left as it is.
  void RecycleLocked(int conn, Resets* resets) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes an idempotent call that went unanswered past its deadline off
  // its connection (tombstoned) and queues it first with a new id and a
  // fresh deadline; its connection goes to `resets` when it must be
  // recycled.
  void ResendAfterTimeoutLocked(Call* call, SteadyTime now, Resets* resets)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(Call* call, absl::StatusOr<std::string> result, std::vector<Completion>* completions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a call that was pinned (Call::pinned): with its abandonment, if it
  // was cancelled or timed out meanwhile, else with `reply`.
  void FinishPinnedLocked(Call* call, std::string reply, std::vector<Completion>* completions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The session's write is done or its socket closed: unpins the calls
  // whose payload it sent, ending those that have their reply (kHeld).
  void UnpinWritesLocked(Session& s, std::vector<Completion>* completions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckAllDownLocked(std::vector<Completion>* completions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AllDownStatusLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration BackoffLocked(int failures) const;
  uint32_t NextXidLocked(const ConnShared& sh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RejectLocked(absl::StatusCode code) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Runtime& runtime_;
  asio::io_context& io_;
  const RpcPoolOptions options_;
  const std::string target_;
  const bool by_id_;
  const int cap_;  // in-flight calls per connection
  const int opened_at_start_;  // connections Start opens; the rest start idle
  std::optional<asio::ip::address> address_;  // when host is a literal IP
  std::vector<std::unique_ptr<Connection>> conns_;  // fixed after construction

  Strand timer_strand_;
  asio::steady_timer deadline_timer_;  // timer strand only

  std::atomic<int> ops_{0};  // decremented under mu_, so the destructor cannot miss it

  mutable Mutex mu_;
  CondVar room_cv_;   // queue space freed, for blocked CallBlocking
  CondVar ready_cv_;  // a connection became ready
  CondVar idle_cv_;   // ops_ reached zero
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  CallSlab slab_ ABSL_GUARDED_BY(mu_);
  CallList queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int room_waiters_ ABSL_GUARDED_BY(mu_) = 0;
  DeadlineHeap deadlines_ ABSL_GUARDED_BY(mu_);
  SteadyTime armed_deadline_ ABSL_GUARDED_BY(mu_) = kNoDeadline;
  std::vector<ConnShared> conn_shared_ ABSL_GUARDED_BY(mu_);
  uint32_t next_xid_ ABSL_GUARDED_BY(mu_);
  double retry_tokens_ ABSL_GUARDED_BY(mu_);
  bool all_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_connect_error_ ABSL_GUARDED_BY(mu_);
  RpcPoolMetrics m_ ABSL_GUARDED_BY(mu_);  // pool counters; connections/in_flight/queued filled on read
};

// Unavailable: "rpc to <target>: <what>".
absl::Status Unavailable(const std::string& target, std::string_view what);

}  // namespace ferry::rpc_pool_internal

#endif  // FERRY_SRC_RPC_RPC_POOL_CORE_H_
