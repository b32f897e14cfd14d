// Back-off is "equal jitter" style: the deterministic part doubles per
// retry up to max_backoff, and a `jitter` fraction of it is drawn at
// random. RuntimeDelayScheduler owns each timer through the handler's
// shared_ptr, so nothing outlives the io_context and the scheduler object
// needs no registry of pending timers.
#include "ferry/transfer/retry_policy.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "absl/strings/cord.h"
#include "asio/steady_timer.hpp"
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

namespace {
// A payload key, not a code: the status keeps its canonical code.
constexpr char kRetriesExhaustedUrl[] = "type.ferry.io/retries-exhausted";
}  // namespace

void MarkRetriesExhausted(absl::Status& status) {
  if (!status.ok()) status.SetPayload(kRetriesExhaustedUrl, absl::Cord("1"));
}

bool IsRetryable(const absl::Status& status) {
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
