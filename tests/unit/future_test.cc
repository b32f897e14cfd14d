#include "ferry/runtime/future.h"

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace ferry {
namespace {

TEST(FutureTest, GetReturnsTheValueSetFromAnotherThread) {
  Promise<std::string> p;
  Future<std::string> f = p.GetFuture();
  std::thread t([p = std::move(p)]() mutable { p.Set(std::string("reply")); });
  auto r = std::move(f).Get();
  t.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "reply");
}

TEST(FutureTest, DroppedPromiseCompletesWithCancelled) {
  Future<int> f;
  {
    Promise<int> p;
    f = p.GetFuture();
  }
  EXPECT_EQ(std::move(f).Get().status().code(), absl::StatusCode::kCancelled);
}

TEST(FutureTest, OnlyTheFirstSetCounts) {
  Promise<int> p;
  Future<int> f = p.GetFuture();
  p.Set(1);
  p.Set(absl::InternalError("late"));
  EXPECT_EQ(*std::move(f).Get(), 1);
}

TEST(FutureTest, ThenRunsAtOnceWhenAlreadyComplete) {
  int seen = 0;
  MakeReadyFuture<int>(7).Then([&](absl::StatusOr<int> r) { seen = *r; });
  EXPECT_EQ(seen, 7);
}

TEST(FutureTest, ThenRunsOnCompletion) {
  Promise<int> p;
  int seen = 0;
  p.GetFuture().Then([&](absl::StatusOr<int> r) { seen = *r; });
  EXPECT_EQ(seen, 0);
  p.Set(9);
  EXPECT_EQ(seen, 9);
}

TEST(FutureTest, GetUntilTimesOutWithoutConsumingTheFuture) {
  Promise<int> p;
  Future<int> f = p.GetFuture();
  EXPECT_EQ(f.GetUntil(absl::Now() + absl::Milliseconds(5)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  p.Set(3);
  EXPECT_EQ(*f.GetUntil(absl::Now() + absl::Seconds(5)), 3);
}

TEST(FutureTest, ErrorsPassThrough) {
  auto r = MakeReadyFuture<int>(absl::NotFoundError("nope")).Get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "nope");
}

TEST(FutureTest, APromiseAsACallbackCompletesItsFuture) {
  Promise<int> p;
  Future<int> f = p.GetFuture();
  Callback<int> done = std::move(p).AsCallback();
  std::thread t([done = std::move(done)]() mutable { done(5); });
  EXPECT_EQ(*std::move(f).Get(), 5);
  t.join();
}

TEST(FutureTest, APromiseAsACallbackDroppedUncalledCompletesWithCancelled) {
  Promise<int> p;
  Future<int> f = p.GetFuture();
  { Callback<int> dropped = std::move(p).AsCallback(); }
  EXPECT_EQ(std::move(f).Get().status().code(), absl::StatusCode::kCancelled);
}

TEST(FutureTest, BlockOnWaitsForTheCallbackOfTheCallItStarts) {
  std::thread t;
  absl::StatusOr<std::string> r = BlockOn<std::string>([&](Callback<std::string> done) {
    t = std::thread([done = std::move(done)]() mutable { done(std::string("later")); });
  });
  t.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "later");
}

}  // namespace
}  // namespace ferry
