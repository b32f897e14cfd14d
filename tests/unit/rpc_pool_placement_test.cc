// RpcPool placing a reply's bulk bytes into the caller's buffer
// (RpcCallOptions::placer), against in-process TCP servers on 127.0.0.1.
// Replies are [4-byte id][4-byte big-endian n][n bytes of bulk]["END"];
// the placer puts the bulk in its buffer. The servers send a reply's first
// bytes, wait until the pool has placed it, and then do what each test
// says: the rest, nothing, a short record, or a closed connection.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
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

using ::ferry::testing::OneConnectionPoolOptions;
using ::ferry::testing::Patterned;
using ::ferry::testing::ReadyPool;
using ::ferry::testing::RecordLog;
using ::ferry::testing::TestTcpServer;
using ::ferry::testing::WaitUntil;
using ::testing::HasSubstr;

// The framed reply to `request` carrying `bulk` (announcing `announced`
// bytes of it, by default all).
std::string FramedReply(const std::string& request, const std::string& bulk,
                        std::optional<uint32_t> announced = std::nullopt) {
  char n[4];
  xdr_internal::StoreBigEndian32(announced.value_or(static_cast<uint32_t>(bulk.size())), n);
  std::string out;
  NewLengthPrefixFraming()->Append(absl::StrCat(request.substr(0, 4), absl::string_view(n, 4), bulk, "END"),
                                   &out);
  return out;
}

// A placer into `dest` that counts what it is asked. Thread-safe.
struct Placements {
  explicit Placements(size_t size) : dest(size, '?') {}
  RpcReplyPlacer Placer() {
    return [this](std::string_view prefix) -> RpcPlacement {
      if (prefix.empty()) {
        voids.fetch_add(1);
        return {};
      }
      if (prefix.size() < 8) return {.decision = RpcPlacement::Decision::kAskAgain};
      const uint32_t n = xdr_internal::LoadBigEndian32(prefix.data() + 4);
      if (!place || n > dest.size()) return {};
      placed.fetch_add(1);
      if (file_fd >= 0) {
        return {.decision = RpcPlacement::Decision::kPlace,
                .offset = 8,
                .file = {.fd = file_fd, .offset = file_offset, .size = n}};
      }
      return {.decision = RpcPlacement::Decision::kPlace,
              .offset = 8,
              .dest = absl::MakeSpan(dest).first(n)};
    };
  }
  bool WaitPlaced(int n) {
    return WaitUntil([&] { return placed.load() >= n; }, absl::Seconds(10));
  }
  std::string dest;
  // >= 0: the bulk goes into this file at file_offset instead of `dest`.
  int file_fd = -1;
  int64_t file_offset = 0;
  bool place = true;
  std::atomic<int> placed{0};
  std::atomic<int> voids{0};
};

class RpcPoolPlacementTest : public ::testing::Test {
 protected:
  std::unique_ptr<RpcPool> MakePool(int in_flight = 64) {
    RpcPoolOptions o = OneConnectionPoolOptions(server_.port(), NewLengthPrefixFraming());
    o.max_in_flight_per_connection = in_flight;
    return ReadyPool(rt_, std::move(o));
  }

  // The one request the server has, once it has it.
  RecordLog::Entry TakeRequest() {
    EXPECT_TRUE(log_.WaitForTotal(++requests_));
    std::vector<RecordLog::Entry> entries = log_.Take();
    EXPECT_EQ(entries.size(), 1u);
    return entries.empty() ? RecordLog::Entry{} : entries.front();
  }

  // Sends the first `head` bytes of `reply` and waits until it is placed.
  void SendHeadUntilPlaced(const RecordLog::Entry& e, const std::string& reply, size_t head,
                           Placements& p, int placements = 1) {
    e.conn->SendRaw(reply.substr(0, head));
    ASSERT_TRUE(p.WaitPlaced(placements));
  }

  RecordLog log_;
  TestTcpServer server_{NewLengthPrefixFraming(), log_.Handler()};
  size_t requests_ = 0;
  Runtime rt_;
};

TEST_F(RpcPoolPlacementTest, PlacedBulkLandsInTheCallersBufferAndTheRecordKeepsTheRest) {
  auto pool = MakePool();
  Placements p(1 << 20);
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  const std::string bulk = Patterned(700'000, 'a');
  const std::string reply = FramedReply(e.record, bulk);
  SendHeadUntilPlaced(e, reply, 4 + 8 + 100, p);
  e.conn->SendRaw(reply.substr(4 + 8 + 100));
  absl::StatusOr<std::string> r = std::move(f).Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->substr(8), "END");
  EXPECT_EQ(r->size(), 8u + 3u);
  EXPECT_TRUE(p.dest.substr(0, bulk.size()) == bulk);
  EXPECT_EQ(p.voids.load(), 0);
}

TEST_F(RpcPoolPlacementTest, ReplyThePlacerReadsWholeKeepsItsBulk) {
  auto pool = MakePool();
  Placements p(1 << 20);
  p.place = false;
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  const std::string bulk = Patterned(300'000, 'k');
  const std::string reply = FramedReply(e.record, bulk);
  e.conn->SendRaw(reply.substr(0, 20));
  e.conn->SendRaw(reply.substr(20));
  absl::StatusOr<std::string> r = std::move(f).Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->substr(8, bulk.size()) == bulk);
  EXPECT_EQ(p.dest, std::string(1 << 20, '?'));
}

TEST_F(RpcPoolPlacementTest, ManyPlacedRepliesInOneBurstEachLandInTheirOwnBuffer) {
  auto pool = MakePool(/*in_flight=*/16);
  std::vector<std::unique_ptr<Placements>> ps;
  std::vector<Future<std::string>> fs;
  for (int i = 0; i < 16; ++i) {
    ps.push_back(std::make_unique<Placements>(200'000));
    fs.push_back(pool->Call(std::string(4, '\0'), {.placer = ps.back()->Placer()}));
  }
  ASSERT_TRUE(log_.WaitForTotal(16));
  std::vector<RecordLog::Entry> entries = log_.Take();
  std::string burst;
  for (int i = 15; i >= 0; --i) {  // answered last first, with bulks of different sizes
    burst += FramedReply(entries[i].record, Patterned(10'000 * (i + 1), static_cast<char>('A' + i)));
  }
  entries[0].conn->SendRaw(burst);
  for (int i = 0; i < 16; ++i) {
    absl::StatusOr<std::string> r = std::move(fs[i]).Get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    const std::string bulk = Patterned(10'000 * (i + 1), static_cast<char>('A' + i));
    // Placed (the record lacks the bulk) or read whole (it has it).
    if (r->size() == 8 + 3) {
      EXPECT_TRUE(ps[i]->dest.substr(0, bulk.size()) == bulk) << i;
    } else {
      EXPECT_TRUE(r->substr(8, bulk.size()) == bulk) << i;
    }
  }
}

TEST_F(RpcPoolPlacementTest, CancelWhilePlacingEndsTheCallCancelledAndThePoolGoesOn) {
  auto pool = MakePool();
  Placements p(1 << 20);
  RpcCallId id = 0;
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.placer = p.Placer()}, &id);
  RecordLog::Entry e = TakeRequest();
  SendHeadUntilPlaced(e, FramedReply(e.record, Patterned(500'000, 'c')), 4 + 8 + 1000, p);
  EXPECT_TRUE(pool->Cancel(id));
  EXPECT_EQ(std::move(f).Get().status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(pool->Cancel(id));
  // The connection was replaced; a new call goes through.
  Future<std::string> next = pool->Call(std::string(4, '\0'));
  RecordLog::Entry e2 = TakeRequest();
  e2.conn->Send(e2.record);
  EXPECT_TRUE(std::move(next).Get().ok());
  EXPECT_EQ(pool->metrics().calls_cancelled, 1u);
}

TEST_F(RpcPoolPlacementTest, ReplyStallingWhilePlacedEndsTheCallAtItsDeadlineWithoutAResend) {
  auto pool = MakePool();
  Placements p(1 << 20);
  Future<std::string> f = pool->Call(
      std::string(4, '\0'),
      {.timeout = absl::Milliseconds(300), .idempotent = true, .placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  SendHeadUntilPlaced(e, FramedReply(e.record, Patterned(500'000, 's')), 4 + 8 + 1000, p);
  absl::StatusOr<std::string> r = std::move(f).Get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("its reply was still arriving"));
  EXPECT_EQ(log_.total(), 1u) << "not sent again";
}

TEST_F(RpcPoolPlacementTest, DestroyingThePoolWhilePlacingCancelsTheCall) {
  auto pool = MakePool();
  Placements p(1 << 20);
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  SendHeadUntilPlaced(e, FramedReply(e.record, Patterned(500'000, 'd')), 4 + 8 + 1000, p);
  pool.reset();
  EXPECT_EQ(std::move(f).Get().status().code(), absl::StatusCode::kCancelled);
}

TEST_F(RpcPoolPlacementTest, ConnectionLostWhilePlacingVoidsThePlacementAndTheCallIsSentAgain) {
  auto pool = MakePool();
  Placements p(1 << 20);
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.idempotent = true, .placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  SendHeadUntilPlaced(e, FramedReply(e.record, Patterned(500'000, 'x')), 4 + 8 + 1000, p);
  e.conn->Close();
  RecordLog::Entry again = TakeRequest();
  EXPECT_EQ(p.voids.load(), 1);
  const std::string bulk = Patterned(400'000, 'y');
  const std::string reply = FramedReply(again.record, bulk);
  SendHeadUntilPlaced(again, reply, 4 + 8 + 10, p, /*placements=*/2);
  again.conn->SendRaw(reply.substr(4 + 8 + 10));
  absl::StatusOr<std::string> r = std::move(f).Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), 8u + 3u);
  EXPECT_TRUE(p.dest.substr(0, bulk.size()) == bulk);
}

TEST_F(RpcPoolPlacementTest, RecordEndingInsideItsPlacedRangeDropsTheConnectionWithDataLoss) {
  auto pool = MakePool();
  Placements p(1 << 20);
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.idempotent = true, .placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  // Announces 200,000 bytes of bulk; the record holds 100,000.
  const std::string reply = FramedReply(e.record, Patterned(100'000, 'z'), 200'000);
  SendHeadUntilPlaced(e, reply, 4 + 8 + 10, p);
  e.conn->SendRaw(reply.substr(4 + 8 + 10));
  absl::StatusOr<std::string> r = std::move(f).Get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("into the 200000-byte range"));
}

TEST_F(RpcPoolPlacementTest, BulkPlacedInAFileLandsThereAndTheRecordKeepsTheRest) {
  auto pool = MakePool();
  const int file = ::memfd_create("placed", MFD_CLOEXEC);
  ASSERT_GE(file, 0);
  Placements p(1 << 20);
  p.file_fd = file;
  p.file_offset = 3;
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  const std::string bulk = Patterned(700'000, 'f');
  const std::string reply = FramedReply(e.record, bulk);
  SendHeadUntilPlaced(e, reply, 4 + 8 + 100, p);
  e.conn->SendRaw(reply.substr(4 + 8 + 100));
  absl::StatusOr<std::string> r = std::move(f).Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->substr(8), "END");
  std::string got(bulk.size(), '\0');
  ASSERT_EQ(::pread(file, got.data(), got.size(), 3), static_cast<ssize_t>(got.size()));
  EXPECT_TRUE(got == bulk);
  EXPECT_EQ(pool->metrics().bytes_placed, bulk.size());
  ::close(file);
}

// Sends a reply of `bulk_size` bytes placed in a memfd: its head first,
// the rest once placed; returns the pool's metrics after the call, with
// the file checked to hold the bulk.
RpcPoolMetrics PlaceInMemfdAndCall(RpcPool& pool, RecordLog& log, size_t& requests, size_t bulk_size) {
  const int file = ::memfd_create("placed", MFD_CLOEXEC);
  EXPECT_GE(file, 0);
  Placements p(1 << 20);
  p.file_fd = file;
  Future<std::string> f = pool.Call(std::string(4, '\0'), {.placer = p.Placer()});
  EXPECT_TRUE(log.WaitForTotal(++requests));
  std::vector<RecordLog::Entry> entries = log.Take();
  const std::string bulk = Patterned(bulk_size, 's');
  const std::string reply = FramedReply(entries.at(0).record, bulk);
  entries[0].conn->SendRaw(reply.substr(0, 4 + 8 + 100));
  EXPECT_TRUE(p.WaitPlaced(1));
  entries[0].conn->SendRaw(reply.substr(4 + 8 + 100));
  absl::StatusOr<std::string> r = std::move(f).Get();
  EXPECT_TRUE(r.ok()) << r.status();
  std::string got(bulk.size(), '\0');
  EXPECT_EQ(::pread(file, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()));
  EXPECT_TRUE(got == bulk);
  ::close(file);
  return pool.metrics();
}

TEST_F(RpcPoolPlacementTest, FilePlacementWith64KiBOrMoreToComeIsSplicedFromTheSocket) {
  auto pool = MakePool();
  const RpcPoolMetrics m = PlaceInMemfdAndCall(*pool, log_, requests_, 300'000);
  // All but the 100 bytes that came with the header, and a last piece
  // under 64 KiB that may be read.
  EXPECT_GE(m.bytes_spliced, 300'000u - 100 - 65'535);
  EXPECT_LE(m.bytes_spliced, 300'000u - 100);
}

TEST_F(RpcPoolPlacementTest, ATailReadTakesNoMoreThanTheNextReplysHeaderSoItsBulkIsSpliced) {
  auto pool = MakePool();
  const size_t bulk_size = 300'000;
  const int file1 = ::memfd_create("first", MFD_CLOEXEC), file2 = ::memfd_create("second", MFD_CLOEXEC);
  ASSERT_GE(file1, 0);
  ASSERT_GE(file2, 0);
  Placements p1(1 << 20), p2(1 << 20);
  p1.file_fd = file1;
  p2.file_fd = file2;
  Future<std::string> f1 = pool->Call(std::string(4, '\0'), {.placer = p1.Placer()});
  RecordLog::Entry e1 = TakeRequest();
  Future<std::string> f2 = pool->Call(std::string(4, '\0'), {.placer = p2.Placer()});
  RecordLog::Entry e2 = TakeRequest();
  const std::string bulk1 = Patterned(bulk_size, '1'), bulk2 = Patterned(bulk_size, '2');
  const std::string reply1 = FramedReply(e1.record, bulk1), reply2 = FramedReply(e2.record, bulk2);
  SendHeadUntilPlaced(e1, reply1, 4 + 8 + 100, p1);
  // The first reply but its last 1,000 bytes and trailer: spliced until
  // under 64 KiB are left, which are then read.
  const size_t held_back = 1'000 + 3;
  e1.conn->SendRaw(reply1.substr(4 + 8 + 100, reply1.size() - held_back - (4 + 8 + 100)));
  ASSERT_TRUE(WaitUntil([&] { return pool->metrics().bytes_spliced >= bulk_size - 100 - 65'535; },
                        absl::Seconds(10)));
  // Its tail with the whole second reply behind it.
  e1.conn->SendRaw(reply1.substr(reply1.size() - held_back) + reply2);
  absl::StatusOr<std::string> r1 = std::move(f1).Get(), r2 = std::move(f2).Get();
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE(r2.ok()) << r2.status();
  std::string got1(bulk_size, '\0'), got2(bulk_size, '\0');
  ASSERT_EQ(::pread(file1, got1.data(), got1.size(), 0), static_cast<ssize_t>(bulk_size));
  ASSERT_EQ(::pread(file2, got2.data(), got2.size(), 0), static_cast<ssize_t>(bulk_size));
  EXPECT_TRUE(got1 == bulk1);
  EXPECT_TRUE(got2 == bulk2);
  // The second reply's bulk read with the first's tail is at most what a
  // 512-byte read holds beyond that tail; the rest of it is spliced.
  EXPECT_GE(pool->metrics().bytes_spliced, (bulk_size - 100 - 65'535) + (bulk_size - 500 - 65'535));
  ::close(file1);
  ::close(file2);
}

TEST_F(RpcPoolPlacementTest, FilePlacementWithLessThan64KiBToComeIsReadNotSpliced) {
  auto pool = MakePool();
  const RpcPoolMetrics m = PlaceInMemfdAndCall(*pool, log_, requests_, 60'000);
  EXPECT_EQ(m.bytes_placed, 60'000u);
  EXPECT_EQ(m.bytes_spliced, 0u);
}

TEST_F(RpcPoolPlacementTest, FileThatRefusesTheBulkEndsTheCallWithWhyAndTheConnectionGoesOn) {
  auto pool = MakePool();
  const int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(read_only, 0);
  Placements p(1 << 20);
  p.file_fd = read_only;
  Future<std::string> f = pool->Call(std::string(4, '\0'), {.idempotent = true, .placer = p.Placer()});
  RecordLog::Entry e = TakeRequest();
  const std::string reply = FramedReply(e.record, Patterned(300'000, 'r'));
  SendHeadUntilPlaced(e, reply, 4 + 8 + 10, p);
  e.conn->SendRaw(reply.substr(4 + 8 + 10));
  absl::StatusOr<std::string> r = std::move(f).Get();
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("writing the reply's data into a local file: write at 0 of descriptor"));
  EXPECT_THAT(r.status().message(), HasSubstr("rpc to 127.0.0.1:"));
  EXPECT_NE(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(p.placed.load(), 1) << "not sent again";
  ::close(read_only);

  // The same connection answers the next call.
  Future<std::string> next = pool->Call(std::string(4, '\0'));
  RecordLog::Entry e2 = TakeRequest();
  EXPECT_EQ(e2.conn, e.conn);
  e2.conn->SendRaw(FramedReply(e2.record, "ok"));
  absl::StatusOr<std::string> r2 = std::move(next).Get();
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->substr(8, 2), "ok");
}

}  // namespace
}  // namespace ferry
