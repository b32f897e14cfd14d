#include "rpc/rpc_connection.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "asio/bind_executor.hpp"
#include "asio/connect.hpp"
#include "asio/post.hpp"
#include "asio/write.hpp"
#include "ferry/base/random.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/retry_policy.h"
#include "rpc/rpc_pool_core.h"

namespace ferry::rpc_pool_internal {
namespace {

// A session that dies within this long of becoming ready counts as a failed
// attempt (back-off grows), so a server that accepts and at once closes is
// not hammered; one that lived longer is reconnected without delay.
constexpr absl::Duration kHealthySessionAge = absl::Seconds(1);

}  // namespace

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
  // getaddrinfo blocks: asio runs it on its resolver's own thread, never
  // on the blocking pool, whose threads may all be copy-engine workers
  // waiting on this very connection; the result comes back on the strand.
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io_);
  resolver->async_resolve(
      options_.host, std::to_string(options_.port),
      asio::bind_executor(
          s->conn->strand,
          [this, s, resolver, token = OpToken(this)](
              const std::error_code& ec, const asio::ip::tcp::resolver::results_type& results) {
            if (s->dead) return;
            std::vector<asio::ip::tcp::endpoint> endpoints;
            for (const auto& r : results) endpoints.push_back(r.endpoint());
            if (ec || endpoints.empty()) {
              FailAttempt(s, Unavailable(target_, absl::StrCat("cannot resolve ", options_.host, ": ",
                                                               ec ? ec.message() : "no addresses")));
              return;
            }
            ConnectTo(s, std::move(endpoints));
          }));
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
  // Not zeroed: the socket writes it. Zeroing touched every page of every
  // connection's buffer (a quarter of a 1-byte NFS get's page faults).
  s->read_buf = std::make_unique_for_overwrite<char[]>(options_.read_buffer_bytes);
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
  Connection* next = nullptr;
  // A session is never destroyed under the lock (its destructor takes it).
  std::shared_ptr<Session> previous_sender;
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    ConnShared& sh = shared(c->index);
    sh.state = ConnState::kReady;
    previous_sender = std::exchange(sh.sender, s);
    sh.last_heard = SteadyClock::now();
    if (sh.ever_ready) {
      ++sh.metrics.reconnects;
      ++m_.reconnects;
    }
    sh.ever_ready = true;
    all_down_ = false;
    last_connect_error_ = absl::OkStatus();
    DispatchLocked(&s->kicks);
    next = OpenNextLocked();
    ready_cv_.SignalAll();
  }
  if (next != nullptr) Open(next);
  RunKicks(s->kicks, c);
}

void PoolCore::FailAttempt(const std::shared_ptr<Session>& s, absl::Status status) {
  if (s->dead) return;
  s->dead = true;
  Connection* c = s->conn;
  ClearSenderThenClose(*s);
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
    if (sh.state == ConnState::kIdle) continue;  // never opened: judged by the open ones
    // A pool that has been connected rides out an outage (a server
    // restarting, a network blip): its calls wait for a reconnect until
    // their own deadlines. Failing fast is for a server never reached.
    if (sh.ever_ready || sh.state == ConnState::kReady ||
        sh.consecutive_failures < options_.max_connect_attempts) {
      return;
    }
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
  int opened = 0;
  for (const ConnShared& sh : conn_shared_) opened += sh.state == ConnState::kIdle ? 0 : 1;
  absl::Status status(code, absl::StrCat("rpc to ", target_, ": no connection after ",
                                         options_.max_connect_attempts, " attempts on each of ",
                                         opened, opened == 1 ? " connection" : " connections",
                                         "; last error: ",
                                         last_connect_error_.message()));
  // The pool has already retried its connects: a layer above that retries
  // Unavailable calls must not turn a wrong port into a long wait.
  MarkRetriesExhausted(status);
  return status;
}

// ---------------------------------------------------------------------------
// Losing a connection.

void PoolCore::Lost(const std::shared_ptr<Session>& s, absl::StatusCode code, std::string reason, bool failure) {
  if (s->dead) return;
  s->dead = true;
  Connection* c = s->conn;
  ClearSenderThenClose(*s);
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
    // The budget counts losses, not calls: one token lets every idempotent
    // call of this connection go again. A server that keeps resetting
    // connections still runs the budget dry after a few losses, but one
    // reset of a busy connection (64 calls in flight, or a server shedding
    // load) is one event, not 64 (1,000 transfers on one Runtime lost
    // 243 to a budget spent by the first dropped connection).
    // The socket is closed: no write sends from the callers' memory now.
    UnpinWritesLocked(*s, &completions);
    const bool may_retry = code != absl::StatusCode::kDataLoss && retry_tokens_ >= 1;
    bool charged = false;
    auto settle = [&](Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      --sh.load;
      if (call->placing) {  // the socket is closed: nothing writes its memory now
        call->placing = false;
        s->placing_call = nullptr;
        call->placer(std::string_view());  // void: a resend places anew
      }
      if (!call->abandoned.ok()) {  // cancelled or timed out meanwhile (counted then)
        FinishLocked(call, std::move(call->abandoned), &completions);
        return;
      }
      if (may_retry && call->idempotent && call->attempts < call->max_attempts) {
        if (!charged) {
          retry_tokens_ -= 1;
          charged = true;
        }
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

void PoolCore::ClearSenderThenClose(Session& s) {
  // Destroyed after the lock is released (a session's destructor takes it).
  std::shared_ptr<Session> sender;
  if (s.ready) {
    MutexLock l(&mu_);
    ConnShared& sh = shared(s.conn->index);
    if (sh.sender.get() == &s) sender = std::move(sh.sender);
  }
  std::error_code ignored;
  s.socket.close(ignored);
}

void PoolCore::ResetSession(Connection* c, uint64_t gen, std::string reason) {
  if (c->session == nullptr || c->session->gen != gen) return;
  std::shared_ptr<Session> s = c->session;
  Lost(s, absl::StatusCode::kUnavailable, std::move(reason), /*failure=*/false);
}

void PoolCore::CloseOnStrand(Connection* c) {
  c->backoff_timer.cancel();
  c->connect_timer.cancel();
  std::shared_ptr<Session> s = std::move(c->session);
  if (s == nullptr) return;
  s->dead = true;
  ClearSenderThenClose(*s);
  if (s->placing_call != nullptr || !s->writing_calls.empty()) {
    // Shutdown left the pinned calls to us: their memory is out of the
    // socket's I/O now. Those without a reply end Cancelled.
    std::vector<Completion> completions;
    {
      MutexLock l(&mu_);
      const absl::Status cancelled =
          absl::CancelledError(absl::StrCat("rpc to ", target_, ": the pool was destroyed"));
      std::vector<Call*> calls = std::move(s->writing_calls);
      s->writing_calls.clear();
      Call* placing = std::exchange(s->placing_call, nullptr);
      if (placing != nullptr && !placing->writing) calls.push_back(placing);  // else listed
      for (Call* call : calls) {
        call->placing = false;
        call->writing = false;
        if (call->state != CallState::kHeld && call->abandoned.ok()) call->abandoned = cancelled;
        FinishPinnedLocked(call, std::move(call->held_reply), &completions);
      }
    }
    RunCompletions(&completions);
  }
  if (s->exchange_done) {
    auto done = std::move(s->exchange_done);
    s->exchange_done = nullptr;
    done(absl::CancelledError(absl::StrCat("handshake with ", target_, ": the pool is shutting down")));
  }
}

}  // namespace ferry::rpc_pool_internal
