// RpcPool sending a request's payload from the caller's memory
// (RpcCallOptions::payload), against TCP servers on 127.0.0.1: the record
// on the wire holds the payload at its offset, and no call ends while a
// write of its payload is in progress, whatever ends it (a reply that
// comes first, a cancel, a deadline, the pool's destruction).
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "asio/io_context.hpp"
#include "asio/ip/tcp.hpp"
#include "asio/read.hpp"
#include "asio/write.hpp"
#include "ferry/base/strings.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/rpc/xdr.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_tcp_server.h"

namespace ferry {
namespace {

using ::ferry::testing::Echo;
using ::ferry::testing::LoseTheFirstThenEcho;
using ::ferry::testing::OneConnectionPoolOptions;
using ::ferry::testing::Patterned;
using ::ferry::testing::ReadyPool;
using ::ferry::testing::TestTcpServer;
using ::testing::HasSubstr;

// A length-prefix server that reads a request's first 8 bytes (prefix and
// id) and no more until told: the pool's write of a large payload then
// stalls in the socket. It can answer before reading the rest.
class StallingServer {
 public:
  StallingServer()
      : acceptor_(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        thread_([this] {
          std::error_code ec;
          acceptor_.accept(socket_, ec);
          if (ec) return;
          char head[8];
          asio::read(socket_, asio::buffer(head), ec);
          if (ec) return;
          size_ = xdr_internal::LoadBigEndian32(head);
          id_.assign(head + 4, 4);
          have_request_.set_value();
        }) {}
  // Every test's pool connects and sends: the thread has ended by then.
  ~StallingServer() { thread_.join(); }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  bool WaitForRequest() {
    return request_seen_.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }
  // Answers "ok" (the request is still being read).
  void Reply() {
    std::string reply;
    NewLengthPrefixFraming()->Append(absl::StrCat(id_, "ok"), &reply);
    asio::write(socket_, asio::buffer(reply));
  }
  // Reads the rest of the request; its bytes after the id.
  std::string ReadRest() {
    std::string rest(size_ - 4, '\0');
    asio::read(socket_, asio::buffer(rest));
    return rest;
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket socket_{io_};
  uint32_t size_ = 0;
  std::string id_;
  std::promise<void> have_request_;  // a std:: one: ThreadSanitizer sees its ordering
  std::future<void> request_seen_ = have_request_.get_future();
  std::thread thread_;  // last: started once the rest is built
};

class RpcPoolPayloadTest : public ::testing::Test {
 protected:
  std::unique_ptr<RpcPool> MakePool(uint16_t port, std::shared_ptr<const Framing> framing) {
    return ReadyPool(rt_, OneConnectionPoolOptions(port, std::move(framing)));
  }
  // A payload larger than loopback's socket buffers hold, for the tests
  // whose server stalls.
  const std::string& Big() {
    if (big_.empty()) big_ = Patterned(size_t{32} << 20, 'a');
    return big_;
  }
  std::string big_;
  Runtime rt_;
};

TEST_F(RpcPoolPayloadTest, PayloadGoesOutInsideTheRecordAtItsOffset) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  const std::string payload = "PAYLOAD";
  absl::StatusOr<std::string> r = pool->CallBlocking(absl::StrCat(std::string(4, '\0'), "HEAD|TAIL"),
                                                     {.payload = payload, .payload_at = 8});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->substr(4), "HEADPAYLOAD|TAIL");
}

TEST_F(RpcPoolPayloadTest, LargePayloadCrossesFragmentsIntact) {
  auto framing = std::shared_ptr<const Framing>(NewRecordMarkingFraming({.max_fragment_size = 65536}));
  TestTcpServer server(framing, Echo());
  auto pool = MakePool(server.port(), framing);
  const std::string payload = Patterned(3'000'001, 'p');
  absl::StatusOr<std::string> r =
      pool->CallBlocking(absl::StrCat(std::string(4, '\0'), "H", "T"), {.payload = payload, .payload_at = 5});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->substr(4) == absl::StrCat("H", payload, "T"));
}

TEST_F(RpcPoolPayloadTest, IdempotentCallResentAfterALostConnectionSendsItsPayloadAgain) {
  TestTcpServer server(NewLengthPrefixFraming(), LoseTheFirstThenEcho());  // the first send is lost
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  const std::string payload = Patterned(200'000, 'r');
  absl::StatusOr<std::string> r = pool->CallBlocking(
      std::string(4, '\0'), {.idempotent = true, .payload = payload, .payload_at = 4});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->substr(4) == payload);
  EXPECT_EQ(pool->metrics().retries, 1u);  // sent twice
}

TEST_F(RpcPoolPayloadTest, PayloadOffsetOutsideTheRequestOrOverTheIdIsInvalidArgument) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  EXPECT_EQ(pool->CallBlocking(std::string(8, '\0'), {.payload = "x", .payload_at = 9}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pool->CallBlocking(std::string(8, '\0'), {.payload = "x", .payload_at = 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(RpcPoolPayloadTest, ReplyThatComesBeforeThePayloadIsWrittenIsHeldUntilItIs) {
  StallingServer server;
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  std::atomic<bool> done{false};
  Promise<std::string> p;
  Future<std::string> f = p.GetFuture();
  pool->CallAsync(std::string(4, '\0'),
                  [&, p = std::move(p)](absl::StatusOr<std::string> r) mutable {
                    done = true;
                    p.Set(std::move(r));
                  },
                  {.payload = Big(), .payload_at = 4});
  ASSERT_TRUE(server.WaitForRequest());
  server.Reply();
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(done.load()) << "ended while its payload was still being written";
  EXPECT_TRUE(server.ReadRest() == Big());
  absl::StatusOr<std::string> r = std::move(f).Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->substr(4), "ok");
}

TEST_F(RpcPoolPayloadTest, ReplyBeforeAWriteThatStallsEndsTheCallAtItsDeadline) {
  StallingServer server;
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  Future<std::string> f = pool->Call(std::string(4, '\0'),
                                     {.timeout = absl::Milliseconds(300), .payload = Big(), .payload_at = 4});
  ASSERT_TRUE(server.WaitForRequest());
  server.Reply();  // and reads no more
  absl::StatusOr<std::string> r = std::move(f).Get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("the server answered, but the call's request was still being written"));
}

TEST_F(RpcPoolPayloadTest, CancelWhileThePayloadIsBeingWrittenEndsTheCallCancelled) {
  StallingServer server;
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  RpcCallId id = 0;
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.payload = Big(), .payload_at = 4}, &id);
  ASSERT_TRUE(server.WaitForRequest());
  EXPECT_TRUE(pool->Cancel(id));
  EXPECT_EQ(std::move(f).Get().status().code(), absl::StatusCode::kCancelled);
}

TEST_F(RpcPoolPayloadTest, DeadlineWhileThePayloadIsBeingWrittenEndsTheCallWithoutAResend) {
  StallingServer server;
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  absl::StatusOr<std::string> r = pool->CallBlocking(
      std::string(4, '\0'),
      {.timeout = absl::Milliseconds(300), .idempotent = true, .payload = Big(), .payload_at = 4});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("still being written"));
  EXPECT_EQ(pool->metrics().resent_after_timeout, 0u);
}

TEST_F(RpcPoolPayloadTest, DestroyingThePoolWhileThePayloadIsBeingWrittenCancelsTheCall) {
  StallingServer server;
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.payload = Big(), .payload_at = 4});
  ASSERT_TRUE(server.WaitForRequest());
  pool.reset();
  EXPECT_EQ(std::move(f).Get().status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace ferry
