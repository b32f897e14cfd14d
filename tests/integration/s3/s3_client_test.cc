// S3Client (whole-file transfers and ObjectFileTable) against a real
// versitygw (peer_versitygw fixture), with faults from toxiproxy
// (peer_toxiproxy). Every test works in a bucket of its own and in a fresh
// local directory.
#include "ferry/s3/s3_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_file_system.h"
#include "ferry/s3/s3_read_stream.h"
#include "ferry/transfer/checksum.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/peers.h"
#include "testing/s3_peer.h"
#include "testing/scratch_dir.h"

namespace ferry::s3 {
namespace {

using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using peers::kVersitygwPort;
using peers::RandomBytes;
using testing::ReadFile;
using testing::ScratchDir;
using testing::WriteFile;

constexpr int64_t kMiB = int64_t{1} << 20;
// The client's chunk in these tests: S3's smallest part, so part
// boundaries come at small sizes.
constexpr int64_t kChunk = 5 * kMiB;

// A config for versitygw on `port` (or a proxy in front of it).
S3Config LocalConfig(uint16_t port = kVersitygwPort) {
  S3Config c = peers::S3PeerConfig(port, /*stall_timeout=*/absl::Seconds(2));
  c.mpu_chunk_bytes = kChunk;
  c.mpu_threads = 4;
  return c;
}

std::string Md5Hex(const std::string& s) {
  const std::string d = Md5(peers::AsSpan(s));
  std::string hex;
  for (unsigned char c : d) absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2));
  return hex;
}

// The fault tests' slow link.
constexpr int64_t kSlowKiBPerSecond = 8 * 1024;

class S3ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = S3Client::Create(rt_, LocalConfig());
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
    bucket_ = peers::TestBucketName("ferry-client-");
    absl::Status created = peers::CreateBucketIfMissing(client_->store(), bucket_);
    ASSERT_TRUE(created.ok()) << created;
    ASSERT_TRUE(dir_.ok());
  }

  std::string Key(std::string_view name) const { return absl::StrCat(bucket_, "/", ToAbsl(name)); }

  // Uploads `data` as `name` through the direct (fault-free) client.
  void PutObject(const std::string& name, const std::string& data) {
    WriteFile(dir_.Path("upload.src"), data);
    auto st = client_->Upload(dir_.Path("upload.src"), Key(name));
    ASSERT_TRUE(st.ok()) << st.status();
    ::unlink(dir_.Path("upload.src").c_str());
  }

  absl::StatusOr<std::vector<MultipartUploadInfo>> PendingUploads() {
    return peers::Wait<std::vector<MultipartUploadInfo>>(
        [&](Callback<std::vector<MultipartUploadInfo>> cb) {
          client_->store().ListMultipartUploads(bucket_, "", std::move(cb));
        });
  }

  // A client (with `config`'s settings) that talks to versitygw through a
  // toxiproxy proxy of the test's own, `proxy_`, named `name`; null after a
  // test failure.
  std::unique_ptr<S3Client> ClientThroughProxy(std::string name, S3Config config = LocalConfig()) {
    proxy_.emplace(toxiproxy_, std::move(name), kVersitygwPort);
    EXPECT_TRUE(proxy_->status().ok()) << proxy_->status();
    if (!proxy_->status().ok()) return nullptr;
    config.endpoints = {absl::StrCat("127.0.0.1:", proxy_->port())};
    auto c = S3Client::Create(rt_, config);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Throttles proxy_'s `stream` to kSlowKiBPerSecond, so transfers are still
  // running when a test breaks them.
  absl::Status SlowLink(std::string stream = "downstream") {
    return proxy_->AddToxic({.name = "slow", .type = "bandwidth", .stream = std::move(stream),
                             .attributes = {{"rate", kSlowKiBPerSecond}}});
  }

  Runtime rt_{RuntimeOptions{.io_threads = 1, .memory_budget_bytes = int64_t{256} << 20}};
  std::unique_ptr<S3Client> client_;
  std::string bucket_;
  ScratchDir dir_{"ferry_s3_client_"};
  peers::ToxiproxyClient toxiproxy_;
  std::optional<peers::ScopedProxy> proxy_;
};

TEST(S3UrlToKeyTest, StripsTheSchemeAndKeepsBucketAndKey) {
  EXPECT_EQ(S3UrlToKey("s3://bucket/a/b.bin").value_or(""), "bucket/a/b.bin");
  EXPECT_EQ(S3UrlToKey("http://bucket/a").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(S3UrlToKey("s3:///a").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(S3ClientTest, UploadThenDownloadRoundTripsByteExactAroundPartBoundaries) {
  for (int64_t size : {int64_t{0}, int64_t{1000}, kChunk - 1, kChunk, kChunk + 1,
                       2 * kChunk + 12345}) {
    SCOPED_TRACE(size);
    const std::string data = RandomBytes(static_cast<size_t>(size), static_cast<uint32_t>(size));
    WriteFile(dir_.Path("in.bin"), data);
    const std::string key = Key(absl::StrCat("obj-", size));
    auto up = client_->Upload(dir_.Path("in.bin"), key);
    ASSERT_TRUE(up.ok()) << up.status();
    EXPECT_EQ(up->bytes, size);
    auto down = client_->Download(key, dir_.Path("out.bin"));
    ASSERT_TRUE(down.ok()) << down.status();
    EXPECT_EQ(down->bytes, size);
    EXPECT_EQ(Md5Hex(ReadFile(dir_.Path("out.bin"))), Md5Hex(data));
  }
  EXPECT_THAT(dir_.Files(), ::testing::UnorderedElementsAre("in.bin", "out.bin"));
  auto pending = PendingUploads();
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_TRUE(pending->empty());
}

TEST_F(S3ClientTest, OneKiBReadOfAOneGiBObjectMovesAtMost64KiB) {
  // A sparse local file: the one 1 GiB upload of this binary costs no disk.
  const std::string big = dir_.Path("big.bin");
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "tail", 4, (int64_t{1} << 30) - 4), 4);
    ::close(fd);
  }
  auto up = client_->Upload(big, Key("big"));
  ASSERT_TRUE(up.ok()) << up.status();
  ::unlink(big.c_str());

  const int64_t before = client_->store().body_bytes_received();
  auto fd = client_->files().Open(Key("big"), OpenMode::kRead);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string buf(1024, 'x');
  ASSERT_EQ(client_->files().PRead(*fd, (int64_t{1} << 30) - 1024, absl::MakeSpan(buf)).value_or(0),
            1024u);
  EXPECT_EQ(buf.substr(1020), "tail");
  EXPECT_EQ(buf.substr(0, 4), std::string(4, '\0'));
  EXPECT_TRUE(client_->files().Close(*fd).ok());
  EXPECT_LE(client_->store().body_bytes_received() - before, 64 * 1024);
}

TEST_F(S3ClientTest, WrongCredentialsAreUnauthenticatedWithAClearMessage) {
  S3Config bad = LocalConfig();
  bad.secret_access_key = "WRONGSECRET";
  auto c = S3Client::Create(rt_, bad);
  ASSERT_TRUE(c.ok());
  PutObject("obj", "data");
  auto down = (*c)->Download(Key("obj"), dir_.Path("out.bin"));
  EXPECT_THAT(down.status().code(),
              AnyOf(absl::StatusCode::kUnauthenticated, absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(std::string(down.status().message()), HasSubstr(Key("obj")));
  WriteFile(dir_.Path("in.bin"), "data");
  auto up = (*c)->Upload(dir_.Path("in.bin"), Key("obj2"));
  EXPECT_THAT(up.status().code(),
              AnyOf(absl::StatusCode::kUnauthenticated, absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(dir_.Files(), ElementsAre("in.bin"));
}

TEST_F(S3ClientTest, MissingBucketIsNotFound) {
  auto down = client_->Download("ferry-no-such-bucket/obj", dir_.Path("out.bin"));
  EXPECT_EQ(down.status().code(), absl::StatusCode::kNotFound) << down.status();
  WriteFile(dir_.Path("in.bin"), "data");
  auto up = client_->Upload(dir_.Path("in.bin"), "ferry-no-such-bucket/obj");
  EXPECT_EQ(up.status().code(), absl::StatusCode::kNotFound) << up.status();
  EXPECT_THAT(dir_.Files(), ElementsAre("in.bin"));
}

TEST_F(S3ClientTest, MissingObjectIsNotFoundAndCreatesNoFile) {
  auto down = client_->Download(Key("nothing"), dir_.Path("out.bin"));
  EXPECT_EQ(down.status().code(), absl::StatusCode::kNotFound) << down.status();
  EXPECT_TRUE(dir_.Files().empty());
}

// Faults: a slow link (SlowLink) so that transfers are still running when
// the connection is reset; each connection is reset 300 ms after it
// starts, which a small request (HEAD, abort) outlives.

TEST_F(S3ClientTest, ResetMidDownloadFailsAndLeavesTheDestinationUntouched) {
  PutObject("obj", RandomBytes(4 * kChunk, 5));
  WriteFile(dir_.Path("out.bin"), "precious");
  auto c = ClientThroughProxy("s3_client_reset_down");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(SlowLink().ok());
  ASSERT_TRUE(proxy_->AddToxic({.name = "reset", .type = "reset_peer",
                              .attributes = {{"timeout", 300}}}).ok());
  auto down = c->Download(Key("obj"), dir_.Path("out.bin"));
  EXPECT_THAT(down.status().code(),
              AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kDataLoss));
  EXPECT_THAT(std::string(down.status().message()), HasSubstr(Key("obj")));
  EXPECT_EQ(ReadFile(dir_.Path("out.bin")), "precious");
  EXPECT_THAT(dir_.Files(), ElementsAre("out.bin"));
}

TEST_F(S3ClientTest, StalledServerMidDownloadIsDeadlineExceededAndLeavesNoFile) {
  PutObject("obj", RandomBytes(8 * kChunk, 6));  // two rounds of 4 requests
  auto c = ClientThroughProxy("s3_client_stall_down");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(SlowLink().ok());
  // Once bytes arrive, stop every byte (timeout 0: never closes).
  bool stalled = false;
  TransferOptions o;
  o.progress_interval = absl::Milliseconds(10);
  o.progress = [&](const TransferProgress& p) {
    if (p.bytes_done > 0 && !stalled) {
      stalled = true;
      return proxy_->AddToxic({.name = "stall", .type = "timeout", .attributes = {{"timeout", 0}}});
    }
    return absl::OkStatus();
  };
  auto down = c->Download(Key("obj"), dir_.Path("out.bin"), std::move(o));
  EXPECT_THAT(down.status().code(),
              AnyOf(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kUnavailable));
  EXPECT_TRUE(stalled);
  EXPECT_TRUE(dir_.Files().empty());
}

TEST_F(S3ClientTest, TruncatedBodyIsAnErrorNotAShortFile) {
  PutObject("obj", RandomBytes(2 * kChunk, 7));
  auto c = ClientThroughProxy("s3_client_truncate");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(proxy_->AddToxic({.name = "cut", .type = "limit_data",
                              .attributes = {{"bytes", 1 * kMiB}}}).ok());
  auto down = c->Download(Key("obj"), dir_.Path("out.bin"));
  EXPECT_THAT(down.status().code(),
              AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kUnavailable));
  EXPECT_TRUE(dir_.Files().empty());
}

// A whole-object read through the file table (Python's open().read()):
// parallel ranged GETs straight into the caller's buffer.
absl::StatusOr<std::string> ReadWholeObject(ObjectFileTable& files, const std::string& key,
                                            size_t size) {
  FERRY_ASSIGN_OR_RETURN(int fd, files.Open(key, OpenMode::kRead));
  std::string buf(size, '\0');
  absl::StatusOr<size_t> n = files.Read(fd, absl::MakeSpan(buf));
  files.Close(fd).IgnoreError();
  if (!n.ok()) return n.status();
  buf.resize(*n);
  return buf;
}

TEST_F(S3ClientTest, WholeReadOfAMultiMiBObjectThroughTheFileTableIsByteExact) {
  const std::string data = RandomBytes(9 * kMiB + 12345, 11);
  PutObject("obj", data);
  auto got = ReadWholeObject(client_->files(), Key("obj"), data.size());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Md5Hex(*got), Md5Hex(data));
}

TEST_F(S3ClientTest, TruncatedBodyDuringAWholeReadIsAnErrorNotAShortRead) {
  const std::string data = RandomBytes(4 * kMiB, 12);
  PutObject("obj", data);
  auto c = ClientThroughProxy("s3_client_truncate_read");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(proxy_->AddToxic({.name = "cut", .type = "limit_data",
                              .attributes = {{"bytes", 1 * kMiB}}}).ok());
  auto got = ReadWholeObject(c->files(), Key("obj"), data.size());
  EXPECT_THAT(got.status().code(),
              AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kUnavailable));
}

TEST_F(S3ClientTest, ResetMidUploadFailsAndLeavesNoOrphanMultipartUpload) {
  WriteFile(dir_.Path("in.bin"), RandomBytes(4 * kChunk, 8));
  S3Config config = LocalConfig();
  // One HTTP retry: the abort may meet a pooled connection as it is reset.
  config.retry_count = 1;
  config.retry_wait = absl::Milliseconds(20);
  auto c = ClientThroughProxy("s3_client_reset_up", config);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(SlowLink("upstream").ok());
  ASSERT_TRUE(proxy_->AddToxic({.name = "reset", .type = "reset_peer", .stream = "upstream",
                              .attributes = {{"timeout", 300}}}).ok());
  auto up = c->Upload(dir_.Path("in.bin"), Key("obj"));
  EXPECT_THAT(up.status().code(),
              AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kDataLoss));
  EXPECT_THAT(std::string(up.status().message()), HasSubstr(Key("obj")));
  auto pending = PendingUploads();
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_TRUE(pending->empty()) << pending->size() << " multipart uploads left";
  auto info = client_->downloads().Open(Key("obj"));
  EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound);
}

// A lone sequential reader in pieces (Python's f.read(1) then f.read(8 MiB)
// until EOF) is served from one open GET (S3ReadStream) from its second read
// on; the tests below read through S3FileSystem's files, then through the
// stream itself for its pause and its errors.

// The object in pieces of `piece` bytes from `offset` on, until EOF.
absl::StatusOr<std::string> ReadPieces(fs::File& f, int64_t offset, size_t piece) {
  std::string out;
  std::string buf(piece, '\0');
  for (;;) {
    FERRY_ASSIGN_OR_RETURN(size_t n, f.ReadAt(offset, absl::MakeSpan(buf)));
    out.append(buf.data(), n);
    offset += static_cast<int64_t>(n);
    if (n < piece) return out;
  }
}

class S3StreamedReadTest : public S3ClientTest {
 protected:
  // Object `name` opened for reading through a new filesystem `s3_` with
  // `config`; null after a test failure.
  std::unique_ptr<fs::File> Open(const std::string& name, S3Config config = LocalConfig()) {
    auto s3 = S3FileSystem::Create(rt_, std::move(config));
    EXPECT_TRUE(s3.ok()) << s3.status();
    if (!s3.ok()) return nullptr;
    s3_ = *s3;
    auto f = s3_->OpenRead(Key(name));
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? std::move(*f) : nullptr;
  }
  int64_t BodyBytesReceived() { return s3_->client().store().body_bytes_received(); }
  // A config through the test's proxy (made by ClientThroughProxy).
  S3Config ProxyConfig() {
    S3Config config = LocalConfig();
    config.endpoints = {absl::StrCat("127.0.0.1:", proxy_->port())};
    return config;
  }

  std::shared_ptr<S3FileSystem> s3_;
};

TEST_F(S3StreamedReadTest, SequentialPiecesReturnExactlyTheObjectsBytesFromOneGet) {
  const std::string data = RandomBytes(9 * kMiB + 12345, 31);
  PutObject("obj", data);
  auto f = Open("obj");
  ASSERT_NE(f, nullptr);
  std::string first(1, '\0');
  ASSERT_EQ(f->ReadAt(0, absl::MakeSpan(first)).value_or(0), 1u);
  const int64_t before = BodyBytesReceived();
  auto rest = ReadPieces(*f, 1, 1 * kMiB + 7);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(Md5Hex(first + *rest), Md5Hex(data));
  // Every byte once (no read-ahead thrown away, no piece fetched twice),
  // and the first byte again: a stream this near the start asks from byte
  // 0, a server's fast path, and drops what the reader had.
  EXPECT_EQ(BodyBytesReceived() - before, static_cast<int64_t>(data.size()));
  EXPECT_TRUE(f->Close().ok());
}

TEST_F(S3StreamedReadTest, AStreamFarFromTheStartAsksFromItsOffset) {
  const std::string data = RandomBytes(3 * kMiB + 11, 35);
  PutObject("obj", data);
  auto f = Open("obj");
  ASSERT_NE(f, nullptr);
  std::string head(300000, '\0');
  ASSERT_EQ(f->ReadAt(0, absl::MakeSpan(head)).value_or(0), head.size());
  const int64_t before = BodyBytesReceived();
  auto rest = ReadPieces(*f, 300000, 1 * kMiB);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(Md5Hex(head + *rest), Md5Hex(data));
  EXPECT_EQ(BodyBytesReceived() - before, static_cast<int64_t>(data.size()) - 300000);
}

TEST_F(S3StreamedReadTest, ASeekMidStreamReadsTheRightBytesAndStreamsOnFromThere) {
  const std::string data = RandomBytes(6 * kMiB + 3, 32);
  PutObject("obj", data);
  auto f = Open("obj");
  ASSERT_NE(f, nullptr);
  std::string buf(300000, '\0');
  ASSERT_TRUE(f->ReadAt(0, absl::MakeSpan(buf)).ok());
  ASSERT_EQ(f->ReadAt(300000, absl::MakeSpan(buf)).value_or(0), buf.size());  // streamed
  EXPECT_EQ(buf, data.substr(300000, buf.size()));
  // Back, then forward: each answers its own offset's bytes.
  ASSERT_EQ(f->ReadAt(17, absl::MakeSpan(buf)).value_or(0), buf.size());
  EXPECT_EQ(buf, data.substr(17, buf.size()));
  ASSERT_EQ(f->ReadAt(4 * kMiB, absl::MakeSpan(buf)).value_or(0), buf.size());
  EXPECT_EQ(buf, data.substr(4 * kMiB, buf.size()));
  auto rest = ReadPieces(*f, 4 * kMiB + 300000, 65536);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(Md5Hex(*rest), Md5Hex(data.substr(4 * kMiB + 300000)));
}

TEST_F(S3StreamedReadTest, ASecondReaderOfTheKeyGetsTheRightBytesBesideAStream) {
  const std::string data = RandomBytes(7 * kMiB + 5, 33);
  PutObject("obj", data);
  auto a = Open("obj");
  ASSERT_NE(a, nullptr);
  std::string buf(1 * kMiB, '\0');
  ASSERT_TRUE(a->ReadAt(0, absl::MakeSpan(buf)).ok());
  ASSERT_TRUE(a->ReadAt(1 * kMiB, absl::MakeSpan(buf)).ok());  // streamed
  auto b = s3_->OpenRead(Key("obj"));  // the key's parallel download starts
  ASSERT_TRUE(b.ok()) << b.status();
  auto rest_a = ReadPieces(*a, 2 * kMiB, 1 * kMiB);
  auto all_b = ReadPieces(**b, 0, 3 * kMiB);
  ASSERT_TRUE(rest_a.ok()) << rest_a.status();
  ASSERT_TRUE(all_b.ok()) << all_b.status();
  EXPECT_EQ(Md5Hex(*rest_a), Md5Hex(data.substr(2 * kMiB)));
  EXPECT_EQ(Md5Hex(*all_b), Md5Hex(data));
}

TEST_F(S3StreamedReadTest, CloseMidStreamStopsTheTransferAndLaterReadsFail) {
  PutObject("obj", RandomBytes(8 * kMiB, 34));
  auto c = ClientThroughProxy("s3_stream_close");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(SlowLink().ok());  // 8 MiB/s: the stream is still running at Close
  auto f = Open("obj", ProxyConfig());
  ASSERT_NE(f, nullptr);
  std::string buf(64 * 1024, '\0');
  ASSERT_TRUE(f->ReadAt(0, absl::MakeSpan(buf)).ok());
  ASSERT_TRUE(f->ReadAt(buf.size(), absl::MakeSpan(buf)).ok());  // streamed
  EXPECT_TRUE(f->Close().ok());
  const int64_t at_close = BodyBytesReceived();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(BodyBytesReceived(), at_close);
  auto after = f->ReadAt(2 * buf.size(), absl::MakeSpan(buf));
  EXPECT_EQ(after.status().code(), absl::StatusCode::kInvalidArgument) << after.status();
}

TEST_F(S3StreamedReadTest, PeerResetMidStreamIsAnErrorNotAHangOrAShortRead) {
  PutObject("obj", RandomBytes(8 * kMiB, 35));
  auto c = ClientThroughProxy("s3_stream_reset");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(SlowLink().ok());
  auto f = Open("obj", ProxyConfig());
  ASSERT_NE(f, nullptr);
  std::string buf(1, '\0');
  ASSERT_TRUE(f->ReadAt(0, absl::MakeSpan(buf)).ok());
  // Every connection from now on is reset 300 ms after it starts: the
  // stream's, and the ranged GET the read falls back to.
  ASSERT_TRUE(proxy_->AddToxic({.name = "reset", .type = "reset_peer",
                                .attributes = {{"timeout", 300}}}).ok());
  auto rest = ReadPieces(*f, 1, 4 * kMiB);
  EXPECT_THAT(rest.status().code(),
              AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kDataLoss));
  EXPECT_THAT(std::string(rest.status().message()), HasSubstr(Key("obj")));
}

TEST_F(S3StreamedReadTest, StreamCutShortByTheServerIsDataLossOrUnavailableNotAShortRead) {
  PutObject("obj", RandomBytes(4 * kMiB, 36));
  auto c = ClientThroughProxy("s3_stream_cut");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(proxy_->AddToxic({.name = "cut", .type = "limit_data",
                                .attributes = {{"bytes", 1 * kMiB}}}).ok());
  S3ReadStream stream(c->store(), Key("obj"), "", 1, 4 * kMiB);
  std::string buf(1 * kMiB, '\0');
  absl::Status failed;
  for (int i = 0; i < 5 && failed.ok(); ++i) failed = stream.Read(absl::MakeSpan(buf)).status();
  EXPECT_THAT(failed.code(), AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kUnavailable))
      << failed;
  EXPECT_THAT(std::string(failed.message()), HasSubstr(Key("obj")));
  // And it stays failed.
  EXPECT_EQ(stream.Read(absl::MakeSpan(buf)).status().code(), failed.code());
}

TEST_F(S3StreamedReadTest, StreamOfAReplacedObjectIsFailedPrecondition) {
  PutObject("obj", RandomBytes(1 * kMiB, 37));
  S3ReadStream stream(client_->store(), Key("obj"), "\"not-the-etag\"", 1, 1 * kMiB);
  std::string buf(4096, '\0');
  auto n = stream.Read(absl::MakeSpan(buf));
  EXPECT_EQ(n.status().code(), absl::StatusCode::kFailedPrecondition) << n.status();
  EXPECT_THAT(std::string(n.status().message()), HasSubstr(Key("obj")));
}

TEST_F(S3StreamedReadTest, AReaderSlowerThanTheNetworkPausesTheStreamAndGetsEveryByte) {
  const std::string data = RandomBytes(4 * kMiB, 38);
  PutObject("obj", data);
  S3ReadStream stream(client_->store(), Key("obj"), "", 0, static_cast<int64_t>(data.size()));
  const int64_t before = client_->store().body_bytes_received();
  std::string got;
  std::string buf(100000, '\0');
  int64_t most_ahead = 0;
  for (;;) {
    auto n = stream.Read(absl::MakeSpan(buf));
    ASSERT_TRUE(n.ok()) << n.status();
    got.append(buf.data(), *n);
    if (*n < buf.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(got.size() < kMiB ? 20 : 0));
    most_ahead = std::max(most_ahead, client_->store().body_bytes_received() - before -
                                          static_cast<int64_t>(got.size()));
  }
  EXPECT_EQ(Md5Hex(got), Md5Hex(data));
  // Paused while the reader slept: what was taken ahead of it is at most
  // the tail of one of curl's pieces (its 512 KiB receive buffer).
  EXPECT_LE(most_ahead, 512 * 1024);
}

}  // namespace
}  // namespace ferry::s3
