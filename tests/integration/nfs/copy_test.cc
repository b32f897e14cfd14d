// Parallel copies against nfs-ganesha: NFS -> local and local -> NFS of
// files around the chunk size, verified by MD5 of both sides; NfsFile as an
// FdTable handle; the errors of missing sources and targets; and what a
// download leaves behind when it fails, is stopped, or the server dies
// mid-way (through a toxiproxy proxy in front of ganesha's NFS port): never
// a partial file, never a temporary, an existing destination untouched;
// the same for uploads, which replace their target through a temporary on
// the server (stopped, failing locally, or the server dying mid-way).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/io/fd_table.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_copy.h"
#include "ferry/nfs/nfs_file.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/checksum.h"
#include "nfs_test_util.h"
#include "testing/peers.h"
#include "testing/sequential_reads.h"

namespace ferry::nfs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Small chunks so that a few MiB make many READ/WRITE calls in flight.
constexpr uint32_t kChunk = 64 << 10;

std::string Md5OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  return Md5(std::span<const char>(data.data(), data.size()));
}

class NfsCopyTest : public nfs_test::FreshDirTest<::testing::TestWithParam<size_t>> {
 protected:
  NfsCopyTest() : FreshDirTest("copy", {.io_threads = 2, .blocking_threads = 8}) {}

  void SetUp() override {
    FreshDirTest::SetUp();
    if (HasFatalFailure()) return;
    scratch_ = absl::StrCat(nfs_test::LocalPath(fresh_), "_local");
    mkdir(scratch_.c_str(), 0755);
  }

  CopyOptions Options() const {
    CopyOptions o;
    o.chunk_bytes = kChunk;
    o.parallelism = 8;
    return o;
  }

  // What happened at the first progress report with bytes written.
  struct Midway {
    int64_t bytes = -1;  // bytes written then; -1: no such report came
    absl::Status acted;  // what the action returned
  };
  // Options() whose progress callback, reporting every millisecond, runs
  // `act` once, at the first report with bytes written (so mid-way through
  // a copy long enough), recording it in `midway`.
  CopyOptions OptionsActingOnceMidway(Midway& midway, absl::AnyInvocable<absl::Status()> act) const {
    CopyOptions options = Options();
    options.progress_interval = absl::Milliseconds(1);
    options.progress = [&midway, act = std::move(act)](const TransferProgress& p) mutable {
      if (midway.bytes < 0 && p.bytes_done > 0) {
        midway.bytes = p.bytes_done;
        midway.acted = act();
      }
      return absl::OkStatus();
    };
    return options;
  }

  // The names in the local scratch folder (temporaries included).
  std::vector<std::string> LocalNames() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : nfs_test::FindLocal(scratch_)) names.push_back(name);
    return names;
  }

  std::string scratch_;
};

TEST_P(NfsCopyTest, NfsToLocalKeepsEveryByte) {
  const size_t size = GetParam();
  nfs_test::WriteFile(Exported("src.bin"), size);
  const std::string local = scratch_ + "/dst.bin";
  absl::StatusOr<TransferStats> s = CopyNfsToLocal(runtime_, *client_, "src.bin", local, Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->bytes, size);
  EXPECT_EQ(s->requests, (size + kChunk - 1) / kChunk);
  EXPECT_EQ(Md5OfFile(local), Md5OfFile(Exported("src.bin")));
}

TEST_P(NfsCopyTest, LocalToNfsKeepsEveryByteAndCommits) {
  const size_t size = GetParam();
  const std::string local = scratch_ + "/src.bin";
  nfs_test::WriteFile(local, size);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *client_, local, "dst.bin", Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->bytes, size);
  EXPECT_EQ(s->retries, 0);
  EXPECT_EQ(Md5OfFile(Exported("dst.bin")), Md5OfFile(local));
}

INSTANTIATE_TEST_SUITE_P(Sizes, NfsCopyTest,
                         ::testing::Values(0, 1, kChunk - 1, kChunk, kChunk + 1,
                                           (5 << 20) + 7));

class NfsCopyErrorsTest : public NfsCopyTest {};

TEST_F(NfsCopyErrorsTest, MissingSourceIsNotFoundNamingIt) {
  absl::StatusOr<TransferStats> s =
      CopyNfsToLocal(runtime_, *client_, "absent.bin", scratch_ + "/x", Options());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(absl::StrCat(fresh_, "/absent.bin")));
}

TEST_F(NfsCopyErrorsTest, TargetInMissingDirectoryIsNotFound) {
  const std::string local = scratch_ + "/src.bin";
  nfs_test::WriteFile(local, 10);
  absl::StatusOr<TransferStats> s =
      CopyLocalToNfs(runtime_, *client_, local, "no/such/dir/x.bin", Options());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound) << s.status();
}

TEST_F(NfsCopyErrorsTest, DirectorySourceIsFailedPrecondition) {
  mkdir(Exported("adir").c_str(), 0755);
  absl::StatusOr<TransferStats> s =
      CopyNfsToLocal(runtime_, *client_, "adir", scratch_ + "/x", Options());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
}

TEST_F(NfsCopyErrorsTest, NfsFileServesAnFdTable) {
  nfs_test::WriteFile(Exported("f.bin"), 1000);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "f.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  FdTable<NfsFile> table;
  auto opened = table.Open("f.bin", *f, OpenMode::kReadWrite);
  ASSERT_TRUE(opened.ok()) << opened.status();
  char buf[600];
  absl::StatusOr<size_t> n = table.Read(opened->fd, absl::MakeSpan(buf));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 600u);
  n = table.Read(opened->fd, absl::MakeSpan(buf));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 400u);  // short read at the end
  const std::string tail = "appended";
  ASSERT_TRUE(table.Lseek(opened->fd, 0, SEEK_END).ok());
  ASSERT_TRUE(table.Write(opened->fd, absl::MakeConstSpan(tail.data(), tail.size())).ok());
  auto closed = table.Close(opened->fd);
  ASSERT_TRUE(closed.ok()) << closed.status();
  ASSERT_TRUE(closed->handle->Commit().ok());
  struct stat st;
  ASSERT_EQ(stat(Exported("f.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1008);
}

TEST_F(NfsCopyErrorsTest, NfsFileReadsABufferOfManyCallsInOneReadAt) {
  // ReadAt splits a buffer into READs of at most 1 MiB, sends them 16 at a
  // time and assembles them; past the end it stops short, every byte in its
  // place. The file takes two windows of calls; the buffer is at least the
  // server's rtmax (ganesha: 64 MiB, a READ whose reply would not fit in a
  // record).
  const size_t call = std::min<size_t>(client_->fsinfo().rtmax, 1 << 20);
  const size_t size = 18 * call + call / 2 + 7;
  nfs_test::WriteFile(Exported("multi.bin"), size);
  std::ifstream in(Exported("multi.bin"), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string expected = ss.str();
  ASSERT_EQ(expected.size(), size);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "multi.bin");
  ASSERT_TRUE(f.ok()) << f.status();

  std::string buf(std::max<size_t>(20 * call, client_->fsinfo().rtmax), 'x');
  absl::StatusOr<size_t> n = (*f)->ReadAt(0, absl::MakeSpan(buf.data(), buf.size()));
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, size);
  EXPECT_TRUE(buf.compare(0, size, expected) == 0);

  const size_t offset = call / 2 + 3;
  n = (*f)->ReadAt(static_cast<int64_t>(offset), absl::MakeSpan(buf.data(), 2 * call));
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, 2 * call);
  EXPECT_TRUE(buf.compare(0, 2 * call, expected, offset, 2 * call) == 0);
}

// Small pieces read in order are read ahead (windows of READs sent before
// they are asked for): every byte must still come from its own offset.

// Writes `size` bytes of random-looking content to `path` and returns them.
std::string WriteRandomFile(const std::string& path, size_t size) {
  std::string data(size, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull ^ size;
  for (char& c : data) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  std::ofstream(path, std::ios::binary) << data;
  return data;
}

TEST_F(NfsCopyErrorsTest, NfsFileReadInSmallPiecesInOrderGivesEveryByte) {
  const std::string data = WriteRandomFile(Exported("pieces.bin"), (19 << 20) + 4321);
  for (size_t piece : {size_t{4096}, size_t{65536}, size_t{100003}, size_t{(1 << 20) - 1}}) {
    absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "pieces.bin");
    ASSERT_TRUE(f.ok()) << f.status();
    absl::StatusOr<std::string> got = testing::ReadInPieces(**f, piece);
    ASSERT_TRUE(got.ok()) << got.status() << ", pieces of " << piece;
    EXPECT_TRUE(*got == data) << "pieces of " << piece << ": " << got->size() << " bytes";
  }
}

TEST_F(NfsCopyErrorsTest, NfsFileReadsOutOfOrderAmidReadAheadGiveTheBytesAsked) {
  const std::string data = WriteRandomFile(Exported("jumps.bin"), 24 << 20);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "jumps.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  // In order to start the windows, then within them, back before them,
  // far past them, in order again, and across the end.
  const absl::Status reads = testing::CheckReadsAt(**f, data,
                                                   {0, 1 << 16, 2 << 16, 5 << 16, 6 << 16, 7 << 16, 1000, 9 << 20,
                                                    (9 << 20) + 65536, (9 << 20) + 131072, (24 << 20) - 100, 3,
                                                    (3 << 20) + 17},
                                                   1 << 16);
  EXPECT_TRUE(reads.ok()) << reads;
}

TEST_F(NfsCopyErrorsTest, NfsFileReadsAfterAWriteThroughTheHandleSeeTheWrite) {
  std::string data = WriteRandomFile(Exported("rw.bin"), 6 << 20);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "rw.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  std::string buf(1 << 16, '\0');
  for (int64_t at = 0; at < (3 << 16); at += 1 << 16) {  // windows sent past 192 KiB
    ASSERT_TRUE((*f)->ReadAt(at, absl::MakeSpan(buf)).ok());
  }
  const std::string patch(5000, 'Z');
  const int64_t where = (1 << 20) + 12345;  // inside the first window
  ASSERT_TRUE((*f)->WriteAt(where, absl::MakeConstSpan(patch.data(), patch.size())).ok());
  data.replace(static_cast<size_t>(where), patch.size(), patch);
  for (int64_t at = 3 << 16; at < (2 << 20); at += 1 << 16) {
    absl::StatusOr<size_t> n = (*f)->ReadAt(at, absl::MakeSpan(buf));
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_EQ(*n, buf.size());
    EXPECT_TRUE(buf.compare(0, buf.size(), data, static_cast<size_t>(at), buf.size()) == 0) << "at " << at;
  }
}

TEST_F(NfsCopyErrorsTest, NfsFileReadByTwoThreadsInOrderGivesEachItsBytes) {
  const std::string data = WriteRandomFile(Exported("halves.bin"), 16 << 20);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "halves.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  const size_t half = data.size() / 2;
  auto halves = testing::ReadHalvesAtOnce(**f, half, 48 << 10);
  ASSERT_TRUE(halves.ok()) << halves.status();
  EXPECT_TRUE(halves->first == data.substr(0, half));
  EXPECT_TRUE(halves->second == data.substr(half));
}

TEST_F(NfsCopyErrorsTest, NfsFileReadInChunksByManyThreadsAtOnceAsksForEachChunkOnce) {
  // As the copy engine's workers read a file: 1 MiB chunks handed out in
  // turn to 8 threads. Their reads overlap, so the file stops reading ahead
  // (windows sent before that are dropped: at most a few extra READs).
  const size_t chunk = std::min<size_t>(client_->fsinfo().rtmax, 1 << 20);
  const size_t chunks = 32;
  const std::string data = WriteRandomFile(Exported("chunks.bin"), chunks * chunk);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "chunks.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  const uint64_t calls_before = client_->metrics().calls_started;
  std::string got(data.size(), '\0');
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 8; ++t) {
    workers.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < chunks;) {
        absl::StatusOr<size_t> n = (*f)->ReadAt(static_cast<int64_t>(i * chunk), absl::MakeSpan(got.data() + i * chunk, chunk));
        if (!n.ok() || *n != chunk) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(got == data);
  EXPECT_LE(client_->metrics().calls_started - calls_before, chunks + 4);
}

TEST_F(NfsCopyErrorsTest, NfsFileWhoseReadsOverlappedOnceIsNotReadAheadAnyMore) {
  // Two threads read it at once, as an engine's workers would; then one
  // reader goes through it in order in small pieces. The file has had
  // readers at once: each of those pieces is one READ, not a window's.
  const size_t piece = 64 << 10;
  const std::string data = WriteRandomFile(Exported("overlapped.bin"), 8 << 20);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "overlapped.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  std::barrier start(2);
  std::atomic<int> failures{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::string buf(piece, '\0');
      start.arrive_and_wait();
      for (size_t i = 0; i < 16; ++i) {  // each its own megabyte, in order
        const int64_t at = static_cast<int64_t>(t * (2 << 20) + i * piece);
        absl::StatusOr<size_t> n = (*f)->ReadAt(at, absl::MakeSpan(buf));
        if (!n.ok() || *n != piece || buf != data.substr(at, piece)) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& r : readers) r.join();
  ASSERT_EQ(failures.load(), 0);
  const uint64_t calls_before = client_->metrics().calls_started;
  std::string buf(piece, '\0');
  const size_t pieces = 32;  // the file's last 2 MiB
  for (size_t i = 0; i < pieces; ++i) {
    const int64_t at = static_cast<int64_t>((6 << 20) + i * piece);
    absl::StatusOr<size_t> n = (*f)->ReadAt(at, absl::MakeSpan(buf));
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_EQ(*n, piece);
    ASSERT_TRUE(buf == data.substr(at, piece)) << "at " << at;
  }
  EXPECT_EQ(client_->metrics().calls_started - calls_before, pieces);
}

// Read-ahead is bounded per Runtime (RuntimeOptions::read_ahead_bytes).
class NfsReadAheadBoundTest : public nfs_test::FreshDirTest<> {
 protected:
  explicit NfsReadAheadBoundTest(int64_t read_ahead_bytes = -1)
      : FreshDirTest("readahead", {.read_ahead_bytes = read_ahead_bytes}) {}

  // Reads `pieces` pieces of 64 KiB of `file` in order from its start and
  // checks them against `data`; the READs they took.
  uint64_t ReadInOrder(NfsFile& file, const std::string& data, size_t pieces) {
    const size_t piece = 64 << 10;
    const uint64_t before = client_->metrics().calls_started;
    std::string buf(piece, '\0');
    for (size_t i = 0; i < pieces; ++i) {
      const int64_t at = static_cast<int64_t>(i * piece);
      absl::StatusOr<size_t> n = file.ReadAt(at, absl::MakeSpan(buf));
      EXPECT_TRUE(n.ok()) << n.status();
      EXPECT_TRUE(n.ok() && *n == piece && buf == data.substr(at, piece)) << "at " << at;
    }
    return client_->metrics().calls_started - before;
  }
};

TEST_F(NfsReadAheadBoundTest, WindowsHoldReadAheadBytesUntilTheFileIsClosed) {
  const std::string data = WriteRandomFile(Exported("held.bin"), 8 << 20);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "held.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  ReadInOrder(**f, data, 3);
  EXPECT_GT(runtime_.read_ahead_budget().in_use(), 0);
  EXPECT_EQ(runtime_.memory_budget().in_use(), 0);  // the transfers' budget is not touched
  f->reset();
  // READs still in flight hold their window's buffer until they end.
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (runtime_.read_ahead_budget().in_use() != 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(runtime_.read_ahead_budget().in_use(), 0);
}

class NfsWithTwoMebibytesOfReadAheadTest : public NfsReadAheadBoundTest {
 protected:
  NfsWithTwoMebibytesOfReadAheadTest() : NfsReadAheadBoundTest(/*read_ahead_bytes=*/2 << 20) {}
};

TEST_F(NfsWithTwoMebibytesOfReadAheadTest, TwoFilesReadAtOnceShareTheBoundAndGiveEveryByte) {
  const std::string a = WriteRandomFile(Exported("a.bin"), 6 << 20);
  const std::string b = WriteRandomFile(Exported("b.bin"), 6 << 20);
  absl::StatusOr<std::shared_ptr<NfsFile>> fa = NfsFile::Open(*client_, "a.bin");
  absl::StatusOr<std::shared_ptr<NfsFile>> fb = NfsFile::Open(*client_, "b.bin");
  ASSERT_TRUE(fa.ok()) << fa.status();
  ASSERT_TRUE(fb.ok()) << fb.status();
  ReadInOrder(**fa, a, 4);  // a's first window takes the whole bound
  ReadInOrder(**fb, b, 96);  // b finds none and reads as asked
  ReadInOrder(**fa, a, 96);
  EXPECT_EQ(runtime_.read_ahead_budget().peak(), 2 << 20);
}

class NfsWithoutReadAheadBytesTest : public NfsReadAheadBoundTest {
 protected:
  NfsWithoutReadAheadBytesTest() : NfsReadAheadBoundTest(/*read_ahead_bytes=*/0) {}
};

TEST_F(NfsWithoutReadAheadBytesTest, AFileReadInOrderTakesOneReadAPiece) {
  const std::string data = WriteRandomFile(Exported("plain.bin"), 4 << 20);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "plain.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(ReadInOrder(**f, data, 32), 32u);
}

TEST_F(NfsCopyErrorsTest, NfsFileReadsIntoADescriptorAtItsOffsetAndStopsAtTheEnd) {
  // ReadIntoDescriptor: the same windows of READs as ReadAt, the data
  // spliced into a local file at the offset asked.
  const size_t call = std::min<size_t>(client_->fsinfo().rtmax, 1 << 20);
  const size_t size = 3 * call + 11;
  nfs_test::WriteFile(Exported("spliced.bin"), size);
  std::ifstream in(Exported("spliced.bin"), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string expected = ss.str();
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "spliced.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string local = scratch_ + "/spliced.local";
  const int fd = ::open(local.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);

  absl::StatusOr<size_t> n = (*f)->ReadIntoDescriptor(5, 4 * call, fd, 100);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, size - 5);
  std::string got(size - 5, '\0');
  ASSERT_EQ(::pread(fd, got.data(), got.size(), 100), static_cast<ssize_t>(got.size()));
  EXPECT_TRUE(got == expected.substr(5));
  struct stat st;
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(100 + size - 5)) << "nothing written past the end";
  ::close(fd);
}

TEST_F(NfsCopyErrorsTest, NfsFileIntoAReadOnlyDescriptorFailsNamingTheRead) {
  nfs_test::WriteFile(Exported("ro.bin"), 300'000);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "ro.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  absl::StatusOr<size_t> n = (*f)->ReadIntoDescriptor(0, 300'000, fd, 0);
  ::close(fd);
  EXPECT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(), HasSubstr("NFS3 READ"));
  EXPECT_THAT(n.status().message(), HasSubstr("ro.bin"));
  EXPECT_THAT(n.status().message(), HasSubstr("descriptor"));
}

TEST_F(NfsCopyErrorsTest, NfsFileIntoADescriptorInAppendModeIsInvalidArgument) {
  nfs_test::WriteFile(Exported("append.bin"), 1000);
  absl::StatusOr<std::shared_ptr<NfsFile>> f = NfsFile::Open(*client_, "append.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string local = scratch_ + "/append.local";
  const int fd = ::open(local.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  absl::StatusOr<size_t> n = (*f)->ReadIntoDescriptor(0, 1000, fd, 0);
  ::close(fd);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(n.status().message(), HasSubstr("append mode"));
}

// What a download leaves behind: the destination only once complete.
class NfsDownloadLeavesNoPartialFileTest : public NfsCopyTest {
 protected:
  // An existing destination with content no copy produces.
  std::string MakeExistingDestination() {
    const std::string local = scratch_ + "/dst.bin";
    std::ofstream(local, std::ios::binary) << "the old destination";
    return local;
  }
};

TEST_F(NfsDownloadLeavesNoPartialFileTest, MissingSourceCreatesNothingLocally) {
  absl::StatusOr<TransferStats> s =
      CopyNfsToLocal(runtime_, *client_, "absent.bin", scratch_ + "/dst.bin", Options());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kNotFound) << s.status();
  EXPECT_THAT(LocalNames(), ::testing::IsEmpty());
}

TEST_F(NfsDownloadLeavesNoPartialFileTest,
       StopFromProgressCallbackRemovesTemporaryAndKeepsExistingDestination) {
  nfs_test::WriteFile(Exported("src.bin"), (5 << 20) + 7);
  const std::string local = MakeExistingDestination();
  const std::string before = Md5OfFile(local);
  CopyOptions options = Options();
  options.progress_interval = absl::ZeroDuration();
  // Stops at the first report with bytes written: mid-way, or at the final
  // report if every chunk landed first (both must leave nothing).
  options.progress = [](const TransferProgress& p) {
    return p.bytes_done > 0 ? absl::CancelledError("stop requested") : absl::OkStatus();
  };
  absl::StatusOr<TransferStats> s =
      CopyNfsToLocal(runtime_, *client_, "src.bin", local, std::move(options));
  ASSERT_EQ(s.status().code(), absl::StatusCode::kCancelled) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("stop requested"));
  EXPECT_THAT(LocalNames(), ElementsAre("dst.bin"));
  EXPECT_EQ(Md5OfFile(local), before);
}

TEST_F(NfsDownloadLeavesNoPartialFileTest, CompletedDownloadReplacesExistingDestination) {
  nfs_test::WriteFile(Exported("src.bin"), (1 << 20) + 3);
  const std::string local = MakeExistingDestination();
  absl::StatusOr<TransferStats> s = CopyNfsToLocal(runtime_, *client_, "src.bin", local, Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(LocalNames(), ElementsAre("dst.bin"));
  EXPECT_EQ(Md5OfFile(local), Md5OfFile(Exported("src.bin")));
}

// An NfsClient of export directory `dir` whose NFS connections go through
// a toxiproxy proxy named `name` (MOUNT goes straight to ganesha: only the
// data path is cut), with short call timeouts so that a dead server fails
// a copy in seconds. The client goes before its proxy.
struct ProxiedNfsClient {
  void Open(Runtime& runtime, peers::ToxiproxyClient& toxiproxy, const std::string& name,
            const std::string& dir) {
    proxy = std::make_unique<peers::ScopedProxy>(toxiproxy, name, peers::kNfsPort);
    ASSERT_TRUE(proxy->status().ok()) << proxy->status();
    NfsClientOptions client_options;
    client_options.timeouts.call = absl::Seconds(5);
    client_options.timeouts.connect = absl::Seconds(2);
    // The tests below break the proxy for good: give up after 2 s of
    // retries rather than the default 20.
    client_options.timeouts.retry_window = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<NfsClient>> c = NfsClient::Connect(
        runtime,
        absl::StrCat("nfs://127.0.0.1/export/", dir, "?nfsport=", proxy->port(),
                     "&mountport=", peers::kMountPort),
        client_options);
    ASSERT_TRUE(c.ok()) << c.status();
    client = *std::move(c);
  }

  std::unique_ptr<peers::ScopedProxy> proxy;
  std::unique_ptr<NfsClient> client;  // declared after the proxy: destroyed first
};

// The same, with the client's NFS connections through a toxiproxy proxy
// (MOUNT goes straight to ganesha: only the data path is cut).
class NfsDownloadThroughToxiproxyTest : public NfsDownloadLeavesNoPartialFileTest {
 protected:
  void SetUp() override {
    NfsDownloadLeavesNoPartialFileTest::SetUp();
    if (HasFatalFailure()) return;
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    proxied_.Open(runtime_, toxiproxy_, absl::StrCat("nfs_copy_", info->name()), fresh_);
  }

  peers::ToxiproxyClient toxiproxy_;
  ProxiedNfsClient proxied_;
};

TEST_F(NfsDownloadThroughToxiproxyTest, ServerDyingMidwayKeepsExistingDestinationAndNoTemporary) {
  // 64 chunks, 8 in flight, each reply held 20 ms by the proxy: the copy
  // takes 8+ rounds, so the first bytes land long before the last.
  constexpr size_t kSize = 64 * kChunk;
  constexpr int64_t kHoldMs = 20;
  nfs_test::WriteFile(Exported("src.bin"), kSize);
  const std::string local = MakeExistingDestination();
  const std::string before = Md5OfFile(local);
  ASSERT_TRUE(proxied_.proxy->AddToxic({.name = "hold", .type = "latency",
                                        .attributes = {{"latency", kHoldMs}}}).ok());

  // Once some bytes have landed, every connection to the server is reset
  // (new ones too): the remaining READs fail after their retries.
  Midway killed;
  CopyOptions options = OptionsActingOnceMidway(killed, [&] {
    return proxied_.proxy->AddToxic(
        {.name = "reset", .type = "reset_peer", .attributes = {{"timeout", 0}}});
  });
  absl::StatusOr<TransferStats> s =
      CopyNfsToLocal(runtime_, *proxied_.client, "src.bin", local, std::move(options));
  ASSERT_TRUE(killed.acted.ok()) << killed.acted;
  ASSERT_GT(killed.bytes, 0);
  ASSERT_LT(killed.bytes, static_cast<int64_t>(kSize)) << "the copy ended before the reset";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
  EXPECT_THAT(LocalNames(), ElementsAre("dst.bin"));
  EXPECT_EQ(Md5OfFile(local), before);
}

// What an upload leaves behind: the old target or the complete new one,
// never a partial one, and no temporary in the target's directory.
class NfsUploadReplacesAtomicallyTest : public NfsCopyTest {
 protected:
  // An existing target with content no copy produces.
  std::string MakeExistingTarget(std::string_view name = "dst.bin") {
    const std::string path = Exported(name);
    std::ofstream(path, std::ios::binary) << "the old target";
    return path;
  }

  // A local source of `size` bytes.
  std::string MakeSource(size_t size) {
    const std::string local = scratch_ + "/src.bin";
    nfs_test::WriteFile(local, size);
    return local;
  }

  // The names in the target's directory on the server (temporaries included).
  std::vector<std::string> ExportedNames() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : nfs_test::FindLocal(absl::StrCat(nfs_test::kExportDir, "/",
                                                                       fresh_))) {
      names.push_back(name);
    }
    return names;
  }

  // A client with AUTH_SYS uid/gid 1000 (root would pass every check).
  std::unique_ptr<NfsClient> ConnectAsUser1000() {
    return nfs_test::ConnectTo(runtime_, fresh_, "uid=1000&gid=1000");
  }

  static uint32_t ModeOf(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return ~0u;
    return st.st_mode & 07777;
  }
};

TEST_F(NfsUploadReplacesAtomicallyTest, CompletedUploadReplacesExistingTargetsContent) {
  const std::string target = MakeExistingTarget();
  const std::string local = MakeSource((1 << 20) + 3);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *client_, local, "dst.bin", Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->bytes, (1u << 20) + 3);
  EXPECT_EQ(Md5OfFile(target), Md5OfFile(local));
}

TEST_F(NfsUploadReplacesAtomicallyTest, CompletedUploadLeavesNoTemporaryBehind) {
  MakeExistingTarget();
  const std::string local = MakeSource(5 * kChunk + 1);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *client_, local, "dst.bin", Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(ExportedNames(), ElementsAre("dst.bin"));
}

TEST_F(NfsUploadReplacesAtomicallyTest, ReplacedTargetIsANewFileAsAfterCpAndMv) {
  const std::string target = MakeExistingTarget();
  struct stat before;
  ASSERT_EQ(stat(target.c_str(), &before), 0);
  const std::string local = MakeSource(1000);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *client_, local, "dst.bin", Options());
  ASSERT_TRUE(s.ok()) << s.status();
  struct stat after;
  ASSERT_EQ(stat(target.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
}

TEST_F(NfsUploadReplacesAtomicallyTest, NewTargetIsCreatedWithTheModeOption) {
  const std::string local = MakeSource(kChunk + 1);
  CopyOptions options = Options();
  options.mode = 0640;
  absl::StatusOr<TransferStats> s =
      CopyLocalToNfs(runtime_, *client_, local, "new.bin", std::move(options));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(ExportedNames(), ElementsAre("new.bin"));
  EXPECT_EQ(Md5OfFile(Exported("new.bin")), Md5OfFile(local));
  EXPECT_EQ(ModeOf(Exported("new.bin")), 0640u);
}

TEST_F(NfsUploadReplacesAtomicallyTest, ReplacedTargetKeepsItsPermissionBits) {
  const std::string target = MakeExistingTarget();
  ASSERT_EQ(chmod(target.c_str(), 0600), 0);
  const std::string local = MakeSource(1000);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *client_, local, "dst.bin", Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ModeOf(target), 0600u);
}

TEST_F(NfsUploadReplacesAtomicallyTest, ReadOnlyTargetOfItsOwnerIsReplacedAndStaysReadOnly) {
  // The temporary is created read-only too (there is no SETATTR after):
  // its creator must still be able to WRITE it, as with open(O_CREAT, 0444).
  const std::string target = MakeExistingTarget();
  const std::string dir = absl::StrCat(nfs_test::kExportDir, "/", fresh_);
  ASSERT_EQ(chown(dir.c_str(), 1000, 1000), 0);
  ASSERT_EQ(chown(target.c_str(), 1000, 1000), 0);
  ASSERT_EQ(chmod(target.c_str(), 0444), 0);
  const std::string local = MakeSource(3 * kChunk + 5);
  std::unique_ptr<NfsClient> user = ConnectAsUser1000();
  ASSERT_NE(user, nullptr);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *user, local, "dst.bin", Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Md5OfFile(target), Md5OfFile(local));
  EXPECT_EQ(ModeOf(target), 0444u);
  EXPECT_THAT(ExportedNames(), ElementsAre("dst.bin"));
}

TEST_F(NfsUploadReplacesAtomicallyTest,
       StopFromProgressCallbackRemovesTemporaryAndKeepsExistingTarget) {
  const std::string target = MakeExistingTarget();
  const std::string before = Md5OfFile(target);
  const std::string local = MakeSource((5 << 20) + 7);
  CopyOptions options = Options();
  options.progress_interval = absl::ZeroDuration();
  // Stops at the first report with bytes written: mid-way, or at the final
  // report if every chunk landed first (both must leave nothing).
  options.progress = [](const TransferProgress& p) {
    return p.bytes_done > 0 ? absl::CancelledError("stop requested") : absl::OkStatus();
  };
  absl::StatusOr<TransferStats> s =
      CopyLocalToNfs(runtime_, *client_, local, "dst.bin", std::move(options));
  ASSERT_EQ(s.status().code(), absl::StatusCode::kCancelled) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("stop requested"));
  EXPECT_THAT(ExportedNames(), ElementsAre("dst.bin"));
  EXPECT_EQ(Md5OfFile(target), before);
}

TEST_F(NfsUploadReplacesAtomicallyTest, StopAtTheFinalReportKeepsExistingTarget) {
  // Every byte is written and committed, but the rename has not happened.
  const std::string target = MakeExistingTarget();
  const std::string before = Md5OfFile(target);
  const std::string local = MakeSource(2 * kChunk);
  CopyOptions options = Options();
  options.progress = [](const TransferProgress& p) {
    return p.bytes_done == p.bytes_total ? absl::CancelledError("stop at the end")
                                         : absl::OkStatus();
  };
  absl::StatusOr<TransferStats> s =
      CopyLocalToNfs(runtime_, *client_, local, "dst.bin", std::move(options));
  ASSERT_EQ(s.status().code(), absl::StatusCode::kCancelled) << s.status();
  EXPECT_THAT(ExportedNames(), ElementsAre("dst.bin"));
  EXPECT_EQ(Md5OfFile(target), before);
}

TEST_F(NfsUploadReplacesAtomicallyTest, StoppedUploadOfANewTargetCreatesNothing) {
  const std::string local = MakeSource(2 * kChunk);
  CopyOptions options = Options();
  options.progress = [](const TransferProgress&) { return absl::CancelledError("stop"); };
  absl::StatusOr<TransferStats> s =
      CopyLocalToNfs(runtime_, *client_, local, "new.bin", std::move(options));
  ASSERT_EQ(s.status().code(), absl::StatusCode::kCancelled) << s.status();
  EXPECT_THAT(ExportedNames(), ::testing::IsEmpty());
}

TEST_F(NfsUploadReplacesAtomicallyTest, DirectoryTargetIsFailedPreconditionAndCreatesNothing) {
  ASSERT_EQ(mkdir(Exported("adir").c_str(), 0755), 0);
  const std::string local = MakeSource(1000);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *client_, local, "adir", Options());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("is a directory"));
  EXPECT_THAT(s.status().message(), HasSubstr(absl::StrCat(fresh_, "/adir")));
  EXPECT_THAT(ExportedNames(), ElementsAre("adir"));
}

TEST_F(NfsUploadReplacesAtomicallyTest, UnwritableDirectoryIsPermissionDeniedAndKeepsTarget) {
  // The target itself is writable by the user (an in-place rewrite would
  // work), its directory is not: a replacement cannot be made there.
  const std::string target = MakeExistingTarget();
  const std::string before = Md5OfFile(target);
  ASSERT_EQ(chown(target.c_str(), 1000, 1000), 0);
  const std::string local = MakeSource(1000);
  std::unique_ptr<NfsClient> user = ConnectAsUser1000();
  ASSERT_NE(user, nullptr);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *user, local, "dst.bin", Options());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kPermissionDenied) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(absl::StrCat(fresh_, "/dst.bin")));
  EXPECT_THAT(s.status().message(), HasSubstr("the directory must be writable"));
  EXPECT_THAT(ExportedNames(), ElementsAre("dst.bin"));
  EXPECT_EQ(Md5OfFile(target), before);
}

TEST_F(NfsUploadReplacesAtomicallyTest, TargetNameTooLongToPrefixStillUploads) {
  // 250 bytes of two-byte UTF-8 characters and one ASCII byte: the
  // temporary's ".<name>.ferry-<hex>" would pass NAME_MAX (255), so the
  // name in it is cut, at a character boundary.
  std::string name = "a";
  while (name.size() < 250) name += "\xc3\xa9";  // U+00E9
  MakeExistingTarget(name);
  const std::string local = MakeSource(kChunk + 9);
  absl::StatusOr<TransferStats> s = CopyLocalToNfs(runtime_, *client_, local, name, Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(ExportedNames(), ElementsAre(name));
  EXPECT_EQ(Md5OfFile(Exported(name)), Md5OfFile(local));
}

// Uploads whose NFS connections go through a toxiproxy proxy that holds
// every reply, so the copy is still under way when the test breaks it.
class NfsUploadThroughToxiproxyTest : public NfsUploadReplacesAtomicallyTest {
 protected:
  // 64 chunks, 8 in flight, each reply held 20 ms: 8+ rounds, so the first
  // bytes are written long before the last.
  static constexpr size_t kSize = 64 * kChunk;
  static constexpr int64_t kHoldMs = 20;

  void SetUp() override {
    NfsUploadReplacesAtomicallyTest::SetUp();
    if (HasFatalFailure()) return;
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    proxied_.Open(runtime_, toxiproxy_, absl::StrCat("nfs_upload_", info->name()), fresh_);
    if (HasFatalFailure()) return;
    ASSERT_TRUE(proxied_.proxy->AddToxic({.name = "hold", .type = "latency",
                                          .attributes = {{"latency", kHoldMs}}}).ok());
  }

  // Copies `local` (kSize bytes) over "dst.bin" through the proxy, running
  // `act` once midway; expects that it ran, and ran before the copy ended.
  absl::StatusOr<TransferStats> UploadActingMidway(const std::string& local,
                                                   absl::AnyInvocable<absl::Status()> act) {
    Midway midway;
    CopyOptions options = OptionsActingOnceMidway(midway, std::move(act));
    absl::StatusOr<TransferStats> s =
        CopyLocalToNfs(runtime_, *proxied_.client, local, "dst.bin", std::move(options));
    EXPECT_TRUE(midway.acted.ok()) << midway.acted;
    EXPECT_GT(midway.bytes, 0);
    EXPECT_LT(midway.bytes, static_cast<int64_t>(kSize)) << "the copy ended before the action";
    return s;
  }

  peers::ToxiproxyClient toxiproxy_;
  ProxiedNfsClient proxied_;
};

TEST_F(NfsUploadThroughToxiproxyTest, SourceShrinkingMidwayFailsAndRemovesTheTemporary) {
  // A local read failure mid-upload, the server still there: the
  // temporary is removed and the target kept.
  const std::string target = MakeExistingTarget();
  const std::string before = Md5OfFile(target);
  const std::string local = MakeSource(kSize);
  absl::StatusOr<TransferStats> s = UploadActingMidway(local, [&] {
    return truncate(local.c_str(), 0) == 0 ? absl::OkStatus()
                                           : absl::InternalError("truncate failed");
  });
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("shrank"));
  EXPECT_THAT(ExportedNames(), ElementsAre("dst.bin"));
  EXPECT_EQ(Md5OfFile(target), before);
}

TEST_F(NfsUploadThroughToxiproxyTest,
       ServerDyingMidwayKeepsExistingTargetAndNamesTheTemporaryItCouldNotRemove) {
  // Once some bytes are written, every connection is reset as soon as the
  // client sends on it (new ones too), nothing sent reaching the server:
  // the upload fails, and so does the REMOVE of its temporary, which the
  // error reports after the upload's own error; the target is intact.
  const std::string target = MakeExistingTarget();
  const std::string before = Md5OfFile(target);
  const std::string local = MakeSource(kSize);
  absl::StatusOr<TransferStats> s = UploadActingMidway(local, [&] {
    return proxied_.proxy->AddToxic({.name = "reset", .type = "reset_peer", .stream = "upstream",
                                     .attributes = {{"timeout", 0}}});
  });
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
  EXPECT_EQ(Md5OfFile(target), before);
  // The one other entry is the temporary the message names.
  std::vector<std::string> names = ExportedNames();
  ASSERT_EQ(names.size(), 2u) << s.status();
  const std::string leftover = names[0] == "dst.bin" ? names[1] : names[0];
  EXPECT_THAT(leftover, ::testing::StartsWith(".dst.bin.ferry-"));
  EXPECT_THAT(s.status().message(), HasSubstr("removing the temporary file failed too"));
  EXPECT_THAT(s.status().message(), HasSubstr(leftover));
}

// Uploads during which the real ganesha (the peer_ganesha fixture's) is
// SIGKILLed and started again: the server's write verifier changes, so the
// UNSTABLE writes it had acknowledged before the crash may be lost. The
// upload must end byte-correct (COMMIT's verifier differs from the writes',
// Close answers Aborted and the engine writes every chunk again, once) or
// fail clearly; with ganesha back within the retry window it ends correct.
class NfsUploadAcrossGaneshaRestartTest : public NfsUploadReplacesAtomicallyTest {
 protected:
  // ganesha's PID from its fixture's state folder.
  static absl::StatusOr<pid_t> GaneshaPid() {
    std::ifstream in(absl::StrCat(FERRY_GANESHA_STATE_DIR, "/ganesha.pid"));
    long pid = 0;
    if (!(in >> pid) || pid <= 0) return absl::NotFoundError("no ganesha.pid");
    return static_cast<pid_t>(pid);
  }

  // SIGKILL (a crash: no goodbye to the clients), then start it again with
  // the fixture's script, export and state, as the fixture did.
  static absl::Status KillAndRestartGanesha() {
    absl::StatusOr<pid_t> pid = GaneshaPid();
    if (!pid.ok()) return pid.status();
    if (kill(*pid, SIGKILL) != 0) return absl::InternalError("kill ganesha failed");
    for (int i = 0; i < 200 && kill(*pid, 0) == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
    const std::string start = absl::StrCat(FERRY_GANESHA_SCRIPT, " start ", nfs_test::kExportDir, " ",
                                           FERRY_GANESHA_STATE_DIR, " >/dev/null");
    if (std::system(start.c_str()) != 0) return absl::InternalError("restarting ganesha failed");
    return absl::OkStatus();
  }
};

TEST_F(NfsUploadAcrossGaneshaRestartTest, UploadEndsByteCorrectWhenTheWriteVerifierChanges) {
  constexpr size_t kSize = size_t{48} << 20;
  const std::string local = MakeSource(kSize);
  Midway midway;
  CopyOptions options = OptionsActingOnceMidway(midway, [] { return KillAndRestartGanesha(); });
  absl::StatusOr<TransferStats> s =
      CopyLocalToNfs(runtime_, *client_, local, "dst.bin", std::move(options));
  ASSERT_TRUE(midway.acted.ok()) << midway.acted;
  ASSERT_LT(midway.bytes, static_cast<int64_t>(kSize)) << "the upload ended before the restart";
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Md5OfFile(Exported("dst.bin")), Md5OfFile(local));
  // The restart changed the verifier: every chunk was written again once.
  EXPECT_EQ(s->retries, 1);
  EXPECT_THAT(ExportedNames(), ElementsAre("dst.bin"));
}

}  // namespace
}  // namespace ferry::nfs
