// Length-prefix framing (framing.h, NewLengthPrefixFraming).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/rpc/framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Prefix(uint32_t length) {
  return {static_cast<char>(length >> 24), static_cast<char>(length >> 16),
          static_cast<char>(length >> 8), static_cast<char>(length)};
}

TEST(LengthPrefixTest, RecordIsPrefixedWithItsBigEndianLength) {
  std::string wire = "x";
  NewLengthPrefixFraming()->Append(std::string(258, 'a'), &wire);
  std::string expected = "x";
  expected += Prefix(258);
  expected.append(258, 'a');
  EXPECT_EQ(wire, expected);
  EXPECT_EQ(wire.substr(1, 4), std::string("\0\0\1\2", 4));
}

TEST(LengthPrefixTest, EmptyRecordsAreValid) {
  auto framing = NewLengthPrefixFraming();
  std::string wire;
  framing->Append("", &wire);
  framing->Append("a", &wire);
  EXPECT_EQ(wire, Prefix(0) + Prefix(1) + "a");
  auto reader = framing->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(wire, &records).ok());
  EXPECT_THAT(records, ElementsAre("", "a"));
}

TEST(LengthPrefixTest, BufferedBytesCountsAPartialRecord) {
  auto reader = NewLengthPrefixFraming()->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(Prefix(5).substr(0, 3), &records).ok());
  EXPECT_EQ(reader->buffered_bytes(), 3u);
  ASSERT_TRUE(reader->Consume(Prefix(5).substr(3) + "abc", &records).ok());
  EXPECT_EQ(reader->buffered_bytes(), 7u);
  ASSERT_TRUE(reader->Consume("de", &records).ok());
  EXPECT_THAT(records, ElementsAre("abcde"));
  EXPECT_EQ(reader->buffered_bytes(), 0u);
}

TEST(LengthPrefixTest, OversizeRecordIsRejectedWhenItsPrefixArrives) {
  auto reader = NewLengthPrefixFraming(100)->NewReader();
  std::vector<std::string> records;
  absl::Status s = reader->Consume(Prefix(101), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("record of 101 bytes exceeds the maximum record size of 100"));
  EXPECT_EQ(reader->Consume(Prefix(1) + "a", &records), s);
  EXPECT_TRUE(records.empty());
}

TEST(LengthPrefixTest, RecordOfExactlyTheMaximumIsAccepted) {
  auto reader = NewLengthPrefixFraming(100)->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(Prefix(100) + std::string(100, 'q'), &records).ok());
  ASSERT_EQ(records.size(), 1u);
}

TEST(LengthPrefixTest, NameIsLengthPrefix) {
  EXPECT_EQ(NewLengthPrefixFraming()->name(), "length-prefix");
}

}  // namespace
}  // namespace ferry
