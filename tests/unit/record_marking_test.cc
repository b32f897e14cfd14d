// Record marking framing (framing.h, NewRecordMarkingFraming).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ferry/rpc/framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Header(uint32_t length, bool last) {
  const uint32_t v = length | (last ? 0x80000000u : 0);
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::unique_ptr<Framing> MakeFraming(size_t max_record, size_t max_fragment) {
  return NewRecordMarkingFraming({.max_record_size = max_record, .max_fragment_size = max_fragment});
}

TEST(RecordMarkingTest, SmallRecordIsOneLastFragment) {
  std::string wire;
  NewRecordMarkingFraming({})->Append("hello", &wire);
  EXPECT_EQ(wire, Header(5, true) + "hello");
}

TEST(RecordMarkingTest, WriterSplitsAtMaxFragmentSize) {
  std::string wire = "prefix";
  MakeFraming(1 << 20, 4)->Append("abcdefghij", &wire);
  EXPECT_EQ(wire, "prefix" + Header(4, false) + "abcd" + Header(4, false) + "efgh" +
                      Header(2, true) + "ij");
}

TEST(RecordMarkingTest, RecordOfExactlyOneFragmentSizeIsOneFragment) {
  std::string wire;
  MakeFraming(1 << 20, 4)->Append("abcd", &wire);
  EXPECT_EQ(wire, Header(4, true) + "abcd");
}

TEST(RecordMarkingTest, ReaderReassemblesMultiFragmentRecords) {
  auto reader = NewRecordMarkingFraming({})->NewReader();
  const std::string wire = Header(3, false) + "abc" + Header(2, false) + "de" + Header(1, true) +
                           "f" + Header(2, true) + "gh";
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(wire, &records).ok());
  EXPECT_THAT(records, ElementsAre("abcdef", "gh"));
  EXPECT_EQ(reader->buffered_bytes(), 0u);
}

TEST(RecordMarkingTest, ZeroLengthLastFragmentEndsARecord) {
  auto reader = NewRecordMarkingFraming({})->NewReader();
  const std::string wire = Header(3, false) + "abc" + Header(0, false) + Header(0, true);
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(wire, &records).ok());
  EXPECT_THAT(records, ElementsAre("abc"));
}

TEST(RecordMarkingTest, EmptyRecordIsDataLoss) {
  auto reader = NewRecordMarkingFraming({})->NewReader();
  std::vector<std::string> records;
  absl::Status s = reader->Consume(Header(0, true), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("empty record"));
}

TEST(RecordMarkingTest, BufferedBytesCountsAPartialRecord) {
  auto reader = NewRecordMarkingFraming({})->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(Header(4, false).substr(0, 2), &records).ok());
  EXPECT_EQ(reader->buffered_bytes(), 2u);
  ASSERT_TRUE(reader->Consume(Header(4, false).substr(2) + "abcd" + Header(6, true) + "ef",
                              &records).ok());
  EXPECT_TRUE(records.empty());
  EXPECT_EQ(reader->buffered_bytes(), 14u);  // two headers and six bytes of data
  ASSERT_TRUE(reader->Consume("ghij", &records).ok());
  EXPECT_THAT(records, ElementsAre("abcdefghij"));
  EXPECT_EQ(reader->buffered_bytes(), 0u);
}

TEST(RecordMarkingTest, OversizeFragmentIsRejectedWhenItsHeaderArrives) {
  auto reader = MakeFraming(100, 1 << 20)->NewReader();
  std::vector<std::string> records;
  absl::Status s = reader->Consume(Header(101, true), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("record of at least 101 bytes"));
  EXPECT_THAT(s.message(), HasSubstr("maximum record size of 100 bytes"));
}

TEST(RecordMarkingTest, OversizeMultiFragmentRecordIsRejected) {
  auto reader = MakeFraming(100, 1 << 20)->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(Header(60, false) + std::string(60, 'a'), &records).ok());
  absl::Status s = reader->Consume(Header(41, true), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("a fragment of 41 bytes after 60"));
}

TEST(RecordMarkingTest, RecordOfExactlyTheMaximumIsAccepted) {
  auto reader = MakeFraming(100, 1 << 20)->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(Header(60, false) + std::string(60, 'a') + Header(40, true) +
                                  std::string(40, 'b'),
                              &records).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].size(), 100u);
}

TEST(RecordMarkingTest, ErrorsAreStickyButEarlierRecordsAreDelivered) {
  auto reader = MakeFraming(10, 1 << 20)->NewReader();
  std::vector<std::string> records;
  absl::Status s = reader->Consume(Header(2, true) + "ok" + Header(11, true), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(records, ElementsAre("ok"));
  EXPECT_EQ(reader->Consume(Header(1, true) + "z", &records), s);
  EXPECT_EQ(records.size(), 1u);
}

// A Framing is shared by every connection of a pool.
TEST(RecordMarkingTest, OneFramingServesSeveralThreadsAtOnce) {
  const std::shared_ptr<const Framing> framing = MakeFraming(1 << 20, 7);
  auto work = [&framing](char c) {
    const std::string record(100, c);
    std::string wire;
    for (int i = 0; i < 50; ++i) framing->Append(record, &wire);
    auto reader = framing->NewReader();
    std::vector<std::string> records;
    EXPECT_TRUE(reader->Consume(wire, &records).ok());
    EXPECT_EQ(records, std::vector<std::string>(50, record));
  };
  std::thread a(work, 'a');
  std::thread b(work, 'b');
  a.join();
  b.join();
}

TEST(RecordMarkingTest, NameIsRecordMarking) {
  EXPECT_EQ(NewRecordMarkingFraming({})->name(), "record-marking");
}

}  // namespace
}  // namespace ferry
