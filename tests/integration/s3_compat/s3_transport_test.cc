// S3ObjectStore's transport against real servers:
// - HTTPS to a versitygw with a self-signed certificate (peer_versitygw_tls,
//   ./versitygw_tls), trusted through S3Config::ca_bundle_path, and refused
//   without it;
// - virtual-hosted-style buckets (bucket.s3.localhost) on that server: its
//   certificate names *.s3.localhost but not s3.localhost, so a request
//   only verifies if the bucket is in the host name;
// - an endpoint list whose first endpoint refuses connections;
// - a config found through AWS profile files, as the AWS CLI would;
// - replies no S3 peer sends (a body without Content-Length, a server that
//   ignores Range, a cut-off body then a good retry), from a tiny in-process
//   server answering every request with crafted bytes, to check where
//   HttpRequest::response_buffer puts a body, how GetRangeInto reads it,
//   and how a streamed read (S3ReadStream) meets a wrong Content-Range, a
//   chunked body, a cut, a stall, or its own long pause.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/rpc/framing.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/http_client.h"
#include "ferry/fs/local_file_system.h"
#include "ferry/s3/s3_file_system.h"
#include "ferry/s3/s3_object_store.h"
#include "ferry/s3/s3_read_stream.h"
#include "ferry/transfer/copy_engine.h"
#include "testing/scratch_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/s3_peer.h"
#include "testing/test_tcp_server.h"

namespace ferry::s3 {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using peers::Wait;

// tests/peers/versitygw (plain HTTP) and ./versitygw_tls.
constexpr uint16_t kPlainPort = peers::kVersitygwPort;
constexpr uint16_t kTlsPort = 7443;
// Nothing listens on TCP port 1 (tcpmux) in the test's namespace: connects
// are refused at once.
constexpr char kDeadEndpoint[] = "127.0.0.1:1";

// The peers' keys and timeouts; each test sets the endpoints and scheme.
S3Config BaseConfig() {
  return peers::S3PeerConfig(kPlainPort, /*stall_timeout=*/absl::Seconds(10));
}

S3Config TlsConfig(std::string host, bool with_ca = true) {
  S3Config c = BaseConfig();
  c.endpoints = {absl::StrCat(host, ":", kTlsPort)};
  c.use_https = true;
  if (with_ca) c.ca_bundle_path = FERRY_VERSITYGW_TLS_CA;
  return c;
}

class S3TransportTest : public ::testing::Test {
 protected:
  std::unique_ptr<S3ObjectStore> Store(const S3Config& config) {
    auto s = S3ObjectStore::Create(rt_, config);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static absl::StatusOr<std::string> Put(S3ObjectStore& store, std::string_view key,
                                         const std::string& bytes) {
    return Wait<std::string>([&](Callback<std::string> cb) {
      store.Put(key, peers::AsSpan(bytes), {}, std::move(cb));
    });
  }
  static absl::StatusOr<std::string> Get(S3ObjectStore& store, std::string_view key, int64_t off,
                                         int64_t len) {
    return Wait<std::string>(
        [&](Callback<std::string> cb) { store.GetRange(key, off, len, "", std::move(cb)); });
  }
  static absl::StatusOr<ObjectInfo> Head(S3ObjectStore& store, std::string_view key) {
    return Wait<ObjectInfo>([&](Callback<ObjectInfo> cb) { store.Head(key, std::move(cb)); });
  }
  static absl::StatusOr<std::vector<std::string>> ListBuckets(S3ObjectStore& store) {
    return Wait<std::vector<std::string>>(
        [&](Callback<std::vector<std::string>> cb) { store.ListBuckets(std::move(cb)); });
  }

  // Puts `key` (in the bucket "failover") through a store made from `c`,
  // heads it ten times, and expects every request to succeed with one
  // endpoint failover in all: the first endpoint of `c` is skipped once it
  // has failed.
  void ExpectTenRequestsSucceedWithOneFailover(const S3Config& c, const std::string& key) {
    auto store = Store(c);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(peers::CreateBucketIfMissing(*store, "failover").ok());
    ASSERT_TRUE(Put(*store, key, "alive").ok());
    for (int i = 0; i < 10; ++i) {
      auto info = Head(*store, key);
      ASSERT_TRUE(info.ok()) << info.status();
    }
    EXPECT_EQ(store->endpoint_failovers(), 1);
  }

  Runtime rt_{RuntimeOptions{.io_threads = 2, .memory_budget_bytes = int64_t{64} << 20}};
};

TEST_F(S3TransportTest, HttpsWithTheCaBundleRoundTrips) {
  auto store = Store(TlsConfig("127.0.0.1"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*store, "tls-path").ok());
  ASSERT_TRUE(Put(*store, "tls-path/dir/k", "over tls").ok());
  auto got = Get(*store, "tls-path/dir/k", 5, 3);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "tls");
}

TEST_F(S3TransportTest, HttpsWithoutTheCaBundleIsUnauthenticated) {
  auto store = Store(TlsConfig("127.0.0.1", /*with_ca=*/false));
  ASSERT_NE(store, nullptr);
  auto r = ListBuckets(*store);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("certificate"));
}

TEST_F(S3TransportTest, CertificateForAnotherNameIsRejected) {
  // The certificate names *.s3.localhost, not s3.localhost: path style to
  // s3.localhost must fail (the premise of the virtual-hosted test below).
  auto store = Store(TlsConfig("s3.localhost"));
  ASSERT_NE(store, nullptr);
  auto r = Head(*store, "tls-vhost/k");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
}

TEST_F(S3TransportTest, VirtualHostedStyleRoundTrips) {
  auto path_store = Store(TlsConfig("127.0.0.1"));
  ASSERT_NE(path_store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*path_store, "tls-vhost").ok());

  S3Config vhost = TlsConfig("s3.localhost");
  vhost.addressing_style = ferry::s3::AddressingStyle::kVirtual;
  auto store = Store(vhost);
  ASSERT_NE(store, nullptr);
  const std::string data = "virtual hosted bytes";
  auto etag = Put(*store, "tls-vhost/a b/(c).txt", data);
  ASSERT_TRUE(etag.ok()) << etag.status();
  auto info = Head(*store, "tls-vhost/a b/(c).txt");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->etag, *etag);
  auto got = Get(*store, "tls-vhost/a b/(c).txt", 8, 6);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "hosted");
  auto page = Wait<ListObjectsPage>([&](Callback<ListObjectsPage> cb) {
    store->ListObjects("tls-vhost", {.prefix = "a b/"}, std::move(cb));
  });
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "a b/(c).txt");
  // The path-style client sees the same object.
  auto same = Get(*path_store, "tls-vhost/a b/(c).txt", 0, 100);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(*same, data);
}

TEST_F(S3TransportTest, DeadFirstEndpointIsSkippedAfterOneRefusal) {
  S3Config c = BaseConfig();
  c.use_https = false;
  c.endpoints = {kDeadEndpoint, absl::StrCat("127.0.0.1:", kPlainPort)};
  // The first request that chose the dead endpoint went on to the live one;
  // after that the dead one was skipped (for kEndpointDownTime).
  ExpectTenRequestsSucceedWithOneFailover(c, "failover/k");
}

// A port that never completes a connect: a listener whose accept queue is
// full (backlog 0, two connections parked and never accepted), so the
// kernel drops further SYNs and a client's connect times out.
class UnansweredPort {
 public:
  UnansweredPort() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(listener_, 0) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "UnansweredPort: " << std::strerror(errno);
      return;
    }
    port_ = ntohs(a.sin_port);
    for (int& fd : parked_) {
      fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      (void)connect(fd, reinterpret_cast<sockaddr*>(&a), len);  // EINPROGRESS, then queued
    }
    absl::SleepFor(absl::Milliseconds(50));  // the parked handshakes complete
  }
  ~UnansweredPort() {
    for (int fd : parked_) close(fd);
    close(listener_);
  }
  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int listener_ = -1;
  int parked_[2] = {-1, -1};
  uint16_t port_ = 0;
};

TEST_F(S3TransportTest, FirstEndpointWhoseConnectTimesOutIsSkippedLikeARefusedOne) {
  UnansweredPort unanswered;
  S3Config c = BaseConfig();
  c.use_https = false;
  c.connect_timeout = absl::Milliseconds(300);
  c.endpoints = {unanswered.endpoint(), absl::StrCat("127.0.0.1:", kPlainPort)};
  // One connect timed out; the request went on to the live endpoint, and
  // the silent one was skipped after that.
  ExpectTenRequestsSucceedWithOneFailover(c, "failover/t");
}

TEST_F(S3TransportTest, EveryEndpointDeadIsUnavailable) {
  S3Config c = BaseConfig();
  c.use_https = false;
  c.endpoints = {kDeadEndpoint, "127.0.0.1:2"};
  auto store = Store(c);
  ASSERT_NE(store, nullptr);
  auto r = Head(*store, "b/k");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST_F(S3TransportTest, ProfileFilesConfigureTheStore) {
  const std::string home = ::testing::TempDir() + "/s3_transport_home";
  ASSERT_EQ(system(absl::StrCat("mkdir -p '", home, "/.aws'").c_str()), 0);
  std::ofstream(home + "/.aws/config") << "[default]\nregion = eu-north-1\n\n"
                                       << "[profile local]\nregion = us-east-1\n"
                                       << "s3 =\n  endpoint_url = http://127.0.0.1:"
                                       << kPlainPort << "\n";
  std::ofstream(home + "/.aws/credentials") << "[local]\naws_access_key_id = AKIDLOCAL\n"
                                            << "aws_secret_access_key = SECRETLOCAL\n";
  auto config = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "local"}});
  ASSERT_TRUE(config.ok()) << config.status();
  auto store = Store(*config);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*store, "from-profile").ok());
  auto names = ListBuckets(*store);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, Contains("from-profile"));
}

// ---- Crafted replies ----

// Splits a connection's stream after each request's headers: the crafted
// server gets only GETs, which have no body.
class RequestHeadFraming : public Framing {
 public:
  void Append(std::string_view record, std::string* out) const override { out->append(record); }
  std::unique_ptr<RecordReader> NewReader() const override { return std::make_unique<Reader>(); }
  std::string_view name() const override { return "http-request-head"; }

 private:
  class Reader : public RecordReader {
   public:
    absl::Status Consume(std::string_view data, std::vector<std::string>* records) override {
      pending_.append(data);
      for (size_t end; (end = pending_.find("\r\n\r\n")) != std::string::npos;) {
        records->push_back(pending_.substr(0, end + 4));
        pending_.erase(0, end + 4);
      }
      return absl::OkStatus();
    }
    size_t buffered_bytes() const override { return pending_.size(); }

   private:
    std::string pending_;
  };
};

// Answers the n-th connection's request with replies[n] (the last reply
// for every later one), then closes the connection, or, with
// `close_after_reply` false, leaves it open and silent until the server
// is destroyed (a server that stalls). Thread-safe.
class CraftedHttpServer {
 public:
  explicit CraftedHttpServer(std::vector<std::string> replies, bool close_after_reply = true)
      : replies_(std::move(replies)),
        server_(std::make_shared<RequestHeadFraming>(),
                [this, close_after_reply](const ferry::testing::TestTcpServer::ConnPtr& conn,
                                          std::string head) {
                  {
                    MutexLock l(&mu_);
                    heads_.push_back(std::move(head));
                  }
                  const size_t n = std::min(static_cast<size_t>(conn->index()), replies_.size() - 1);
                  conn->SendRaw(replies_[n]);
                  if (close_after_reply) conn->Close();
                }) {}

  std::string url() const { return absl::StrCat("http://127.0.0.1:", server_.port(), "/b/k"); }
  // An S3 endpoint (the server ignores the request, signature included).
  std::string endpoint() const { return absl::StrCat("127.0.0.1:", server_.port()); }
  // Requests answered (one per connection).
  int requests() const { return server_.accepted(); }
  // The request line and headers of each request, in arrival order.
  std::vector<std::string> heads() const {
    MutexLock l(&mu_);
    return heads_;
  }

 private:
  const std::vector<std::string> replies_;
  mutable Mutex mu_;
  std::vector<std::string> heads_ ABSL_GUARDED_BY(mu_);
  ferry::testing::TestTcpServer server_;
};

// A reply that closes its connection; `with_length` sends Content-Length
// (without it the close ends the body).
std::string Reply(std::string_view status, std::string_view body, bool with_length = true) {
  return absl::StrCat("HTTP/1.1 ", ToAbsl(status), "\r\n",
                      with_length ? absl::StrCat("Content-Length: ", body.size(), "\r\n") : "",
                      "Connection: close\r\n\r\n", ToAbsl(body));
}

class CraftedReplyTest : public S3TransportTest {
 protected:
  // A GET of `server`'s URL with `buffer` as its response_buffer.
  absl::StatusOr<HttpResponse> Get(HttpClient& http, const CraftedHttpServer& server,
                                   std::string& buffer) {
    return Wait<HttpResponse>([&](Callback<HttpResponse> cb) {
      http.Send({.url = server.url(), .response_buffer = std::span<char>(buffer)}, std::move(cb));
    });
  }
  // An S3ObjectStore whose only endpoint is `server`.
  std::unique_ptr<S3ObjectStore> Store(const CraftedHttpServer& server) {
    S3Config c = BaseConfig();
    c.endpoints = {server.endpoint()};
    return S3TransportTest::Store(c);
  }
  // A GET into `buffer` from a server that answers with `reply`, by a
  // client that does not retry.
  absl::StatusOr<HttpResponse> GetFrom(std::string reply, std::string& buffer) {
    CraftedHttpServer server({std::move(reply)});
    HttpClient http(rt_, {});
    return Get(http, server, buffer);
  }
  // GetRangeInto `buffer` from `offset` of an object whose server answers
  // with `reply`.
  absl::StatusOr<size_t> GetIntoFrom(std::string reply, int64_t offset, std::string& buffer) {
    CraftedHttpServer server({std::move(reply)});
    std::unique_ptr<S3ObjectStore> store = Store(server);
    if (store == nullptr) return absl::InternalError("no store (see the failure above)");
    return Wait<size_t>([&](Callback<size_t> cb) {
      store->GetRangeInto("b/k", offset, std::span<char>(buffer), "", std::move(cb));
    });
  }
};

TEST_F(CraftedReplyTest, SuccessBodyThatFitsLandsInTheBufferNotTheString) {
  std::string buffer(16, 'x');
  auto r = GetFrom(Reply("206 Partial Content", "0123456789"), buffer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 206);
  EXPECT_TRUE(r->body_in_buffer);
  EXPECT_EQ(r->body_bytes, 10u);
  EXPECT_THAT(r->body, IsEmpty());
  EXPECT_EQ(buffer, "0123456789xxxxxx");
}

TEST_F(CraftedReplyTest, SuccessBodyWithoutLengthThatFitsLandsInTheBuffer) {
  std::string buffer(10, 'x');
  auto r = GetFrom(Reply("200 OK", "0123456789", /*with_length=*/false), buffer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->body_in_buffer);
  EXPECT_EQ(r->body_bytes, 10u);
  EXPECT_EQ(buffer, "0123456789");
}

TEST_F(CraftedReplyTest, ErrorReplyGoesToTheStringAndLeavesTheBufferAlone) {
  const std::string error = "<Error><Code>NoSuchKey</Code></Error>";
  std::string buffer(100, 'x');
  auto r = GetFrom(Reply("404 Not Found", error), buffer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_FALSE(r->body_in_buffer);
  EXPECT_EQ(r->body_bytes, 0u);
  EXPECT_EQ(r->body, error);
  EXPECT_EQ(buffer, std::string(100, 'x'));
}

TEST_F(CraftedReplyTest, SuccessBodyAnnouncedLongerThanTheBufferGoesToTheString) {
  std::string buffer(10, 'x');
  auto r = GetFrom(Reply("200 OK", "01234567890123456789"), buffer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->body_in_buffer);
  EXPECT_EQ(r->body, "01234567890123456789");
  EXPECT_EQ(buffer, std::string(10, 'x'));
}

TEST_F(CraftedReplyTest, BodyWithoutLengthOverflowingTheBufferIsDataLossNotRetried) {
  CraftedHttpServer server({Reply("200 OK", "01234567890123456789", /*with_length=*/false)});
  HttpClient http(rt_, {.retry_count = 2, .retry_wait = absl::Milliseconds(1)});
  std::string buffer(10, 'x');
  auto r = Get(http, server, buffer);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("10-byte response buffer"));
  EXPECT_EQ(server.requests(), 1);
}

TEST_F(CraftedReplyTest, RetryWritesTheBufferFromTheStart) {
  // The first reply is cut off after 5 of its 10 bytes (DataLoss, retried).
  CraftedHttpServer server({"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n"
                            "Connection: close\r\n\r\nXXXXX",
                            Reply("206 Partial Content", "0123456789")});
  HttpClient http(rt_, {.retry_count = 1, .retry_wait = absl::Milliseconds(1)});
  std::string buffer(10, 'x');
  auto r = Get(http, server, buffer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(r->body_bytes, 10u);
  EXPECT_EQ(buffer, "0123456789");
  // Both attempts' bytes were received.
  EXPECT_EQ(http.body_bytes_received(), 15);
}

TEST_F(CraftedReplyTest, GetRangeIntoCutsTheRangeFromAWholeObjectLargerThanTheBuffer) {
  // A server that ignores Range: 200 and the whole object, which does not
  // fit in the buffer.
  std::string buffer(5, 'x');
  auto n = GetIntoFrom(Reply("200 OK", "0123456789abcdefghij"), 3, buffer);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 5u);
  EXPECT_EQ(buffer, "34567");
}

TEST_F(CraftedReplyTest, GetRangeIntoCutsTheRangeFromAWholeObjectThatFitsTheBuffer) {
  // The whole object lands in the buffer; the range is further in.
  std::string buffer(16, 'x');
  auto n = GetIntoFrom(Reply("200 OK", "0123456789"), 4, buffer);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 6u);
  EXPECT_EQ(buffer.substr(0, 6), "456789");
}

TEST_F(CraftedReplyTest, GetRangeIntoOfARangeReplyLongerThanAskedIsDataLoss) {
  std::string buffer(10, 'x');
  auto n = GetIntoFrom(Reply("206 Partial Content", "0123456789abcdefghij"), 0, buffer);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kDataLoss) << n.status();
  EXPECT_THAT(n.status().message(), HasSubstr("asked for 10 bytes"));
}

// A 206 reply of `body` that says it holds the bytes from `first` on of a
// `size`-byte object; `chunked`: without Content-Length, in chunks of at
// most 3 bytes, ended by the zero chunk.
std::string RangeReply(int64_t first, int64_t size, std::string_view body, bool chunked = false) {
  std::string head = absl::StrCat("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes ", first,
                                  "-", first + static_cast<int64_t>(body.size()) - 1, "/", size,
                                  "\r\n");
  if (!chunked) {
    return absl::StrCat(head, "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n",
                        ToAbsl(body));
  }
  absl::StrAppend(&head, "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  for (size_t at = 0; at < body.size(); at += 3) {
    const std::string_view chunk = body.substr(at, 3);
    absl::StrAppend(&head, absl::Hex(chunk.size()), "\r\n", ToAbsl(chunk), "\r\n");
  }
  return absl::StrCat(head, "0\r\n\r\n");
}

TEST_F(CraftedReplyTest, GetRangeIntoOfARangeReplyStartingElsewhereIsDataLossNotOtherBytes) {
  // Asked for 4 bytes at 3; the reply holds 4 bytes, but those at 0.
  std::string buffer(4, 'x');
  auto n = GetIntoFrom(RangeReply(0, 10, "0123"), 3, buffer);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kDataLoss) << n.status();
  EXPECT_THAT(n.status().message(), HasSubstr("Content-Range"));
}

// ---- Streamed reads (S3ReadStream) of crafted replies ----

class CraftedStreamTest : public CraftedReplyTest {
 protected:
  // A store whose only endpoint is `server`, with a 1 s stall timeout.
  std::unique_ptr<S3ObjectStore> Store(const CraftedHttpServer& server) {
    S3Config c = peers::S3PeerConfig(kPlainPort, /*stall_timeout=*/absl::Seconds(1));
    c.endpoints = {server.endpoint()};
    return S3TransportTest::Store(c);
  }
  // Reads `stream` to its end in pieces of `piece` bytes: the bytes, or
  // the first error.
  static absl::StatusOr<std::string> ReadAll(S3ReadStream& stream, size_t piece) {
    std::string out;
    std::string buf(piece, '\0');
    for (;;) {
      absl::StatusOr<size_t> n = stream.Read(absl::MakeSpan(buf));
      if (!n.ok()) return n.status();
      out.append(buf.data(), *n);
      if (*n < piece) return out;
    }
  }
  // Object "b/k" read through an S3 filesystem whose endpoint is
  // `server`, in reads of `pieces` bytes from 0 on (each must be whole):
  // the bytes, or the first error.
  absl::StatusOr<std::string> FileReadThrough(const CraftedHttpServer& server,
                                              std::initializer_list<size_t> pieces) {
    S3Config c = peers::S3PeerConfig(kPlainPort, /*stall_timeout=*/absl::Seconds(1));
    c.endpoints = {server.endpoint()};
    FERRY_ASSIGN_OR_RETURN(std::shared_ptr<S3FileSystem> s3, S3FileSystem::Create(rt_, c));
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<fs::File> f, s3->OpenRead("b/k"));
    std::string got;
    for (size_t piece : pieces) {
      std::string buf(piece, '\0');
      FERRY_ASSIGN_OR_RETURN(size_t n,
                             f->ReadAt(static_cast<int64_t>(got.size()), absl::MakeSpan(buf)));
      if (n != piece) return absl::InternalError(absl::StrCat("read ", n, " of ", piece, " bytes"));
      got += buf;
    }
    FERRY_RETURN_IF_ERROR(f->Close());
    return got;
  }
  // The bytes from `offset` on of the `size`-byte object "b/k", streamed
  // from a server that answers with `reply`.
  absl::StatusOr<std::string> StreamFrom(std::string reply, int64_t offset, int64_t size) {
    CraftedHttpServer server({std::move(reply)});
    std::unique_ptr<S3ObjectStore> store = Store(server);
    if (store == nullptr) return absl::InternalError("no store (see the failure above)");
    S3ReadStream stream(*store, "b/k", "", offset, size);
    return ReadAll(stream, 4);
  }
};

// A stream from an offset under 64 KiB asks from byte 0 and drops what
// precedes the offset; one from further in asks from its offset. kFar is
// such an offset, and kFarSize an object whose last 7 bytes are past it.
constexpr int64_t kFar = 70000;
constexpr int64_t kFarSize = kFar + 7;

TEST_F(CraftedStreamTest, RangeReplyGetsEveryByteFromTheOffset) {
  auto got = StreamFrom(RangeReply(kFar, kFarSize, "3456789"), kFar, kFarSize);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "3456789");
}

TEST_F(CraftedStreamTest, NearTheStartTheReplyFromByteZeroGivesTheBytesFromTheOffset) {
  auto got = StreamFrom(RangeReply(0, 10, "0123456789"), 3, 10);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "3456789");
}

TEST_F(CraftedStreamTest, RangeReplyStartingElsewhereIsDataLossNotOtherBytes) {
  // As many bytes as asked for, but those from 0, not from kFar.
  auto got = StreamFrom(RangeReply(0, kFarSize, "0123456"), kFar, kFarSize);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("Content-Range"));
  EXPECT_THAT(got.status().message(), HasSubstr("b/k"));
}

TEST_F(CraftedStreamTest, NearTheStartARangeReplyNotFromByteZeroIsDataLoss) {
  // The bytes from the offset itself, though the stream asked from 0.
  auto got = StreamFrom(RangeReply(3, 10, "3456789"), 3, 10);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("Content-Range"));
}

TEST_F(CraftedStreamTest, UnreadableContentRangeIsDataLoss) {
  std::string reply = RangeReply(0, 10, "0123456789");
  reply.replace(reply.find("bytes 0-9/10"), 12, "bytes zero-9");
  auto got = StreamFrom(std::move(reply), 3, 10);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("Content-Range"));
}

TEST_F(CraftedStreamTest, ServerThatIgnoresRangeIsAnErrorNotTheObjectsFirstBytes) {
  const std::string whole = peers::RandomBytes(kFarSize, 42);
  auto got = StreamFrom(Reply("200 OK", whole), kFar, kFarSize);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnimplemented) << got.status();
}

TEST_F(CraftedStreamTest, NearTheStartAServerThatIgnoresRangeServesTheStream) {
  // Asked from byte 0, a whole object is what was asked for.
  auto got = StreamFrom(Reply("200 OK", "0123456789"), 3, 10);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "3456789");
}

TEST_F(CraftedStreamTest, FileReadOfAServerThatIgnoresRangeFallsBackAndGetsTheRightBytes) {
  // Every request, the HEAD too, gets the whole object with a 200.
  const std::string whole = peers::RandomBytes(kFarSize, 43);
  CraftedHttpServer server({Reply("200 OK", whole)});
  // The second read on would be streamed.
  auto got = FileReadThrough(server, {size_t{kFar}, 4, 3});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == whole);
  // The stream was tried (its open-ended GET), then its read asked again.
  EXPECT_THAT(server.heads(), Contains(HasSubstr(absl::StrCat("range: bytes=", kFar, "-\r\n"))));
}

TEST_F(CraftedStreamTest, FileReadNearTheStartOfAServerThatIgnoresRangeIsStreamedFromByteZero) {
  CraftedHttpServer server({Reply("200 OK", "0123456789")});
  auto got = FileReadThrough(server, {1, 4, 5});  // the second read on is streamed
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "0123456789");
  EXPECT_THAT(server.heads(), Contains(HasSubstr("range: bytes=0-\r\n")));
}

TEST_F(CraftedStreamTest, ChunkedRangeReplyGetsEveryByte) {
  // 3-byte chunks: "012" is dropped whole, "345" across the offset.
  auto got = StreamFrom(RangeReply(0, 10, "0123456789", /*chunked=*/true), 4, 10);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "456789");
}

TEST_F(CraftedStreamTest, ChunkedRangeReplyEndingBeforeTheObjectsEndIsDataLoss) {
  // A well-formed chunked body of the object's first 7 of 10 bytes.
  auto got = StreamFrom(RangeReply(0, 10, "0123456", /*chunked=*/true), 3, 10);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("ended at byte 7 of the object's 10"));
}

TEST_F(CraftedStreamTest, BodyCutBeforeItsContentLengthIsDataLossNotAShortRead) {
  std::string reply = RangeReply(0, 10, "0123456789");
  reply.resize(reply.size() - 3);  // the connection closes after "0123456"
  auto got = StreamFrom(std::move(reply), 3, 10);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
}

TEST_F(CraftedStreamTest, ReplyThatEndsWhileTheStreamIsPausedIsReadWhole) {
  CraftedHttpServer server({RangeReply(0, 10, "0123456789")});
  std::unique_ptr<S3ObjectStore> store = Store(server);
  ASSERT_NE(store, nullptr);
  S3ReadStream stream(*store, "b/k", "", 3, 10);
  // No Read waits: the whole body comes as one piece across the offset,
  // is held paused (curl hands it over again), and the server closes.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto got = ReadAll(stream, 4);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "3456789");
}

TEST_F(CraftedStreamTest, ServerThatStallsMidBodyFailsAfterTheStallTimeoutNotAHang) {
  std::string reply = RangeReply(0, 10, "0123456789");
  reply.resize(reply.size() - 3);  // "0123456", then nothing, the connection open
  CraftedHttpServer server({std::move(reply)}, /*close_after_reply=*/false);
  std::unique_ptr<S3ObjectStore> store = Store(server);
  ASSERT_NE(store, nullptr);
  S3ReadStream stream(*store, "b/k", "", 3, 10);
  const absl::Time start = absl::Now();
  auto got = ReadAll(stream, 7);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("b/k"));
  // One stall timeout (1 s, plus curl's 5 s averaging window), and no
  // retry: the reader took bytes.
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(server.requests(), 1);
}

TEST_F(CraftedStreamTest, ReaderPausedLongerThanTheStallTimeoutStillGetsEveryByte) {
  // Far more than the socket buffers and curl's hold: the transfer is
  // paused mid-body while the reader sleeps.
  const std::string data = peers::RandomBytes(8 << 20, 41);
  CraftedHttpServer server({RangeReply(0, static_cast<int64_t>(data.size()), data)});
  std::unique_ptr<S3ObjectStore> store = Store(server);
  ASSERT_NE(store, nullptr);
  S3ReadStream stream(*store, "b/k", "", 0, static_cast<int64_t>(data.size()));
  std::string first(64 << 10, '\0');
  auto n = stream.Read(absl::MakeSpan(first));
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, first.size());
  // curl judges a stall by its speed averaged over about 5 s: 7 s paused
  // is past that and the 1 s stall timeout both.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  auto rest = ReadAll(stream, 1 << 20);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_TRUE(first + *rest == data) << "got " << first.size() + rest->size() << " bytes";
}

// A server that lists keys which would leave a download's destination
// ("t/../../escape.txt", "t/a/../../../up", "t//double", "t/nul\0name"):
// a tree copy writes the one safe key, refuses each unsafe one once with a
// warning naming it, and nothing appears outside the destination.
TEST_F(CraftedReplyTest, TreeCopyOfAListingWithEscapingKeysWritesOnlyInsideTheDestination) {
  auto contents = [](std::string_view key) {
    return absl::StrCat("<Contents><Key>", ToAbsl(key),
                        "</Key><Size>4</Size><ETag>&quot;e1&quot;</ETag>"
                        "<LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>");
  };
  const std::string list = absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>b</Name>"
      "<Prefix>t/</Prefix><KeyCount>5</KeyCount><MaxKeys>1000</MaxKeys>"
      "<IsTruncated>false</IsTruncated>",
      contents("t/ok.txt"), contents("t/../../escape.txt"), contents("t/a/../../../up"),
      contents("t//double"), contents("t/nul&#0;name"), "</ListBucketResult>");
  // The listing, then the one GET: a listed object opens with its listed
  // size and ETag, no HEAD.
  CraftedHttpServer server({Reply("200 OK", list), Reply("200 OK", "fine")});
  S3Config config = BaseConfig();
  config.endpoints = {server.endpoint()};
  absl::StatusOr<std::shared_ptr<S3FileSystem>> s3 = S3FileSystem::Create(rt_, config);
  ASSERT_TRUE(s3.ok()) << s3.status();
  ferry::testing::ScratchDir scratch("ferry_traversal_");
  ASSERT_TRUE(scratch.ok());
  fs::LocalFileSystem local;
  const std::string dest = fs::LocalPathToFsPath(scratch.Path("deep/dest"));
  absl::StatusOr<TreeCopyResult> r = CopyTree(rt_, **s3, "b/t", local, dest);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->totals.files, 1);
  EXPECT_EQ(ferry::testing::ReadFile(scratch.Path("deep/dest/ok.txt")), "fine");
  EXPECT_EQ(r->entries_refused, 4);
  EXPECT_EQ(r->files_failed, 0);
  // Nothing outside deep/dest, and no file but ok.txt.
  for (const auto& e : std::filesystem::recursive_directory_iterator(scratch.Path(""))) {
    const std::string rel = std::filesystem::relative(e.path(), scratch.Path("")).string();
    EXPECT_TRUE(rel == "deep" || rel.rfind("deep/dest", 0) == 0) << rel;
    if (e.is_regular_file()) {
      EXPECT_EQ(rel, "deep/dest/ok.txt");
    }
  }
  bool named_escape = false;
  for (const std::string& w : r->warnings) {
    EXPECT_NE(w.find("refused"), std::string::npos) << w;
    named_escape |= w.find("\"../../escape.txt\"") != std::string::npos;
  }
  EXPECT_EQ(r->warnings.size(), 4u);
  EXPECT_TRUE(named_escape);
  std::filesystem::remove_all(scratch.Path("deep"));
}

// A server-side copy in parts whose parts are refused and whose abort is
// refused as well: the error names the copy's failure and the upload left
// behind, so the user can abort it by hand.
TEST_F(CraftedReplyTest, CopyInPartsWhoseAbortFailsNamesTheUploadLeftBehind) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Length: 6291456\r\nETag: \"e1\"\r\n"
      "Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\nConnection: close\r\n\r\n";
  const std::string created = Reply(
      "200 OK",
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><InitiateMultipartUploadResult>"
      "<Bucket>b</Bucket><Key>dst</Key><UploadId>upload-7</UploadId>"
      "</InitiateMultipartUploadResult>");
  const std::string denied = Reply(
      "403 Forbidden",
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code>"
      "<Message>Access Denied</Message></Error>");
  // HEAD, CreateMultipartUpload, then every later request (the parts and
  // the abort) is refused.
  CraftedHttpServer server({head, created, denied});
  S3Config config = BaseConfig();
  config.endpoints = {server.endpoint()};
  absl::StatusOr<std::shared_ptr<S3FileSystem>> s3 =
      S3FileSystem::Create(rt_, config, {.copy_object_max_bytes = 1 << 20, .copy_part_bytes = 5 << 20});
  ASSERT_TRUE(s3.ok()) << s3.status();
  const absl::Status copied = (*s3)->CopyWithin("b/src", "b/dst");
  EXPECT_EQ(copied.code(), absl::StatusCode::kPermissionDenied) << copied;
  EXPECT_THAT(copied.message(), HasSubstr("server-side copy of s3://b/src to s3://b/dst"));
  EXPECT_THAT(copied.message(), HasSubstr("aborting its multipart upload upload-7 failed too"));
}

// ---- A bucket in another region ----

std::string RedirectReply(std::string_view status, std::string_view region, std::string_view body) {
  return absl::StrCat("HTTP/1.1 ", ToAbsl(status), "\r\nx-amz-bucket-region: ", ToAbsl(region),
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n",
                      ToAbsl(body));
}

constexpr char kHeadOk[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"e\"\r\n"
    "Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\nConnection: close\r\n\r\n";

TEST_F(CraftedReplyTest, BucketInAnotherRegionIsResignedForItAndRemembered) {
  CraftedHttpServer server(
      {RedirectReply("301 Moved Permanently", "eu-west-1",
                     "<Error><Code>PermanentRedirect</Code><Message>use the bucket's "
                     "endpoint</Message></Error>"),
       kHeadOk});
  S3Config config = BaseConfig();
  config.endpoints = {server.endpoint()};
  config.region = "us-east-1";
  std::unique_ptr<S3ObjectStore> store = S3TransportTest::Store(config);
  ASSERT_NE(store, nullptr);
  auto info = Head(*store, "bkt/k");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(store->BucketRegion("bkt"), "eu-west-1");
  ASSERT_TRUE(Head(*store, "bkt/k").ok());
  // The first request went for us-east-1, then every one for eu-west-1:
  // the redirect costs one request once per bucket.
  const std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 3u);
  EXPECT_THAT(heads[0], HasSubstr("/us-east-1/s3/aws4_request"));
  EXPECT_THAT(heads[1], HasSubstr("/eu-west-1/s3/aws4_request"));
  EXPECT_THAT(heads[2], HasSubstr("/eu-west-1/s3/aws4_request"));
}

TEST_F(CraftedReplyTest, AuthorizationHeaderMalformedNamingTheRegionIsFollowed) {
  CraftedHttpServer server(
      {RedirectReply("400 Bad Request", "ap-south-1",
                     "<Error><Code>AuthorizationHeaderMalformed</Code><Region>ap-south-1</Region>"
                     "</Error>"),
       kHeadOk});
  S3Config config = BaseConfig();
  config.endpoints = {server.endpoint()};
  std::unique_ptr<S3ObjectStore> store = S3TransportTest::Store(config);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Head(*store, "bkt/k").ok());
  EXPECT_EQ(store->BucketRegion("bkt"), "ap-south-1");
}

TEST_F(CraftedReplyTest, RegionIsRememberedPerStoreNotPerProcess) {
  CraftedHttpServer server(
      {RedirectReply("301 Moved Permanently", "eu-west-1", ""), kHeadOk});
  S3Config config = BaseConfig();
  config.endpoints = {server.endpoint()};
  std::unique_ptr<S3ObjectStore> first = S3TransportTest::Store(config);
  std::unique_ptr<S3ObjectStore> second = S3TransportTest::Store(config);
  ASSERT_TRUE(Head(*first, "bkt/k").ok());
  EXPECT_EQ(first->BucketRegion("bkt"), "eu-west-1");
  EXPECT_EQ(second->BucketRegion("bkt"), config.region);
}

TEST_F(CraftedReplyTest, RedirectToTheSameRegionAgainIsAnErrorNotALoop) {
  CraftedHttpServer server({RedirectReply("301 Moved Permanently", "eu-west-1",
                                          "<Error><Code>PermanentRedirect</Code></Error>")});
  S3Config config = BaseConfig();
  config.endpoints = {server.endpoint()};
  std::unique_ptr<S3ObjectStore> store = S3TransportTest::Store(config);
  auto info = Head(*store, "bkt/k");
  EXPECT_FALSE(info.ok());
  EXPECT_EQ(server.requests(), 2);
}

// ---- HTTPS configured as the AWS CLI is (AWS_CA_BUNDLE) ----

TEST_F(S3TransportTest, CaBundleVariableIsTrustedForHttps) {
  auto c = S3Config::FromEnvironment(
      {{"HOME", "/nonexistent"},
       {"AWS_ACCESS_KEY_ID", peers::kS3AccessKeyId},
       {"AWS_SECRET_ACCESS_KEY", peers::kS3SecretAccessKey},
       {"AWS_ENDPOINT_URL", absl::StrCat("https://s3.localhost:", kTlsPort)},
       {"AWS_CA_BUNDLE", FERRY_VERSITYGW_TLS_CA}});
  ASSERT_TRUE(c.ok()) << c.status();
  c->addressing_style = AddressingStyle::kVirtual;  // the certificate names *.s3.localhost
  auto store = Store(*c);
  ASSERT_NE(store, nullptr);
  // The server answered (no such key): the TLS handshake verified.
  auto info = Head(*store, "tls-no-such-bucket/k");
  EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound) << info.status();
}

TEST_F(S3TransportTest, WrongCertificateIsRefusedSayingSo) {
  // No AWS_CA_BUNDLE: the system store does not know the test CA.
  auto c = S3Config::FromEnvironment(
      {{"HOME", "/nonexistent"},
       {"AWS_ACCESS_KEY_ID", peers::kS3AccessKeyId},
       {"AWS_SECRET_ACCESS_KEY", peers::kS3SecretAccessKey},
       {"AWS_ENDPOINT_URL", absl::StrCat("https://s3.localhost:", kTlsPort)}});
  ASSERT_TRUE(c.ok()) << c.status();
  c->addressing_style = AddressingStyle::kVirtual;
  auto store = Store(*c);
  ASSERT_NE(store, nullptr);
  auto info = Head(*store, "tls-no-such-bucket/k");
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnauthenticated) << info.status();
  EXPECT_THAT(info.status().message(), HasSubstr("certificate"));
}

}  // namespace
}  // namespace ferry::s3
