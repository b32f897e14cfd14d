// SessionPool: leased, logged-in connections, against an in-process server.
#include "ferry/rpc/session_pool.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "testing/scratch_dir.h"
#include "testing/test_tcp_server.h"

namespace ferry {
namespace {

using testing::TestTcpServer;

// An echo server that counts its connections.
struct EchoServer {
  std::atomic<int> records{0};
  TestTcpServer server{NewLengthPrefixFraming(),
                       [this](const TestTcpServer::ConnPtr& conn, std::string record) {
                         ++records;
                         if (record == "hang up") {
                           conn->Close();
                           return;
                         }
                         conn->Send(std::move(record));
                       }};
};

SessionPoolOptions Options(uint16_t port, int max_sessions = 2) {
  SessionPoolOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.framing = NewLengthPrefixFraming();
  o.max_sessions = max_sessions;
  o.io_timeout = absl::Seconds(5);
  return o;
}

TEST(SessionPool, ExchangesARecordOnALeasedSession) {
  EchoServer echo;
  auto pool = SessionPool::Create(Options(echo.server.port()));
  ASSERT_TRUE(pool.ok());
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(*(*lease)->Exchange("hello"), "hello");
}

TEST(SessionPool, RawPartsAndRawReceiveCarryAFrameTheProtocolFramesItself) {
  EchoServer echo;  // length-prefix framing: the parts below build its frame by hand
  auto pool = SessionPool::Create(Options(echo.server.port()));
  ASSERT_TRUE(pool.ok());
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok()) << lease.status();
  const std::string payload(3 << 20, 'p');  // larger than one socket buffer
  const uint32_t n = static_cast<uint32_t>(5 + payload.size());
  const char prefix[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                          static_cast<char>(n)};
  const std::string_view parts[] = {std::string_view(prefix, 4), "head:", "", payload};
  ASSERT_TRUE((*lease)->SendRawParts(parts).ok());
  ASSERT_TRUE((*lease)->at_record_boundary());
  std::string back(4 + n, '\0');
  ASSERT_TRUE((*lease)->ReceiveRaw(back.data(), back.size()).ok());
  EXPECT_EQ(back.substr(4, 5), "head:");
  EXPECT_EQ(back.substr(9), payload);
  // The framed path still works after raw reads of a whole record.
  EXPECT_EQ(*(*lease)->Exchange("after"), "after");
}

TEST(SessionPool, RawReceiveOfMoreThanThePeerSendsIsUnavailableAndBreaksTheSession) {
  EchoServer echo;
  auto pool = SessionPool::Create(Options(echo.server.port()));
  ASSERT_TRUE(pool.ok());
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE((*lease)->Send("hang up").ok());
  char buf[16];
  absl::Status s = (*lease)->ReceiveRaw(buf, sizeof(buf));
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE((*lease)->broken());
}

std::string Prefix(size_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

// One leased session on an echo server, for the file-range tests.
class SessionPoolFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SessionPool>> pool = SessionPool::Create(Options(echo_.server.port()));
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = std::move(*pool);
    absl::StatusOr<SessionLease> lease = pool_->Acquire();
    ASSERT_TRUE(lease.ok()) << lease.status();
    lease_ = std::move(*lease);
  }
  Session* session() { return &*lease_; }

  EchoServer echo_;
  std::unique_ptr<SessionPool> pool_;
  SessionLease lease_;  // last: back to the pool before the pool goes
};

TEST_F(SessionPoolFileTest, AFileRangeIsSentFromItsDescriptor) {
  std::string bytes(3 << 20, '\0');  // larger than one socket buffer
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / 4096);
  testing::OpenTempFile source(bytes);
  const size_t from = 1000, n = bytes.size() - 2000;
  const std::string prefix = Prefix(n);
  const std::string_view parts[] = {prefix};
  ASSERT_TRUE(session()->SendRawParts(parts).ok());
  absl::StatusOr<size_t> sent = session()->SendFileRange(source.fd(), from, n);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, n);
  std::string back(4 + n, '\0');
  ASSERT_TRUE(session()->ReceiveRaw(back.data(), back.size()).ok());
  EXPECT_TRUE(back.substr(4) == bytes.substr(from, n));
  EXPECT_FALSE(session()->broken());
}

TEST_F(SessionPoolFileTest, AFileThatEndsBeforeTheRangeSendsWhatItHasAndBreaksTheSession) {
  testing::OpenTempFile source(std::string(100, 'x'));
  absl::StatusOr<size_t> sent = session()->SendFileRange(source.fd(), 40, 1000);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, 60u);
  EXPECT_TRUE(session()->broken());
}

TEST_F(SessionPoolFileTest, AFileRangeToAConnectionThePeerClosedIsAnErrorNotASignal) {
  // sendfile raises SIGPIPE on a reset connection; were it delivered, this
  // test program would die of it (its disposition is the default).
  ASSERT_TRUE(session()->Send("hang up").ok());
  testing::OpenTempFile source(std::string(4 << 20, 'y'));
  absl::Status last;
  for (int i = 0; i < 100 && last.ok(); ++i) {  // the first bytes may still be taken
    last = session()->SendFileRange(source.fd(), 0, 4 << 20).status();
    if (last.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(absl::IsUnavailable(last)) << last;
  EXPECT_TRUE(session()->broken());
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

// The bytes at `offset` of `fd`, `n` of them (fewer at its end).
std::string ReadBack(int fd, int64_t offset, size_t n) {
  std::string out(n, '\0');
  const ssize_t got = ::pread(fd, out.data(), n, offset);
  out.resize(got < 0 ? 0 : static_cast<size_t>(got));
  return out;
}

// Has the echo server send `bytes` back as one frame, and reads the
// frame's prefix: the session is then at `bytes`, raw.
void EchoUpToItsPayload(Session* session, const std::string& bytes) {
  const std::string prefix = Prefix(bytes.size());
  const std::string_view parts[] = {prefix, bytes};
  ASSERT_TRUE(session->SendRawParts(parts).ok());
  char echoed_prefix[4];
  ASSERT_TRUE(session->ReceiveRaw(echoed_prefix, 4).ok());
}

TEST_F(SessionPoolFileTest, RawBytesReceivedIntoAFileLandAtItsOffsetAndTheSessionGoesOn) {
  std::string bytes(3 << 20, '\0');  // larger than one socket buffer and one pipe
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 13 + i / 4096);
  ASSERT_NO_FATAL_FAILURE(EchoUpToItsPayload(session(), bytes));
  testing::OpenTempFile out("");
  ASSERT_TRUE(session()->ReceiveRawIntoFile({.fd = out.fd(), .offset = 7, .size = bytes.size()}).ok());
  EXPECT_TRUE(ReadBack(out.fd(), 7, bytes.size()) == bytes);
  EXPECT_FALSE(session()->broken());
  EXPECT_EQ(*session()->Exchange("after"), "after");
}

TEST_F(SessionPoolFileTest, RawBytesIntoAFileThatRefusesThemFailNamingTheFileAndBreakTheSession) {
  const std::string bytes(100'000, 'r');
  ASSERT_NO_FATAL_FAILURE(EchoUpToItsPayload(session(), bytes));
  const int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(read_only, 0);
  absl::Status s = session()->ReceiveRawIntoFile({.fd = read_only, .offset = 0, .size = bytes.size()});
  ::close(read_only);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(absl::IsUnavailable(s)) << "the file failed, not the server: " << s;
  EXPECT_NE(s.message().find("into a local file: write at 0 of descriptor"), std::string_view::npos) << s;
  EXPECT_TRUE(session()->broken());
}

TEST_F(SessionPoolFileTest, RawBytesIntoAFileInAppendModeAreWrittenThroughMemory) {
  const std::string bytes(200'000, 'a');
  ASSERT_NO_FATAL_FAILURE(EchoUpToItsPayload(session(), bytes));
  testing::OpenTempFile out("");
  ASSERT_EQ(::fcntl(out.fd(), F_SETFL, O_APPEND), 0);  // splice refuses it: EINVAL
  ASSERT_TRUE(session()->ReceiveRawIntoFile({.fd = out.fd(), .offset = 0, .size = bytes.size()}).ok());
  EXPECT_TRUE(ReadBack(out.fd(), 0, bytes.size() + 1) == bytes);
  EXPECT_FALSE(session()->broken());
}

TEST_F(SessionPoolFileTest, RawBytesIntoAFileFromAPeerThatClosedAreUnavailable) {
  ASSERT_TRUE(session()->Send("hang up").ok());
  testing::OpenTempFile out("");
  absl::Status s = session()->ReceiveRawIntoFile({.fd = out.fd(), .offset = 0, .size = 16});
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(session()->broken());
}

TEST(SessionPool, RunsTheHandshakeOncePerConnectionAndReusesIt) {
  EchoServer echo;
  std::atomic<int> logins{0};
  SessionPoolOptions o = Options(echo.server.port());
  o.on_connect = [&](Session& s) {
    ++logins;
    return s.Exchange("login").status();
  };
  auto pool = SessionPool::Create(o);
  ASSERT_TRUE(pool.ok());
  for (int i = 0; i < 5; ++i) {
    auto lease = (*pool)->Acquire();
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ(*(*lease)->Exchange("x"), "x");
  }
  EXPECT_EQ(logins.load(), 1);
  EXPECT_EQ((*pool)->open_sessions(), 1);
}

TEST(SessionPool, AFailedHandshakeIsAcquiresError) {
  EchoServer echo;
  SessionPoolOptions o = Options(echo.server.port());
  o.on_connect = [](Session&) { return absl::UnauthenticatedError("bad password"); };
  auto pool = SessionPool::Create(o);
  auto lease = (*pool)->Acquire();
  EXPECT_TRUE(absl::IsUnauthenticated(lease.status()));
  EXPECT_EQ((*pool)->open_sessions(), 0);
}

TEST(SessionPool, ABrokenSessionIsClosedNotReused) {
  EchoServer echo;
  auto pool = SessionPool::Create(Options(echo.server.port()));
  {
    auto lease = (*pool)->Acquire();
    auto r = (*lease)->Exchange("hang up");
    EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
    EXPECT_TRUE((*lease)->broken());
  }
  EXPECT_EQ((*pool)->open_sessions(), 0);
  auto again = (*pool)->Acquire();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->Exchange("y"), "y");
}

TEST(SessionPool, AcquireWithoutADeadlineEndsWhenNoLeaseEndsForTheIoTimeout) {
  EchoServer echo;
  SessionPoolOptions o = Options(echo.server.port(), 1);
  o.io_timeout = absl::Milliseconds(200);
  auto pool = SessionPool::Create(o);
  auto held = (*pool)->Acquire();  // held for good, as an open file's stream
  ASSERT_TRUE(held.ok());
  const absl::Time start = absl::Now();
  auto none = (*pool)->Acquire();
  EXPECT_TRUE(absl::IsDeadlineExceeded(none.status())) << none.status();
  EXPECT_NE(none.status().message().find("leased"), std::string_view::npos) << none.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST(SessionPool, AcquireWaitsForALeaseWhenAllAreOut) {
  EchoServer echo;
  auto pool = SessionPool::Create(Options(echo.server.port(), 1));
  auto first = (*pool)->Acquire();
  ASSERT_TRUE(first.ok());
  auto none = (*pool)->Acquire(absl::Now() + absl::Milliseconds(50));
  EXPECT_TRUE(absl::IsDeadlineExceeded(none.status()));
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    first->Release();
  });
  auto second = (*pool)->Acquire(absl::Now() + absl::Seconds(5));
  releaser.join();
  EXPECT_TRUE(second.ok()) << second.status();
}

TEST(SessionPool, AnUnreachableServerIsUnavailableNamingIt) {
  auto pool = SessionPool::Create(Options(1));
  auto lease = (*pool)->Acquire();
  EXPECT_TRUE(absl::IsUnavailable(lease.status())) << lease.status();
  EXPECT_NE(lease.status().message().find("127.0.0.1:1"), absl::string_view::npos);
}

TEST(SessionPool, CreateRejectsMissingFramingHostOrPort) {
  SessionPoolOptions o = Options(5);
  o.framing = nullptr;
  EXPECT_TRUE(absl::IsInvalidArgument(SessionPool::Create(o).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(SessionPool::Create(Options(0)).status()));
}

}  // namespace
}  // namespace ferry
