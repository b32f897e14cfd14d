// NfsClient::ReadInto against an in-process fake NFSv3 server whose READ
// replies a real server would not send: data in 7-byte fragments, a reply
// that stalls after its header, more data than asked, a record that ends
// inside the data its header announced, a count that disagrees with the
// data. The data is placed from the socket into the caller's buffer
// (RpcReplyPlacer) whenever its header arrives first; each case either
// reads the right bytes or fails DataLoss naming the call, never a short
// or wrong read. ReadIntoFileAsync is held to the same, into a file.
#include <sys/mman.h>
#include <unistd.h>

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
#include "fake_nfs_answers.h"
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
    std::string out = fake_nfs::SuccessHeader(call->xid);
    if (call->prog == kMountProgram) {
      fake_nfs::AppendMountResults(*call, &out);
      conn->Send(std::move(out));
      return;
    }
    XdrDecoder args(call->args, "args");
    (void)args.ReadOpaque("fh");
    switch (static_cast<Nfs3Proc>(call->proc)) {
      case Nfs3Proc::kGetAttr:  // the export's root, at connect
        fake_nfs::AppendDirectoryGetAttrResults(1, &out);
        break;
      case Nfs3Proc::kFsInfo:
        fake_nfs::AppendFsInfoResults(&out);
        break;
      case Nfs3Proc::kRead: {
        const uint64_t offset = args.ReadUint64("offset").value_or(0);
        const uint32_t asked = args.ReadUint32("count").value_or(0);
        AnswerRead(conn, offset, asked, &out);
        return;
      }
      default: {
        XdrEncoder e(&out);
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kNotSupp));
        e.WriteBool(false);
        break;
      }
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

// What one ReadInto from a fake got.
struct ReadOutcome {
  absl::StatusOr<ReadIntoReply> reply;
  std::string got;      // the caller's buffer afterwards
  std::string content;  // the fake's file
  uint64_t replies_placed = 0;
};

class NfsReadFakeServerTest : public ::testing::Test {
 protected:
  // ReadInto of `n` bytes at `offset` of a fake answering as `shape` says,
  // through a client of its own (no retries of failed calls).
  ReadOutcome Read(Shape shape, uint64_t offset, size_t n) {
    FakeReadServer fake(shape);
    ReadOutcome out{.reply = absl::UnknownError("not read"), .content = fake.content()};
    NfsClientOptions o;
    o.timeouts.retry_window = absl::ZeroDuration();
    absl::StatusOr<std::unique_ptr<NfsClient>> client = NfsClient::Connect(runtime_, fake.Url(), o);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return out;
    if (into_file_) {
      // ReadIntoFileAsync into a file in memory, read back after.
      const int fd = ::memfd_create("read", MFD_CLOEXEC);
      out.reply = BlockOn<ReadIntoReply>([&](Callback<ReadIntoReply> done) {
        (*client)->ReadIntoFileAsync(FileHandle("f"), offset, {.fd = fd, .offset = 0, .size = n},
                                     "f", std::move(done));
      });
      out.got.assign(n, '?');
      const ssize_t got = ::pread(fd, out.got.data(), n, 0);
      out.got.resize(got < 0 ? 0 : static_cast<size_t>(got));
      ::close(fd);
    } else {
      out.got.assign(n, '?');
      out.reply = (*client)->ReadInto("f", offset, absl::MakeSpan(out.got), "f");
    }
    out.replies_placed = (*client)->metrics().replies_placed;
    return out;
  }
  // Read into a file (ReadIntoFileAsync) instead of a buffer.
  bool into_file_ = false;
  Runtime runtime_{{.io_threads = 2, .blocking_threads = 2}};
};

TEST_F(NfsReadFakeServerTest, DataInSmallFragmentsIsReadIntact) {
  ReadOutcome r = Read(Shape::kInSmallFragments, 1000, 100'000);
  ASSERT_TRUE(r.reply.ok()) << r.reply.status();
  EXPECT_EQ(r.reply->count, r.got.size());
  EXPECT_TRUE(r.got == r.content.substr(1000, r.got.size()));
}

TEST_F(NfsReadFakeServerTest, DataAfterAPauseIsPlacedIntact) {
  ReadOutcome r = Read(Shape::kHeaderThenData, 0, kFileBytes);
  ASSERT_TRUE(r.reply.ok()) << r.reply.status();
  EXPECT_EQ(r.reply->count, kFileBytes);
  EXPECT_TRUE(r.reply->eof);
  EXPECT_TRUE(r.got == r.content);
  EXPECT_GE(r.replies_placed, 1u);
}

TEST_F(NfsReadFakeServerTest, MoreDataThanAskedIsDataLossNamingTheCall) {
  ReadOutcome r = Read(Shape::kMoreThanAsked, 0, 50'000);
  EXPECT_EQ(r.reply.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.reply.status().message(), HasSubstr("NFS3 READ nfs://127.0.0.1/export/f"));
  EXPECT_THAT(r.reply.status().message(), HasSubstr("asked 50000 bytes, got 50016"));
}

TEST_F(NfsReadFakeServerTest, RecordEndingInsideItsDataIsDataLoss) {
  ReadOutcome r = Read(Shape::kEndsInsideData, 0, 200'000);
  EXPECT_EQ(r.reply.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.reply.status().message(), HasSubstr("NFS3 READ nfs://127.0.0.1/export/f"));
  EXPECT_THAT(r.reply.status().message(), HasSubstr("into the 200000-byte range"));
}

TEST_F(NfsReadFakeServerTest, CountDisagreeingWithTheDataIsDataLoss) {
  ReadOutcome r = Read(Shape::kCountDisagrees, 0, 100'000);
  EXPECT_EQ(r.reply.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.reply.status().message(), HasSubstr("count says 99999"));
}

TEST_F(NfsReadFakeServerTest, DataInSmallFragmentsIsWrittenIntactIntoAFile) {
  into_file_ = true;
  ReadOutcome r = Read(Shape::kInSmallFragments, 1000, 100'000);
  ASSERT_TRUE(r.reply.ok()) << r.reply.status();
  EXPECT_EQ(r.reply->count, 100'000u);
  EXPECT_TRUE(r.got == r.content.substr(1000, 100'000));
}

TEST_F(NfsReadFakeServerTest, DataAfterAPauseIsSplicedIntactIntoAFile) {
  into_file_ = true;
  ReadOutcome r = Read(Shape::kHeaderThenData, 0, kFileBytes);
  ASSERT_TRUE(r.reply.ok()) << r.reply.status();
  EXPECT_EQ(r.reply->count, kFileBytes);
  EXPECT_TRUE(r.reply->eof);
  EXPECT_TRUE(r.got == r.content);
  EXPECT_GE(r.replies_placed, 1u);
}

TEST_F(NfsReadFakeServerTest, MoreDataThanAskedIntoAFileIsDataLossNamingTheCall) {
  into_file_ = true;
  ReadOutcome r = Read(Shape::kMoreThanAsked, 0, 50'000);
  EXPECT_EQ(r.reply.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.reply.status().message(), HasSubstr("asked 50000 bytes, got 50016"));
}

TEST_F(NfsReadFakeServerTest, RecordEndingInsideItsDataIntoAFileIsDataLoss) {
  into_file_ = true;
  ReadOutcome r = Read(Shape::kEndsInsideData, 0, 200'000);
  EXPECT_EQ(r.reply.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.reply.status().message(), HasSubstr("into the 200000-byte range"));
}

}  // namespace
}  // namespace ferry::nfs
