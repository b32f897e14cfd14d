// RecordReader::Place and its direct reads, through the two framings that
// place (record marking and length prefix): a record's placed range lands
// in the caller's buffer, whether its bytes arrive through Consume (any
// split) or are read straight into DirectTarget, and the record keeps the
// rest. PlaceInFile does the same into a file (a memfd here).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ferry/rpc/framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A record of a 4-byte head, `n` bytes of bulk and a 2-byte tail.
std::string Record(size_t n) {
  std::string bulk(n, '\0');
  for (size_t i = 0; i < n; ++i) bulk[i] = static_cast<char>('a' + i % 26);
  return absl::StrCat("HEAD", bulk, "TL");
}

// A file in memory for placed bytes; closed by the test's end.
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("placed", MFD_CLOEXEC)) {}
  ~MemFile() { ::close(fd_); }
  int fd() const { return fd_; }
  // `n` bytes at `offset`.
  std::string Read(int64_t offset, size_t n) const {
    std::string out(n, '\0');
    const ssize_t got = ::pread(fd_, out.data(), n, offset);
    out.resize(got < 0 ? 0 : static_cast<size_t>(got));
    return out;
  }

 private:
  const int fd_;
};

std::string Framed(const Framing& framing, std::string_view record) {
  std::string out;
  framing.Append(record, &out);
  return out;
}

// Record marking with 5-byte fragments, so a placed range spans several.
std::unique_ptr<Framing> SmallFragments() {
  return NewRecordMarkingFraming({.max_record_size = 1 << 20, .max_fragment_size = 5});
}

TEST(RecordPlacementTest, PlacedRangeFedByteByByteLandsInTheBufferAndLeavesTheRecord) {
  for (const auto& framing : {SmallFragments(), NewLengthPrefixFraming()}) {
    SCOPED_TRACE(framing->name());
    const std::string wire = Framed(*framing, Record(30));
    auto reader = framing->NewReader();
    std::vector<std::string> records;
    std::string dest(30, '?');
    bool placed = false;
    for (char c : wire) {
      ASSERT_TRUE(reader->Consume(std::string_view(&c, 1), &records).ok());
      if (!placed && reader->partial_record().size() >= 4) {
        ASSERT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
        placed = true;
      }
    }
    EXPECT_EQ(dest, Record(30).substr(4, 30));
    EXPECT_THAT(records, ElementsAre("HEADTL"));
    EXPECT_EQ(reader->buffered_bytes(), 0u);
  }
}

TEST(RecordPlacementTest, BytesOfTheRangeAlreadyReceivedMoveToTheBuffer) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30));
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 4 + 14), &records).ok());
  std::string dest(30, '?');
  ASSERT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
  EXPECT_EQ(reader->partial_record(), "HEAD");
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(4 + 14), &records).ok());
  EXPECT_EQ(dest, Record(30).substr(4, 30));
  EXPECT_THAT(records, ElementsAre("HEADTL"));
}

TEST(RecordPlacementTest, RangeStartingBeyondTheBytesReceivedLeavesTheBytesBeforeItInTheRecord) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30));
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 4 + 2), &records).ok());
  std::string dest(10, '?');
  ASSERT_TRUE(reader->Place(8, absl::MakeSpan(dest)));
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(4 + 2), &records).ok());
  EXPECT_EQ(dest, Record(30).substr(8, 10));
  const std::string whole = Record(30);
  EXPECT_THAT(records, ElementsAre(whole.substr(0, 8) + whole.substr(18)));
}

TEST(RecordPlacementTest, DirectReadsFillTheRangeOneChunkAtATime) {
  auto framing = SmallFragments();
  const std::string whole = Record(30);
  const std::string wire = Framed(*framing, whole);
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  // The first fragment (4-byte header, 5 bytes: "HEADa").
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 9), &records).ok());
  std::string dest(30, '?');
  ASSERT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
  size_t pos = 9;
  int direct_reads = 0;
  while (records.empty()) {
    absl::Span<char> target = reader->DirectTarget();
    if (target.empty()) {  // a fragment header, or the tail: through Consume
      ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(pos, 1), &records).ok());
      ++pos;
      continue;
    }
    EXPECT_LE(target.size(), 5u) << "never past the fragment";
    wire.copy(target.data(), target.size(), pos);
    ASSERT_TRUE(reader->CommitDirect(target.size(), &records).ok());
    pos += target.size();
    ++direct_reads;
  }
  EXPECT_EQ(pos, wire.size());
  EXPECT_GT(direct_reads, 0);
  EXPECT_EQ(dest, whole.substr(4, 30));
  EXPECT_THAT(records, ElementsAre("HEADTL"));
}

TEST(RecordPlacementTest, DirectTargetIsEmptyWithoutARange) {
  auto framing = NewLengthPrefixFraming();
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  EXPECT_TRUE(reader->DirectTarget().empty());
  ASSERT_TRUE(reader->Consume(Framed(*framing, Record(30)).substr(0, 10), &records).ok());
  EXPECT_TRUE(reader->DirectTarget().empty());
}

TEST(RecordPlacementTest, RecordEndingInsideItsRangeIsDataLoss) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30));
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 8), &records).ok());
  std::string dest(100, '?');  // more than the record holds
  ASSERT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
  absl::Status s = reader->Consume(std::string_view(wire).substr(8), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("ended 32 bytes into the 100-byte range"));
  EXPECT_THAT(records, IsEmpty());
}

TEST(RecordPlacementTest, PlaceIsRefusedBetweenRecordsAndTwiceInOneRecord) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30));
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  std::string dest(30, '?');
  EXPECT_FALSE(reader->Place(4, absl::MakeSpan(dest)));
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 8), &records).ok());
  EXPECT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
  EXPECT_FALSE(reader->Place(4, absl::MakeSpan(dest)));
}

TEST(RecordPlacementTest, NextRecordIsReadWholeAfterAPlacedOne) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30)) + Framed(*framing, Record(3));
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 8), &records).ok());
  std::string dest(30, '?');
  ASSERT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(8), &records).ok());
  EXPECT_THAT(records, ElementsAre("HEADTL", Record(3)));
}

TEST(RecordPlacementTest, PlacedBytesCountTowardsTheMaximumRecordSize) {
  auto framing = NewRecordMarkingFraming({.max_record_size = 20, .max_fragment_size = 8});
  const std::string wire = Framed(*NewRecordMarkingFraming({.max_fragment_size = 8}), Record(30));
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 12), &records).ok());
  std::string dest(30, '?');
  ASSERT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
  absl::Status s = reader->Consume(std::string_view(wire).substr(12), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("exceeds the maximum record size of 20"));
}

TEST(RecordPlacementTest, HeaderDescribedFramingPlacesNothing) {
  auto framing = NewHeaderDescribedFraming([](std::string_view) -> absl::StatusOr<size_t> { return 4; });
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string("\0\0\0\x02hdbo", 8), &records).ok());
  std::string dest(2, '?');
  EXPECT_FALSE(reader->Place(0, absl::MakeSpan(dest)));
  EXPECT_TRUE(reader->DirectTarget().empty());
}

TEST(RecordPlacementTest, RangePlacedInAFileLandsAtItsFileOffsetWhateverTheSplit) {
  for (const auto& framing : {SmallFragments(), NewLengthPrefixFraming()}) {
    SCOPED_TRACE(framing->name());
    const std::string wire = Framed(*framing, Record(30));
    auto reader = framing->NewReader();
    MemFile file;
    std::vector<std::string> records;
    bool placed = false;
    for (char c : wire) {
      ASSERT_TRUE(reader->Consume(std::string_view(&c, 1), &records).ok());
      if (!placed && reader->partial_record().size() >= 6) {  // 2 bytes of the range in already
        ASSERT_TRUE(reader->PlaceInFile(4, {.fd = file.fd(), .offset = 100, .size = 30}));
        placed = true;
      }
    }
    EXPECT_EQ(file.Read(100, 30), Record(30).substr(4, 30));
    EXPECT_THAT(records, ElementsAre("HEADTL"));
    EXPECT_TRUE(reader->placement_status().ok()) << reader->placement_status();
  }
}

TEST(RecordPlacementTest, DirectFileOffersTheRangeAtItsFileOffsetOneChunkAtATime) {
  auto framing = SmallFragments();
  const std::string whole = Record(30);
  const std::string wire = Framed(*framing, whole);
  auto reader = framing->NewReader();
  MemFile file;
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 9), &records).ok());
  ASSERT_TRUE(reader->PlaceInFile(4, {.fd = file.fd(), .offset = 7, .size = 30}));
  EXPECT_TRUE(reader->DirectTarget().empty()) << "a file range is never offered as memory";
  size_t pos = 9;
  int direct_writes = 0;
  while (records.empty()) {
    const FileRange target = reader->DirectFile();
    if (target.fd < 0) {  // a fragment header, or the tail: through Consume
      ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(pos, 1), &records).ok());
      ++pos;
      continue;
    }
    EXPECT_LE(target.size, 5u) << "never past the fragment";
    ASSERT_EQ(::pwrite(target.fd, wire.data() + pos, target.size, target.offset),
              static_cast<ssize_t>(target.size));
    ASSERT_TRUE(reader->CommitDirect(target.size, &records).ok());
    pos += target.size;
    ++direct_writes;
  }
  EXPECT_GT(direct_writes, 0);
  EXPECT_EQ(file.Read(7, 30), whole.substr(4, 30));
  EXPECT_THAT(records, ElementsAre("HEADTL"));
}

TEST(RecordPlacementTest, FileThatRefusesWritesDropsTheRangeAndTheRecordStillCompletes) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30)) + Framed(*framing, Record(3));
  auto reader = framing->NewReader();
  const int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(read_only, 0);
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 10), &records).ok());
  ASSERT_TRUE(reader->PlaceInFile(4, {.fd = read_only, .offset = 0, .size = 30}));
  EXPECT_FALSE(reader->placement_status().ok());
  EXPECT_THAT(reader->placement_status().message(), HasSubstr("write at 0"));
  EXPECT_LT(reader->DirectFile().fd, 0) << "no more direct writes after a failed one";
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(10), &records).ok());
  EXPECT_THAT(records, ElementsAre("HEADTL", Record(3))) << "the stream stays in step";
  EXPECT_FALSE(reader->placement_status().ok()) << "told until the next placement";
  ::close(read_only);
}

TEST(RecordPlacementTest, FailPlacementIsReportedAndTheRestOfTheRangeIsDropped) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30));
  auto reader = framing->NewReader();
  MemFile file;
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 8), &records).ok());
  ASSERT_TRUE(reader->PlaceInFile(4, {.fd = file.fd(), .offset = 0, .size = 30}));
  const FileRange target = reader->DirectFile();
  ASSERT_GE(target.fd, 0);
  reader->FailPlacement(absl::ResourceExhaustedError("write at 0 of descriptor 9: disk full"));
  ASSERT_TRUE(reader->CommitDirect(10, &records).ok());
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(8 + 10), &records).ok());
  EXPECT_THAT(records, ElementsAre("HEADTL"));
  EXPECT_EQ(reader->placement_status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(file.Read(0, 30), "") << "nothing after the failure is written";
}

TEST(RecordPlacementTest, NextPlacementStartsWithAClearStatus) {
  auto framing = NewLengthPrefixFraming();
  const std::string wire = Framed(*framing, Record(30)) + Framed(*framing, Record(30));
  const size_t one = wire.size() / 2;
  auto reader = framing->NewReader();
  const int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(read_only, 0);
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(0, 8), &records).ok());
  ASSERT_TRUE(reader->PlaceInFile(4, {.fd = read_only, .offset = 0, .size = 30}));
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(8, one), &records).ok());
  ASSERT_FALSE(reader->placement_status().ok());
  std::string dest(30, '?');
  ASSERT_TRUE(reader->Place(4, absl::MakeSpan(dest)));
  EXPECT_TRUE(reader->placement_status().ok());
  ASSERT_TRUE(reader->Consume(std::string_view(wire).substr(one + 8), &records).ok());
  EXPECT_EQ(dest, Record(30).substr(4, 30));
  ::close(read_only);
}

}  // namespace
}  // namespace ferry
