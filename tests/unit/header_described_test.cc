// Header-described framing (iRODS's shape): a length-prefixed header that
// says how long the body is.
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/xdr.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A toy header: the body's length as decimal text ("<len>").
absl::StatusOr<size_t> DecimalBodyLength(std::string_view header) {
  size_t n = 0;
  if (!absl::SimpleAtoi(absl::string_view(header.data(), header.size()), &n)) {
    return absl::InvalidArgumentError(absl::StrCat("bad header '", absl::string_view(header.data(), header.size()), "'"));
  }
  return n;
}

std::string Frame(std::string_view body) {
  const std::string header = absl::StrCat(body.size());
  char prefix[4];
  xdr_internal::StoreBigEndian32(static_cast<uint32_t>(header.size()), prefix);
  return absl::StrCat(absl::string_view(prefix, 4), header, absl::string_view(body.data(), body.size()));
}

TEST(HeaderDescribedFramingTest, ReadsWholeFramesHoweverTheStreamIsSplit) {
  auto framing = NewHeaderDescribedFraming(DecimalBodyLength);
  const std::string stream = Frame("hello") + Frame("") + Frame(std::string(3000, 'x'));
  for (size_t step : {size_t{1}, size_t{3}, size_t{7}, stream.size()}) {
    auto reader = framing->NewReader();
    std::vector<std::string> records;
    for (size_t i = 0; i < stream.size(); i += step) {
      ASSERT_TRUE(reader->Consume(std::string_view(stream).substr(i, step), &records).ok());
    }
    EXPECT_THAT(records, ElementsAre(Frame("hello"), Frame(""), Frame(std::string(3000, 'x'))))
        << "step " << step;
    EXPECT_EQ(reader->buffered_bytes(), 0u);
  }
}

TEST(HeaderDescribedFramingTest, AppendWritesTheRecordAsGiven) {
  auto framing = NewHeaderDescribedFraming(DecimalBodyLength);
  std::string out = "x";
  framing->Append(Frame("abc"), &out);
  EXPECT_EQ(out, absl::StrCat("x", Frame("abc")));
}

TEST(HeaderDescribedFramingTest, MalformedHeaderIsStickyDataLoss) {
  auto reader = NewHeaderDescribedFraming(DecimalBodyLength)->NewReader();
  std::vector<std::string> records;
  const std::string bad = std::string("\0\0\0\3", 4) + "abc";
  absl::Status s = reader->Consume(bad, &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("bad header 'abc'"));
  EXPECT_EQ(reader->Consume(Frame("ok"), &records).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(records.empty());
}

TEST(HeaderDescribedFramingTest, OversizedHeaderOrBodyIsRefusedBeforeBuffering) {
  auto framing = NewHeaderDescribedFraming(DecimalBodyLength,
                                           {.max_header_size = 8, .max_body_size = 100});
  std::vector<std::string> records;
  auto reader = framing->NewReader();
  EXPECT_EQ(reader->Consume(std::string("\0\0\1\0", 4), &records).code(),
            absl::StatusCode::kDataLoss);  // a 256-byte header
  reader = framing->NewReader();
  absl::Status s = reader->Consume(Frame(std::string(101, 'y')).substr(0, 10), &records);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("101 bytes"));
  reader = framing->NewReader();
  EXPECT_EQ(reader->Consume(std::string(4, '\0'), &records).code(),
            absl::StatusCode::kDataLoss);  // an empty header
}

TEST(HeaderDescribedFramingTest, ATruncatedFrameLeavesBufferedBytes) {
  auto reader = NewHeaderDescribedFraming(DecimalBodyLength)->NewReader();
  std::vector<std::string> records;
  const std::string f = Frame("0123456789");
  ASSERT_TRUE(reader->Consume(std::string_view(f).substr(0, f.size() - 3), &records).ok());
  EXPECT_TRUE(records.empty());
  EXPECT_EQ(reader->buffered_bytes(), f.size() - 3);
}

}  // namespace
}  // namespace ferry
