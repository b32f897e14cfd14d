// What every Framing (framing.h) promises: records appended to one stream
// come out of a reader as they went in, however the stream is split.
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/rpc/framing.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

struct FramingCase {
  const char* name;
  std::function<std::unique_ptr<Framing>()> make;
  // A stream's worth of records, as the framing allows them (record
  // marking has no empty records).
  std::vector<std::string> records;
};

void PrintTo(const FramingCase& c, std::ostream* os) { *os << c.name; }

class FramingTest : public ::testing::TestWithParam<FramingCase> {
 protected:
  void SetUp() override {
    framing_ = GetParam().make();
    for (const std::string& r : GetParam().records) framing_->Append(r, &wire_);
  }

  const std::vector<std::string>& sent() const { return GetParam().records; }

  std::unique_ptr<Framing> framing_;
  std::string wire_;  // every record of the case, appended in order
};

TEST_P(FramingTest, ReaderSplitsConcatenatedRecords) {
  auto reader = framing_->NewReader();
  std::vector<std::string> records;
  ASSERT_TRUE(reader->Consume(wire_, &records).ok());
  EXPECT_EQ(records, sent());
  EXPECT_EQ(reader->buffered_bytes(), 0u);
}

TEST_P(FramingTest, ByteByByteFeedingYieldsTheSameRecords) {
  auto reader = framing_->NewReader();
  std::vector<std::string> records;
  for (char c : wire_) ASSERT_TRUE(reader->Consume(std::string_view(&c, 1), &records).ok());
  EXPECT_EQ(records, sent());
  EXPECT_EQ(reader->buffered_bytes(), 0u);
}

TEST_P(FramingTest, EverySplitOfTheStreamYieldsTheSameRecords) {
  for (size_t cut = 0; cut <= wire_.size(); ++cut) {
    auto reader = framing_->NewReader();
    std::vector<std::string> records;
    ASSERT_TRUE(reader->Consume(std::string_view(wire_).substr(0, cut), &records).ok());
    ASSERT_TRUE(reader->Consume(std::string_view(wire_).substr(cut), &records).ok());
    EXPECT_EQ(records, sent()) << cut;
  }
}

TEST_P(FramingTest, GatherPiecesSendWhatAppendSends) {
  std::string framing_bytes;
  std::vector<WirePiece> pieces;
  for (const std::string& r : sent()) framing_->AppendPieces(r, &framing_bytes, &pieces);
  std::string gathered;
  for (const WirePiece& p : pieces) {
    gathered.append(framing_bytes, p.offset, p.size);
    gathered.append(p.body);
  }
  EXPECT_EQ(gathered, wire_);
}

TEST_P(FramingTest, GatherPiecesOfARecordInPartsSendWhatAppendSends) {
  // Every record cut into three parts (some empty) at every pair of points.
  for (const std::string& r : sent()) {
    std::string whole;
    framing_->Append(r, &whole);
    for (size_t a = 0; a <= r.size(); a += std::max<size_t>(1, r.size() / 7)) {
      for (size_t b = a; b <= r.size(); b += std::max<size_t>(1, r.size() / 5)) {
        const std::string_view v(r);
        const std::string_view parts[] = {v.substr(0, a), v.substr(a, b - a), v.substr(b)};
        std::string framing_bytes;
        std::vector<WirePiece> pieces;
        framing_->AppendPieces(parts, &framing_bytes, &pieces);
        std::string gathered;
        for (const WirePiece& p : pieces) {
          gathered.append(framing_bytes, p.offset, p.size);
          gathered.append(p.body);
        }
        ASSERT_EQ(gathered, whole) << a << " " << b;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Framings, FramingTest,
    ::testing::Values(
        FramingCase{"LengthPrefix", [] { return NewLengthPrefixFraming(); },
                    {"alpha", "", std::string(300, 'b'), "z"}},
        FramingCase{"RecordMarking", [] { return NewRecordMarkingFraming({}); },
                    {"abcdefg", "hi", std::string(300, 'b'), "jklm"}},
        // Fragments of at most 5 bytes: records cross fragment boundaries.
        FramingCase{"RecordMarkingInSmallFragments",
                    [] { return NewRecordMarkingFraming({.max_fragment_size = 5}); },
                    {"first record", "x", std::string(23, 'y'), "last"}}),
    [](const ::testing::TestParamInfo<FramingCase>& p) { return p.param.name; });

}  // namespace
}  // namespace ferry
