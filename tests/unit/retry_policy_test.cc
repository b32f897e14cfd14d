// RetryPolicy, IsRetryable and CallWithRetry: which errors are retried, how
// long the waits are, and when a call gives up. Waits run on a scheduler
// the test drives, so nothing sleeps.
#include "ferry/transfer/retry_policy.h"

#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

// Records each wait and runs the waiting function when the test says.
class RecordingScheduler : public DelayScheduler {
 public:
  void RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) override {
    delays.push_back(delay);
    pending.push_back(std::move(fn));
  }
  // Runs the pending functions (which may add more) until none is left.
  void RunAll() {
    while (!pending.empty()) {
      auto fn = std::move(pending.front());
      pending.erase(pending.begin());
      fn();
    }
  }
  std::vector<absl::Duration> delays;
  std::vector<absl::AnyInvocable<void()>> pending;
};

// Runs CallWithRetry over results handed out in order; returns the final
// result and how many attempts were made.
std::pair<absl::StatusOr<int>, int> RunWith(const RetryPolicy& policy,
                                            std::vector<absl::StatusOr<int>> results,
                                            RecordingScheduler& scheduler) {
  int attempts = 0;
  absl::StatusOr<int> final_result = absl::UnknownError("not done");
  CallWithRetry<int>(
      policy, scheduler,
      [&](int attempt, Callback<int> cb) {
        attempts = attempt;
        cb(results[std::min<size_t>(attempt - 1, results.size() - 1)]);
      },
      [&](absl::StatusOr<int> r) { final_result = std::move(r); });
  scheduler.RunAll();
  return {final_result, attempts};
}

TEST(IsRetryableTest, TransientErrorsAreRetryable) {
  EXPECT_TRUE(IsRetryable(absl::UnavailableError("reset")));
  EXPECT_TRUE(IsRetryable(absl::DeadlineExceededError("stall")));
  EXPECT_TRUE(IsRetryable(absl::DataLossError("truncated")));
  EXPECT_TRUE(IsRetryable(absl::AbortedError("aborted")));
}

TEST(IsRetryableTest, CallerAndObjectErrorsAreFinal) {
  EXPECT_FALSE(IsRetryable(absl::NotFoundError("no key")));
  EXPECT_FALSE(IsRetryable(absl::PermissionDeniedError("denied")));
  EXPECT_FALSE(IsRetryable(absl::UnauthenticatedError("bad signature")));
  EXPECT_FALSE(IsRetryable(absl::InvalidArgumentError("bad offset")));
  EXPECT_FALSE(IsRetryable(absl::FailedPreconditionError("etag changed")));
  EXPECT_FALSE(IsRetryable(absl::ResourceExhaustedError("budget")));
  EXPECT_FALSE(IsRetryable(absl::CancelledError("closed")));
}

TEST(IsRetryableTest, StatusMarkedRetriesExhaustedIsFinal) {
  absl::Status s = absl::UnavailableError("connection refused (after 4 attempts)");
  MarkRetriesExhausted(s);
  EXPECT_FALSE(IsRetryable(s));
}

TEST(IsRetryableTest, MarkingKeepsCodeAndMessage) {
  absl::Status s = absl::UnavailableError("connection refused");
  MarkRetriesExhausted(s);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "connection refused");
}

TEST(IsRetryableTest, MarkingOkStatusLeavesItOk) {
  absl::Status s;
  MarkRetriesExhausted(s);
  EXPECT_TRUE(s.ok());
}

TEST(RetryPolicyTest, BackoffDoublesPerRetry) {
  RetryPolicy p{.initial_backoff = absl::Milliseconds(100), .jitter = 0};
  EXPECT_EQ(p.Backoff(1, 0.5), absl::Milliseconds(100));
  EXPECT_EQ(p.Backoff(2, 0.5), absl::Milliseconds(200));
  EXPECT_EQ(p.Backoff(3, 0.5), absl::Milliseconds(400));
}

TEST(RetryPolicyTest, BackoffIsCappedByMaxBackoff) {
  RetryPolicy p{.initial_backoff = absl::Seconds(1), .max_backoff = absl::Seconds(5), .jitter = 0};
  EXPECT_EQ(p.Backoff(10, 0.0), absl::Seconds(5));
  EXPECT_EQ(p.Backoff(1000, 0.0), absl::Seconds(5));
}

TEST(RetryPolicyTest, JitterTakesAtMostItsFractionOffTheWait) {
  RetryPolicy p{.initial_backoff = absl::Milliseconds(100), .jitter = 0.5};
  EXPECT_EQ(p.Backoff(1, 0.0), absl::Milliseconds(100));
  EXPECT_EQ(p.Backoff(1, 1.0), absl::Milliseconds(50));
}

TEST(CallWithRetryTest, RetriesTransientErrorsUntilSuccess) {
  RecordingScheduler scheduler;
  auto [r, attempts] = RunWith({.max_attempts = 4},
                               {absl::UnavailableError("a"), absl::UnavailableError("b"), 7},
                               scheduler);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(scheduler.delays.size(), 2u);
}

TEST(CallWithRetryTest, GivesUpAfterMaxAttemptsWithTheLastError) {
  RecordingScheduler scheduler;
  auto [r, attempts] =
      RunWith({.max_attempts = 3}, {absl::UnavailableError("down")}, scheduler);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(attempts, 3);
}

TEST(CallWithRetryTest, FinalErrorIsNotRetried) {
  RecordingScheduler scheduler;
  auto [r, attempts] = RunWith({.max_attempts = 4}, {absl::NotFoundError("no key")}, scheduler);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(attempts, 1);
  EXPECT_TRUE(scheduler.delays.empty());
}

TEST(CallWithRetryTest, ErrorWhoseRetriesAreExhaustedBelowIsNotRetriedAgain) {
  RecordingScheduler scheduler;
  absl::Status exhausted = absl::UnavailableError("refused (after 4 attempts)");
  MarkRetriesExhausted(exhausted);
  auto [r, attempts] = RunWith({.max_attempts = 4}, {exhausted}, scheduler);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(attempts, 1);
}

}  // namespace
}  // namespace ferry
