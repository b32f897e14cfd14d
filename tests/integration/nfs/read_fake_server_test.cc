// NfsClient::ReadInto against an in-process fake NFSv3 server whose READ
// replies a real server would not send: data in 7-byte fragments, a reply
// that stalls after its header, more data than asked, a record that ends
// inside the data its header announced, a count that disagrees with the
// data. The data is placed from the socket into the caller's buffer
// (RpcReplyPlacer) whenever its header arrives first; each case either
// reads the right bytes or fails DataLoss naming the call, never a short
// or wrong read.
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/xdr.h"
#include "ferry/runtime/runtime.h"
#include "testing/test_tcp_server.h"

namespace ferry::nfs {
namespace {

using ::ferry::testing::Patterned;
using ::ferry::testing::TestTcpServer;
using ::testing::HasSubstr;

// The file the fake serves (handle "f"); READs of it answer as `Shape` says.
constexpr size_t kFileBytes = 300'000;

enum class Shape {
  kInSmallFragments,  // the whole reply in 7-byte record-marking fragments
  kHeaderThenData,    // the header, a pause, then the data
  kMoreThanAsked,     // 16 bytes more data than the READ asked for
  kEndsInsideData,    // announces the data asked, the record holds half
  kCountDisagrees,    // count says one byte fewer than the data's length
};

class FakeReadServer {
 public:
  explicit FakeReadServer(Shape shape)
      : shape_(shape),
        content_(Patterned(kFileBytes, 'q')),
        server_(NewRecordMarkingFraming({}), [this](const TestTcpServer::ConnPtr& conn, std::string record) {
          Answer(conn, record);
        }) {}

  std::string Url() const {
    return absl::StrCat("nfs://127.0.0.1/export?nfsport=", server_.port(), "&mountport=", server_.port());
  }
  const std::string& content() const { return content_; }

 private:
  void Answer(const TestTcpServer::ConnPtr& conn, std::string_view record) {
    absl::StatusOr<RpcCall> call = DecodeCall(record);
    if (!call.ok()) return;
    RpcReply reply;
    reply.xid = call->xid;
    std::string out;
    EncodeReplyHeader(reply, &out);
    XdrEncoder e(&out);
    if (call->prog == kMountProgram) {
      if (call->proc == static_cast<uint32_t>(Mount3Proc::kExport)) {
        e.WriteBool(false);
      } else {
        e.WriteUint32(static_cast<uint32_t>(Mount3Status::kOk));
        e.WriteOpaque("d:root");
        e.WriteUint32(1);
        e.WriteUint32(static_cast<uint32_t>(AuthFlavor::kSys));
      }
      conn->Send(std::move(out));
      return;
    }
    XdrDecoder args(call->args, "args");
    (void)args.ReadOpaque("fh");
    switch (static_cast<Nfs3Proc>(call->proc)) {
      case Nfs3Proc::kGetAttr: {  // the export's root, at connect
        Fattr3 root;
        root.type = FileType::kDirectory;
        root.mode = 0755;
        root.nlink = 1;
        root.fileid = 1;
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
        EncodeFattr3(root, &out);
        break;
      }
      case Nfs3Proc::kFsInfo:
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
        e.WriteBool(false);
        for (uint32_t v : {1u << 20, 1u << 20, 4096u, 1u << 20, 1u << 20, 4096u, 4096u}) e.WriteUint32(v);
        e.WriteUint64(~uint64_t{0});
        e.WriteUint32(0);
        e.WriteUint32(1);
        e.WriteUint32(0x1b);
        break;
      case Nfs3Proc::kRead: {
        const uint64_t offset = args.ReadUint64("offset").value_or(0);
        const uint32_t asked = args.ReadUint32("count").value_or(0);
        AnswerRead(conn, offset, asked, &out);
        return;
      }
      default:
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kNotSupp));
        e.WriteBool(false);
        break;
    }
    conn->Send(std::move(out));
  }

  void AnswerRead(const TestTcpServer::ConnPtr& conn, uint64_t offset, uint32_t asked, std::string* out) {
    std::string data = content_.substr(offset, asked);
    if (shape_ == Shape::kMoreThanAsked) data += std::string(16, 'x');
    XdrEncoder e(out);
    e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
    e.WriteBool(false);  // no post-op attributes
    e.WriteUint32(static_cast<uint32_t>(data.size()) - (shape_ == Shape::kCountDisagrees ? 1 : 0));
    e.WriteBool(offset + data.size() >= content_.size());
    const size_t header = out->size() + 4;  // up to the data's first byte
    e.WriteOpaque(data);
    if (shape_ == Shape::kEndsInsideData) out->resize(header + data.size() / 2);
    std::string wire;
    if (shape_ == Shape::kInSmallFragments) {
      NewRecordMarkingFraming({.max_fragment_size = 7})->Append(*out, &wire);
      conn->SendRaw(std::move(wire));
      return;
    }
    NewRecordMarkingFraming({})->Append(*out, &wire);
    // The header first and the rest after a pause, so that the client
    // places the data rather than reading the record whole.
    conn->SendRaw(wire.substr(0, 4 + header));
    absl::SleepFor(absl::Milliseconds(20));
    conn->SendRaw(wire.substr(4 + header));
  }

  const Shape shape_;
  const std::string content_;
  TestTcpServer server_;  // last: stopped first
};

TEST(NfsReadFakeServerTest, DataInSmallFragmentsIsReadIntact) {
  FakeReadServer fake(Shape::kInSmallFragments);
  Runtime runtime({.io_threads = 2, .blocking_threads = 2});
  auto client = NfsClient::Connect(runtime, fake.Url(), {});
  ASSERT_TRUE(client.ok()) << client.status();
  std::string got(100'000, '?');
  absl::StatusOr<ReadIntoReply> r = (*client)->ReadInto("f", 1000, absl::MakeSpan(got), "f");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count, got.size());
  EXPECT_TRUE(got == fake.content().substr(1000, got.size()));
}

TEST(NfsReadFakeServerTest, DataAfterAPauseIsPlacedIntact) {
  FakeReadServer fake(Shape::kHeaderThenData);
  Runtime runtime({.io_threads = 2, .blocking_threads = 2});
  auto client = NfsClient::Connect(runtime, fake.Url(), {});
  ASSERT_TRUE(client.ok()) << client.status();
  std::string got(kFileBytes, '?');
  absl::StatusOr<ReadIntoReply> r = (*client)->ReadInto("f", 0, absl::MakeSpan(got), "f");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count, kFileBytes);
  EXPECT_TRUE(r->eof);
  EXPECT_TRUE(got == fake.content());
  EXPECT_GE((*client)->metrics().replies_placed, 1u);
}

TEST(NfsReadFakeServerTest, MoreDataThanAskedIsDataLossNamingTheCall) {
  FakeReadServer fake(Shape::kMoreThanAsked);
  Runtime runtime({.io_threads = 2, .blocking_threads = 2});
  auto client = NfsClient::Connect(runtime, fake.Url(), {});
  ASSERT_TRUE(client.ok()) << client.status();
  std::string got(50'000, '?');
  absl::StatusOr<ReadIntoReply> r = (*client)->ReadInto("f", 0, absl::MakeSpan(got), "f");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("NFS3 READ nfs://127.0.0.1/export/f"));
  EXPECT_THAT(r.status().message(), HasSubstr("asked 50000 bytes, got 50016"));
}

TEST(NfsReadFakeServerTest, RecordEndingInsideItsDataIsDataLoss) {
  FakeReadServer fake(Shape::kEndsInsideData);
  Runtime runtime({.io_threads = 2, .blocking_threads = 2});
  NfsClientOptions o;
  o.timeouts.retry_window = absl::ZeroDuration();
  auto client = NfsClient::Connect(runtime, fake.Url(), o);
  ASSERT_TRUE(client.ok()) << client.status();
  std::string got(200'000, '?');
  absl::StatusOr<ReadIntoReply> r = (*client)->ReadInto("f", 0, absl::MakeSpan(got), "f");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("NFS3 READ nfs://127.0.0.1/export/f"));
  EXPECT_THAT(r.status().message(), HasSubstr("into the 200000-byte range"));
}

TEST(NfsReadFakeServerTest, CountDisagreeingWithTheDataIsDataLoss) {
  FakeReadServer fake(Shape::kCountDisagrees);
  Runtime runtime({.io_threads = 2, .blocking_threads = 2});
  auto client = NfsClient::Connect(runtime, fake.Url(), {});
  ASSERT_TRUE(client.ok()) << client.status();
  std::string got(100'000, '?');
  absl::StatusOr<ReadIntoReply> r = (*client)->ReadInto("f", 0, absl::MakeSpan(got), "f");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("count says 99999"));
}

}  // namespace
}  // namespace ferry::nfs
