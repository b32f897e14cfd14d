// Back-off is "equal jitter" style: the deterministic part doubles per
// retry up to max_backoff, and a `jitter` fraction of it is drawn at
// random. RuntimeDelayScheduler owns each timer through the handler's
// shared_ptr, so nothing outlives the io_context and the scheduler object
// needs no registry of pending timers.
#include "ferry/runtime/retry_policy.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "asio/steady_timer.hpp"
#include "ferry/base/mutex.h"
#include "ferry/runtime/runtime.h"

namespace ferry {

absl::Duration RetryPolicy::Backoff(int retry, double unit) const {
  if (retry < 1) retry = 1;
  absl::Duration d = initial_backoff;
  // Doubling more than 62 times would overflow any real duration anyway.
  for (int i = 1; i < retry && i < 62 && d < max_backoff; ++i) d *= 2;
  d = std::min(d, max_backoff);
  const double j = std::clamp(jitter, 0.0, 1.0);
  const double u = std::clamp(unit, 0.0, 1.0);
  return d * (1.0 - j * u);
}

std::optional<absl::Duration> RetryPolicy::NextWait(const absl::Status& status, int attempts,
                                                   absl::Duration elapsed, double unit) const {
  if (status.ok() || attempts >= max_attempts) return std::nullopt;
  if (!IsRetryable(status)) return std::nullopt;  // also honours MarkRetriesExhausted
  if (retryable != nullptr && !retryable(status)) return std::nullopt;
  const absl::Duration wait = Backoff(attempts, unit);
  if (elapsed + wait > max_elapsed) return std::nullopt;
  return wait;
}

absl::Status RetryPolicy::GiveUp(absl::Status status, int attempts, absl::Duration elapsed) const {
  if (status.ok()) return status;
  if (attempts > 1) {
    absl::Status out(status.code(),
                     absl::StrCat(status.message(), " (gave up after ", attempts, " attempts in ",
                                  absl::FormatDuration(absl::Trunc(elapsed, absl::Milliseconds(100))),
                                  ")"));
    status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
      out.SetPayload(url, payload);
    });
    status = std::move(out);
  }
  MarkRetriesExhausted(status);
  return status;
}

namespace {
// A payload key, not a code: the status keeps its canonical code.
constexpr char kRetriesExhaustedUrl[] = "type.ferry.io/retries-exhausted";
}  // namespace

void MarkRetriesExhausted(absl::Status& status) {
  if (!status.ok()) status.SetPayload(kRetriesExhaustedUrl, absl::Cord("1"));
}

bool IsRetryable(const absl::Status& status) {
  if (status.ok()) return false;
  if (status.GetPayload(kRetriesExhaustedUrl).has_value()) return false;
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

struct DrainableDelayScheduler::State {
  Mutex mu;
  bool drained ABSL_GUARDED_BY(mu) = false;
  uint64_t next_id ABSL_GUARDED_BY(mu) = 0;
  absl::flat_hash_map<uint64_t, absl::AnyInvocable<void()>> pending ABSL_GUARDED_BY(mu);
};

DrainableDelayScheduler::DrainableDelayScheduler(DelayScheduler& inner)
    : inner_(inner), state_(std::make_shared<State>()) {}

DrainableDelayScheduler::~DrainableDelayScheduler() { Drain(); }

void DrainableDelayScheduler::RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  uint64_t id = 0;
  bool drained;
  {
    MutexLock l(&state_->mu);
    drained = state_->drained;
    if (!drained) {
      id = state_->next_id++;
      state_->pending.emplace(id, std::move(fn));
    }
  }
  if (drained) {  // the owner is going away: run it now
    fn();
    return;
  }
  // The timer holds the state weakly: once drained (or destroyed) the
  // function has already run and the timer finds nothing.
  inner_.RunAfter(delay, [weak = std::weak_ptr<State>(state_), id] {
    std::shared_ptr<State> state = weak.lock();
    if (state == nullptr) return;
    absl::AnyInvocable<void()> f;
    {
      MutexLock l(&state->mu);
      auto it = state->pending.find(id);
      if (it == state->pending.end()) return;
      f = std::move(it->second);
      state->pending.erase(it);
    }
    f();
  });
}

void DrainableDelayScheduler::Drain() {
  absl::flat_hash_map<uint64_t, absl::AnyInvocable<void()>> pending;
  {
    MutexLock l(&state_->mu);
    state_->drained = true;
    pending.swap(state_->pending);
  }
  for (auto& [id, fn] : pending) fn();
}

void RuntimeDelayScheduler::RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  if (delay <= absl::ZeroDuration()) {
    runtime_.Post(std::move(fn));
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(
      runtime_.io_context(), std::chrono::nanoseconds(absl::ToInt64Nanoseconds(delay)));
  timer->async_wait([timer, fn = std::move(fn)](const std::error_code& ec) mutable {
    if (!ec) fn();
  });
}

}  // namespace ferry
