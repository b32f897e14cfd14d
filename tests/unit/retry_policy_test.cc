// RetryPolicy, IsRetryable, CallWithRetry and RetryBlocking: which errors
// are retried, how long the waits are, and when a call gives up. Waits run
// on a scheduler the test drives (or a sleep that advances a ManualClock),
// so nothing sleeps.
#include "ferry/runtime/retry_policy.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

// Records each wait and runs the waiting function when the test says. Given
// a ManualClock, each wait also passes on it as it is scheduled, so
// time-bounded policies see the time go by.
class RecordingScheduler : public DelayScheduler {
 public:
  RecordingScheduler() = default;
  explicit RecordingScheduler(ManualClock& clock) : clock_(&clock) {}
  void RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) override {
    delays.push_back(delay);
    if (clock_ != nullptr) clock_->Advance(delay);
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

 private:
  ManualClock* clock_ = nullptr;
};

// Runs CallWithRetry with `attempt` answering each attempt (numbered from
// 1); returns the final result and how many attempts were made.
std::pair<absl::StatusOr<int>, int> RunUntilDone(
    const RetryPolicy& policy, RecordingScheduler& scheduler,
    absl::FunctionRef<absl::StatusOr<int>(int attempt)> attempt) {
  int attempts = 0;
  absl::StatusOr<int> final_result = absl::UnknownError("not done");
  CallWithRetry<int>(
      policy, scheduler,
      [&](int n, Callback<int> cb) {
        attempts = n;
        cb(attempt(n));
      },
      [&](absl::StatusOr<int> r) { final_result = std::move(r); });
  scheduler.RunAll();
  return {final_result, attempts};
}

// RunUntilDone over results handed out in order (the last one repeats).
std::pair<absl::StatusOr<int>, int> RunWith(const RetryPolicy& policy,
                                            std::vector<absl::StatusOr<int>> results,
                                            RecordingScheduler& scheduler) {
  return RunUntilDone(policy, scheduler, [&](int attempt) {
    return results[std::min<size_t>(attempt - 1, results.size() - 1)];
  });
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

TEST(CallWithRetryTest, LastErrorSaysHowManyAttemptsAndIsMarkedExhausted) {
  RecordingScheduler scheduler;
  auto [r, attempts] = RunWith({.max_attempts = 3}, {absl::UnavailableError("down")}, scheduler);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("down (gave up after 3 attempts in"));
  EXPECT_FALSE(IsRetryable(r.status()));
}

TEST(CallWithRetryTest, ACallThatFailsOnceFinalKeepsItsMessage) {
  RecordingScheduler scheduler;
  auto [r, attempts] = RunWith({.max_attempts = 4}, {absl::NotFoundError("no key")}, scheduler);
  EXPECT_EQ(r.status().message(), "no key");
}

TEST(RetryPolicyTest, TimeBoundedRetriesStopWhenTheNextWaitWouldPassMaxElapsed) {
  ManualClock clock;
  RecordingScheduler scheduler(clock);
  const RetryPolicy p{.max_attempts = 1000,
                      .initial_backoff = absl::Milliseconds(100),
                      .max_backoff = absl::Seconds(1),
                      .jitter = 0,
                      .max_elapsed = absl::Seconds(5),
                      .clock = &clock};
  auto [result, attempts] =
      RunUntilDone(p, scheduler, [](int) { return absl::UnavailableError("reset"); });
  // Waits 0.1, 0.2, 0.4, 0.8, 1, 1, 1 (4.5 s in all); an 8th would end at
  // 5.5 s.
  EXPECT_EQ(attempts, 8);
  EXPECT_EQ(clock.Now() - ManualClock().Now(), absl::Milliseconds(4500));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(result.status().message(), ::testing::HasSubstr("gave up after 8 attempts in 4.5s"));
}

TEST(RetryPolicyTest, TimeBoundedRetriesRideOutAnOutageShorterThanTheBound) {
  ManualClock clock;
  RecordingScheduler scheduler(clock);
  const absl::Time back = clock.Now() + absl::Seconds(3);
  const RetryPolicy p{.max_attempts = 1000, .jitter = 0, .max_elapsed = absl::Seconds(10),
                      .clock = &clock};
  auto [result, attempts] = RunUntilDone(p, scheduler, [&](int) -> absl::StatusOr<int> {
    if (clock.Now() < back) return absl::UnavailableError("server restarting");
    return 42;
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, 42);
}

bool OnlyUnavailable(const absl::Status& s) { return absl::IsUnavailable(s); }

TEST(RetryPolicyTest, RetryablePredicateNarrowsWhatIsRetried) {
  RecordingScheduler scheduler;
  auto [r, attempts] = RunWith({.max_attempts = 4, .retryable = OnlyUnavailable},
                               {absl::DeadlineExceededError("stalled")}, scheduler);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(attempts, 1);
}

TEST(RetryPolicyTest, RetryablePredicateCannotRetryAStatusMarkedExhausted) {
  absl::Status s = absl::UnavailableError("never connected");
  MarkRetriesExhausted(s);
  const RetryPolicy p{.max_attempts = 4, .retryable = OnlyUnavailable};
  EXPECT_FALSE(p.NextWait(s, 1, absl::ZeroDuration(), 0).has_value());
}

TEST(RetryBlockingTest, RetriesOnTheCallingThreadUntilSuccess) {
  ManualClock clock;
  std::vector<absl::Duration> slept;
  const RetryPolicy p{.max_attempts = 1000, .jitter = 0, .max_elapsed = absl::Seconds(10),
                      .clock = &clock};
  absl::StatusOr<std::string> r = RetryBlocking(
      p,
      [&](int n) -> absl::StatusOr<std::string> {
        if (n < 3) return absl::UnavailableError("reset");
        return std::string("ok");
      },
      [&](absl::Duration d) {
        slept.push_back(d);
        clock.Advance(d);
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "ok");
  EXPECT_THAT(slept, ::testing::ElementsAre(absl::Milliseconds(100), absl::Milliseconds(200)));
}

TEST(RetryBlockingTest, GivesUpAtMaxElapsedWithTheLastError) {
  ManualClock clock;
  const RetryPolicy p{.max_attempts = 1000, .max_backoff = absl::Seconds(1), .jitter = 0,
                      .max_elapsed = absl::Seconds(3), .clock = &clock};
  int attempts = 0;
  absl::Status s = RetryBlocking(
      p,
      [&](int n) {
        attempts = n;
        return absl::UnavailableError(absl::StrCat("reset ", n));
      },
      [&](absl::Duration d) { clock.Advance(d); });
  // 0.1 + 0.2 + 0.4 + 0.8 + 1 = 2.5 s of waits; the next would end at 3.5 s.
  EXPECT_EQ(attempts, 6);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("reset 6 (gave up after 6 attempts"));
}

TEST(DrainableDelaySchedulerTest, DrainRunsPendingFunctionsAtOnce) {
  RecordingScheduler inner;
  DrainableDelayScheduler drainable(inner);
  int ran = 0;
  drainable.RunAfter(absl::Seconds(5), [&] { ++ran; });
  EXPECT_EQ(ran, 0);
  drainable.Drain();
  EXPECT_EQ(ran, 1);
  inner.RunAll();  // the timer fires later and finds nothing to run
  EXPECT_EQ(ran, 1);
}

TEST(DrainableDelaySchedulerTest, AfterDrainRunAfterRunsAtOnce) {
  RecordingScheduler inner;
  DrainableDelayScheduler drainable(inner);
  drainable.Drain();
  int ran = 0;
  drainable.RunAfter(absl::Seconds(5), [&] { ++ran; });
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(inner.pending.empty());
}

TEST(DrainableDelaySchedulerTest, FunctionsRunOnceWhenTheirTimersFire) {
  RecordingScheduler inner;
  int ran = 0;
  {
    DrainableDelayScheduler drainable(inner);
    drainable.RunAfter(absl::Seconds(1), [&] { ++ran; });
    inner.RunAll();
    EXPECT_EQ(ran, 1);
  }
  EXPECT_EQ(ran, 1);  // destroying it drained nothing more
}

TEST(DrainableDelaySchedulerTest, TimerFiringAfterTheSchedulerIsGoneDoesNothing) {
  RecordingScheduler inner;
  int ran = 0;
  {
    DrainableDelayScheduler drainable(inner);
    drainable.RunAfter(absl::Seconds(1), [&] { ++ran; });
  }  // drained: ran once
  inner.RunAll();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace ferry
