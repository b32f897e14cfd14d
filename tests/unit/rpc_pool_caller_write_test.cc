// RpcPool letting the calling thread write a call itself when its
// connection is idle (RpcPoolMetrics::sent_by_caller), against TCP servers
// on 127.0.0.1: which calls are written so, and that such a call ends as
// any other whatever happens to its connection.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "gtest/gtest.h"
#include "testing/test_tcp_server.h"

namespace ferry {
namespace {

using ::ferry::testing::Echo;
using ::ferry::testing::LoseTheFirstThenEcho;
using ::ferry::testing::OneConnectionPoolOptions;
using ::ferry::testing::Patterned;
using ::ferry::testing::ReadyPool;
using ::ferry::testing::RecordLog;
using ::ferry::testing::TestTcpServer;

// A request with room for the 4-byte call id the pool writes.
std::string Request(const std::string& body) { return std::string(4, '\0') + body; }

class RpcPoolCallerWriteTest : public ::testing::Test {
 protected:
  std::unique_ptr<RpcPool> MakePool(uint16_t port) {
    return ReadyPool(rt_, OneConnectionPoolOptions(port, NewLengthPrefixFraming()));
  }
  Runtime rt_;
};

TEST_F(RpcPoolCallerWriteTest, ACallOnAnIdleConnectionIsWrittenByTheCaller) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port());
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> r = pool->CallBlocking(Request(absl::StrCat("call ", i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->substr(4), absl::StrCat("call ", i));
  }
  EXPECT_EQ(pool->metrics().sent_by_caller, 3u);
}

TEST_F(RpcPoolCallerWriteTest, CallsOfABurstAfterTheFirstGoOutThroughTheConnection) {
  RecordLog log;
  TestTcpServer server(NewLengthPrefixFraming(), log.Handler());
  auto pool = MakePool(server.port());
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 10; ++i) calls.push_back(pool->Call(Request(absl::StrCat("call ", i))));
  // Nothing is answered before all ten are in: the connection stays busy.
  ASSERT_TRUE(log.WaitForTotal(10));
  for (RecordLog::Entry& e : log.Take()) e.conn->Send(std::move(e.record));
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<std::string> r = std::move(calls[i]).Get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->substr(4), absl::StrCat("call ", i));
  }
  EXPECT_EQ(pool->metrics().sent_by_caller, 1u);
}

TEST_F(RpcPoolCallerWriteTest, ALargeRequestGoesOutThroughTheConnection) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port());
  const std::string body = Patterned(100'000, 'l');
  absl::StatusOr<std::string> r = pool->CallBlocking(Request(body));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->substr(4) == body);
  EXPECT_EQ(pool->metrics().sent_by_caller, 0u);
}

TEST_F(RpcPoolCallerWriteTest, ACallWithAPayloadGoesOutThroughTheConnection) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port());
  const std::string payload = "PAYLOAD";
  absl::StatusOr<std::string> r = pool->CallBlocking(Request("HT"), {.payload = payload, .payload_at = 5});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->substr(4), "HPAYLOADT");
  EXPECT_EQ(pool->metrics().sent_by_caller, 0u);
}

TEST_F(RpcPoolCallerWriteTest, AnIdempotentCallWrittenByTheCallerIsResentWhenItsConnectionIsLost) {
  TestTcpServer server(NewLengthPrefixFraming(), LoseTheFirstThenEcho());  // the first send is lost
  auto pool = MakePool(server.port());
  absl::StatusOr<std::string> r = pool->CallBlocking(Request("again"), {.idempotent = true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->substr(4), "again");
  EXPECT_GE(pool->metrics().sent_by_caller, 1u);
  EXPECT_EQ(pool->metrics().retries, 1u);
}

TEST_F(RpcPoolCallerWriteTest, ACallWrittenByTheCallerEndsCancelledWhenThePoolIsDestroyed) {
  RecordLog log;  // never answers
  TestTcpServer server(NewLengthPrefixFraming(), log.Handler());
  auto pool = MakePool(server.port());
  Future<std::string> call = pool->Call(Request("unanswered"));
  ASSERT_TRUE(log.WaitForTotal(1));
  EXPECT_EQ(pool->metrics().sent_by_caller, 1u);
  pool.reset();
  absl::StatusOr<std::string> r = std::move(call).Get();
  EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
}

TEST_F(RpcPoolCallerWriteTest, ACallWrittenByTheCallerFailsWhenItsServerGoesAwayAndTheNextReconnects) {
  TestTcpServer server(NewLengthPrefixFraming(), LoseTheFirstThenEcho());  // the first send is lost
  auto pool = MakePool(server.port());
  // Not idempotent: not resent.
  absl::StatusOr<std::string> lost = pool->CallBlocking(Request("first"));
  EXPECT_TRUE(absl::IsUnavailable(lost.status())) << lost.status();
  absl::StatusOr<std::string> next = pool->CallBlocking(Request("second"));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->substr(4), "second");
}

}  // namespace
}  // namespace ferry
