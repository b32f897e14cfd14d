// IrodsClient::CallInto (a data call's payload received straight into the
// caller's buffer; CallIntoFile: into a file) against an in-process server that answers each request
// with scripted frames: the replies a real server sends rarely or never.
#include <sys/mman.h>
#include <unistd.h>

#include <deque>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "ferry/irods/irods_client.h"
#include "ferry/irods/irods_protocol.h"
#include "ferry/rpc/session_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_tcp_server.h"

namespace ferry::irods {
namespace {

using ::testing::HasSubstr;
using testing::TestTcpServer;

// Answers the Nth request with the Nth scripted reply (bytes as they are);
// requests past the script get no answer. With `hang_up`, the connection
// closes after the last reply. Thread-safe.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::deque<std::string> replies, bool hang_up = false)
      : replies_(std::move(replies)), hang_up_(hang_up) {}

  uint16_t port() const { return server_.port(); }

 private:
  absl::Mutex mu_;
  std::deque<std::string> replies_ ABSL_GUARDED_BY(mu_);
  const bool hang_up_;
  TestTcpServer server_{NewIrodsFraming(), [this](const TestTcpServer::ConnPtr& conn, std::string) {
                          absl::MutexLock lock(&mu_);
                          if (replies_.empty()) return;
                          conn->SendRaw(std::move(replies_.front()));
                          replies_.pop_front();
                          if (hang_up_ && replies_.empty()) conn->Close();
                        }};
};

std::string Reply(int64_t int_info, std::string_view bs = {}) {
  return EncodeMessage("RODS_API_REPLY", int_info, "", bs);
}

class CallIntoTest : public ::testing::Test {
 protected:
  // A session to `server`, with a short timeout so a missing reply fails.
  SessionLease Connect(const ScriptedServer& server) {
    SessionPoolOptions o;
    o.host = "127.0.0.1";
    o.port = server.port();
    o.framing = NewIrodsFraming();
    o.io_timeout = absl::Seconds(5);
    auto pool = SessionPool::Create(std::move(o));
    EXPECT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
    auto lease = pool_->Acquire();
    EXPECT_TRUE(lease.ok()) << lease.status();
    return *std::move(lease);
  }

  absl::StatusOr<IrodsClient::IntoReply> Read(Session& session, std::string& out) {
    return IrodsClient::CallInto(session, kDataObjRead, "<OpenedDataObjInp_PI/>", "read /z/f", out.data(),
                                 out.size());
  }

  std::unique_ptr<SessionPool> pool_;
};

TEST_F(CallIntoTest, PutsThePayloadInTheCallersBufferAndKeepsTheSession) {
  ScriptedServer server({Reply(5, "hello")});
  SessionLease session = Connect(server);
  std::string out(8, '.');
  auto r = Read(*session, out);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 5);
  EXPECT_EQ(r->bs_size, 5u);
  EXPECT_EQ(out, "hello...");
  EXPECT_FALSE(session->broken());
  EXPECT_TRUE(session->at_record_boundary());
}

TEST_F(CallIntoTest, AnErrorReplyIsItsStatusNamingTheCallAndKeepsTheSession) {
  ScriptedServer server({Reply(-808000)});  // CAT_NO_ROWS_FOUND
  SessionLease session = Connect(server);
  std::string out(8, '.');
  auto r = Read(*session, out);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("read /z/f"));
  EXPECT_FALSE(session->broken());
}

TEST_F(CallIntoTest, MorePayloadThanAskedIsDataLossAndBreaksTheSession) {
  ScriptedServer server({Reply(9, "too many bytes")});
  SessionLease session = Connect(server);
  std::string out(4, '.');
  auto r = Read(*session, out);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("asked 4"));
  EXPECT_EQ(out, "....");
  EXPECT_TRUE(session->broken());
}

TEST_F(CallIntoTest, AnInterimCollectionReplyToADataCallIsDataLoss) {
  ScriptedServer server({Reply(kSvrToCliCollStat)});
  SessionLease session = Connect(server);
  std::string out(4, '.');
  auto r = Read(*session, out);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_TRUE(session->broken());
}

TEST_F(CallIntoTest, AReplyCutShortIsUnavailableAndBreaksTheSession) {
  std::string reply = Reply(5, "hello");
  reply.resize(reply.size() - 2);
  ScriptedServer server({reply}, /*hang_up=*/true);
  SessionLease session = Connect(server);
  std::string out(8, '.');
  auto r = Read(*session, out);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("read /z/f"));
  EXPECT_TRUE(session->broken());
}

TEST_F(CallIntoTest, BytesAlreadyBufferedAreReadThroughTheFramedPath) {
  // The first request is answered with two frames: the second is read
  // ahead with the first, so the next call's reply is already buffered.
  ScriptedServer server({Reply(0, "first") + Reply(6, "second")});
  SessionLease session = Connect(server);
  auto first = session->Exchange(EncodeMessage("RODS_API_REQ", kDataObjRead, ""));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_FALSE(session->at_record_boundary());
  std::string out(8, '.');
  auto r = Read(*session, out);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bs_size, 6u);
  EXPECT_EQ(out, "second..");
}

// IrodsClient::CallIntoFile: the same reply's payload, into a file.
class CallIntoFileTest : public CallIntoTest {
 protected:
  CallIntoFileTest() : file_(::memfd_create("read", MFD_CLOEXEC)) {}
  ~CallIntoFileTest() override { ::close(file_); }
  absl::StatusOr<IrodsClient::IntoReply> ReadIntoFile(Session& session, int64_t offset, size_t n) {
    return IrodsClient::CallIntoFile(session, kDataObjRead, "<OpenedDataObjInp_PI/>", "read /z/f",
                                     {.fd = file_, .offset = offset, .size = n});
  }
  std::string FileBytes() const {
    std::string out(1 << 20, '\0');
    const ssize_t got = ::pread(file_, out.data(), out.size(), 0);
    out.resize(got < 0 ? 0 : static_cast<size_t>(got));
    return out;
  }
  const int file_;
};

TEST_F(CallIntoFileTest, PutsThePayloadInTheFileAtItsOffsetAndKeepsTheSession) {
  const std::string payload(300'000, 'q');
  ScriptedServer server({Reply(300'000, payload)});
  SessionLease session = Connect(server);
  auto r = ReadIntoFile(*session, 3, 400'000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bs_size, 300'000u);
  EXPECT_TRUE(FileBytes() == std::string(3, '\0') + payload);
  EXPECT_FALSE(session->broken());
  EXPECT_TRUE(session->at_record_boundary());
}

TEST_F(CallIntoFileTest, MorePayloadThanAskedIsDataLossAndWritesNothing) {
  ScriptedServer server({Reply(9, "too many bytes")});
  SessionLease session = Connect(server);
  auto r = ReadIntoFile(*session, 0, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_EQ(FileBytes(), "");
  EXPECT_TRUE(session->broken());
}

TEST_F(CallIntoFileTest, AReplyCutShortIsUnavailableAndBreaksTheSession) {
  std::string reply = Reply(5, "hello");
  reply.resize(reply.size() - 2);
  ScriptedServer server({reply}, /*hang_up=*/true);
  SessionLease session = Connect(server);
  auto r = ReadIntoFile(*session, 0, 8);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("read /z/f"));
  EXPECT_TRUE(session->broken());
}

TEST_F(CallIntoFileTest, BytesAlreadyBufferedAreWrittenFromTheFramedPath) {
  ScriptedServer server({Reply(0, "first") + Reply(6, "second")});
  SessionLease session = Connect(server);
  auto first = session->Exchange(EncodeMessage("RODS_API_REQ", kDataObjRead, ""));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_FALSE(session->at_record_boundary());
  auto r = ReadIntoFile(*session, 2, 8);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bs_size, 6u);
  EXPECT_EQ(FileBytes(), std::string(2, '\0') + "second");
}

}  // namespace
}  // namespace ferry::irods
