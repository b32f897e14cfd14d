#include "ferry/io/fd_table.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ferry/base/mutex.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "unit/notification.h"

namespace ferry {
namespace {

using ::ferry::testing::Notification;
using ::testing::HasSubstr;

// Holds callers of Wait() until Open(); AwaitEntered() returns once one is
// held. Thread-safe.
class Gate {
 public:
  void Wait() {
    entered_.Notify();
    open_.Wait();
  }
  void Open() { open_.Notify(); }
  void AwaitEntered() { entered_.Wait(); }

 private:
  Notification entered_;
  Notification open_;
};

// An object held in a std::string, with knobs for the cases the tests need.
// Thread-safe.
class StringHandle {
 public:
  explicit StringHandle(std::string bytes = "") : bytes_(std::move(bytes)) {}

  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) {
    if (read_gate != nullptr) read_gate->Wait();
    MutexLock l(&mu_);
    if (!read_error.ok()) return read_error;
    if (over_report) return buf.size() + 1;
    size_t n = 0;
    if (offset < static_cast<int64_t>(bytes_.size())) {
      n = std::min(buf.size(), bytes_.size() - static_cast<size_t>(offset));
      std::memcpy(buf.data(), bytes_.data() + offset, n);
    }
    reads_.push_back({offset, n});
    return n;
  }

  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) {
    MutexLock l(&mu_);
    const size_t n = std::min(data.size(), max_write);
    const size_t end = static_cast<size_t>(offset) + n;
    if (bytes_.size() < end) bytes_.resize(end, '\0');  // a hole reads as zeros
    std::memcpy(bytes_.data() + offset, data.data(), n);
    return n;
  }

  absl::StatusOr<int64_t> Size() {
    MutexLock l(&mu_);
    return static_cast<int64_t>(bytes_.size());
  }

  std::string bytes() {
    MutexLock l(&mu_);
    return bytes_;
  }
  // Every successful ReadAt, as (offset, bytes).
  std::vector<std::pair<int64_t, size_t>> reads() {
    MutexLock l(&mu_);
    return reads_;
  }

  // Knobs, set before the handle is shared.
  Gate* read_gate = nullptr;         // ReadAt waits here first
  absl::Status read_error;           // ReadAt fails with this
  bool over_report = false;          // ReadAt claims one byte more than asked
  size_t max_write = SIZE_MAX;       // WriteAt takes at most this many bytes

 private:
  Mutex mu_;
  std::string bytes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<int64_t, size_t>> reads_ ABSL_GUARDED_BY(mu_);
};

static_assert(FdHandle<StringHandle>);

using Table = FdTable<StringHandle>;

int OpenFd(Table& table, std::string key, std::shared_ptr<StringHandle> h, OpenMode mode) {
  absl::StatusOr<Table::OpenResult> r = table.Open(std::move(key), std::move(h), mode);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->fd : -1;
}

std::string ReadString(Table& table, int fd, size_t n) {
  std::string s(n, '\0');
  absl::StatusOr<size_t> got = table.Read(fd, absl::MakeSpan(s));
  EXPECT_TRUE(got.ok()) << got.status();
  s.resize(got.ok() ? *got : 0);
  return s;
}

int64_t Tell(Table& table, int fd) { return *table.Lseek(fd, 0, SEEK_CUR); }

// Expects a read at `fd`'s offset, which is `offset`, to return nothing and
// leave the offset where it was: what a descriptor at or past the end does.
void ExpectReadsNothingAt(Table& table, int fd, int64_t offset) {
  EXPECT_EQ(Tell(table, fd), offset);
  EXPECT_EQ(ReadString(table, fd, 10), "");
  EXPECT_EQ(Tell(table, fd), offset);
}

// Runs fn(0..n-1) on n threads of `rt`'s blocking pool and waits for all.
template <typename Fn>
void RunConcurrently(Runtime& rt, int n, Fn fn) {
  std::vector<Future<bool>> done;
  for (int i = 0; i < n; ++i) {
    Promise<bool> p;
    done.push_back(p.GetFuture());
    rt.PostBlocking([i, &fn, p = std::move(p)]() mutable {
      fn(i);
      p.Set(true);
    });
  }
  for (auto& f : done) ASSERT_TRUE(std::move(f).Get().ok());
}

void ExpectNotOpen(const absl::Status& s, int fd) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("fd " + std::to_string(fd) + " is not open"));
}

// --- Numbering ----------------------------------------------------------

TEST(FdTableTest, DescriptorsStartAtThree) {
  Table table;
  auto h = std::make_shared<StringHandle>();
  EXPECT_EQ(OpenFd(table, "a", h, OpenMode::kRead), 3);
  EXPECT_EQ(OpenFd(table, "b", h, OpenMode::kRead), 4);
  EXPECT_EQ(table.size(), 2);
}

TEST(FdTableTest, ClosedDescriptorsAreNotHandedOutAgainBeforeWrapAround) {
  Table table;
  auto h = std::make_shared<StringHandle>();
  const int first = OpenFd(table, "a", h, OpenMode::kRead);
  ASSERT_TRUE(table.Close(first).ok());
  EXPECT_NE(OpenFd(table, "a", h, OpenMode::kRead), first);
}

TEST(FdTableTest, WrapAroundSkipsDescriptorsStillOpen) {
  Table table({.max_descriptor = 5});  // descriptors 3, 4, 5
  auto h = std::make_shared<StringHandle>();
  EXPECT_EQ(OpenFd(table, "a", h, OpenMode::kRead), 3);
  EXPECT_EQ(OpenFd(table, "a", h, OpenMode::kRead), 4);
  EXPECT_EQ(OpenFd(table, "a", h, OpenMode::kRead), 5);
  ASSERT_TRUE(table.Close(4).ok());
  EXPECT_EQ(OpenFd(table, "a", h, OpenMode::kRead), 4);  // 3 is open: skipped
}

TEST(FdTableTest, OpenFailsWhenEveryDescriptorIsInUse) {
  Table table({.max_descriptor = 4});
  auto h = std::make_shared<StringHandle>();
  OpenFd(table, "a", h, OpenMode::kRead);
  OpenFd(table, "a", h, OpenMode::kRead);
  absl::StatusOr<Table::OpenResult> r = table.Open("a", h, OpenMode::kRead);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(table.CountsFor("a").opens, 2);
}

TEST(FdTableTest, OpenRejectsANullHandle) {
  Table table;
  EXPECT_EQ(table.Open("a", nullptr, OpenMode::kRead).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table.size(), 0);
}

// --- Offsets ------------------------------------------------------------

TEST(FdTableTest, ReadAdvancesTheOffsetByTheBytesRead) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("hello world"), OpenMode::kRead);
  EXPECT_EQ(ReadString(table, fd, 5), "hello");
  EXPECT_EQ(ReadString(table, fd, 3), " wo");
  EXPECT_EQ(Tell(table, fd), 8);
}

TEST(FdTableTest, ShortReadMeansEndOfObjectAndThenReadsReturnZero) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("hello"), OpenMode::kRead);
  EXPECT_EQ(ReadString(table, fd, 100), "hello");
  ExpectReadsNothingAt(table, fd, 5);
}

TEST(FdTableTest, EachDescriptorOfOneObjectHasItsOwnOffset) {
  Table table;
  auto h = std::make_shared<StringHandle>("abcdef");
  const int a = OpenFd(table, "k", h, OpenMode::kRead);
  const int b = OpenFd(table, "k", h, OpenMode::kRead);
  EXPECT_EQ(ReadString(table, a, 4), "abcd");
  EXPECT_EQ(ReadString(table, b, 2), "ab");
}

TEST(FdTableTest, WriteAdvancesTheOffsetByTheBytesWritten) {
  Table table;
  auto h = std::make_shared<StringHandle>();
  const int fd = OpenFd(table, "a", h, OpenMode::kWrite);
  EXPECT_EQ(*table.Write(fd, std::string_view("hello ")), 6u);
  EXPECT_EQ(*table.Write(fd, std::string_view("world")), 5u);
  EXPECT_EQ(Tell(table, fd), 11);
  EXPECT_EQ(h->bytes(), "hello world");
}

TEST(FdTableTest, ShortWriteAdvancesOnlyByWhatTheHandleTook) {
  Table table;
  auto h = std::make_shared<StringHandle>();
  h->max_write = 3;
  const int fd = OpenFd(table, "a", h, OpenMode::kWrite);
  EXPECT_EQ(*table.Write(fd, std::string_view("hello")), 3u);
  EXPECT_EQ(Tell(table, fd), 3);
}

TEST(FdTableTest, PReadNeitherUsesNorMovesTheOffset) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("hello world"), OpenMode::kRead);
  ASSERT_TRUE(table.Lseek(fd, 2, SEEK_SET).ok());
  std::string buf(5, '\0');
  EXPECT_EQ(*table.PRead(fd, 6, absl::MakeSpan(buf)), 5u);
  EXPECT_EQ(buf, "world");
  EXPECT_EQ(Tell(table, fd), 2);
}

TEST(FdTableTest, PWriteNeitherUsesNorMovesTheOffset) {
  Table table;
  auto h = std::make_shared<StringHandle>("hello world");
  const int fd = OpenFd(table, "a", h, OpenMode::kReadWrite);
  EXPECT_EQ(*table.PWrite(fd, 6, std::string_view("WORLD")), 5u);
  EXPECT_EQ(Tell(table, fd), 0);
  EXPECT_EQ(h->bytes(), "hello WORLD");
}

TEST(FdTableTest, PositionalCallsRejectANegativeOffset) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("x"), OpenMode::kReadWrite);
  std::string buf(1, '\0');
  absl::Status r = table.PRead(fd, -1, absl::MakeSpan(buf)).status();
  EXPECT_EQ(r.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.message()), HasSubstr("fd " + std::to_string(fd)));
  EXPECT_EQ(table.PWrite(fd, -1, std::string_view("y")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FdTableTest, LseekSetCurAndEnd) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("0123456789"), OpenMode::kRead);
  EXPECT_EQ(*table.Lseek(fd, 4, SEEK_SET), 4);
  EXPECT_EQ(*table.Lseek(fd, 2, SEEK_CUR), 6);
  EXPECT_EQ(*table.Lseek(fd, -1, SEEK_CUR), 5);
  EXPECT_EQ(*table.Lseek(fd, -3, SEEK_END), 7);
  EXPECT_EQ(ReadString(table, fd, 10), "789");
}

TEST(FdTableTest, LseekEndAsksTheHandleForItsCurrentSize) {
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  const int reader = OpenFd(table, "a", h, OpenMode::kRead);
  const int writer = OpenFd(table, "a", h, OpenMode::kWrite);
  ASSERT_TRUE(table.PWrite(writer, 3, std::string_view("defg")).ok());
  EXPECT_EQ(*table.Lseek(reader, 0, SEEK_END), 7);
}

TEST(FdTableTest, LseekPastTheEndIsAllowedAndReadsThereReturnZero) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("abc"), OpenMode::kRead);
  EXPECT_EQ(*table.Lseek(fd, 100, SEEK_SET), 100);
  ExpectReadsNothingAt(table, fd, 100);
}

TEST(FdTableTest, WritePastTheEndLeavesAHoleForTheHandleToFill) {
  Table table;
  auto h = std::make_shared<StringHandle>("ab");
  const int fd = OpenFd(table, "a", h, OpenMode::kWrite);
  ASSERT_TRUE(table.Lseek(fd, 2, SEEK_END).ok());
  ASSERT_TRUE(table.Write(fd, std::string_view("z")).ok());
  EXPECT_EQ(h->bytes(), std::string("ab\0\0z", 5));
}

TEST(FdTableTest, LseekToANegativePositionFailsAndKeepsTheOffset) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("abc"), OpenMode::kRead);
  ASSERT_TRUE(table.Lseek(fd, 2, SEEK_SET).ok());
  for (auto [offset, whence] : {std::pair{-1, SEEK_SET}, {-3, SEEK_CUR}, {-4, SEEK_END}}) {
    absl::Status s = table.Lseek(fd, offset, whence).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << whence;
    EXPECT_THAT(std::string(s.message()), HasSubstr("fd " + std::to_string(fd)));
  }
  EXPECT_EQ(Tell(table, fd), 2);
}

TEST(FdTableTest, LseekRejectsAnOverflowingPosition) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("abc"), OpenMode::kRead);
  ASSERT_TRUE(table.Lseek(fd, std::numeric_limits<int64_t>::max(), SEEK_SET).ok());
  EXPECT_EQ(table.Lseek(fd, 1, SEEK_CUR).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FdTableTest, LseekRejectsAnUnknownWhence) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("abc"), OpenMode::kRead);
  EXPECT_EQ(table.Lseek(fd, 0, 42).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Modes and bad descriptors --------------------------------------------

TEST(FdTableTest, WritesOnAReadOnlyDescriptorFailNamingIt) {
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  const int fd = OpenFd(table, "obj", h, OpenMode::kRead);
  for (const absl::Status& s : {table.Write(fd, std::string_view("x")).status(),
                                table.PWrite(fd, 0, std::string_view("x")).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("fd " + std::to_string(fd)));
    EXPECT_THAT(std::string(s.message()), HasSubstr("read-only"));
  }
  EXPECT_EQ(h->bytes(), "abc");
}

TEST(FdTableTest, ReadsOnAWriteOnlyDescriptorFailNamingIt) {
  Table table;
  const int fd = OpenFd(table, "obj", std::make_shared<StringHandle>("abc"), OpenMode::kWrite);
  std::string buf(2, '\0');
  for (const absl::Status& s : {table.Read(fd, absl::MakeSpan(buf)).status(),
                                table.PRead(fd, 0, absl::MakeSpan(buf)).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("fd " + std::to_string(fd)));
    EXPECT_THAT(std::string(s.message()), HasSubstr("write-only"));
  }
  EXPECT_EQ(Tell(table, fd), 0);
}

TEST(FdTableTest, EveryCallOnAnUnknownDescriptorFailsNamingIt) {
  Table table;
  std::string buf(2, '\0');
  ExpectNotOpen(table.Read(7, absl::MakeSpan(buf)).status(), 7);
  ExpectNotOpen(table.Write(7, std::string_view("x")).status(), 7);
  ExpectNotOpen(table.PRead(7, 0, absl::MakeSpan(buf)).status(), 7);
  ExpectNotOpen(table.PWrite(7, 0, std::string_view("x")).status(), 7);
  ExpectNotOpen(table.Lseek(7, 0, SEEK_SET).status(), 7);
  ExpectNotOpen(table.Close(7).status(), 7);
}

TEST(FdTableTest, EveryCallOnAClosedDescriptorFails) {
  Table table;
  const int fd = OpenFd(table, "a", std::make_shared<StringHandle>("abc"), OpenMode::kReadWrite);
  ASSERT_TRUE(table.Close(fd).ok());
  std::string buf(2, '\0');
  ExpectNotOpen(table.Read(fd, absl::MakeSpan(buf)).status(), fd);
  ExpectNotOpen(table.Write(fd, std::string_view("x")).status(), fd);
  ExpectNotOpen(table.PRead(fd, 0, absl::MakeSpan(buf)).status(), fd);
  ExpectNotOpen(table.PWrite(fd, 0, std::string_view("x")).status(), fd);
  ExpectNotOpen(table.Lseek(fd, 0, SEEK_SET).status(), fd);
  ExpectNotOpen(table.Close(fd).status(), fd);
}

TEST(FdTableTest, AHandleErrorKeepsItsCodeGainsContextAndLeavesTheOffset) {
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  h->read_error = absl::UnavailableError("connection reset");
  const int fd = OpenFd(table, "bucket/key", h, OpenMode::kRead);
  std::string buf(2, '\0');
  absl::Status s = table.Read(fd, absl::MakeSpan(buf)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("fd " + std::to_string(fd)));
  EXPECT_THAT(std::string(s.message()), HasSubstr("bucket/key"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("connection reset"));
  EXPECT_EQ(Tell(table, fd), 0);
}

TEST(FdTableTest, AHandleClaimingMoreBytesThanAskedIsDataLoss) {
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  h->over_report = true;
  const int fd = OpenFd(table, "a", h, OpenMode::kRead);
  std::string buf(2, '\0');
  EXPECT_EQ(table.Read(fd, absl::MakeSpan(buf)).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Tell(table, fd), 0);
}

TEST(FdTableTest, EmptyTransfersSucceedWithoutCallingTheHandle) {
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  h->read_error = absl::UnavailableError("must not be called");
  const int fd = OpenFd(table, "a", h, OpenMode::kRead);
  EXPECT_EQ(*table.Read(fd, absl::Span<char>()), 0u);
}

// --- Open counts ----------------------------------------------------------

TEST(FdTableTest, OpenReportsTheObjectsCountsIncludingThisOpen) {
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  auto first = *table.Open("k", h, OpenMode::kRead);
  EXPECT_EQ(first.opens, 1);
  EXPECT_EQ(first.readers, 1);
  EXPECT_EQ(first.writers, 0);
  auto writer = *table.Open("k", h, OpenMode::kWrite);
  EXPECT_EQ(writer.opens, 2);
  EXPECT_EQ(writer.readers, 1);
  EXPECT_EQ(writer.writers, 1);
  auto second_reader = *table.Open("k", h, OpenMode::kReadWrite);
  EXPECT_EQ(second_reader.opens, 3);
  EXPECT_EQ(second_reader.readers, 2);  // "a second concurrent reader appeared"
  EXPECT_EQ(second_reader.writers, 2);
}

TEST(FdTableTest, CountsAreKeptPerObjectKey) {
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  OpenFd(table, "a", h, OpenMode::kRead);
  EXPECT_EQ(table.Open("b", h, OpenMode::kRead)->opens, 1);
  EXPECT_EQ(table.CountsFor("a").opens, 1);
  EXPECT_EQ(table.CountsFor("c").opens, 0);
}

TEST(FdTableTest, CloseReportsTheLastCloseAndHandsBackTheHandle) {
  Table table;
  auto h = std::make_shared<StringHandle>();
  const int a = OpenFd(table, "upload", h, OpenMode::kWrite);
  const int b = OpenFd(table, "upload", h, OpenMode::kWrite);
  auto first = *table.Close(a);
  EXPECT_FALSE(first.last_close);
  EXPECT_EQ(first.opens, 1);
  EXPECT_EQ(first.writers, 1);
  auto last = *table.Close(b);
  EXPECT_TRUE(last.last_close);
  EXPECT_EQ(last.opens, 0);
  EXPECT_EQ(last.handle, h);
  EXPECT_EQ(last.object_key, "upload");
  EXPECT_EQ(table.size(), 0);
}

TEST(FdTableTest, TheTableLetsGoOfAHandleOnceItsDescriptorIsClosed) {
  Table table;
  auto h = std::make_shared<StringHandle>();
  const int fd = OpenFd(table, "a", h, OpenMode::kRead);
  EXPECT_EQ(h.use_count(), 2);
  { auto closed = table.Close(fd); }
  EXPECT_EQ(h.use_count(), 1);
}

// --- Concurrency ----------------------------------------------------------

TEST(FdTableTest, CloseWaitsForAReadInFlightAndRefusesNewCallsMeanwhile) {
  Runtime rt({.io_threads = 1, .blocking_threads = 2});
  Table table;
  Gate gate;
  auto h = std::make_shared<StringHandle>("hello world");
  h->read_gate = &gate;
  const int fd = OpenFd(table, "a", h, OpenMode::kRead);

  Promise<std::string> read_p;
  Future<std::string> read_f = read_p.GetFuture();
  rt.PostBlocking([&table, fd, p = std::move(read_p)]() mutable {
    std::string buf(5, '\0');
    absl::StatusOr<size_t> n = table.Read(fd, absl::MakeSpan(buf));
    if (!n.ok()) return p.Set(n.status());
    buf.resize(*n);
    p.Set(buf);
  });
  gate.AwaitEntered();  // the read is inside the handle now

  Promise<bool> close_p;
  Future<bool> close_f = close_p.GetFuture();
  rt.PostBlocking([&table, fd, p = std::move(close_p)]() mutable {
    absl::StatusOr<bool> last_close;
    {  // drops the handed-back handle before the test looks at use_count()
      absl::StatusOr<Table::CloseResult> r = table.Close(fd);
      last_close = r.ok() ? absl::StatusOr<bool>(r->last_close) : r.status();
    }
    p.Set(last_close);
  });
  // Close unpublishes the fd first, then waits for the read.
  while (table.size() != 0) std::this_thread::yield();
  ExpectNotOpen(table.Lseek(fd, 0, SEEK_SET).status(), fd);
  EXPECT_FALSE(close_f.ready());

  gate.Open();
  EXPECT_EQ(*std::move(read_f).Get(), "hello");
  EXPECT_TRUE(*std::move(close_f).Get());
  EXPECT_EQ(h.use_count(), 1);  // the descriptor is gone, the read done
  char buf[1];
  ExpectNotOpen(table.Read(fd, absl::MakeSpan(buf)).status(), fd);
}

TEST(FdTableTest, ReadsRacingACloseEitherSucceedOrFailCleanly) {
  constexpr int kReaders = 4;
  Runtime rt({.io_threads = 1, .blocking_threads = kReaders + 1});
  Table table;
  auto h = std::make_shared<StringHandle>(std::string(1 << 16, 'x'));
  const int fd = OpenFd(table, "a", h, OpenMode::kRead);
  std::atomic<int> reads_ok{0};
  RunConcurrently(rt, kReaders + 1, [&](int i) {
    if (i == kReaders) {
      while (reads_ok.load() < 50) std::this_thread::yield();  // let reads get going
      EXPECT_TRUE(table.Close(fd).ok());
      return;
    }
    char buf[16];
    for (;;) {
      absl::StatusOr<size_t> n = table.PRead(fd, 0, absl::MakeSpan(buf));
      if (!n.ok()) {
        ExpectNotOpen(n.status(), fd);
        return;
      }
      EXPECT_EQ(*n, sizeof(buf));
      reads_ok.fetch_add(1);
    }
  });
  EXPECT_EQ(table.size(), 0);
  EXPECT_EQ(h.use_count(), 1);
}

TEST(FdTableTest, ManyThreadsReadingTheirOwnDescriptorsEachSeeTheWholeObject) {
  constexpr int kThreads = 8;
  Runtime rt({.io_threads = 1, .blocking_threads = kThreads});
  Table table;
  std::string content;
  for (int i = 0; content.size() < 50000; ++i) content += std::to_string(i) + ",";
  auto h = std::make_shared<StringHandle>(content);
  RunConcurrently(rt, kThreads, [&](int i) {
    const int fd = OpenFd(table, "shared", h, OpenMode::kRead);
    std::string got;
    const size_t chunk = 97 + static_cast<size_t>(i) * 13;  // differing chunk sizes
    for (;;) {
      std::string part = ReadString(table, fd, chunk);
      if (part.empty()) break;
      got += part;
    }
    EXPECT_EQ(got, content);
    EXPECT_TRUE(table.Close(fd).ok());
  });
  EXPECT_EQ(table.CountsFor("shared").opens, 0);
}

TEST(FdTableTest, ManyThreadsReadingOneDescriptorNeverLoseOrRepeatAnOffset) {
  constexpr int kThreads = 8;
  constexpr size_t kSize = 60000;
  constexpr size_t kChunk = 37;  // does not divide kSize: the last read is short
  Runtime rt({.io_threads = 1, .blocking_threads = kThreads});
  Table table;
  auto h = std::make_shared<StringHandle>(std::string(kSize, 'y'));
  const int fd = OpenFd(table, "a", h, OpenMode::kRead);
  std::atomic<size_t> total{0};
  RunConcurrently(rt, kThreads, [&](int) {
    for (;;) {
      const size_t n = ReadString(table, fd, kChunk).size();
      if (n == 0) break;
      total.fetch_add(n);
    }
  });
  EXPECT_EQ(total.load(), kSize);
  // The handle saw back-to-back ranges from 0 to the end: none lost, none twice.
  std::vector<std::pair<int64_t, size_t>> reads = h->reads();
  std::sort(reads.begin(), reads.end());
  int64_t expected = 0;
  for (const auto& [offset, n] : reads) {
    if (n == 0) continue;  // the EOF probes, one per thread
    ASSERT_EQ(offset, expected);
    expected += static_cast<int64_t>(n);
  }
  EXPECT_EQ(expected, static_cast<int64_t>(kSize));
}

TEST(FdTableTest, OpenCountsStayExactUnderConcurrentOpenAndClose) {
  constexpr int kThreads = 6;
  constexpr int kRounds = 300;
  Runtime rt({.io_threads = 1, .blocking_threads = kThreads});
  Table table;
  auto h = std::make_shared<StringHandle>("abc");
  std::atomic<int> first_opens{0}, last_closes{0}, max_readers{0};
  RunConcurrently(rt, kThreads, [&](int i) {
    const OpenMode mode = i % 2 == 0 ? OpenMode::kRead : OpenMode::kWrite;
    for (int r = 0; r < kRounds; ++r) {
      absl::StatusOr<Table::OpenResult> opened = table.Open("k", h, mode);
      ASSERT_TRUE(opened.ok());
      EXPECT_GE(opened->opens, 1);
      EXPECT_LE(opened->opens, kThreads);
      if (opened->opens == 1) first_opens.fetch_add(1);
      int seen = max_readers.load();
      while (opened->readers > seen && !max_readers.compare_exchange_weak(seen, opened->readers)) {
      }
      absl::StatusOr<Table::CloseResult> closed = table.Close(opened->fd);
      ASSERT_TRUE(closed.ok());
      EXPECT_EQ(closed->last_close, closed->opens == 0);
      if (closed->last_close) last_closes.fetch_add(1);
    }
  });
  EXPECT_EQ(first_opens.load(), last_closes.load());  // every episode begins and ends once
  EXPECT_LE(max_readers.load(), kThreads / 2);
  EXPECT_EQ(table.CountsFor("k").opens, 0);
  EXPECT_EQ(table.size(), 0);
}

}  // namespace
}  // namespace ferry
