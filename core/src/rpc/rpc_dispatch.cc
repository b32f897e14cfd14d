// RpcPool's calls from acceptance to an end: Submit queues a call or assigns
// it to the least loaded ready connection; abandoning ends it early
// (deadline, Cancel, shutdown) from wherever it is.
#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "asio/bind_executor.hpp"
#include "asio/post.hpp"
#include "ferry/base/strings.h"
#include "rpc/rpc_pool_core.h"

namespace ferry::rpc_pool_internal {
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
  if (!o.payload.empty() && (o.payload_at > request.size() || (by_id_ && o.payload_at < 4))) {
    PostCompletion(std::move(done),
                   absl::InvalidArgumentError(absl::StrCat(
                       "rpc to ", target_, ": payload at offset ", o.payload_at, " of a request of ",
                       request.size(), " bytes", by_id_ ? " (after its 4-byte call id)" : "")));
    return 0;
  }
  if (o.payload_file.fd >= 0) {
    std::string prefix;
    const char* wrong =
        !o.payload.empty() ? "a payload both in memory and from a file"
        : o.payload_at > request.size() || (by_id_ && o.payload_at < 4)
            ? "a file payload at an offset outside the request (or inside its call id)"
        : o.payload_file.offset < 0 ? "a file payload at a negative file offset"
        : !options_.framing->PrefixFor(request.size() + o.payload_file.size, &prefix)
            ? "a file payload, which this framing cannot put in one piece before the record"
            : nullptr;
    if (wrong != nullptr) {
      PostCompletion(std::move(done), absl::InvalidArgumentError(absl::StrCat(
                                          "rpc to ", target_, ": request with ", wrong)));
      return 0;
    }
  }
  const bool fail_when_busy = o.when_busy.value_or(options_.when_busy) == RpcWhenBusy::kFail;
  const absl::Duration timeout = o.timeout.value_or(options_.default_timeout);
  const SteadyTime steady_now = SteadyClock::now();
  const SteadyTime deadline = DeadlineAfter(steady_now, timeout);
  const absl::Time now = options_.clock == nullptr
                             ? absl::UnixEpoch() + absl::FromChrono(steady_now.time_since_epoch())
                             : options_.clock->Now();
  const size_t bytes = request.size() + o.payload.size() + o.payload_file.size;
  Kicks kicks;
  bool arm = false;
  absl::Status reject;
  RpcCallId id = 0;
  Connection* next = nullptr;
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
      if (by_id_) call->placer = o.placer;
      call->payload = o.payload;
      call->payload_at = o.payload_at;
      call->payload_file = o.payload_file;
      ++m_.calls_started;
      if (deadline != kNoDeadline) {
        deadlines_.Push(call);
        if (deadline < armed_deadline_) {
          armed_deadline_ = deadline;
          arm = true;
        }
      }
      if (conn >= 0) {
        if (!SendByCallerLocked(conn, call, &kicks)) AssignLocked(conn, call, &kicks);
      } else {
        call->state = CallState::kQueued;
        queue_.PushBack(call);
        queued_bytes_ += bytes;
      }
      id = (RpcCallId{call->slot} << 32) | call->generation;
      next = OpenNextLocked();
    }
  }
  if (next != nullptr) Open(next);
  if (!reject.ok()) {
    PostCompletion(std::move(done), std::move(reject));
    return 0;
  }
  if (arm) asio::post(timer_strand_, [this, token = OpToken(this)] { ArmTimer(); });
  RunKicks(kicks, nullptr);
  return id;
}

// ---------------------------------------------------------------------------
// Abandoning calls: deadlines, Cancel, shutdown.

void PoolCore::AbandonLocked(Call* call, absl::Status status, std::vector<Completion>* completions,
                             Resets* resets) {
  if (call->pinned()) {
    // Its reply is being read into the caller's memory, or its payload
    // written from it: ending it now would let the caller free that memory
    // under the I/O. The connection is recycled and its strand ends the
    // call with this status once the socket is closed (or the write done).
    call->abandoned = std::move(status);
    deadlines_.Remove(call);
    RecycleLocked(call->conn, resets);
    return;
  }
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
    case CallState::kInFlight:
      DetachInFlightLocked(call, resets);
      break;
    case CallState::kFree:  // detached by Lost
      break;
    case CallState::kHeld:  // never: its write goes on, so it is pinned (above)
      return;
  }
  FinishLocked(call, std::move(status), completions);
}

void PoolCore::DetachInFlightLocked(Call* call, Resets* resets) {
  ConnShared& sh = shared(call->conn);
  --sh.load;
  if (by_id_) {
    sh.by_xid[call->xid] = nullptr;  // a late reply finds the tombstone
    // More tombstones than the in-flight cap: the server is not answering;
    // recycle the connection rather than pile them up.
    if (++sh.abandoned > cap_) RecycleLocked(call->conn, resets);
  } else {
    sh.in_order.Remove(call);
    // Its reply would be taken for the next call's: recycle.
    RecycleLocked(call->conn, resets);
  }
}

void PoolCore::RecycleLocked(int conn, Resets* resets) {
  ConnShared& sh = shared(conn);
  if (resets == nullptr || sh.state != ConnState::kReady) return;
  sh.state = ConnState::kBackoff;
  resets->emplace_back(conn, sh.session_gen);
}

bool PoolCore::Cancel(RpcCallId id) {
  const auto slot = static_cast<uint32_t>(id >> 32);
  const auto generation = static_cast<uint32_t>(id);
  std::vector<Completion> completions;
  Resets resets;
  Kicks kicks;
  {
    MutexLock l(&mu_);
    Call* call = slab_.Find(slot);
    if (id == 0 || call == nullptr || call->generation != generation || call->state == CallState::kFree ||
        call->state == CallState::kHeld || !call->abandoned.ok()) {
      return false;  // ended, or ending (replied, or abandoned while pinned) once its I/O stops
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
      ResetSession(c, gen, "a call was cancelled whose reply this connection was reading");
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

void PoolCore::ResendAfterTimeoutLocked(Call* call, SteadyTime now, Resets* resets) {
  DetachInFlightLocked(call, resets);  // the first send's late reply is dropped
  // A new id: a server whose duplicate request cache still holds the first
  // as in progress would drop a resend under the same one.
  call->has_xid = false;
  call->resent_after_timeout = true;
  call->state = CallState::kQueued;
  call->conn = -1;
  deadlines_.Remove(call);
  call->deadline = DeadlineAfter(now, call->timeout);
  deadlines_.Push(call);
  queue_.PushFront(call);
  queued_bytes_ += call->bytes;
  ++m_.resent_after_timeout;
}

void PoolCore::OnDeadlines() {
  std::vector<Completion> completions;
  Resets resets;
  Kicks kicks;
  {
    MutexLock l(&mu_);
    if (shutting_down_) return;
    const SteadyTime now = SteadyClock::now();
    while (!deadlines_.empty() && deadlines_.top()->deadline <= now) {
      Call* call = deadlines_.top();
      if (call->state == CallState::kHeld) {
        // Answered, but its payload's write has stalled (a server that
        // replied and stopped reading): pinned, it ends when the replaced
        // connection closes.
        ++m_.calls_failed;
        ++m_.calls_timed_out;
        AbandonLocked(call,
                      absl::DeadlineExceededError(absl::StrCat(
                          "rpc to ", target_, ": deadline of ", absl::FormatDuration(call->timeout),
                          " exceeded; the server answered, but the call's request was still being written")),
                      &completions, &resets);
        continue;
      }
      bool silent = false;
      if (call->state == CallState::kInFlight) {
        ConnShared& sh = shared(call->conn);
        // Nothing heard on the connection since the call went out: the
        // connection is dead or wedged (a lost peer, a stalled middlebox),
        // not the call slow. Close and replace it; its other calls are
        // retried on the new one as after any lost connection.
        silent = sh.last_heard < call->sent_steady;
        if (silent) RecycleLocked(call->conn, &resets);
        // An idempotent call gets one more try, on a fresh connection when
        // its own went silent, and its timeout again from that send.
        // Not one whose reply or payload is in its connection's I/O: that
        // connection is alive but too slow (or will not take the request).
        if (call->idempotent && !call->resent_after_timeout && !call->pinned()) {
          ResendAfterTimeoutLocked(call, now, &resets);
          continue;
        }
      }
      std::string where;
      if (call->state == CallState::kInFlight) {
        where = absl::StrCat(
            "in flight (sent ", absl::FormatDuration(absl::Trunc(absl::FromChrono(now - call->sent_steady),
                                                                 absl::Milliseconds(1))),
            " ago",
            call->resent_after_timeout ? "; its first send had gone unanswered too" : "",
            silent ? "; its connection was silent since and is replaced" : "",
            call->placing   ? "; its reply was still arriving, and its connection is replaced"
            : call->writing ? "; it was still being written, and its connection is replaced"
                            : "",
            ")");
      } else {
        where = call->state == CallState::kPending ? "waiting to be written"
                                                   : "queued (every connection busy or down)";
      }
      ++m_.calls_failed;
      ++m_.calls_timed_out;
      // Queued while reconnecting: the connect error is the cause to show.
      const bool reconnecting = call->state == CallState::kQueued && !last_connect_error_.ok();
      AbandonLocked(call,
                    absl::DeadlineExceededError(absl::StrCat(
                        "rpc to ", target_, ": deadline of ", absl::FormatDuration(call->timeout),
                        " exceeded; the call was ", where,
                        reconnecting ? absl::StrCat("; last connect error: ", last_connect_error_.message())
                                     : "")),
                    &completions, &resets);
    }
    DispatchLocked(&kicks);
  }
  RunCompletions(&completions);
  for (auto& [conn, gen] : resets) {
    Connection* c = conns_[conn].get();
    asio::post(c->strand, [this, c, gen = gen, token = OpToken(this)] {
      ResetSession(c, gen, "the server left calls unanswered (or their replies unfinished) past their deadlines");
    });
  }
  RunKicks(kicks, nullptr);
  ArmTimer();
}

}  // namespace ferry::rpc_pool_internal
