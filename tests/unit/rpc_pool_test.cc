// RpcPool against in-process TCP servers on 127.0.0.1 (tests/testing/
// test_tcp_server.h). Records are [4-byte id][payload] with the 4-byte
// length-prefix framing; servers that hold requests let each test decide
// when, in what order and how badly they are answered.
#include "ferry/rpc/rpc_pool.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "asio/io_context.hpp"
#include "asio/ip/tcp.hpp"
#include "ferry/base/mutex.h"
#include "ferry/base/strings.h"
#include "ferry/rpc/framing.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_tcp_server.h"

namespace ferry {
namespace {

using ::ferry::testing::Echo;
using ::ferry::testing::Patterned;
using ::ferry::testing::RecordLog;
using ::ferry::testing::TestTcpServer;
using ::ferry::testing::WaitUntil;
using ::testing::HasSubstr;

std::shared_ptr<const Framing> Framing4() { return NewLengthPrefixFraming(); }

// A request record: room for the id the pool stamps, then the payload.
std::string Req(std::string_view payload) { return absl::StrCat(std::string(4, '\0'), ToAbsl(payload)); }
std::string Payload(const std::string& record) { return record.substr(4); }

RpcPoolOptions Options(uint16_t port) {
  RpcPoolOptions o = ::ferry::testing::LoopbackPoolOptions(port, Framing4());
  o.connections = 1;
  o.max_in_flight_per_connection = 8;
  o.initial_backoff = absl::Milliseconds(2);
  o.max_backoff = absl::Milliseconds(20);
  o.max_connect_attempts = 1000;
  return o;
}

std::unique_ptr<RpcPool> MakePool(Runtime& rt, RpcPoolOptions o, bool wait_ready = true) {
  const int n = o.connections;
  auto pool = RpcPool::Create(rt, std::move(o));
  EXPECT_TRUE(pool.ok()) << pool.status();
  if (wait_ready) {
    EXPECT_TRUE((*pool)->WaitUntilReady(n, absl::Now() + absl::Seconds(10)).ok());
  }
  return *std::move(pool);
}

// A port nobody listens on: bound, then released.
uint16_t RefusedPort() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = a.local_endpoint().port();
  a.close();
  return port;
}

// Collects async results by call number. Thread-safe.
class Results {
 public:
  Callback<std::string> For(int i) {
    return [this, i](absl::StatusOr<std::string> r) {
      MutexLock l(&mu_);
      EXPECT_EQ(results_.count(i), 0u) << "call " << i << " completed twice";
      results_.emplace(i, std::move(r));
      cv_.SignalAll();
    };
  }
  bool WaitFor(size_t n, absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock l(&mu_);
    while (results_.size() < n) {
      if (!cv_.WaitWithDeadline(&mu_, deadline) && absl::Now() >= deadline) return results_.size() >= n;
    }
    return true;
  }
  size_t size() const {
    MutexLock l(&mu_);
    return results_.size();
  }
  absl::StatusOr<std::string> Get(int i) const {
    MutexLock l(&mu_);
    auto it = results_.find(i);
    if (it == results_.end()) return absl::NotFoundError("no result");
    return it->second;
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  std::map<int, absl::StatusOr<std::string>> results_ ABSL_GUARDED_BY(mu_);
};

// A server that records every request and answers none until the test
// does (server_, log_), and a Runtime for the pools the tests make; tests
// that need a server of another kind start their own.
class RpcPoolTest : public ::testing::Test {
 protected:
  // What one call gets from a server of its own that answers with `answer`.
  absl::Status OneCallAnsweredBy(TestTcpServer::Handler answer) {
    TestTcpServer server(Framing4(), std::move(answer));
    auto pool = MakePool(rt_, Options(server.port()));
    return pool->CallBlocking(Req("x")).status();
  }

  // A pool to server_ with one call in flight ("a") and one queued ("b"),
  // which is all it takes.
  std::unique_ptr<RpcPool> PoolWithAFullQueue() {
    RpcPoolOptions o = Options(server_.port());
    o.max_in_flight_per_connection = 1;
    o.max_queued_calls = 1;
    auto pool = MakePool(rt_, o);
    pool->CallAsync(Req("a"), results_.For(0));
    pool->CallAsync(Req("b"), results_.For(1));
    return pool;
  }

  // One call through `pool`, answered from log_: the server has accepted
  // the connection then (closing its listener drops one it has not).
  void AnswerOneCall(RpcPool& pool) {
    Future<std::string> first = pool.Call(Req("first"));
    ASSERT_TRUE(log_.WaitForTotal(1));
    for (auto& e : log_.Take()) e.conn->Send(e.record);
    ASSERT_TRUE(std::move(first).Get().ok());
  }

  // Calls held by server_ on a lazy pool's one open connection: the last
  // opens the next connection.
  static constexpr int kCallsOpeningTheNextConnection = 4;
  void CallsOpeningTheNextConnection(RpcPool& pool) {
    for (int i = 0; i < kCallsOpeningTheNextConnection; ++i) {
      pool.CallAsync(Req(absl::StrCat(i)), results_.For(i));
    }
  }
  // After AnswerOneCall's call.
  void AnswerTheCallsOpeningTheNextConnection() {
    ASSERT_TRUE(log_.WaitForTotal(1 + kCallsOpeningTheNextConnection));
    for (auto& e : log_.Take()) e.conn->Send(e.record);
    ASSERT_TRUE(results_.WaitFor(kCallsOpeningTheNextConnection));
    for (int i = 0; i < kCallsOpeningTheNextConnection; ++i) {
      EXPECT_EQ(Payload(*results_.Get(i)), absl::StrCat(i));
    }
  }

  Results results_;  // outlives the tests' pools, whose destructors may complete calls
  RecordLog log_;
  TestTcpServer server_{Framing4(), log_.Handler()};
  Runtime rt_;
};

TEST_F(RpcPoolTest, RepliesOutOfOrderAreMatchedToTheirCalls) {
  auto pool = MakePool(rt_, Options(server_.port()));
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 5; ++i) calls.push_back(pool->Call(Req(absl::StrCat("call-", i))));
  ASSERT_TRUE(log_.WaitForTotal(5));
  std::vector<RecordLog::Entry> held = log_.Take();
  std::reverse(held.begin(), held.end());
  std::swap(held[1], held[3]);
  for (auto& e : held) e.conn->Send(absl::StrCat(e.record.substr(0, 4), "reply-to-", Payload(e.record)));
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::string> r = std::move(calls[i]).Get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Payload(*r), absl::StrCat("reply-to-call-", i));
  }
}

TEST_F(RpcPoolTest, PoolStampsDistinctIdsIntoBytesZeroToThree) {
  auto pool = MakePool(rt_, Options(server_.port()));
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 8; ++i) calls.push_back(pool->Call(Req("x")));
  ASSERT_TRUE(log_.WaitForTotal(8));
  std::set<std::string> ids;
  for (auto& e : log_.Take()) {
    ids.insert(e.record.substr(0, 4));
    e.conn->Send(e.record);
  }
  EXPECT_EQ(ids.size(), 8u);
  for (auto& f : calls) EXPECT_TRUE(std::move(f).Get().ok());
}

TEST_F(RpcPoolTest, KeepsManyCallsInFlightOnOneConnection) {
  RpcPoolOptions o = Options(server_.port());
  o.max_in_flight_per_connection = 32;
  auto pool = MakePool(rt_, o);
  constexpr int kCalls = 100;
  for (int i = 0; i < kCalls; ++i) pool->CallAsync(Req(absl::StrCat(i)), results_.For(i));
  // The server answers nothing until 32 requests are outstanding at once.
  ASSERT_TRUE(log_.WaitForTotal(32));
  EXPECT_EQ(pool->metrics().in_flight, 32u);
  EXPECT_EQ(pool->metrics().queued, static_cast<uint64_t>(kCalls - 32));
  size_t max_outstanding = 0;
  size_t answered = 0;
  while (answered < kCalls) {
    ASSERT_TRUE(log_.WaitForTotal(answered + 1));
    std::vector<RecordLog::Entry> held = log_.Take();
    max_outstanding = std::max(max_outstanding, log_.total() - answered);
    for (auto& e : held) {
      e.conn->Send(e.record);
      ++answered;
    }
  }
  ASSERT_TRUE(results_.WaitFor(kCalls));
  EXPECT_EQ(max_outstanding, 32u);
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(Payload(*results_.Get(i)), absl::StrCat(i));
}

TEST_F(RpcPoolTest, DispatchesToTheLeastLoadedOfFourConnections) {
  RpcPoolOptions o = Options(server_.port());
  o.connections = 4;
  auto pool = MakePool(rt_, o);
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 8; ++i) calls.push_back(pool->Call(Req("x")));
  ASSERT_TRUE(log_.WaitForTotal(8));
  std::vector<RecordLog::Entry> held = log_.Take();
  std::map<int, int> per_connection;
  for (const auto& e : held) ++per_connection[e.conn->index()];
  EXPECT_EQ(per_connection.size(), 4u);
  for (const auto& [conn, n] : per_connection) EXPECT_EQ(n, 2) << "server connection " << conn;
  for (auto& e : held) e.conn->Send(e.record);
  for (auto& f : calls) EXPECT_TRUE(std::move(f).Get().ok());
}

// Connections opened one at a time (connections_at_start).
RpcPoolOptions LazyOptions(uint16_t port, int connections) {
  RpcPoolOptions o = Options(port);
  o.connections = connections;
  o.connections_at_start = 1;
  return o;
}

std::vector<std::string> ConnectionStates(const RpcPool& pool) {
  std::vector<std::string> states;
  for (const RpcConnectionMetrics& c : pool.metrics().connections) states.push_back(c.state);
  return states;
}

TEST_F(RpcPoolTest, PoolOpeningOneConnectionAtStartCarriesCallsInSeriesOnIt) {
  TestTcpServer server(Framing4(), Echo());
  auto pool = MakePool(rt_, LazyOptions(server.port(), 4), /*wait_ready=*/false);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool->CallBlocking(Req("x")).ok());
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_THAT(ConnectionStates(*pool), ::testing::ElementsAre("ready", "idle", "idle", "idle"));
}

TEST_F(RpcPoolTest, PoolOpensItsSecondConnectionOnlyWhenCallsQueue) {
  RpcPoolOptions o = LazyOptions(server_.port(), 2);
  o.max_in_flight_per_connection = 1;
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  pool->CallAsync(Req("a"), results_.For(0));
  ASSERT_TRUE(log_.WaitForTotal(1));
  EXPECT_EQ(ConnectionStates(*pool)[1], "idle");
  // "b" finds the one connection full: it queues, and the second opens for it.
  pool->CallAsync(Req("b"), results_.For(1));
  ASSERT_TRUE(log_.WaitForTotal(2));
  std::vector<RecordLog::Entry> held = log_.Take();
  EXPECT_NE(held[0].conn->index(), held[1].conn->index());
  for (auto& e : held) e.conn->Send(e.record);
  ASSERT_TRUE(results_.WaitFor(2));
}

TEST_F(RpcPoolTest, PoolOpensAnotherConnectionOnceEveryOpenOneHasMoreThanThreeCallsInFlight) {
  auto pool = MakePool(rt_, LazyOptions(server_.port(), 2), /*wait_ready=*/false);
  for (int i = 0; i < 3; ++i) pool->CallAsync(Req(std::string(1, 'a' + i)), results_.For(i));
  ASSERT_TRUE(log_.WaitForTotal(3));
  EXPECT_EQ(ConnectionStates(*pool)[1], "idle");
  pool->CallAsync(Req("d"), results_.For(3));
  EXPECT_TRUE(WaitUntil([&] { return server_.accepted() == 2; }));
  ASSERT_TRUE(log_.WaitForTotal(4));
  for (auto& e : log_.Take()) e.conn->Send(e.record);
  ASSERT_TRUE(results_.WaitFor(4));
}

TEST_F(RpcPoolTest, WaitUntilReadyOpensTheIdleConnectionsItWaitsFor) {
  TestTcpServer server(Framing4(), Echo());
  auto pool = MakePool(rt_, LazyOptions(server.port(), 3), /*wait_ready=*/false);
  ASSERT_TRUE(pool->WaitUntilReady(3, absl::Now() + absl::Seconds(10)).ok());
  EXPECT_THAT(ConnectionStates(*pool), ::testing::ElementsAre("ready", "ready", "ready"));
  // The client's connect can end before the server's accept has run.
  EXPECT_TRUE(WaitUntil([&] { return server.accepted() == 3; }));
}

TEST_F(RpcPoolTest, PoolWithIdleConnectionsFailsFastWhenItsOpenOneIsRefused) {
  const uint16_t port = RefusedPort();
  RpcPoolOptions o = LazyOptions(port, 4);
  o.max_connect_attempts = 2;
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("2 attempts on each of 1 connection;"));
}

// Hostile servers against the connections a lazy pool opens later: the open
// one stays healthy while the next is refused, stalls or is reset.

TEST_F(RpcPoolTest, RefusedLazyConnectionLeavesCallsOnTheOpenOneAndIsRetriedUntilItOpens) {
  auto pool = MakePool(rt_, LazyOptions(server_.port(), 2), /*wait_ready=*/false);
  AnswerOneCall(*pool);
  server_.StopListening();
  CallsOpeningTheNextConnection(*pool);
  ASSERT_TRUE(WaitUntil([&] { return pool->metrics().connections[1].failures >= 2; }));
  EXPECT_EQ(ConnectionStates(*pool)[0], "ready");
  AnswerTheCallsOpeningTheNextConnection();
  server_.Start();
  EXPECT_TRUE(WaitUntil([&] { return ConnectionStates(*pool)[1] == "ready"; }));
}

// Listens on `port` with an accept queue of one that is already full and
// never accepted: a connect's SYN goes unanswered, as to a server whose
// backlog is full.
class FullBacklog {
 public:
  explicit FullBacklog(uint16_t port) : acceptor_(io_), filler_(io_) {
    const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen(0);  // Linux: room for one connection waiting to be accepted
    filler_.connect(ep);
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket filler_;
};

TEST_F(RpcPoolTest, LazyConnectionWhoseConnectStallsIsClosedAtTheConnectTimeoutAndTriedAgain) {
  RpcPoolOptions o = LazyOptions(server_.port(), 2);
  o.connect_timeout = absl::Milliseconds(100);
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  AnswerOneCall(*pool);
  server_.StopListening();
  FullBacklog backlog(server_.port());
  CallsOpeningTheNextConnection(*pool);
  ASSERT_TRUE(WaitUntil([&] { return pool->metrics().connections[1].failures >= 2; }));
  EXPECT_EQ(ConnectionStates(*pool)[0], "ready");
  // Still trying: connecting, or waiting to.
  EXPECT_THAT(ConnectionStates(*pool)[1], ::testing::AnyOf("connecting", "backoff"));
  AnswerTheCallsOpeningTheNextConnection();
}

// Completes the handshake of every connection but the second, whose
// handshake the server never answers.
RpcHandshake HandshakeStallingOnSecondConnection(std::atomic<int>* attempts) {
  return [attempts](RpcHandshakeChannel& channel, absl::AnyInvocable<void(absl::Status)> done) {
    if (channel.connection_index() == 0) return done(absl::OkStatus());
    attempts->fetch_add(1);
    channel.Exchange("HELLO", [done = std::move(done)](absl::StatusOr<std::string> r) mutable {
      done(r.status());
    });
  };
}

TEST_F(RpcPoolTest, LazyConnectionStalledInItsHandshakeIsClosedAtTheConnectTimeoutAndTriedAgain) {
  RpcPoolOptions o = LazyOptions(server_.port(), 2);
  o.connect_timeout = absl::Milliseconds(100);
  std::atomic<int> attempts{0};
  o.on_connect = HandshakeStallingOnSecondConnection(&attempts);
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  CallsOpeningTheNextConnection(*pool);
  ASSERT_TRUE(WaitUntil([&] { return attempts.load() >= 2; }));
  RpcPoolMetrics m = pool->metrics();
  EXPECT_GE(m.connections[1].failures, 1u);
  EXPECT_EQ(m.connections[0].state, "ready");
  EXPECT_EQ(m.connections[0].in_flight, static_cast<uint64_t>(kCallsOpeningTheNextConnection));
  // The calls on the open connection are answered meanwhile.
  for (auto& e : log_.Take()) {
    if (e.record != "HELLO") e.conn->Send(e.record);
  }
  EXPECT_TRUE(results_.WaitFor(kCallsOpeningTheNextConnection));
}

TEST_F(RpcPoolTest, DestroyingThePoolWhileALazyConnectionHandshakesIsClean) {
  std::atomic<int> attempts{0};
  RpcPoolOptions o = LazyOptions(server_.port(), 2);
  o.on_connect = HandshakeStallingOnSecondConnection(&attempts);
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  CallsOpeningTheNextConnection(*pool);
  ASSERT_TRUE(WaitUntil([&] { return ConnectionStates(*pool)[1] == "handshaking"; }));
  pool.reset();
  ASSERT_EQ(results_.size(), static_cast<size_t>(kCallsOpeningTheNextConnection));
  for (int i = 0; i < kCallsOpeningTheNextConnection; ++i) {
    EXPECT_EQ(results_.Get(i).status().code(), absl::StatusCode::kCancelled);
  }
}

TEST_F(RpcPoolTest, DestroyingThePoolJustAsItOpensLazyConnectionsIsClean) {
  auto pool = MakePool(rt_, LazyOptions(server_.port(), 4), /*wait_ready=*/false);
  ASSERT_TRUE(pool->WaitUntilReady(1, absl::Now() + absl::Seconds(10)).ok());
  // Enough calls to open the others, which are still opening (or about to)
  // when the pool goes.
  for (int i = 0; i < 40; ++i) pool->CallAsync(Req(absl::StrCat(i)), results_.For(i));
  pool.reset();
  ASSERT_EQ(results_.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(results_.Get(i).status().code(), absl::StatusCode::kCancelled);
}

TEST_F(RpcPoolTest, WaitUntilReadyForMoreConnectionsThanCanOpenEndsAtItsDeadlineNamingTheConnectError) {
  auto pool = MakePool(rt_, LazyOptions(server_.port(), 2), /*wait_ready=*/false);
  AnswerOneCall(*pool);
  server_.StopListening();
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);
  absl::Status s = pool->WaitUntilReady(2, deadline);
  EXPECT_GE(absl::Now(), deadline);
  EXPECT_LT(absl::Now(), deadline + absl::Seconds(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("1 of 2 connections ready"));
  EXPECT_THAT(s.message(), HasSubstr("refused"));
}

TEST_F(RpcPoolTest, FullQueueGivesResourceExhaustedToCallersThatWillNotWait) {
  RpcPoolOptions o = Options(server_.port());
  o.max_in_flight_per_connection = 2;
  o.max_queued_calls = 2;
  auto pool = MakePool(rt_, o);
  for (int i = 0; i < 4; ++i) pool->CallAsync(Req("held"), results_.For(i));  // 2 in flight, 2 queued
  pool->CallAsync(Req("over"), results_.For(4));
  pool->CallAsync(Req("shed"), results_.For(5), {.when_busy = RpcWhenBusy::kFail});
  ASSERT_TRUE(results_.WaitFor(2));
  EXPECT_EQ(results_.Get(4).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(results_.Get(4).status().message(), HasSubstr("queue is full"));
  EXPECT_EQ(results_.Get(5).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(results_.Get(5).status().message(), HasSubstr("asked not to wait"));
  RpcPoolMetrics m = pool->metrics();
  EXPECT_EQ(m.calls_rejected, 2u);
  EXPECT_EQ(m.in_flight, 2u);
  EXPECT_EQ(m.queued, 2u);
}

TEST_F(RpcPoolTest, QueueIsBoundedByBytesToo) {
  RpcPoolOptions o = Options(server_.port());
  o.max_in_flight_per_connection = 1;
  o.max_queued_bytes = 100;
  auto pool = MakePool(rt_, o);
  pool->CallAsync(Req(std::string(60, 'a')), results_.For(0));  // in flight
  pool->CallAsync(Req(std::string(60, 'b')), results_.For(1));  // queued: 64 bytes
  pool->CallAsync(Req(std::string(60, 'c')), results_.For(2));  // 128 > 100
  ASSERT_TRUE(results_.WaitFor(1));
  EXPECT_EQ(results_.Get(2).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(pool->metrics().queued_bytes, 64u);
}

TEST_F(RpcPoolTest, BlockingCallWaitsForRoomInAFullQueueUntilItsDeadline) {
  auto pool = PoolWithAFullQueue();
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("c"), {.timeout = absl::Milliseconds(30)});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("room in the call queue"));
}

TEST_F(RpcPoolTest, BlockingCallWaitingForRoomProceedsWhenACallCompletes) {
  auto pool = PoolWithAFullQueue();
  std::thread answerer([&] {
    for (size_t answered = 0; answered < 3; ++answered) {
      ASSERT_TRUE(log_.WaitForTotal(answered + 1));
      for (auto& e : log_.Take()) e.conn->Send(e.record);
    }
  });
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("c"));
  answerer.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Payload(*r), "c");
}

TEST_F(RpcPoolTest, DeadlineFiresOnASilentServer) {
  auto pool = MakePool(rt_, Options(server_.port()));
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("hello?"), {.timeout = absl::Milliseconds(50)});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("in flight"));
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", server_.port())));
  EXPECT_EQ(pool->metrics().calls_timed_out, 1u);
}

TEST_F(RpcPoolTest, DeadlineFiresForACallStillQueued) {
  RpcPoolOptions o = Options(server_.port());
  o.max_in_flight_per_connection = 1;
  auto pool = MakePool(rt_, o);
  pool->CallAsync(Req("first"), results_.For(0));
  pool->CallAsync(Req("second"), results_.For(1), {.timeout = absl::Milliseconds(20)});
  ASSERT_TRUE(results_.WaitFor(1));
  EXPECT_EQ(results_.Get(1).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(results_.Get(1).status().message(), HasSubstr("queued"));
}

TEST_F(RpcPoolTest, ConnectionSilentSinceAnUnansweredCallWasSentIsReplaced) {
  auto pool = MakePool(rt_, Options(server_.port()));
  EXPECT_EQ(pool->CallBlocking(Req("lost"), {.timeout = absl::Milliseconds(50)}).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  Future<std::string> next = pool->Call(Req("next"));
  ASSERT_TRUE(log_.WaitForTotal(2));
  std::vector<RecordLog::Entry> held = log_.Take();
  EXPECT_EQ(held[0].conn->index(), 0);
  EXPECT_EQ(held[1].conn->index(), 1);  // a fresh connection
  held[1].conn->Send(held[1].record);
  EXPECT_TRUE(std::move(next).Get().ok());
  EXPECT_EQ(pool->metrics().reconnects, 1u);
}

TEST_F(RpcPoolTest, ConnectionThatAnswersOtherCallsIsKeptWhenOneCallIsLost) {
  auto pool = MakePool(rt_, Options(server_.port()));
  Future<std::string> lost = pool->Call(Req("lost"), {.timeout = absl::Milliseconds(300)});
  Future<std::string> answered = pool->Call(Req("answered"));
  ASSERT_TRUE(log_.WaitForTotal(2));
  std::vector<RecordLog::Entry> held = log_.Take();
  held[1].conn->Send(held[1].record);
  EXPECT_TRUE(std::move(answered).Get().ok());
  EXPECT_EQ(std::move(lost).Get().status().code(), absl::StatusCode::kDeadlineExceeded);
  Future<std::string> next = pool->Call(Req("next"));
  ASSERT_TRUE(log_.WaitForTotal(3));
  held = log_.Take();
  EXPECT_EQ(held[0].conn->index(), 0);  // the same connection
  held[0].conn->Send(held[0].record);
  EXPECT_TRUE(std::move(next).Get().ok());
  EXPECT_EQ(pool->metrics().reconnects, 0u);
}

TEST_F(RpcPoolTest, DeadlineRunsFromTheWriteNotFromTheQueue) {
  // One call at a time; the server answers each 2 s after it arrives. The
  // second call waits 2 s in the queue and is answered 4 s after it was
  // made, within 3 s of being written.
  TestTcpServer slow(Framing4(), [](const TestTcpServer::ConnPtr& conn, std::string record) {
    std::thread([conn, record = std::move(record)]() mutable {
      absl::SleepFor(absl::Seconds(2));
      conn->Send(std::move(record));
    }).detach();
  });
  RpcPoolOptions o = Options(slow.port());
  o.max_in_flight_per_connection = 1;
  auto pool = MakePool(rt_, o);
  Future<std::string> first = pool->Call(Req("first"), {.timeout = absl::Seconds(3)});
  Future<std::string> second = pool->Call(Req("second"), {.timeout = absl::Seconds(3)});
  absl::StatusOr<std::string> a = std::move(first).Get();
  absl::StatusOr<std::string> b = std::move(second).Get();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(Payload(*b), "second");
}

TEST_F(RpcPoolTest, IdempotentCallUnansweredPastItsDeadlineIsSentOnceMoreWithANewId) {
  auto pool = MakePool(rt_, Options(server_.port()));
  Future<std::string> call = pool->Call(Req("x"), {.timeout = absl::Milliseconds(200), .idempotent = true});
  ASSERT_TRUE(log_.WaitForTotal(2));  // the first send is never answered
  std::vector<RecordLog::Entry> held = log_.Take();
  EXPECT_NE(held[0].record.substr(0, 4), held[1].record.substr(0, 4));
  held[1].conn->Send(held[1].record);
  absl::StatusOr<std::string> r = std::move(call).Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(pool->metrics().resent_after_timeout, 1u);
}

TEST_F(RpcPoolTest, IdempotentCallUnansweredTwiceEndsDeadlineExceeded) {
  constexpr absl::Duration kTimeout = absl::Milliseconds(300);
  auto pool = MakePool(rt_, Options(server_.port()));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"), {.timeout = kTimeout, .idempotent = true});
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("first send had gone unanswered too"));
  EXPECT_EQ(log_.total(), 2u);
  // Two timeouts, and slack for a loaded machine: never a hang.
  EXPECT_LT(took, 2 * kTimeout + absl::Seconds(10));
}

TEST_F(RpcPoolTest, ConnectsToAHostName) {
  TestTcpServer server(Framing4(), Echo());
  RpcPoolOptions o = Options(server.port());
  o.host = "localhost";
  auto pool = MakePool(rt_, o);
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("named"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Payload(*r), "named");
}

TEST_F(RpcPoolTest, ResolvesAHostNameWhileEveryBlockingThreadIsBusy) {
  // Copy-engine workers can hold every blocking-pool thread while they
  // wait on a connection: its name must not be resolved there.
  Runtime busy({.blocking_threads = 1});
  absl::Notification release;
  busy.PostBlocking([&release] { release.WaitForNotification(); });
  TestTcpServer server(Framing4(), Echo());
  RpcPoolOptions o = Options(server.port());
  o.host = "localhost";
  auto pool = MakePool(busy, o);
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("named"));
  release.Notify();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Payload(*r), "named");
}

TEST_F(RpcPoolTest, CancelEndsTheCallOnceAndALateReplyIsDiscarded) {
  std::atomic<int> completions{0};
  auto pool = MakePool(rt_, Options(server_.port()));
  Promise<std::string> p;
  Future<std::string> cancelled = p.GetFuture();
  const RpcCallId id = pool->CallAsync(Req("slow"), [&, p = std::move(p)](absl::StatusOr<std::string> r) mutable {
    completions.fetch_add(1);
    p.Set(std::move(r));
  });
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(log_.WaitForTotal(1));
  EXPECT_TRUE(pool->Cancel(id));
  EXPECT_FALSE(pool->Cancel(id));
  EXPECT_EQ(std::move(cancelled).Get().status().code(), absl::StatusCode::kCancelled);
  // The late reply, then a live call on the same connection.
  Future<std::string> next = pool->Call(Req("next"));
  ASSERT_TRUE(log_.WaitForTotal(2));
  for (auto& e : log_.Take()) e.conn->Send(e.record);
  absl::StatusOr<std::string> r = std::move(next).Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Payload(*r), "next");
  EXPECT_EQ(completions.load(), 1);
  RpcPoolMetrics m = pool->metrics();
  EXPECT_EQ(m.calls_cancelled, 1u);
  EXPECT_EQ(m.connection_failures, 0u);
}

TEST_F(RpcPoolTest, CancelOfAQueuedCallLeavesOthersRunning) {
  RpcPoolOptions o = Options(server_.port());
  o.max_in_flight_per_connection = 1;
  auto pool = MakePool(rt_, o);
  Future<std::string> first = pool->Call(Req("first"));
  RpcCallId queued_id = 0;
  Future<std::string> queued = pool->Call(Req("queued"), {}, &queued_id);
  EXPECT_TRUE(pool->Cancel(queued_id));
  EXPECT_EQ(std::move(queued).Get().status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(log_.WaitForTotal(1));
  for (auto& e : log_.Take()) e.conn->Send(e.record);
  EXPECT_TRUE(std::move(first).Get().ok());
  EXPECT_EQ(log_.total(), 1u);
}

TEST_F(RpcPoolTest, ServerClosingMidRecordFailsTheCallWithUnavailableMentioningTruncation) {
  TestTcpServer server(Framing4(), [](const TestTcpServer::ConnPtr& conn, std::string record) {
    // A prefix announcing 100 bytes, then 8 of them, then the end.
    conn->SendRaw(absl::StrCat(std::string("\0\0\0\x64", 4), record.substr(0, 4), "abcd"));
    conn->Close();
  });
  auto pool = MakePool(rt_, Options(server.port()));
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("connection lost"));
  EXPECT_THAT(r.status().message(), HasSubstr("truncated"));
}

TEST_F(RpcPoolTest, ReconnectsAfterAServerRestartAndDeliversQueuedCalls) {
  TestTcpServer server(Framing4(), Echo());
  auto pool = MakePool(rt_, Options(server.port()));
  ASSERT_TRUE(pool->CallBlocking(Req("before")).ok());
  server.Stop();
  ASSERT_TRUE(WaitUntil([&] { return pool->metrics().connections[0].state != "ready"; }));
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 3; ++i) calls.push_back(pool->Call(Req(absl::StrCat("queued-", i))));
  server.Start();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> r = std::move(calls[i]).Get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Payload(*r), absl::StrCat("queued-", i));
  }
  EXPECT_GE(pool->metrics().reconnects, 1u);
}

// Closes the first connection it accepts on its first request; echoes on
// every later connection.
TestTcpServer::Handler ResetFirstConnection() {
  return [](const TestTcpServer::ConnPtr& conn, std::string record) {
    if (conn->index() == 0) {
      conn->Close();
    } else {
      conn->Send(std::move(record));
    }
  };
}

TEST_F(RpcPoolTest, IdempotentCallIsRetriedAfterAConnectionReset) {
  TestTcpServer server(Framing4(), ResetFirstConnection());
  auto pool = MakePool(rt_, Options(server.port()));
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("again"), {.idempotent = true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Payload(*r), "again");
  RpcPoolMetrics m = pool->metrics();
  EXPECT_EQ(m.retries, 1u);
  EXPECT_EQ(m.reconnects, 1u);
}

TEST_F(RpcPoolTest, IdempotentCallsOfALazyPoolWhoseOnlyOpenConnectionIsResetAreDeliveredOnANewOne) {
  TestTcpServer server(Framing4(), ResetFirstConnection());
  auto pool = MakePool(rt_, LazyOptions(server.port(), 3), /*wait_ready=*/false);
  ASSERT_TRUE(pool->WaitUntilReady(1, absl::Now() + absl::Seconds(10)).ok());
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 6; ++i) calls.push_back(pool->Call(Req(absl::StrCat(i)), {.idempotent = true}));
  for (int i = 0; i < 6; ++i) {
    absl::StatusOr<std::string> r = std::move(calls[i]).Get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Payload(*r), absl::StrCat(i));
  }
  EXPECT_GE(pool->metrics().retries, 1u);
}

TEST_F(RpcPoolTest, LargeIdempotentCallIsResentIntactAfterAConnectionReset) {
  TestTcpServer server(Framing4(), ResetFirstConnection());
  auto pool = MakePool(rt_, Options(server.port()));
  const std::string payload = Patterned(size_t{1} << 20, 'L');
  absl::StatusOr<std::string> r = pool->CallBlocking(Req(payload), {.idempotent = true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Payload(*r) == payload);
  EXPECT_EQ(pool->metrics().retries, 1u);
}

TEST_F(RpcPoolTest, LargeAndSmallRequestsInOneWriteArriveIntactAndInOrder) {
  TestTcpServer server(Framing4(), Echo());
  RpcPoolOptions o = Options(server.port());
  o.max_in_flight_per_connection = 16;
  auto pool = MakePool(rt_, o);
  std::vector<std::string> payloads;
  for (int i = 0; i < 12; ++i) {
    payloads.push_back(i % 3 == 0 ? Patterned((size_t{200} << 10) + i, static_cast<char>(i))
                                  : absl::StrCat("small-", i));
  }
  for (int i = 0; i < 12; ++i) {
    pool->CallAsync(Req(payloads[i]), results_.For(i), {.idempotent = i % 2 == 0});
  }
  ASSERT_TRUE(results_.WaitFor(12));
  for (int i = 0; i < 12; ++i) {
    absl::StatusOr<std::string> r = results_.Get(i);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_TRUE(Payload(*r) == payloads[i]) << "call " << i;
  }
}

TEST_F(RpcPoolTest, IdempotentCallGivesUpAfterItsMaxAttempts) {
  TestTcpServer server(Framing4(), [](const TestTcpServer::ConnPtr& conn, std::string) { conn->Close(); });
  auto pool = MakePool(rt_, Options(server.port()));
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"), {.idempotent = true, .max_attempts = 3});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(pool->metrics().retries, 2u);
}

TEST_F(RpcPoolTest, RetryBudgetLimitsRetriesAcrossThePool) {
  TestTcpServer server(Framing4(), [](const TestTcpServer::ConnPtr& conn, std::string) { conn->Close(); });
  RpcPoolOptions o = Options(server.port());
  o.retry_budget_tokens = 1;
  auto pool = MakePool(rt_, o);
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"), {.idempotent = true, .max_attempts = 5});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(pool->metrics().retries, 1u);
}

TEST_F(RpcPoolTest, OneLostConnectionSpendsOneRetryTokenForAllItsCallsInFlight) {
  // The first connection is closed once 8 calls are in flight on it; later
  // connections echo.
  auto seen = std::make_shared<std::atomic<int>>(0);
  TestTcpServer server(Framing4(), [seen](const TestTcpServer::ConnPtr& conn, std::string record) {
    if (conn->index() == 0) {
      if (++*seen == 8) conn->Close();
    } else {
      conn->Send(std::move(record));
    }
  });
  RpcPoolOptions o = Options(server.port());
  o.retry_budget_tokens = 1;
  auto pool = MakePool(rt_, o);
  for (int i = 0; i < 8; ++i) pool->CallAsync(Req(absl::StrCat(i)), results_.For(i), {.idempotent = true});
  ASSERT_TRUE(results_.WaitFor(8));
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<std::string> r = results_.Get(i);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Payload(*r), absl::StrCat(i));
  }
  EXPECT_EQ(pool->metrics().retries, 8u);
}

TEST_F(RpcPoolTest, NonIdempotentCallInFlightFailsUnavailableWhenTheConnectionIsLost) {
  TestTcpServer server(Framing4(), ResetFirstConnection());
  auto pool = MakePool(rt_, Options(server.port()));
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("once"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("connection lost with the call in flight"));
  EXPECT_THAT(r.status().message(), HasSubstr("no partial record"));
  // The pool reconnects for the next call.
  absl::StatusOr<std::string> next = pool->CallBlocking(Req("next"));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(pool->metrics().retries, 0u);
}

// Answers every request with `reply(record)` sent raw (no framing added).
TestTcpServer::Handler RawReply(std::function<std::string(const std::string&)> reply) {
  return [reply = std::move(reply)](const TestTcpServer::ConnPtr& conn, std::string record) {
    conn->SendRaw(reply(record));
  };
}

std::string Framed(const std::string& record) {
  std::string out;
  NewLengthPrefixFraming()->Append(record, &out);
  return out;
}

TEST_F(RpcPoolTest, MalformedFrameDropsTheConnectionWithDataLoss) {
  TestTcpServer server(Framing4(), RawReply([](const std::string&) { return std::string("\xff\xff\xff\xff", 4); }));
  auto pool = MakePool(rt_, Options(server.port()));
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"), {.idempotent = true});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("malformed data from the server"));
  EXPECT_THAT(r.status().message(), HasSubstr("exceeds the maximum record size"));
  EXPECT_GE(pool->metrics().connection_failures, 1u);
}

TEST_F(RpcPoolTest, ReplyWithAnUnknownIdDropsTheConnectionWithDataLoss) {
  absl::Status s = OneCallAnsweredBy(RawReply([](const std::string& record) {
    std::string reply = record;
    reply[3] ^= 0x5a;
    return Framed(reply);
  }));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("matches no call"));
}

TEST_F(RpcPoolTest, ReplyTooShortForAnIdDropsTheConnectionWithDataLoss) {
  absl::Status s = OneCallAnsweredBy(RawReply([](const std::string&) { return Framed("ab"); }));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("too short"));
}

TEST_F(RpcPoolTest, DestroyingThePoolCancelsEveryPendingCall) {
  RpcPoolOptions o = Options(server_.port());
  o.max_in_flight_per_connection = 2;
  auto pool = MakePool(rt_, o);
  for (int i = 0; i < 5; ++i) pool->CallAsync(Req("x"), results_.For(i));  // 2 in flight, 3 queued
  ASSERT_TRUE(log_.WaitForTotal(2));
  pool.reset();
  ASSERT_EQ(results_.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(results_.Get(i).status().code(), absl::StatusCode::kCancelled);
}

TEST_F(RpcPoolTest, DestroyingThePoolWhileItConnectsIsClean) {
  RpcPoolOptions o = Options(RefusedPort());
  o.connections = 4;
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  Future<std::string> f = pool->Call(Req("x"));
  pool.reset();
  EXPECT_FALSE(std::move(f).Get().ok());
}

TEST_F(RpcPoolTest, InOrderModeKeepsOneCallInFlightPerConnection) {
  RpcPoolOptions o = Options(server_.port());
  o.matching = RpcReplyMatching::kInOrder;
  o.max_in_flight_per_connection = 8;  // ignored in order
  auto pool = MakePool(rt_, o);
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 5; ++i) calls.push_back(pool->Call(absl::StrCat("no-id-", i)));
  ASSERT_TRUE(log_.WaitForTotal(1));
  RpcPoolMetrics m = pool->metrics();
  EXPECT_EQ(m.in_flight, 1u);
  EXPECT_EQ(m.queued, 4u);
  for (size_t answered = 0; answered < 5; ++answered) {
    ASSERT_TRUE(log_.WaitForTotal(answered + 1));
    std::vector<RecordLog::Entry> held = log_.Take();
    ASSERT_EQ(held.size(), 1u) << "more than one call in flight";
    EXPECT_EQ(held[0].record, absl::StrCat("no-id-", answered));  // not stamped
    held[0].conn->Send(absl::StrCat("re:", held[0].record));
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(*std::move(calls[i]).Get(), absl::StrCat("re:no-id-", i));
}

TEST_F(RpcPoolTest, InOrderModeRecyclesTheConnectionWhenItsCallTimesOut) {
  RpcPoolOptions o = Options(server_.port());
  o.matching = RpcReplyMatching::kInOrder;
  auto pool = MakePool(rt_, o);
  absl::StatusOr<std::string> r = pool->CallBlocking("stalls", {.timeout = absl::Milliseconds(20)});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  // The next call goes out on a fresh connection, so a late reply to the
  // first cannot be taken for its own.
  Future<std::string> next = pool->Call("next");
  ASSERT_TRUE(log_.WaitForTotal(2));
  std::vector<RecordLog::Entry> held = log_.Take();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_NE(held[0].conn->index(), held[1].conn->index());
  held[1].conn->Send("re:next");
  EXPECT_EQ(*std::move(next).Get(), "re:next");
}

TEST_F(RpcPoolTest, HandshakeRunsOncePerConnectionBeforeItCarriesCalls) {
  Mutex mu;
  std::set<int> logged_in;
  TestTcpServer server(Framing4(), [&](const TestTcpServer::ConnPtr& conn, std::string record) {
    MutexLock l(&mu);
    if (record == "HELLO") {
      logged_in.insert(conn->index());
      conn->Send("WELCOME");
    } else if (logged_in.count(conn->index()) == 0) {
      conn->Close();  // a call before the login
    } else {
      conn->Send(std::move(record));
    }
  });
  RpcPoolOptions o = Options(server.port());
  o.connections = 2;
  std::atomic<int> handshakes{0};
  o.on_connect = [&](RpcHandshakeChannel& channel, absl::AnyInvocable<void(absl::Status)> done) {
    handshakes.fetch_add(1);
    channel.Exchange("HELLO", [done = std::move(done)](absl::StatusOr<std::string> r) mutable {
      if (!r.ok()) return done(r.status());
      done(*r == "WELCOME" ? absl::OkStatus() : absl::UnauthenticatedError("no welcome"));
    });
  };
  auto pool = MakePool(rt_, o);
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 20; ++i) calls.push_back(pool->Call(Req(absl::StrCat(i))));
  for (auto& f : calls) {
    absl::StatusOr<std::string> r = std::move(f).Get();
    EXPECT_TRUE(r.ok()) << r.status();
  }
  EXPECT_EQ(handshakes.load(), 2);
}

TEST_F(RpcPoolTest, FailedHandshakeFailsQueuedCallsWithItsError) {
  TestTcpServer server(Framing4(), Echo());
  RpcPoolOptions o = Options(server.port());
  o.max_connect_attempts = 2;
  o.on_connect = [](RpcHandshakeChannel&, absl::AnyInvocable<void(absl::Status)> done) {
    done(absl::UnauthenticatedError("bad password"));
  };
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(r.status().message(), HasSubstr("bad password"));
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", server.port())));
}

TEST_F(RpcPoolTest, RefusedConnectionsFailQueuedCallsWithUnavailableNamingHostAndPort) {
  const uint16_t port = RefusedPort();
  RpcPoolOptions o = Options(port);
  o.connections = 2;
  o.max_connect_attempts = 3;
  auto pool = MakePool(rt_, o, /*wait_ready=*/false);
  absl::StatusOr<std::string> r = pool->CallBlocking(Req("x"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(r.status().message(), HasSubstr("3 attempts"));
  // Until a connection comes up again, new calls fail at once.
  EXPECT_EQ(pool->CallBlocking(Req("y")).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(RpcPoolTest, ShortRequestIsInvalidArgumentWhenMatchingById) {
  TestTcpServer server(Framing4(), Echo());
  auto pool = MakePool(rt_, Options(server.port()));
  EXPECT_EQ(pool->CallBlocking("abc").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RpcPoolTest, CreateRejectsOptionsWithoutFraming) {
  RpcPoolOptions o = Options(1234);
  o.framing = nullptr;
  EXPECT_EQ(RpcPool::Create(rt_, o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RpcPoolTest, MetricsCountCallsBytesAndRoundTrips) {
  TestTcpServer server(Framing4(), Echo());
  RpcPoolOptions o = Options(server.port());
  o.connections = 2;
  auto pool = MakePool(rt_, o);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(pool->CallBlocking(Req("0123456789")).ok());
  RpcPoolMetrics m = pool->metrics();
  EXPECT_EQ(m.calls_started, 10u);
  EXPECT_EQ(m.calls_succeeded, 10u);
  EXPECT_EQ(m.calls_failed, 0u);
  EXPECT_EQ(m.round_trip.count, 10u);
  EXPECT_EQ(m.queue_time.count, 10u);
  EXPECT_EQ(m.bytes_received, 10u * 18);  // 4-byte prefix + 4-byte id + 10
  EXPECT_TRUE(WaitUntil([&] { return pool->metrics().bytes_sent == 10u * 18; }));
  EXPECT_GT(m.round_trip.p99(), absl::ZeroDuration());
  ASSERT_EQ(m.connections.size(), 2u);
  EXPECT_EQ(m.connections[0].state, "ready");
  EXPECT_EQ(m.connections[0].replies + m.connections[1].replies, 10u);
}

TEST_F(RpcPoolTest, ManyCallersOnManyThreadsAllGetTheirOwnReplies) {
  TestTcpServer server(Framing4(), Echo());
  Runtime rt({.io_threads = 2});
  RpcPoolOptions o = Options(server.port());
  o.connections = 4;
  o.max_in_flight_per_connection = 16;
  o.max_queued_calls = 100000;
  auto pool = MakePool(rt, o);
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 1000;
  std::atomic<int> wrong{0};
  Results done;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        const int n = t * kCallsPerThread + i;
        Callback<std::string> record = done.For(n);
        pool->CallAsync(Req(absl::StrCat(n)),
                        [&wrong, n, record = std::move(record)](absl::StatusOr<std::string> r) mutable {
                          if (!r.ok() || Payload(*r) != absl::StrCat(n)) wrong.fetch_add(1);
                          record(std::move(r));
                        });
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(done.WaitFor(kThreads * kCallsPerThread, absl::Seconds(30)));
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(pool->metrics().calls_succeeded, static_cast<uint64_t>(kThreads * kCallsPerThread));
}

TEST(RpcHistogramTest, PercentilesAreUpperBucketEdges) {
  RpcHistogram h;
  for (int i = 0; i < 99; ++i) h.Record(absl::Microseconds(100));  // bucket [64, 128)
  h.Record(absl::Milliseconds(5));                                  // bucket [4096, 8192)
  EXPECT_EQ(h.p50(), absl::Microseconds(128));
  EXPECT_EQ(h.p99(), absl::Microseconds(128));
  EXPECT_EQ(h.Percentile(1.0), absl::Microseconds(8192));
  EXPECT_EQ(h.count, 100u);
  RpcHistogram other;
  other.Merge(h);
  EXPECT_EQ(other.count, 100u);
  EXPECT_EQ(RpcHistogram().p50(), absl::ZeroDuration());
}

}  // namespace
}  // namespace ferry
