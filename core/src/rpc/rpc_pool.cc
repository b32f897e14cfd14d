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
// Callbacks run outside the lock.
//
// No per-call heap allocation beyond the request/reply strings and the
// callback: Call records come from a slab and are recycled; queues are
// intrusive lists; deadlines live in one indexed binary heap served by one
// steady_timer per pool (re-armed only when a call has an earlier deadline
// than every call before it, rare with one timeout per pool); the in-flight
// map per connection is an open-addressing hash map that keeps its capacity.
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
#include "ferry/rpc/rpc_pool.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "asio/bind_executor.hpp"
#include "asio/connect.hpp"
#include "asio/io_context.hpp"
#include "asio/ip/address.hpp"
#include "asio/ip/tcp.hpp"
#include "asio/post.hpp"
#include "asio/steady_timer.hpp"
#include "asio/strand.hpp"
#include "asio/write.hpp"
#include "ferry/base/mutex.h"
#include "ferry/base/random.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry {
namespace {

using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;
using Strand = asio::strand<asio::io_context::executor_type>;
constexpr SteadyTime kNoDeadline = SteadyTime::max();

// A session that dies within this long of becoming ready counts as a failed
// attempt (back-off grows), so a server that accepts and at once closes is
// not hammered; one that lived longer is reconnected without delay.
constexpr absl::Duration kHealthySessionAge = absl::Seconds(1);

// Write buffers above this are released after their write, so one burst of
// large requests does not pin its memory for the connection's lifetime.
constexpr size_t kMaxRetainedWriteBuffer = size_t{4} << 20;

class PoolCore;
struct Connection;
struct Session;

enum class CallState : uint8_t { kFree, kQueued, kPending, kInFlight };

// Connections to start writing, collected under the lock and kicked after.
// Inline storage: a call's hot path allocates nothing for it.
using Kicks = absl::InlinedVector<int, 8>;

// One call, from acceptance to completion. Lives in PoolCore's slab; every
// field is guarded by PoolCore::mu_ (not annotated: reached by pointer).
struct Call {
  Call* prev = nullptr;  // intrusive links: the queue or a pending list
  Call* next = nullptr;
  uint32_t slot = 0;
  uint32_t generation = 0;  // bumped on each reuse; with slot forms the RpcCallId
  CallState state = CallState::kFree;
  bool idempotent = false;
  bool has_xid = false;
  uint32_t xid = 0;
  int attempts = 0;      // sends so far
  int max_attempts = 1;
  int heap_index = -1;   // in the deadline heap, or -1
  int conn = -1;         // connection index while pending or in flight
  size_t bytes = 0;      // request size, for the queue's byte bound
  SteadyTime deadline = kNoDeadline;
  absl::Duration timeout;
  absl::Time accepted_at;
  absl::Time sent_at;
  std::string request;
  Callback<std::string> done;
};

// A doubly linked list threaded through Call::prev/next.
class CallList {
 public:
  bool empty() const { return head_ == nullptr; }
  size_t size() const { return size_; }
  Call* front() const { return head_; }
  void PushBack(Call* c) {
    c->next = nullptr;
    c->prev = tail_;
    (tail_ ? tail_->next : head_) = c;
    tail_ = c;
    ++size_;
  }
  void PushFront(Call* c) {
    c->prev = nullptr;
    c->next = head_;
    (head_ ? head_->prev : tail_) = c;
    head_ = c;
    ++size_;
  }
  void Remove(Call* c) {
    (c->prev ? c->prev->next : head_) = c->next;
    (c->next ? c->next->prev : tail_) = c->prev;
    c->prev = c->next = nullptr;
    --size_;
  }
  Call* PopFront() {
    Call* c = head_;
    if (c != nullptr) Remove(c);
    return c;
  }
  // Moves every call of `other` to the back of this list, keeping order.
  void SpliceBack(CallList* other) {
    while (Call* c = other->PopFront()) PushBack(c);
  }
  // Moves every call of `other` to the front of this list, keeping order.
  void SpliceFront(CallList* other) {
    while (Call* c = other->tail_) {
      other->Remove(c);
      PushFront(c);
    }
  }

 private:
  Call* head_ = nullptr;
  Call* tail_ = nullptr;
  size_t size_ = 0;
};

// A binary min-heap of calls by deadline; each call knows its index, so a
// call that completes early leaves in O(log n) without a search.
class DeadlineHeap {
 public:
  bool empty() const { return heap_.empty(); }
  Call* top() const { return heap_.front(); }
  void Push(Call* c) {
    c->heap_index = static_cast<int>(heap_.size());
    heap_.push_back(c);
    SiftUp(c->heap_index);
  }
  void Remove(Call* c) {
    const int i = c->heap_index;
    if (i < 0) return;
    c->heap_index = -1;
    Call* last = heap_.back();
    heap_.pop_back();
    if (last == c) return;
    heap_[i] = last;
    last->heap_index = i;
    SiftDown(i);
    SiftUp(last->heap_index);
  }

 private:
  void Place(int i, Call* c) {
    heap_[i] = c;
    c->heap_index = i;
  }
  void SiftUp(int i) {
    Call* c = heap_[i];
    while (i > 0) {
      const int parent = (i - 1) / 2;
      if (heap_[parent]->deadline <= c->deadline) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, c);
  }
  void SiftDown(int i) {
    const int n = static_cast<int>(heap_.size());
    Call* c = heap_[i];
    for (;;) {
      int child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1]->deadline < heap_[child]->deadline) ++child;
      if (c->deadline <= heap_[child]->deadline) break;
      Place(i, heap_[child]);
      i = child;
    }
    Place(i, c);
  }
  std::vector<Call*> heap_;
};

// Recycles Call records: chunks are never freed before the pool, so a slot
// index stays valid for Cancel's lookup.
class CallSlab {
 public:
  Call* Alloc() {
    if (free_ == nullptr) Grow();
    Call* c = free_;
    free_ = c->next;
    c->next = nullptr;
    if (++c->generation == 0) c->generation = 1;  // 0 would make a 0 RpcCallId
    return c;
  }
  void Free(Call* c) {
    c->state = CallState::kFree;
    c->request = std::string();  // release the bytes now, not at reuse
    c->done = nullptr;
    c->heap_index = -1;
    c->conn = -1;
    c->has_xid = false;
    c->attempts = 0;
    c->prev = nullptr;
    c->next = free_;
    free_ = c;
  }
  // The call in `slot`, or null if there is no such slot.
  Call* Find(uint32_t slot) const {
    const size_t chunk = slot / kChunk;
    if (chunk >= chunks_.size()) return nullptr;
    return &chunks_[chunk][slot % kChunk];
  }

 private:
  // 256 calls (~40 KiB) per chunk: few chunks for thousands in flight.
  static constexpr uint32_t kChunk = 256;
  void Grow() {
    const uint32_t base = static_cast<uint32_t>(chunks_.size()) * kChunk;
    chunks_.push_back(std::make_unique<Call[]>(kChunk));
    Call* chunk = chunks_.back().get();
    for (uint32_t i = kChunk; i-- > 0;) {
      chunk[i].slot = base + i;
      chunk[i].next = free_;
      free_ = &chunk[i];
    }
  }
  std::vector<std::unique_ptr<Call[]>> chunks_;
  Call* free_ = nullptr;
};

enum class ConnState : uint8_t { kConnecting, kHandshaking, kReady, kBackoff, kClosed };

const char* ConnStateName(ConnState s) {
  switch (s) {
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
  RpcConnectionMetrics metrics;
};

// A callback and its result, run after the lock is dropped.
struct Completion {
  Callback<std::string> done;
  absl::StatusOr<std::string> result;
};

void RunCompletions(std::vector<Completion>* completions) {
  for (Completion& c : *completions) c.done(std::move(c.result));
  completions->clear();
}

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
  std::string write_buf;
  std::vector<std::string> write_scratch;  // requests taken for one write
  std::vector<std::string> records;        // records of one read
  std::vector<Completion> completions;     // of one read
  Kicks kicks;                  // connections to start writing
  bool dead = false;
  bool ready = false;
  bool writing = false;
  SteadyTime ready_at{};
  Callback<std::string> exchange_done;     // the handshake's pending Exchange
};

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

 private:
  // Strand work of one connection.
  void StartConnect(Connection* c);
  void ConnectTo(const std::shared_ptr<Session>& s, std::vector<asio::ip::tcp::endpoint> endpoints);
  void OnConnected(const std::shared_ptr<Session>& s);
  void BecomeReady(const std::shared_ptr<Session>& s);
  void StartRead(const std::shared_ptr<Session>& s);
  void OnRead(const std::shared_ptr<Session>& s, const std::error_code& ec, size_t n);
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
  void ResetSession(Connection* c, uint64_t gen, std::string reason);
  void RunKicks(const Kicks& kicks, const Connection* current);
  void PostCompletion(Callback<std::string> done, absl::Status status);

  // Deadline timer work (timer strand).
  void ArmTimer();
  void OnDeadlines();

  // Under the lock.
  ConnShared& shared(int i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return conn_shared_[i]; }
  int PickLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AssignLocked(int conn, Call* call, Kicks* kicks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchLocked(Kicks* kicks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool QueueFullLocked(size_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends `call` with `status` (moved to `completions`) and frees it, from
  // wherever it is. Connections that must be recycled go to `resets`.
  void AbandonLocked(Call* call, absl::Status status, std::vector<Completion>* completions,
                     std::vector<std::pair<int, uint64_t>>* resets) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(Call* call, absl::StatusOr<std::string> result, std::vector<Completion>* completions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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

OpToken::OpToken(PoolCore* pool) : pool_(pool) { pool_->BeginOp(); }
OpToken::~OpToken() {
  if (pool_ != nullptr) pool_->EndOp();
}

Session::Session(PoolCore* p, Connection* c, uint64_t g)
    : pool(p), conn(c), gen(g), socket(c->strand) {
  pool->BeginOp();
}

Session::~Session() {
  // Nothing after EndOp may touch the pool: the destructor may be waiting.
  std::error_code ignored;
  socket.close(ignored);
  PoolCore* p = pool;
  p->EndOp();
}

std::string_view Session::target() const { return pool->target(); }

void Session::Exchange(std::string record, Callback<std::string> done) {
  asio::post(conn->strand, [self = shared_from_this(), record = std::move(record), done = std::move(done),
                            token = OpToken(pool)]() mutable {
    if (self->dead) {
      done(absl::UnavailableError(
          absl::StrCat("handshake with ", ToAbsl(self->target()), ": the connection was closed")));
      return;
    }
    if (self->ready || self->exchange_done) {
      done(absl::FailedPreconditionError(absl::StrCat(
          "handshake with ", ToAbsl(self->target()),
          self->ready ? ": Exchange after the handshake finished" : ": one Exchange at a time")));
      return;
    }
    self->exchange_done = std::move(done);
    self->write_buf.clear();
    self->pool->framing().Append(record, &self->write_buf);
    self->writing = true;
    asio::async_write(self->socket, asio::buffer(self->write_buf),
                      asio::bind_executor(self->conn->strand, [self](const std::error_code& ec, size_t) {
                        self->writing = false;
                        self->write_buf.clear();
                        if (self->dead) return;
                        if (!ec) {
                          // The reply may have been read, and the connection
                          // made ready, before this write's completion ran:
                          // calls dispatched meanwhile wait for us.
                          if (self->ready) self->pool->DoWrite(self->conn, 0);
                          return;
                        }
                        self->pool->FailAttempt(
                            self, absl::UnavailableError(absl::StrCat("handshake with ", ToAbsl(self->target()),
                                                                      ": write failed: ", ec.message())));
                      }));
  });
}

absl::Status Unavailable(const std::string& target, std::string_view what) {
  return absl::UnavailableError(absl::StrCat("rpc to ", target, ": ", ToAbsl(what)));
}

void WriteBigEndian32(uint32_t v, char* p) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

uint32_t ReadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

SteadyTime DeadlineAfter(SteadyTime now, absl::Duration timeout) {
  // Anything over ~10 years (or infinite) means no deadline, and keeps the
  // addition below from overflowing.
  if (timeout >= absl::Hours(24 * 365 * 10)) return kNoDeadline;
  if (timeout < absl::ZeroDuration()) timeout = absl::ZeroDuration();
  return now + std::chrono::duration_cast<SteadyClock::duration>(absl::ToChronoNanoseconds(timeout));
}

PoolCore::PoolCore(Runtime& runtime, RpcPoolOptions options)
    : runtime_(runtime),
      io_(runtime.io_context()),
      options_(std::move(options)),
      target_(absl::StrCat(options_.host, ":", options_.port)),
      by_id_(options_.matching == RpcReplyMatching::kById),
      cap_(by_id_ ? options_.max_in_flight_per_connection : 1),
      timer_strand_(asio::make_strand(io_)),
      deadline_timer_(io_) {
  std::error_code ec;
  asio::ip::address a = asio::ip::make_address(options_.host, ec);
  if (!ec) address_ = a;
  MutexLock l(&mu_);
  conn_shared_.resize(static_cast<size_t>(options_.connections));
  for (int i = 0; i < options_.connections; ++i) {
    conns_.push_back(std::make_unique<Connection>(i, io_));
    conn_shared_[i].metrics.index = i;
  }
  // A random first xid, so a restarted client does not replay the ids of
  // its previous life into the server's duplicate request cache.
  next_xid_ = static_cast<uint32_t>(RandomUint64());
  retry_tokens_ = options_.retry_budget_tokens;
}

PoolCore::~PoolCore() = default;

void PoolCore::Start() {
  for (auto& c : conns_) {
    Connection* conn = c.get();
    asio::post(conn->strand, [this, conn, token = OpToken(this)] { StartConnect(conn); });
  }
}

void PoolCore::EndOp() {
  MutexLock l(&mu_);
  if (ops_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_cv_.SignalAll();
}

// ---------------------------------------------------------------------------
// Connecting.

void PoolCore::StartConnect(Connection* c) {
  uint64_t gen;
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    gen = ++c->next_session_gen;
    shared(c->index).state = ConnState::kConnecting;
    shared(c->index).session_gen = gen;
  }
  auto s = std::make_shared<Session>(this, c, gen);
  c->session = s;
  c->connect_timer.expires_after(absl::ToChronoNanoseconds(options_.connect_timeout));
  c->connect_timer.async_wait(
      asio::bind_executor(c->strand, [this, s, token = OpToken(this)](const std::error_code& ec) {
        if (ec || s->dead || s->ready) return;
        FailAttempt(s, Unavailable(target_, absl::StrCat("connect and handshake timed out after ",
                                                         absl::FormatDuration(options_.connect_timeout))));
      }));
  if (address_) {
    ConnectTo(s, {asio::ip::tcp::endpoint(*address_, options_.port)});
    return;
  }
  // getaddrinfo blocks: resolve on the blocking pool, connect on the strand.
  runtime_.PostBlocking([this, s, token = OpToken(this)]() mutable {
    asio::ip::tcp::resolver resolver(io_);
    std::error_code ec;
    auto results = resolver.resolve(options_.host, std::to_string(options_.port), ec);
    std::vector<asio::ip::tcp::endpoint> endpoints;
    for (const auto& r : results) endpoints.push_back(r.endpoint());
    Connection* conn = s->conn;
    asio::post(conn->strand, [this, s = std::move(s), ec, endpoints = std::move(endpoints),
                           token = std::move(token)]() mutable {
      if (s->dead) return;
      if (ec || endpoints.empty()) {
        FailAttempt(s, Unavailable(target_, absl::StrCat("cannot resolve ", options_.host, ": ",
                                                         ec ? ec.message() : "no addresses")));
        return;
      }
      ConnectTo(s, std::move(endpoints));
    });
  });
}

void PoolCore::ConnectTo(const std::shared_ptr<Session>& s, std::vector<asio::ip::tcp::endpoint> endpoints) {
  asio::async_connect(
      s->socket, endpoints,
      asio::bind_executor(s->conn->strand, [this, s](const std::error_code& ec, const asio::ip::tcp::endpoint&) {
        if (s->dead) return;
        if (ec) {
          FailAttempt(s, Unavailable(target_, absl::StrCat("connect failed: ", ec.message())));
          return;
        }
        OnConnected(s);
      }));
}

void PoolCore::OnConnected(const std::shared_ptr<Session>& s) {
  std::error_code ignored;
  // The pool batches writes itself; Nagle would only add latency.
  s->socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  s->reader = options_.framing->NewReader();
  s->read_buf = std::make_unique<char[]>(options_.read_buffer_bytes);
  StartRead(s);
  if (!options_.on_connect) {
    BecomeReady(s);
    return;
  }
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    shared(s->conn->index).state = ConnState::kHandshaking;
  }
  options_.on_connect(*s, [this, s, token = OpToken(this)](absl::Status status) mutable {
    // Always via the strand, and never inside the hook's own frame.
    asio::post(s->conn->strand, [this, s = std::move(s), status = std::move(status),
                                 token = std::move(token)]() mutable {
      if (s->dead || s->ready) return;
      if (!status.ok()) {
        FailAttempt(s, absl::Status(status.code(), absl::StrCat("rpc to ", target_, ": handshake failed: ",
                                                                status.message())));
        return;
      }
      BecomeReady(s);
    });
  });
}

void PoolCore::BecomeReady(const std::shared_ptr<Session>& s) {
  Connection* c = s->conn;
  c->connect_timer.cancel();
  s->ready = true;
  s->ready_at = SteadyClock::now();
  s->kicks.clear();
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    ConnShared& sh = shared(c->index);
    sh.state = ConnState::kReady;
    if (sh.ever_ready) {
      ++sh.metrics.reconnects;
      ++m_.reconnects;
    }
    sh.ever_ready = true;
    all_down_ = false;
    DispatchLocked(&s->kicks);
    ready_cv_.SignalAll();
  }
  RunKicks(s->kicks, c);
}

void PoolCore::FailAttempt(const std::shared_ptr<Session>& s, absl::Status status) {
  if (s->dead) return;
  s->dead = true;
  Connection* c = s->conn;
  std::error_code ignored;
  s->socket.close(ignored);
  c->connect_timer.cancel();
  if (s->exchange_done) {
    auto done = std::move(s->exchange_done);
    s->exchange_done = nullptr;
    done(status);
  }
  std::vector<Completion> completions;
  absl::Duration delay;
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    ConnShared& sh = shared(c->index);
    sh.state = ConnState::kBackoff;
    ++sh.consecutive_failures;
    ++sh.metrics.failures;
    ++m_.connection_failures;
    last_connect_error_ = std::move(status);
    CheckAllDownLocked(&completions);
    delay = BackoffLocked(sh.consecutive_failures);
  }
  RunCompletions(&completions);
  if (c->session == s) c->session.reset();
  ScheduleReconnect(c, delay);
}

absl::Duration PoolCore::BackoffLocked(int failures) const {
  if (failures <= 0) return absl::ZeroDuration();
  absl::Duration d = options_.initial_backoff;
  for (int i = 1; i < failures && d < options_.max_backoff; ++i) d *= 2;
  return std::min(d, options_.max_backoff);
}

void PoolCore::ScheduleReconnect(Connection* c, absl::Duration delay) {
  if (delay <= absl::ZeroDuration()) {
    StartConnect(c);
    return;
  }
  // Up to 25% earlier, so connections (and clients) that failed together
  // do not all come back in the same instant.
  delay *= 0.75 + 0.25 * RandomUnit();
  c->backoff_timer.expires_after(absl::ToChronoNanoseconds(delay));
  c->backoff_timer.async_wait(
      asio::bind_executor(c->strand, [this, c, token = OpToken(this)](const std::error_code& ec) {
        if (!ec) StartConnect(c);
      }));
}

void PoolCore::CheckAllDownLocked(std::vector<Completion>* completions) {
  for (int i = 0; i < options_.connections; ++i) {
    const ConnShared& sh = shared(i);
    if (sh.state == ConnState::kReady || sh.consecutive_failures < options_.max_connect_attempts) return;
  }
  all_down_ = true;
  const absl::Status status = AllDownStatusLocked();
  while (Call* call = queue_.front()) {
    ++m_.calls_failed;
    AbandonLocked(call, status, completions, nullptr);
  }
}

absl::Status PoolCore::AllDownStatusLocked() const {
  const absl::StatusCode code =
      last_connect_error_.ok() ? absl::StatusCode::kUnavailable : last_connect_error_.code();
  return absl::Status(code, absl::StrCat("rpc to ", target_, ": no connection after ",
                                         options_.max_connect_attempts, " attempts on each of ",
                                         options_.connections, " connections; last error: ",
                                         last_connect_error_.message()));
}

// ---------------------------------------------------------------------------
// Dispatch.

int PoolCore::PickLocked() {
  int best = -1;
  int best_load = cap_;
  for (int i = 0; i < options_.connections; ++i) {
    const ConnShared& sh = shared(i);
    if (sh.state == ConnState::kReady && sh.load < best_load) {
      best = i;
      best_load = sh.load;
      if (best_load == 0) break;
    }
  }
  return best;
}

void PoolCore::AssignLocked(int conn, Call* call, Kicks* kicks) {
  ConnShared& sh = shared(conn);
  call->state = CallState::kPending;
  call->conn = conn;
  sh.pending.PushBack(call);
  ++sh.load;
  if (!sh.write_kicked) {
    sh.write_kicked = true;
    kicks->push_back(conn);
  }
}

void PoolCore::DispatchLocked(Kicks* kicks) {
  if (queue_.empty()) return;
  bool moved = false;
  while (!queue_.empty()) {
    const int conn = PickLocked();
    if (conn < 0) break;
    Call* call = queue_.PopFront();
    queued_bytes_ -= call->bytes;
    AssignLocked(conn, call, kicks);
    moved = true;
  }
  if (moved && room_waiters_ > 0) room_cv_.SignalAll();
}

bool PoolCore::QueueFullLocked(size_t bytes) const {
  if (queue_.size() >= options_.max_queued_calls) return true;
  // A request bigger than the byte bound still goes when the queue is empty.
  return queued_bytes_ > 0 && queued_bytes_ + bytes > options_.max_queued_bytes;
}

void PoolCore::RunKicks(const Kicks& kicks, const Connection* current) {
  for (int i : kicks) {
    Connection* c = conns_[i].get();
    if (c == current) {
      DoWrite(c, 0);
    } else {
      asio::post(c->strand, [this, c, token = OpToken(this)] { DoWrite(c, 0); });
    }
  }
}

void PoolCore::PostCompletion(Callback<std::string> done, absl::Status status) {
  runtime_.Post([done = std::move(done), status = std::move(status), token = OpToken(this)]() mutable {
    done(std::move(status));
  });
}

void PoolCore::RejectLocked(absl::StatusCode code) {
  ++m_.calls_failed;
  if (code == absl::StatusCode::kResourceExhausted) ++m_.calls_rejected;
  if (code == absl::StatusCode::kCancelled) ++m_.calls_cancelled;
  if (code == absl::StatusCode::kDeadlineExceeded) ++m_.calls_timed_out;
}

RpcCallId PoolCore::Submit(std::string request, Callback<std::string> done, const RpcCallOptions& o,
                           bool blocking_caller) {
  if (by_id_ && request.size() < 4) {
    PostCompletion(std::move(done),
                   absl::InvalidArgumentError(absl::StrCat(
                       "rpc to ", target_, ": request of ", request.size(),
                       " bytes cannot hold the 4-byte call id that kById matching writes at bytes 0..3")));
    return 0;
  }
  const bool fail_when_busy = o.when_busy.value_or(options_.when_busy) == RpcWhenBusy::kFail;
  const absl::Duration timeout = o.timeout.value_or(options_.default_timeout);
  const SteadyTime steady_now = SteadyClock::now();
  const SteadyTime deadline = DeadlineAfter(steady_now, timeout);
  const absl::Time now = options_.clock == nullptr
                             ? absl::UnixEpoch() + absl::FromChrono(steady_now.time_since_epoch())
                             : options_.clock->Now();
  const size_t bytes = request.size();
  Kicks kicks;
  bool arm = false;
  absl::Status reject;
  RpcCallId id = 0;
  {
    MutexLock l(&mu_);
    int conn = -1;
    for (;;) {
      if (shutting_down_) {
        reject = absl::CancelledError(absl::StrCat("rpc to ", target_, ": the pool is shutting down"));
        break;
      }
      if (all_down_) {
        reject = AllDownStatusLocked();
        break;
      }
      conn = queue_.empty() ? PickLocked() : -1;
      if (conn >= 0) break;
      if (fail_when_busy) {
        reject = absl::ResourceExhaustedError(absl::StrFormat(
            "rpc to %s: no connection can take the call now (%d connections, %d calls in flight each at most, "
            "%d calls queued) and the caller asked not to wait",
            target_, options_.connections, cap_, queue_.size()));
        break;
      }
      if (!QueueFullLocked(bytes)) break;
      if (!blocking_caller) {
        reject = absl::ResourceExhaustedError(absl::StrFormat(
            "rpc to %s: the call queue is full (%d calls, %d bytes queued; bounds %d calls, %d bytes)", target_,
            queue_.size(), queued_bytes_, options_.max_queued_calls, options_.max_queued_bytes));
        break;
      }
      // CondVar deadlines are wall-clock times.
      const absl::Time wall_deadline =
          deadline == kNoDeadline ? absl::InfiniteFuture()
                                  : absl::Now() + absl::FromChrono(deadline - SteadyClock::now());
      ++room_waiters_;
      const bool woke = room_cv_.WaitWithDeadline(&mu_, wall_deadline);
      --room_waiters_;
      if (!woke && SteadyClock::now() >= deadline) {
        reject = absl::DeadlineExceededError(absl::StrCat(
            "rpc to ", target_, ": deadline of ", absl::FormatDuration(timeout),
            " exceeded while waiting for room in the call queue"));
        break;
      }
    }
    if (!reject.ok()) {
      RejectLocked(reject.code());
    } else {
      Call* call = slab_.Alloc();
      call->idempotent = o.idempotent;
      call->max_attempts = o.idempotent ? std::max(1, o.max_attempts > 0 ? o.max_attempts : options_.max_attempts) : 1;
      call->bytes = bytes;
      call->deadline = deadline;
      call->timeout = timeout;
      call->accepted_at = now;
      call->request = std::move(request);
      call->done = std::move(done);
      ++m_.calls_started;
      if (deadline != kNoDeadline) {
        deadlines_.Push(call);
        if (deadline < armed_deadline_) {
          armed_deadline_ = deadline;
          arm = true;
        }
      }
      if (conn >= 0) {
        AssignLocked(conn, call, &kicks);
      } else {
        call->state = CallState::kQueued;
        queue_.PushBack(call);
        queued_bytes_ += bytes;
      }
      id = (RpcCallId{call->slot} << 32) | call->generation;
    }
  }
  if (!reject.ok()) {
    PostCompletion(std::move(done), std::move(reject));
    return 0;
  }
  if (arm) asio::post(timer_strand_, [this, token = OpToken(this)] { ArmTimer(); });
  RunKicks(kicks, nullptr);
  return id;
}

// ---------------------------------------------------------------------------
// Writing.

uint32_t PoolCore::NextXidLocked(const ConnShared& sh) {
  uint32_t x = next_xid_++;
  // After 2^32 calls an id may come round while its first user is still in
  // flight (or tombstoned) on this connection: skip it.
  while (sh.by_xid.contains(x)) x = next_xid_++;
  return x;
}

void PoolCore::DoWrite(Connection* c, size_t bytes_written) {
  const std::shared_ptr<Session>& s = c->session;
  if (s == nullptr || s->dead || !s->ready || s->writing) return;
  {
    MutexLock l(&mu_);
    ConnShared& sh = shared(c->index);
    if (bytes_written > 0) {
      sh.metrics.bytes_sent += bytes_written;
      m_.bytes_sent += bytes_written;
    }
    // Not kReady: the connection is being recycled; Lost re-queues these.
    if (sh.pending.empty() || sh.session_gen != s->gen || sh.state != ConnState::kReady) {
      sh.write_kicked = false;
      return;
    }
    const absl::Time now = NowFrom(options_.clock);
    while (Call* call = sh.pending.PopFront()) {
      call->state = CallState::kInFlight;
      call->sent_at = now;
      if (++call->attempts == 1) m_.queue_time.Record(now - call->accepted_at);
      if (by_id_) {
        // A retry keeps its xid (a server's duplicate request cache knows it)
        // unless this connection already uses it.
        if (!call->has_xid || sh.by_xid.contains(call->xid)) {
          call->xid = NextXidLocked(sh);
          call->has_xid = true;
          WriteBigEndian32(call->xid, call->request.data());
        }
        sh.by_xid.emplace(call->xid, call);
      } else {
        sh.in_order.PushBack(call);
      }
      // Only a call that may be sent again keeps its bytes.
      if (call->idempotent && call->attempts < call->max_attempts) {
        s->write_scratch.push_back(call->request);
      } else {
        s->write_scratch.push_back(std::move(call->request));
      }
      ++sh.metrics.calls_sent;
    }
  }
  // Framing copies: done outside the lock.
  for (const std::string& r : s->write_scratch) options_.framing->Append(r, &s->write_buf);
  s->write_scratch.clear();
  s->writing = true;
  asio::async_write(s->socket, asio::buffer(s->write_buf),
                    asio::bind_executor(c->strand, [this, s](const std::error_code& ec, size_t n) {
                      OnWritten(s, ec, n);
                    }));
}

void PoolCore::OnWritten(const std::shared_ptr<Session>& s, const std::error_code& ec, size_t n) {
  s->writing = false;
  if (s->write_buf.capacity() > kMaxRetainedWriteBuffer) {
    std::string().swap(s->write_buf);
  } else {
    s->write_buf.clear();
  }
  if (s->dead) return;
  if (ec) {
    Lost(s, absl::StatusCode::kUnavailable, absl::StrCat("write failed: ", ec.message()));
    return;
  }
  DoWrite(s->conn, n);
}

// ---------------------------------------------------------------------------
// Reading.

void PoolCore::StartRead(const std::shared_ptr<Session>& s) {
  s->socket.async_read_some(
      asio::buffer(s->read_buf.get(), options_.read_buffer_bytes),
      asio::bind_executor(s->conn->strand,
                          [this, s](const std::error_code& ec, size_t n) { OnRead(s, ec, n); }));
}

void PoolCore::OnRead(const std::shared_ptr<Session>& s, const std::error_code& ec, size_t n) {
  if (s->dead) return;
  if (ec) {
    const size_t partial = s->reader->buffered_bytes();
    std::string reason = ec == asio::error::eof ? std::string("server closed the connection")
                                                : absl::StrCat("read failed: ", ec.message());
    if (partial > 0) {
      absl::StrAppend(&reason, " mid-record (truncated: ", partial,
                      " bytes of an incomplete record were pending)");
    } else {
      absl::StrAppend(&reason, " (no partial record was pending)");
    }
    if (!s->ready) {
      FailAttempt(s, Unavailable(target_, absl::StrCat("during the handshake: ", reason)));
    } else {
      Lost(s, absl::StatusCode::kUnavailable, std::move(reason));
    }
    return;
  }
  s->records.clear();
  const absl::Status framing_status = s->reader->Consume(std::string_view(s->read_buf.get(), n), &s->records);
  absl::Status bad;
  if (!s->ready) {
    // The handshake: each record answers the pending Exchange.
    for (std::string& rec : s->records) {
      if (!s->exchange_done) {
        bad = absl::DataLossError(absl::StrCat("unexpected record of ", rec.size(),
                                               " bytes during the handshake (no Exchange pending)"));
        break;
      }
      auto done = std::move(s->exchange_done);
      s->exchange_done = nullptr;
      done(std::move(rec));
      if (s->dead) return;  // the hook's callback may have failed it
    }
    s->records.clear();
    if (bad.ok() && !framing_status.ok()) bad = framing_status;
    if (!bad.ok()) {
      FailAttempt(s, absl::DataLossError(absl::StrCat("rpc to ", target_, ": handshake: ", bad.message())));
      return;
    }
    StartRead(s);
    return;
  }
  bad = ProcessReplies(s, n);
  if (bad.ok() && !framing_status.ok()) bad = framing_status;
  if (!bad.ok()) {
    Lost(s, absl::StatusCode::kDataLoss, absl::StrCat("malformed data from the server: ", bad.message()));
    return;
  }
  if (!s->dead) StartRead(s);
}

absl::Status PoolCore::ProcessReplies(const std::shared_ptr<Session>& s, size_t nbytes) {
  Connection* c = s->conn;
  absl::Status bad;
  s->kicks.clear();
  {
    MutexLock l(&mu_);
    ConnShared& sh = shared(c->index);
    sh.metrics.bytes_received += nbytes;
    m_.bytes_received += nbytes;
    if (sh.session_gen != s->gen) return absl::OkStatus();  // shutting down
    const absl::Time now = s->records.empty() ? absl::Time() : NowFrom(options_.clock);
    for (std::string& rec : s->records) {
      Call* call;
      if (by_id_) {
        if (rec.size() < 4) {
          bad = absl::DataLossError(absl::StrCat("a reply record of ", rec.size(),
                                                 " bytes is too short to hold the 4-byte call id"));
          break;
        }
        const uint32_t xid = ReadBigEndian32(rec.data());
        auto it = sh.by_xid.find(xid);
        if (it == sh.by_xid.end()) {
          bad = absl::DataLossError(absl::StrFormat(
              "a reply carries id 0x%08x, which matches no call in flight on this connection", xid));
          break;
        }
        call = it->second;
        sh.by_xid.erase(it);
        if (call == nullptr) {  // the call was abandoned; its late reply is dropped
          --sh.abandoned;
          continue;
        }
      } else {
        call = sh.in_order.PopFront();
        if (call == nullptr) {
          bad = absl::DataLossError(
              absl::StrCat("an unsolicited record of ", rec.size(), " bytes arrived with no call in flight"));
          break;
        }
      }
      --sh.load;
      const absl::Duration rtt = now - call->sent_at;
      sh.metrics.round_trip.Record(rtt);
      m_.round_trip.Record(rtt);
      ++sh.metrics.replies;
      sh.consecutive_failures = 0;
      ++m_.calls_succeeded;
      retry_tokens_ = std::min(options_.retry_budget_tokens,
                               retry_tokens_ + options_.retry_budget_refill_per_success);
      FinishLocked(call, std::move(rec), &s->completions);
    }
    if (bad.ok()) DispatchLocked(&s->kicks);
  }
  s->records.clear();
  RunCompletions(&s->completions);
  if (bad.ok()) RunKicks(s->kicks, c);
  return bad;
}

void PoolCore::FinishLocked(Call* call, absl::StatusOr<std::string> result, std::vector<Completion>* completions) {
  deadlines_.Remove(call);
  completions->push_back(Completion{std::move(call->done), std::move(result)});
  slab_.Free(call);
}

// ---------------------------------------------------------------------------
// Losing a connection.

void PoolCore::Lost(const std::shared_ptr<Session>& s, absl::StatusCode code, std::string reason, bool failure) {
  if (s->dead) return;
  s->dead = true;
  Connection* c = s->conn;
  std::error_code ignored;
  s->socket.close(ignored);
  const bool healthy = !failure || SteadyClock::now() - s->ready_at >=
                                       absl::ToChronoNanoseconds(kHealthySessionAge);
  std::vector<Completion> completions;
  Kicks kicks;
  absl::Duration delay;
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    ConnShared& sh = shared(c->index);
    sh.state = ConnState::kBackoff;
    sh.write_kicked = false;
    if (failure) {
      ++sh.metrics.failures;
      ++m_.connection_failures;
    }
    // Calls in flight: retried if idempotent and the budget allows, else failed.
    const std::string message = absl::StrCat(
        "rpc to ", target_, ": ", code == absl::StatusCode::kDataLoss ? "connection dropped" : "connection lost",
        " with the call in flight: ", reason);
    CallList retry;
    auto settle = [&](Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      --sh.load;
      if (code != absl::StatusCode::kDataLoss && call->idempotent && call->attempts < call->max_attempts &&
          retry_tokens_ >= 1) {
        retry_tokens_ -= 1;
        ++m_.retries;
        retry.PushBack(call);
        return;
      }
      ++m_.calls_failed;
      AbandonLocked(call, absl::Status(code, message), &completions, nullptr);
    };
    if (by_id_) {
      for (auto& [xid, call] : sh.by_xid) {
        if (call != nullptr) {
          call->state = CallState::kFree;  // detached: AbandonLocked must not touch by_xid
          settle(call);
        }
      }
      sh.by_xid.clear();
      sh.abandoned = 0;
    } else {
      while (Call* call = sh.in_order.PopFront()) {
        call->state = CallState::kFree;
        settle(call);
      }
    }
    // Back to the front of the queue: the retries (accepted earliest), then
    // the calls assigned here but not yet written, in their order.
    sh.load -= static_cast<int>(sh.pending.size());
    retry.SpliceBack(&sh.pending);
    for (Call* call = retry.front(); call != nullptr; call = call->next) {
      call->state = CallState::kQueued;
      call->conn = -1;
      queued_bytes_ += call->bytes;
    }
    queue_.SpliceFront(&retry);
    if (failure && !healthy) {
      ++sh.consecutive_failures;
    } else {
      sh.consecutive_failures = 0;
    }
    delay = BackoffLocked(failure && !healthy ? sh.consecutive_failures : 0);
    DispatchLocked(&kicks);
    CheckAllDownLocked(&completions);
  }
  RunCompletions(&completions);
  RunKicks(kicks, nullptr);
  if (c->session == s) c->session.reset();
  ScheduleReconnect(c, delay);
}

void PoolCore::ResetSession(Connection* c, uint64_t gen, std::string reason) {
  if (c->session == nullptr || c->session->gen != gen) return;
  std::shared_ptr<Session> s = c->session;
  Lost(s, absl::StatusCode::kUnavailable, std::move(reason), /*failure=*/false);
}

// ---------------------------------------------------------------------------
// Abandoning calls: deadlines, Cancel, shutdown.

void PoolCore::AbandonLocked(Call* call, absl::Status status, std::vector<Completion>* completions,
                             std::vector<std::pair<int, uint64_t>>* resets) {
  switch (call->state) {
    case CallState::kQueued:
      queue_.Remove(call);
      queued_bytes_ -= call->bytes;
      if (room_waiters_ > 0) room_cv_.SignalAll();
      break;
    case CallState::kPending: {
      ConnShared& sh = shared(call->conn);
      sh.pending.Remove(call);
      --sh.load;
      break;
    }
    case CallState::kInFlight: {
      ConnShared& sh = shared(call->conn);
      --sh.load;
      if (by_id_) {
        sh.by_xid[call->xid] = nullptr;  // a late reply finds the tombstone
        // More tombstones than the in-flight cap: the server is not
        // answering; recycle the connection rather than pile them up.
        if (++sh.abandoned > cap_ && resets != nullptr && sh.state == ConnState::kReady) {
          sh.state = ConnState::kBackoff;
          resets->emplace_back(call->conn, sh.session_gen);
        }
      } else {
        sh.in_order.Remove(call);
        // Its reply would be taken for the next call's: recycle.
        if (resets != nullptr && sh.state == ConnState::kReady) {
          sh.state = ConnState::kBackoff;
          resets->emplace_back(call->conn, sh.session_gen);
        }
      }
      break;
    }
    case CallState::kFree:  // detached by Lost
      break;
  }
  FinishLocked(call, std::move(status), completions);
}

bool PoolCore::Cancel(RpcCallId id) {
  const auto slot = static_cast<uint32_t>(id >> 32);
  const auto generation = static_cast<uint32_t>(id);
  std::vector<Completion> completions;
  std::vector<std::pair<int, uint64_t>> resets;
  Kicks kicks;
  {
    MutexLock l(&mu_);
    Call* call = slab_.Find(slot);
    if (id == 0 || call == nullptr || call->generation != generation || call->state == CallState::kFree) {
      return false;
    }
    ++m_.calls_failed;
    ++m_.calls_cancelled;
    AbandonLocked(call, absl::CancelledError(absl::StrCat("rpc to ", target_, ": call cancelled")), &completions,
                  &resets);
    DispatchLocked(&kicks);
  }
  for (Completion& c : completions) PostCompletion(std::move(c.done), c.result.status());
  for (auto& [conn, gen] : resets) {
    Connection* c = conns_[conn].get();
    asio::post(c->strand, [this, c, gen = gen, token = OpToken(this)] {
      ResetSession(c, gen, "a call in flight on an in-order connection was abandoned");
    });
  }
  RunKicks(kicks, nullptr);
  return true;
}

void PoolCore::ArmTimer() {
  SteadyTime t;
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    t = deadlines_.empty() ? kNoDeadline : deadlines_.top()->deadline;
    armed_deadline_ = t;
  }
  if (t == kNoDeadline) return;
  deadline_timer_.expires_at(t);
  deadline_timer_.async_wait(asio::bind_executor(timer_strand_, [this, token = OpToken(this)](const std::error_code& ec) {
    if (!ec) OnDeadlines();
  }));
}

void PoolCore::OnDeadlines() {
  std::vector<Completion> completions;
  std::vector<std::pair<int, uint64_t>> resets;
  Kicks kicks;
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    const SteadyTime now = SteadyClock::now();
    while (!deadlines_.empty() && deadlines_.top()->deadline <= now) {
      Call* call = deadlines_.top();
      const char* where = call->state == CallState::kInFlight ? "in flight"
                          : call->state == CallState::kPending ? "waiting to be written"
                                                               : "queued (every connection busy or down)";
      ++m_.calls_failed;
      ++m_.calls_timed_out;
      AbandonLocked(call,
                    absl::DeadlineExceededError(absl::StrCat("rpc to ", target_, ": deadline of ",
                                                             absl::FormatDuration(call->timeout),
                                                             " exceeded; the call was ", where)),
                    &completions, &resets);
    }
    DispatchLocked(&kicks);
  }
  RunCompletions(&completions);
  for (auto& [conn, gen] : resets) {
    Connection* c = conns_[conn].get();
    asio::post(c->strand, [this, c, gen = gen, token = OpToken(this)] {
      ResetSession(c, gen, "the server left calls unanswered past their deadlines");
    });
  }
  RunKicks(kicks, nullptr);
  ArmTimer();
}

// ---------------------------------------------------------------------------
// Shutdown, readiness, metrics.

void PoolCore::CloseOnStrand(Connection* c) {
  c->backoff_timer.cancel();
  c->connect_timer.cancel();
  std::shared_ptr<Session> s = std::move(c->session);
  if (s == nullptr) return;
  s->dead = true;
  std::error_code ignored;
  s->socket.close(ignored);
  if (s->exchange_done) {
    auto done = std::move(s->exchange_done);
    s->exchange_done = nullptr;
    done(absl::CancelledError(absl::StrCat("handshake with ", target_, ": the pool is shutting down")));
  }
}

void PoolCore::Shutdown() {
  std::vector<Completion> completions;
  {
    MutexLock l(&mu_);
    shutting_down_ = true;
    const absl::Status cancelled =
        absl::CancelledError(absl::StrCat("rpc to ", target_, ": the pool was destroyed"));
    auto cancel = [&](Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      ++m_.calls_failed;
      ++m_.calls_cancelled;
      call->state = CallState::kFree;
      FinishLocked(call, cancelled, &completions);
    };
    while (Call* call = queue_.PopFront()) cancel(call);
    queued_bytes_ = 0;
    for (ConnShared& sh : conn_shared_) {
      while (Call* call = sh.pending.PopFront()) cancel(call);
      while (Call* call = sh.in_order.PopFront()) cancel(call);
      for (auto& [xid, call] : sh.by_xid) {
        if (call != nullptr) cancel(call);
      }
      sh.by_xid.clear();
      sh.load = 0;
      sh.state = ConnState::kClosed;
    }
    room_cv_.SignalAll();
    ready_cv_.SignalAll();
  }
  RunCompletions(&completions);
  for (auto& c : conns_) {
    Connection* conn = c.get();
    asio::post(conn->strand, [this, conn, token = OpToken(this)] { CloseOnStrand(conn); });
  }
  asio::post(timer_strand_, [this, token = OpToken(this)] { deadline_timer_.cancel(); });
  MutexLock l(&mu_);
  while (ops_.load(std::memory_order_acquire) != 0) idle_cv_.Wait(&mu_);
}

absl::Status PoolCore::WaitUntilReady(int n, absl::Time deadline) {
  n = std::clamp(n, 0, options_.connections);
  MutexLock l(&mu_);
  for (;;) {
    int ready = 0;
    for (const ConnShared& sh : conn_shared_) ready += sh.state == ConnState::kReady ? 1 : 0;
    if (ready >= n) return absl::OkStatus();
    if (shutting_down_) return absl::CancelledError(absl::StrCat("rpc to ", target_, ": the pool is shutting down"));
    if (!ready_cv_.WaitWithDeadline(&mu_, deadline) && absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("rpc to ", target_, ": ", ready, " of ", n,
                                                      " connections ready at the deadline"));
    }
  }
}

RpcPoolMetrics PoolCore::Metrics() const {
  MutexLock l(&mu_);
  RpcPoolMetrics m = m_;
  m.queued = queue_.size();
  m.queued_bytes = queued_bytes_;
  m.in_flight = 0;
  m.connections.reserve(conn_shared_.size());
  for (const ConnShared& sh : conn_shared_) {
    RpcConnectionMetrics cm = sh.metrics;
    cm.state = ConnStateName(sh.state);
    cm.in_flight = static_cast<uint64_t>(sh.load);
    m.in_flight += cm.in_flight;
    m.connections.push_back(std::move(cm));
  }
  return m;
}

absl::Status ValidateOptions(const RpcPoolOptions& o) {
  auto bad = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("RpcPool for ", o.host, ":", o.port, ": ", ToAbsl(what)));
  };
  if (o.host.empty()) return bad("host is empty");
  if (o.port == 0) return bad("port is 0");
  if (o.framing == nullptr) return bad("no framing given");
  if (o.connections < 1) return bad(absl::StrCat("connections is ", o.connections, "; need at least 1"));
  if (o.matching == RpcReplyMatching::kById && o.max_in_flight_per_connection < 1) {
    return bad(absl::StrCat("max_in_flight_per_connection is ", o.max_in_flight_per_connection));
  }
  if (o.max_queued_calls < 1) return bad("max_queued_calls is 0");
  if (o.max_connect_attempts < 1) return bad("max_connect_attempts must be at least 1");
  if (o.max_attempts < 1) return bad("max_attempts must be at least 1");
  if (o.read_buffer_bytes < 1) return bad("read_buffer_bytes is 0");
  if (o.connect_timeout <= absl::ZeroDuration()) return bad("connect_timeout must be positive");
  if (o.initial_backoff < absl::ZeroDuration() || o.max_backoff < o.initial_backoff) {
    return bad("need 0 <= initial_backoff <= max_backoff");
  }
  return absl::OkStatus();
}

}  // namespace

struct RpcPool::Impl {
  Impl(Runtime& runtime, RpcPoolOptions options) : core(runtime, std::move(options)) {}
  PoolCore core;
};

absl::StatusOr<std::unique_ptr<RpcPool>> RpcPool::Create(Runtime& runtime, RpcPoolOptions options) {
  FERRY_RETURN_IF_ERROR(ValidateOptions(options));
  auto impl = std::make_unique<Impl>(runtime, std::move(options));
  impl->core.Start();
  return std::unique_ptr<RpcPool>(new RpcPool(std::move(impl)));
}

RpcPool::RpcPool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RpcPool::~RpcPool() { impl_->core.Shutdown(); }

RpcCallId RpcPool::CallAsync(std::string request, Callback<std::string> done, const RpcCallOptions& options) {
  return impl_->core.Submit(std::move(request), std::move(done), options, /*blocking_caller=*/false);
}

Future<std::string> RpcPool::Call(std::string request, const RpcCallOptions& options, RpcCallId* id) {
  Promise<std::string> p;
  Future<std::string> f = p.GetFuture();
  const RpcCallId i = impl_->core.Submit(
      std::move(request), [p = std::move(p)](absl::StatusOr<std::string> r) mutable { p.Set(std::move(r)); },
      options, /*blocking_caller=*/false);
  if (id != nullptr) *id = i;
  return f;
}

absl::StatusOr<std::string> RpcPool::CallBlocking(std::string request, const RpcCallOptions& options) {
  Promise<std::string> p;
  Future<std::string> f = p.GetFuture();
  impl_->core.Submit(
      std::move(request), [p = std::move(p)](absl::StatusOr<std::string> r) mutable { p.Set(std::move(r)); },
      options, /*blocking_caller=*/true);
  return std::move(f).Get();
}

bool RpcPool::Cancel(RpcCallId id) { return impl_->core.Cancel(id); }

absl::Status RpcPool::WaitUntilReady(int connections, absl::Time deadline) {
  return impl_->core.WaitUntilReady(connections, deadline);
}

RpcPoolMetrics RpcPool::metrics() const { return impl_->core.Metrics(); }

const std::string& RpcPool::target() const { return impl_->core.target(); }

}  // namespace ferry
