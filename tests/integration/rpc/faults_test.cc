// RpcPool against the real nfs-ganesha through toxiproxy (fixtures
// peer_ganesha and peer_toxiproxy): added latency, a connection reset while
// calls are in flight, a stalled server and a server that closes in the
// middle of a reply. Each test gets its own proxy in front of ganesha's NFS
// port and deletes it at the end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "rpc_test_util.h"
#include "testing/peers.h"
#include "testing/rpc_load.h"

namespace ferry {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Long enough that calls are certainly in flight while a fault is set up.
constexpr absl::Duration kHoldReplies = absl::Milliseconds(300);
// Bounds every wait in these tests: past it, something hangs.
constexpr absl::Duration kHangBound = absl::Seconds(8);

class RpcPoolThroughToxiproxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    proxy_ = std::make_unique<peers::ScopedProxy>(toxiproxy_, absl::StrCat("rpc_", info->name()),
                                                  peers::kNfsPort);
    ASSERT_TRUE(proxy_->status().ok()) << proxy_->status();
  }

  // A pool of `connections` to ganesha through this test's proxy.
  std::unique_ptr<RpcPool> Pool(RpcPoolOptions options) {
    absl::StatusOr<std::unique_ptr<RpcPool>> pool =
        rpc_test::MakeReadyPool(runtime_, std::move(options));
    EXPECT_TRUE(pool.ok()) << pool.status();
    return pool.ok() ? *std::move(pool) : nullptr;
  }
  RpcPoolOptions Options(int connections = 1) {
    return rpc_test::PoolOptions(proxy_->port(), connections);
  }

  void AddToxic(const peers::Toxic& toxic) {
    const absl::Status s = proxy_->AddToxic(toxic);
    ASSERT_TRUE(s.ok()) << s;
  }

  // Waits for `f` (bounded: a future that never completes fails the test).
  static absl::StatusOr<std::string> Await(Future<std::string>& f) {
    absl::StatusOr<std::string> r = f.GetUntil(absl::Now() + kHangBound);
    EXPECT_THAT(r.status().message(), Not(HasSubstr("future: no result")))
        << "call still pending after " << kHangBound;
    return r;
  }

  static std::string NullCall() { return rpc_test::MakeCall(rpc_test::kNfs3Null); }

  Runtime runtime_;
  peers::ToxiproxyClient toxiproxy_;
  std::unique_ptr<peers::ScopedProxy> proxy_;
};

TEST_F(RpcPoolThroughToxiproxyTest, AddedLatencyDelaysCallsAndShowsInRoundTripMetric) {
  constexpr int kLatencyMs = 40;
  std::unique_ptr<RpcPool> pool = Pool(Options());
  ASSERT_NE(pool, nullptr);
  AddToxic({.name = "latency", .type = "latency", .attributes = {{"latency", kLatencyMs}}});

  const peers::RpcLoadResult r = peers::RunClosedLoop(*pool, rpc_test::Nfs3NullLoad(/*calls=*/32, /*depth=*/8));
  EXPECT_EQ(r.succeeded, 32) << r.first_error;

  // Every reply waited in the proxy, so even the median round trip is over
  // the added latency (Percentile gives its bucket's upper edge: >= exact).
  const RpcPoolMetrics m = pool->metrics();
  EXPECT_GE(m.round_trip.count, 32u);
  EXPECT_GE(m.round_trip.p50(), absl::Milliseconds(kLatencyMs));
  EXPECT_GE(m.round_trip.Mean(), absl::Milliseconds(kLatencyMs));
  // 32 calls 8 at a time are 4 rounds of at least the latency each.
  EXPECT_GE(r.elapsed, absl::Milliseconds(4 * kLatencyMs));
}

TEST_F(RpcPoolThroughToxiproxyTest,
       ResetMidStreamFailsInFlightCallsRetriesIdempotentOnesAndReconnects) {
  constexpr int kCalls = 16;
  RpcPoolOptions options = Options();
  // Every idempotent call in flight is retried once: give them the budget.
  options.retry_budget_tokens = 100;
  options.max_attempts = 5;
  std::unique_ptr<RpcPool> pool = Pool(std::move(options));
  ASSERT_NE(pool, nullptr);
  ASSERT_TRUE(rpc_test::CallProcedure(*pool, rpc_test::kNfs3Null).ok());

  // Replies wait in the proxy, then meet a reset: every call is in flight
  // when the connection dies. Both toxics go in while the link is idle
  // (adding a toxic flushes what a latency toxic holds).
  AddToxic({.name = "hold", .type = "latency",
            .attributes = {{"latency", absl::ToInt64Milliseconds(kHoldReplies)}}});
  AddToxic({.name = "reset", .type = "reset_peer", .attributes = {{"timeout", 0}}});
  std::vector<Future<std::string>> plain, idempotent;
  for (int i = 0; i < kCalls; ++i) {
    plain.push_back(pool->Call(NullCall(), {.idempotent = false}));
    idempotent.push_back(pool->Call(NullCall(), {.idempotent = true}));
  }

  // A call that was in flight and is not idempotent fails: the pool cannot
  // know whether the server ran it.
  absl::StatusOr<std::string> first = Await(plain[0]);
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  EXPECT_THAT(first.status().message(), HasSubstr(pool->target()));
  // The retries' replies on the new connection are held too: lift the
  // reset before they reach it, so they get through.
  ASSERT_TRUE(proxy_->RemoveToxic("reset").ok());

  for (int i = 1; i < kCalls; ++i) {
    absl::StatusOr<std::string> r = Await(plain[i]);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable)
        << "call " << i << ": " << r.status();
  }
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<std::string> r = Await(idempotent[i]);
    ASSERT_TRUE(r.ok()) << "idempotent call " << i << ": " << r.status();
    EXPECT_TRUE(DecodeReply(*r, rpc_test::kNfs3Null).ok());
  }
  const RpcPoolMetrics m = pool->metrics();
  EXPECT_GE(m.reconnects, 1u);
  EXPECT_GE(m.retries, static_cast<uint64_t>(kCalls));

  // Later calls use the new connection.
  ASSERT_TRUE(proxy_->RemoveToxic("hold").ok());
  absl::StatusOr<std::string> later = rpc_test::CallProcedure(*pool, rpc_test::kNfs3Null);
  EXPECT_TRUE(later.ok()) << later.status();
}

TEST_F(RpcPoolThroughToxiproxyTest, RefusedReconnectFailsCallsInsteadOfHanging) {
  RpcPoolOptions options = Options();
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(50);
  std::unique_ptr<RpcPool> pool = Pool(std::move(options));
  ASSERT_NE(pool, nullptr);
  // Disabling the proxy closes its connections and refuses new ones.
  ASSERT_TRUE(proxy_->SetEnabled(false).ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> r =
      pool->CallBlocking(NullCall(), {.timeout = absl::Seconds(5), .idempotent = true});
  EXPECT_THAT(r.status().code(),
              AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded))
      << r.status();
  EXPECT_LT(absl::Now() - start, kHangBound);

  // Back up: the pool reconnects on its own and calls succeed again.
  ASSERT_TRUE(proxy_->SetEnabled(true).ok());
  absl::Status ready = pool->WaitUntilReady(1, absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(ready.ok()) << ready;
  absl::StatusOr<std::string> later = rpc_test::CallProcedure(*pool, rpc_test::kNfs3Null);
  EXPECT_TRUE(later.ok()) << later.status();
}

TEST_F(RpcPoolThroughToxiproxyTest, StalledServerFiresDeadlinesAndNothingHangs) {
  constexpr int kCalls = 32;
  constexpr absl::Duration kDeadline = absl::Milliseconds(300);
  std::unique_ptr<RpcPool> pool = Pool(Options());
  ASSERT_NE(pool, nullptr);
  ASSERT_TRUE(rpc_test::CallProcedure(*pool, rpc_test::kNfs3Null).ok());

  // timeout=0: the proxy swallows every reply and never closes.
  AddToxic({.name = "stall", .type = "timeout", .attributes = {{"timeout", 0}}});
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < kCalls; ++i) calls.push_back(pool->Call(NullCall(), {.timeout = kDeadline}));
  // The first call past its deadline finds the connection silent since it
  // was sent: the pool replaces it, and calls still in flight on it that
  // cannot be repeated end Unavailable (their connection was lost) rather
  // than at their own deadlines a moment later. Either way each ends.
  int timed_out = 0;
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<std::string> r = Await(calls[i]);
    EXPECT_THAT(r.status().code(),
                AnyOf(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kUnavailable))
        << r.status();
    timed_out += absl::IsDeadlineExceeded(r.status()) ? 1 : 0;
  }
  EXPECT_GE(timed_out, 1);
  absl::StatusOr<std::string> blocking = pool->CallBlocking(NullCall(), {.timeout = kDeadline});
  EXPECT_EQ(blocking.status().code(), absl::StatusCode::kDeadlineExceeded) << blocking.status();

  const RpcPoolMetrics m = pool->metrics();
  EXPECT_EQ(m.calls_timed_out, static_cast<uint64_t>(timed_out + 1));
  EXPECT_EQ(m.in_flight, 0u);
  // The pool (and its stalled connection) is destroyed at the end of the
  // test without waiting for the server.
}

TEST_F(RpcPoolThroughToxiproxyTest, ServerClosingMidRecordFailsTheCallAsTruncated) {
  // A NULL reply is 28 bytes on the wire (4 of record mark, 24 of header);
  // the proxy passes 14 and closes the connection.
  AddToxic({.name = "half", .type = "limit_data", .attributes = {{"bytes", 14}}});
  std::unique_ptr<RpcPool> pool = Pool(Options());
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<std::string> r = pool->CallBlocking(NullCall(), {.idempotent = false});
  // The connection was lost, not corrupted: Unavailable, so an idempotent
  // call could be retried (docs/architecture.md, "Errors").
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("truncated"));
  EXPECT_THAT(r.status().message(), HasSubstr(pool->target()));
}

TEST_F(RpcPoolThroughToxiproxyTest, RepliesSlicedIntoTinyPiecesStillMatchTheirCalls) {
  std::unique_ptr<RpcPool> pool = Pool(Options());
  ASSERT_NE(pool, nullptr);
  // Replies arrive 1-5 bytes at a time: record marks and xids split anywhere.
  AddToxic({.name = "slicer", .type = "slicer",
            .attributes = {{"average_size", 3}, {"size_variation", 2}, {"delay", 0}}});
  const peers::RpcLoadResult r = peers::RunClosedLoop(*pool, rpc_test::Nfs3NullLoad(/*calls=*/1000, /*depth=*/32));
  EXPECT_EQ(r.succeeded, 1000) << r.first_error;
}

}  // namespace
}  // namespace ferry
