#include "ferry/transfer/object_file_table.h"

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/in_memory_object_store.h"
#include "testing/transfer_fixtures.h"

namespace ferry {
namespace {

using ::ferry::testing::InMemoryObjectStore;
using ::ferry::testing::Pattern;
using ::ferry::testing::SmallPartStoreOptions;
using ::testing::HasSubstr;

constexpr int64_t kChunk = ::ferry::testing::kTransferUnit;
constexpr char kKey[] = "bucket/object";

absl::Span<char> Buf(std::string& s) { return absl::MakeSpan(s.data(), s.size()); }
absl::Span<const char> Data(const std::string& s) { return absl::MakeConstSpan(s.data(), s.size()); }

// With a manual store, requests complete when the test runs them.
class ObjectFileTableTest : public ::ferry::testing::TransferTest {
 protected:
  ObjectFileTableOptions TableOptions() {
    return {.download = DownloadOptions(), .upload = UploadOptions()};
  }

  ObjectFileTable files_{store_, runtime_, TableOptions()};
};

TEST_F(ObjectFileTableTest, OpensGetUniqueDescriptorsWithTheirOwnOffsets) {
  const std::string data = Pattern(3 * kChunk);
  store_.PutObject(kKey, data);
  auto a = files_.Open(kKey, OpenMode::kRead);
  auto b = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_NE(*a, *b);
  EXPECT_GE(*a, 3);
  std::string x(100, '\0'), y(50, '\0');
  ASSERT_EQ(files_.Read(*a, Buf(x)).value_or(0), 100u);
  ASSERT_EQ(files_.Read(*b, Buf(y)).value_or(0), 50u);
  EXPECT_EQ(x, data.substr(0, 100));
  EXPECT_EQ(y, data.substr(0, 50));
  ASSERT_EQ(files_.Read(*a, Buf(y)).value_or(0), 50u);
  EXPECT_EQ(y, data.substr(100, 50));
  EXPECT_EQ(files_.open_descriptors(), 2);
  EXPECT_TRUE(files_.Close(*a).ok());
  EXPECT_TRUE(files_.Close(*b).ok());
  EXPECT_EQ(files_.open_descriptors(), 0);
}

TEST_F(ObjectFileTableTest, OpenOfAMissingObjectIsNotFound) {
  auto fd = files_.Open("bucket/missing", OpenMode::kRead);
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(files_.open_descriptors(), 0);
}

TEST_F(ObjectFileTableTest, LoneReaderMovesOnlyTheBytesItReads) {
  store_.PutSyntheticObject(kKey, int64_t{1} << 30, 7);
  auto fd = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string buf(1024, '\0');
  ASSERT_EQ(files_.PRead(*fd, 12345678, Buf(buf)).value_or(0), 1024u);
  EXPECT_EQ(buf[0], InMemoryObjectStore::SyntheticByte(7, 12345678));
  EXPECT_EQ(store_.bytes_served(), 1024);
  EXPECT_TRUE(files_.Close(*fd).ok());
}

TEST_F(ObjectFileTableTest, ReadsPastTheEndAreShortThenEmpty) {
  store_.PutObject(kKey, "0123456789");
  auto fd = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(fd.ok());
  std::string buf(8, '\0');
  EXPECT_EQ(files_.PRead(*fd, 6, Buf(buf)).value_or(99), 4u);
  EXPECT_EQ(files_.PRead(*fd, 10, Buf(buf)).value_or(99), 0u);
  EXPECT_EQ(files_.Lseek(*fd, 0, SEEK_END).value_or(-1), 10);
  EXPECT_TRUE(files_.Close(*fd).ok());
}

TEST_F(ObjectFileTableTest, ZeroByteObjectReadsAsEndOfFile) {
  store_.PutObject(kKey, "");
  auto fd = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string buf(8, '\0');
  EXPECT_EQ(files_.Read(*fd, Buf(buf)).value_or(99), 0u);
  EXPECT_TRUE(files_.Close(*fd).ok());
}

TEST_F(ObjectFileTableTest, StatGivesTheSizeAndETagSeenAtOpen) {
  store_.PutObject(kKey, "hello");
  auto fd = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(fd.ok());
  auto info = files_.Stat(*fd);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, 5);
  EXPECT_FALSE(info->etag.empty());
  EXPECT_TRUE(files_.Close(*fd).ok());
  EXPECT_EQ(files_.Stat(*fd).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ObjectFileTableTest, SoleReaderHoldsForALoneReadDescriptorOnly) {
  store_.PutObject(kKey, "hello");
  auto a = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(files_.SoleReader(*a));
  auto b = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(files_.SoleReader(*a));
  EXPECT_FALSE(files_.SoleReader(*b));
  EXPECT_TRUE(files_.Close(*b).ok());
  EXPECT_TRUE(files_.SoleReader(*a));
  auto w = files_.Open("bucket/other", OpenMode::kWrite);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(files_.SoleReader(*w));
  EXPECT_TRUE(files_.Abort(*w).ok());
  EXPECT_TRUE(files_.Close(*a).ok());
  EXPECT_FALSE(files_.SoleReader(*a));
}

TEST_F(ObjectFileTableTest, ReadWriteOpenIsRefused) {
  store_.PutObject(kKey, "x");
  auto fd = files_.Open(kKey, OpenMode::kReadWrite);
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(fd.status().message()), HasSubstr(kKey));
  EXPECT_EQ(files_.open_descriptors(), 0);
}

TEST_F(ObjectFileTableTest, WriteOnAReadDescriptorIsInvalidArgument) {
  store_.PutObject(kKey, "x");
  auto fd = files_.Open(kKey, OpenMode::kRead);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(files_.Write(*fd, Data("y")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(files_.Close(*fd).ok());
}

TEST_F(ObjectFileTableTest, SequentialWritesThenCloseCreateTheObject) {
  const std::string data = Pattern(5 * kChunk + 17);
  auto fd = files_.Open(kKey, OpenMode::kWrite);
  ASSERT_TRUE(fd.ok()) << fd.status();
  for (size_t at = 0; at < data.size(); at += 1000) {
    const std::string piece = data.substr(at, 1000);
    ASSERT_EQ(files_.Write(*fd, Data(piece)).value_or(0), piece.size());
  }
  EXPECT_EQ(files_.Lseek(*fd, 0, SEEK_END).value_or(-1), static_cast<int64_t>(data.size()));
  EXPECT_EQ(store_.ObjectData(kKey), std::nullopt);  // not before the last close
  ASSERT_TRUE(files_.Close(*fd).ok());
  EXPECT_TRUE(store_.ObjectData(kKey) == data);
}

TEST_F(ObjectFileTableTest, ParallelWritersAtStripesProduceTheObject) {
  constexpr int kWriters = 4;
  const std::string data = Pattern(kWriters * 3 * kChunk + 100);
  const int64_t stripe = (static_cast<int64_t>(data.size()) + kWriters - 1) / kWriters;
  std::vector<int> fds;
  for (int i = 0; i < kWriters; ++i) {
    auto fd = files_.Open(kKey, OpenMode::kWrite,
                          {.total_bytes = static_cast<int64_t>(data.size())});
    ASSERT_TRUE(fd.ok()) << fd.status();
    fds.push_back(*fd);
  }
  std::vector<absl::Status> closed(kWriters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      const int64_t begin = i * stripe;
      const int64_t end = std::min<int64_t>(begin + stripe, static_cast<int64_t>(data.size()));
      // Each thread writes its stripe in pieces, back to front.
      constexpr int64_t kPiece = 1500;
      for (int64_t at = ((end - begin - 1) / kPiece) * kPiece + begin; at >= begin; at -= kPiece) {
        const int64_t n = std::min(kPiece, end - at);
        auto w = files_.PWrite(fds[i], at, absl::MakeConstSpan(data.data() + at, n));
        if (!w.ok()) closed[i] = w.status();
      }
      absl::Status c = files_.Close(fds[i]);
      if (closed[i].ok()) closed[i] = c;
    });
  }
  for (auto& t : threads) t.join();
  for (const absl::Status& s : closed) EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(store_.ObjectData(kKey) == data);
  EXPECT_EQ(store_.requests(InMemoryObjectStore::Op::kCreateMultipart), 1);
}

TEST_F(ObjectFileTableTest, WriteOpensOfOneKeyMustAgreeOnTheSize) {
  auto a = files_.Open(kKey, OpenMode::kWrite, {.total_bytes = 100});
  ASSERT_TRUE(a.ok());
  auto b = files_.Open(kKey, OpenMode::kWrite, {.total_bytes = 200});
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ObjectFileTableTest, LastCloseReturnsTheUploadErrorAndTheObjectDoesNotExist) {
  store_.SetFault([](const InMemoryObjectStore::Request& r) {
    if (r.op == InMemoryObjectStore::Op::kUploadPart && r.part_number == 2) {
      return absl::PermissionDeniedError("AccessDenied");
    }
    return absl::OkStatus();
  });
  const std::string data = Pattern(4 * kChunk);
  auto a = files_.Open(kKey, OpenMode::kWrite, {.total_bytes = 4 * kChunk});
  auto b = files_.Open(kKey, OpenMode::kWrite, {.total_bytes = 4 * kChunk});
  ASSERT_TRUE(a.ok() && b.ok());
  // Writes may or may not see the failure yet; the last close must.
  files_.PWrite(*a, 0, absl::MakeConstSpan(data.data(), 2 * kChunk)).IgnoreError();
  files_.PWrite(*b, 2 * kChunk, absl::MakeConstSpan(data.data() + 2 * kChunk, 2 * kChunk))
      .IgnoreError();
  EXPECT_TRUE(files_.Close(*a).ok());  // not the last: nothing to report yet
  absl::Status last = files_.Close(*b);
  EXPECT_EQ(last.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(last.message()), HasSubstr(kKey));
  EXPECT_EQ(store_.ObjectData(kKey), std::nullopt);
  EXPECT_EQ(store_.open_uploads(), 0);
}

TEST_F(ObjectFileTableTest, DestroyingTheTableAbortsOpenUploads) {
  const std::string data = Pattern(3 * kChunk);
  {
    ObjectFileTable files(store_, runtime_, TableOptions());
    auto fd = files.Open(kKey, OpenMode::kWrite);
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(files.Write(*fd, Data(data)).ok());
  }
  EXPECT_EQ(store_.ObjectData(kKey), std::nullopt);
  EXPECT_EQ(store_.open_uploads(), 0);
}

// With a manual store the test sees which requests an open issues.
class ObjectFileTableManualStoreTest : public ObjectFileTableTest {
 protected:
  // Opens `key` for reading on another thread while this one answers its
  // HEAD (the first read-open of a key blocks on it).
  absl::StatusOr<int> OpenFirstReader(std::string_view key) {
    absl::StatusOr<int> fd;
    std::thread opener([&] { fd = files_manual_.Open(key, OpenMode::kRead); });
    while (!manual_.RunMatching([](const InMemoryObjectStore::Request& r) {
      return r.op == InMemoryObjectStore::Op::kHead;
    })) {
      std::this_thread::yield();
    }
    opener.join();
    return fd;
  }
  static int PendingGets(const InMemoryObjectStore& s) {
    int n = 0;
    for (const auto& r : s.PendingRequests()) n += r.op == InMemoryObjectStore::Op::kGetRange;
    return n;
  }

  InMemoryObjectStore manual_{SmallPartStoreOptions(nullptr)};
  ObjectFileTable files_manual_{manual_, runtime_, TableOptions()};
};

TEST_F(ObjectFileTableManualStoreTest, SecondReaderStartsTheMultipartDownload) {
  manual_.PutObject(kKey, Pattern(20 * kChunk));
  auto first = OpenFirstReader(kKey);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(PendingGets(manual_), 0);  // a lone reader fetches nothing ahead
  auto second = files_manual_.Open(kKey, OpenMode::kRead);  // no new HEAD
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(manual_.requests(InMemoryObjectStore::Op::kHead), 1);
  EXPECT_EQ(PendingGets(manual_), 3);  // the download's concurrency
  manual_.RunAll();
  EXPECT_TRUE(files_manual_.Close(*first).ok());
  EXPECT_TRUE(files_manual_.Close(*second).ok());
}

TEST_F(ObjectFileTableManualStoreTest, ReopenAfterTheLastCloseSeesTheObjectAnew) {
  manual_.PutObject(kKey, "old");
  auto fd = OpenFirstReader(kKey);
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(files_manual_.Close(*fd).ok());
  manual_.PutObject(kKey, "newer");
  fd = OpenFirstReader(kKey);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(files_manual_.Stat(*fd)->size, 5);
  EXPECT_TRUE(files_manual_.Close(*fd).ok());
}

}  // namespace
}  // namespace ferry
