#include "rpc/rpc_pool_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "asio/post.hpp"
#include "ferry/base/random.h"
#include "ferry/base/strings.h"

namespace ferry::rpc_pool_internal {

absl::Status Unavailable(const std::string& target, std::string_view what) {
  return absl::UnavailableError(absl::StrCat("rpc to ", target, ": ", ToAbsl(what)));
}

PoolCore::PoolCore(Runtime& runtime, RpcPoolOptions options)
    : runtime_(runtime),
      io_(runtime.io_context()),
      options_(std::move(options)),
      target_(absl::StrCat(options_.host, ":", options_.port)),
      by_id_(options_.matching == RpcReplyMatching::kById),
      cap_(by_id_ ? options_.max_in_flight_per_connection : 1),
      opened_at_start_(options_.connections_at_start <= 0
                           ? options_.connections
                           : std::min(options_.connections_at_start, options_.connections)),
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
    if (i >= opened_at_start_) conn_shared_[i].state = ConnState::kIdle;
  }
  // A random first xid, so a restarted client does not replay the ids of
  // its previous life into the server's duplicate request cache.
  next_xid_ = static_cast<uint32_t>(RandomUint64());
  retry_tokens_ = options_.retry_budget_tokens;
}

PoolCore::~PoolCore() = default;

void PoolCore::Start() {
  for (int i = 0; i < opened_at_start_; ++i) Open(conns_[i].get());
}

void PoolCore::Open(Connection* c) {
  asio::post(c->strand, [this, c, token = OpToken(this)] { StartConnect(c); });
}

Connection* PoolCore::OpenNextLocked() {
  // More than this many calls in flight on every open connection opens
  // another: a caller with a few calls at a time stays on one connection
  // (an NFS client's connect sends three at once: GETATTR, FSINFO and the
  // URL's LOOKUP; at 2, every one-file ferry-cp opened a second connection
  // it never used); a pipelined transfer passes it at once.
  constexpr int kOpenNextAbove = 3;
  if (shutting_down_) return nullptr;
  int idle = -1;
  int least_load = cap_;
  for (int i = 0; i < options_.connections; ++i) {
    const ConnShared& sh = shared(i);
    if (sh.state == ConnState::kIdle) {
      if (idle < 0) idle = i;
      continue;
    }
    // One opening at a time, and none while one is down: more connections
    // to a server that is not answering would only be more failures.
    if (sh.state != ConnState::kReady) return nullptr;
    least_load = std::min(least_load, sh.load);
  }
  if (idle < 0) return nullptr;
  if (queue_.empty() && least_load <= kOpenNextAbove) return nullptr;
  shared(idle).state = ConnState::kConnecting;
  return conns_[idle].get();
}

void PoolCore::EndOp() {
  MutexLock l(&mu_);
  if (ops_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_cv_.SignalAll();
}

// ---------------------------------------------------------------------------
// Shutdown, readiness, metrics.
void PoolCore::Shutdown() {
  std::vector<Completion> completions;
  // No caller writes from now on; the sessions die after the lock (their
  // destructor takes it) and after their strand's close.
  std::vector<std::shared_ptr<Session>> senders;
  {
    MutexLock l(&mu_);
    shutting_down_ = true;
    const absl::Status cancelled =
        absl::CancelledError(absl::StrCat("rpc to ", target_, ": the pool was destroyed"));
    auto cancel = [&](Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (call->pinned()) {
        // Its memory is in its connection's I/O: that connection's strand
        // ends it after closing the socket (CloseOnStrand).
        if (call->abandoned.ok()) {
          ++m_.calls_failed;
          ++m_.calls_cancelled;
          deadlines_.Remove(call);
          call->abandoned = cancelled;
        }
        return;
      }
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
      if (sh.sender != nullptr) senders.push_back(std::move(sh.sender));
      sh.sent_by_caller_rest.clear();
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
  senders.clear();  // before the wait: each holds a session's operation
  MutexLock l(&mu_);
  while (ops_.load(std::memory_order_acquire) != 0) idle_cv_.Wait(&mu_);
}

absl::Status PoolCore::WaitUntilReady(int n, absl::Time deadline) {
  n = std::clamp(n, 0, options_.connections);
  MutexLock l(&mu_);
  // Idle connections the caller waits for are opened now.
  for (int i = 0, opened = 0; i < options_.connections; ++i) {
    if (shared(i).state != ConnState::kIdle) {
      ++opened;
    } else if (opened < n && !shutting_down_) {
      shared(i).state = ConnState::kConnecting;
      Open(conns_[i].get());
      ++opened;
    }
  }
  for (;;) {
    int ready = 0;
    for (const ConnShared& sh : conn_shared_) ready += sh.state == ConnState::kReady ? 1 : 0;
    if (ready >= n) return absl::OkStatus();
    if (shutting_down_) return absl::CancelledError(absl::StrCat("rpc to ", target_, ": the pool is shutting down"));
    if (!ready_cv_.WaitWithDeadline(&mu_, deadline) && absl::Now() >= deadline) {
      // Why the others are not ready: a server that refuses, resets or
      // stalls the connections beyond the first shows only here.
      return absl::DeadlineExceededError(absl::StrCat(
          "rpc to ", target_, ": ", ready, " of ", n, " connections ready at the deadline",
          last_connect_error_.ok() ? "" : absl::StrCat("; last connect error: ", last_connect_error_.message())));
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

}  // namespace ferry::rpc_pool_internal
