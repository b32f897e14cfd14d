// RpcPool sending a request's payload from a file (RpcCallOptions::
// payload_file, by sendfile), against TCP servers on 127.0.0.1: the record
// on the wire holds the file's range at its offset, calls around it keep
// their order, a resend reads the file again, and a file that ends before
// its range (or cannot be read) fails its call, not sent again, while its
// connection goes on (zeros complete the record).
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/scratch_dir.h"
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

class RpcPoolFilePayloadTest : public ::testing::Test {
 protected:
  std::unique_ptr<RpcPool> MakePool(uint16_t port, std::shared_ptr<const Framing> framing) {
    return ReadyPool(rt_, OneConnectionPoolOptions(port, std::move(framing)));
  }
  // A call "HEAD" + the file's [offset, offset + size) + "|TAIL" (after the
  // 4-byte id).
  static RpcCallOptions FromFile(const testing::OpenTempFile& f, int64_t offset, size_t size,
                                 bool idempotent = false) {
    return {.idempotent = idempotent,
            .payload_at = 8,
            .payload_file = {.fd = f.fd(), .offset = offset, .size = size}};
  }
  static std::string Request() { return absl::StrCat(std::string(4, '\0'), "HEAD|TAIL"); }
  Runtime rt_;
};

TEST_F(RpcPoolFilePayloadTest, TheFilesRangeGoesOutInsideTheRecordAtItsOffset) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  const std::string bytes = Patterned(3 << 20, 'f');  // more than the socket buffers hold
  testing::OpenTempFile file(bytes);
  absl::StatusOr<std::string> r = pool->CallBlocking(Request(), FromFile(file, 1000, bytes.size() - 2000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->substr(4) == absl::StrCat("HEAD", bytes.substr(1000, bytes.size() - 2000), "|TAIL"));
}

TEST_F(RpcPoolFilePayloadTest, RecordMarkingFramesTheRecordAsOneFragment) {
  // NFS's framing: fragments of up to 4 MiB, a 1 MiB WRITE in one.
  auto framing = std::shared_ptr<const Framing>(NewRecordMarkingFraming({.max_fragment_size = 4 << 20}));
  TestTcpServer server(framing, Echo());
  auto pool = MakePool(server.port(), framing);
  const std::string bytes = Patterned(1 << 20, 'r');
  testing::OpenTempFile file(bytes);
  absl::StatusOr<std::string> r = pool->CallBlocking(Request(), FromFile(file, 0, bytes.size()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->substr(4) == absl::StrCat("HEAD", bytes, "|TAIL"));
}

TEST_F(RpcPoolFilePayloadTest, CallsAroundFilePayloadsKeepTheirBytes) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  const std::string bytes = Patterned(1 << 20, 'm');
  testing::OpenTempFile file(bytes);
  std::vector<Future<std::string>> calls;
  std::vector<std::string> expected;
  for (int i = 0; i < 24; ++i) {
    const size_t offset = static_cast<size_t>(i) * 4096;
    if (i % 3 == 0) {
      calls.push_back(pool->Call(Request(), FromFile(file, static_cast<int64_t>(offset), 65536)));
      expected.push_back(absl::StrCat("HEAD", bytes.substr(offset, 65536), "|TAIL"));
    } else {
      calls.push_back(pool->Call(absl::StrCat(std::string(4, '\0'), "small ", i)));
      expected.push_back(absl::StrCat("small ", i));
    }
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    absl::StatusOr<std::string> r = std::move(calls[i]).Get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_TRUE(r->substr(4) == expected[i]) << i;
  }
}

TEST_F(RpcPoolFilePayloadTest, AnIdempotentCallResentAfterALostConnectionReadsTheFileAgain) {
  TestTcpServer server(NewLengthPrefixFraming(), LoseTheFirstThenEcho());
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  const std::string bytes = Patterned(200'000, 'i');
  testing::OpenTempFile file(bytes);
  absl::StatusOr<std::string> r =
      pool->CallBlocking(Request(), FromFile(file, 0, bytes.size(), /*idempotent=*/true));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->substr(4) == absl::StrCat("HEAD", bytes, "|TAIL"));
  EXPECT_EQ(pool->metrics().retries, 1u);
}

TEST_F(RpcPoolFilePayloadTest, AFileThatEndsBeforeItsRangeFailsTheCallWhichIsNotSentAgain) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  testing::OpenTempFile file(std::string(100, 'e'));
  absl::StatusOr<std::string> r = pool->CallBlocking(Request(), FromFile(file, 0, 1000, /*idempotent=*/true));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("ended after 100 of 1000 bytes"));
  EXPECT_EQ(pool->metrics().retries, 0u);
  // Zeros completed the record: the same connection carries the next call.
  absl::StatusOr<std::string> after = pool->CallBlocking(absl::StrCat(std::string(4, '\0'), "after"));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->substr(4), "after");
  EXPECT_EQ(pool->metrics().connection_failures, 0u);
}

TEST_F(RpcPoolFilePayloadTest, AFileSendfileCannotReadFailsTheCallUnimplementedAndTheConnectionGoesOn) {
  TestTcpServer server(NewLengthPrefixFraming(), Echo());
  auto pool = MakePool(server.port(), NewLengthPrefixFraming());
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);  // a pipe: no page cache for sendfile to read
  absl::StatusOr<std::string> r = pool->CallBlocking(
      Request(), {.payload_at = 8, .payload_file = {.fd = pipe_fds[0], .offset = 0, .size = 100}});
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
  absl::StatusOr<std::string> after = pool->CallBlocking(absl::StrCat(std::string(4, '\0'), "after"));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(pool->metrics().connection_failures, 0u);
}

TEST_F(RpcPoolFilePayloadTest, AFilePayloadTheFramingCannotPutBeforeTheRecordIsInvalidArgument) {
  auto framing = std::shared_ptr<const Framing>(NewRecordMarkingFraming({.max_fragment_size = 1024}));
  TestTcpServer server(framing, Echo());
  auto pool = MakePool(server.port(), framing);
  testing::OpenTempFile file(std::string(4096, 'x'));
  absl::StatusOr<std::string> r = pool->CallBlocking(Request(), FromFile(file, 0, 4096));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  RpcCallOptions both = FromFile(file, 0, 10);
  both.payload = "memory too";
  EXPECT_EQ(pool->CallBlocking(Request(), both).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry
