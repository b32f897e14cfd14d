// RpcPool carrying protobuf messages: the 4-byte length-prefix framing with
// records [4-byte call id][serialized message] (proto/echo.proto). The id
// stays outside the message, so any protobuf service can be pipelined over
// one connection without changing its schema.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "echo.pb.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "gtest/gtest.h"
#include "testing/test_tcp_server.h"

namespace ferry {
namespace {

using ::ferry::testing::TestTcpServer;

constexpr size_t kIdSize = 4;

// [4 bytes the pool overwrites with the call id][message].
std::string ToRecord(const google::protobuf::MessageLite& message) {
  std::string record(kIdSize, '\0');
  message.AppendToString(&record);
  return record;
}

template <typename Message>
absl::StatusOr<Message> FromRecord(const std::string& record) {
  Message m;
  if (record.size() < kIdSize || !m.ParseFromArray(record.data() + kIdSize, static_cast<int>(record.size() - kIdSize))) {
    return absl::DataLossError(absl::StrCat("cannot parse a ", Message().GetTypeName(), " from ", record.size(),
                                            " bytes"));
  }
  return m;
}

// The echo service: parses an EchoRequest, answers an EchoResponse under the
// same id.
TestTcpServer::Handler EchoService() {
  auto served = std::make_shared<std::atomic<int64_t>>(0);
  return [served](const TestTcpServer::ConnPtr& conn, std::string record) {
    absl::StatusOr<test::EchoRequest> req = FromRecord<test::EchoRequest>(record);
    if (!req.ok()) {
      conn->Close();
      return;
    }
    test::EchoResponse resp;
    for (int i = 0; i < std::max(1, req->repeat()); ++i) resp.mutable_text()->append(req->text());
    resp.set_served(served->fetch_add(1) + 1);
    std::string reply = record.substr(0, kIdSize);
    resp.AppendToString(&reply);
    conn->Send(std::move(reply));
  };
}

RpcPoolOptions ProtobufPoolOptions(uint16_t port) {
  RpcPoolOptions o = ::ferry::testing::LoopbackPoolOptions(port, NewLengthPrefixFraming());
  o.connections = 2;
  o.max_in_flight_per_connection = 16;
  return o;
}

TEST(RpcPoolProtobufTest, BlockingCallRoundTripsAMessage) {
  TestTcpServer server(NewLengthPrefixFraming(), EchoService());
  Runtime rt;
  auto pool = RpcPool::Create(rt, ProtobufPoolOptions(server.port()));
  ASSERT_TRUE(pool.ok()) << pool.status();
  test::EchoRequest req;
  req.set_text("ab");
  req.set_repeat(3);
  absl::StatusOr<std::string> reply = (*pool)->CallBlocking(ToRecord(req));
  ASSERT_TRUE(reply.ok()) << reply.status();
  absl::StatusOr<test::EchoResponse> resp = FromRecord<test::EchoResponse>(*reply);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->text(), "ababab");
  EXPECT_EQ(resp->served(), 1);
}

TEST(RpcPoolProtobufTest, PipelinedMessagesEachGetTheirOwnResponse) {
  TestTcpServer server(NewLengthPrefixFraming(), EchoService());
  Runtime rt;
  auto pool = RpcPool::Create(rt, ProtobufPoolOptions(server.port()));
  ASSERT_TRUE(pool.ok()) << pool.status();
  constexpr int kCalls = 200;
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < kCalls; ++i) {
    test::EchoRequest req;
    req.set_text(absl::StrCat("message-", i));
    calls.push_back((*pool)->Call(ToRecord(req)));
  }
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<std::string> reply = std::move(calls[i]).Get();
    ASSERT_TRUE(reply.ok()) << reply.status();
    absl::StatusOr<test::EchoResponse> resp = FromRecord<test::EchoResponse>(*reply);
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_EQ(resp->text(), absl::StrCat("message-", i));
  }
}

}  // namespace
}  // namespace ferry
