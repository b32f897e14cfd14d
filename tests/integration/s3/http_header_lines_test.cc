// Reading an HTTP reply's header lines as curl hands them over
// (http_header_lines.h).
#include "ferry/s3/http_header_lines.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(HttpHeaderLines, ReadsStatusFieldsAndTheEnd) {
  ReplyHead head;
  EXPECT_EQ(ReadHeaderLine("HTTP/1.1 206 Partial Content\r\n", false, &head), HeaderLine::kStatus);
  EXPECT_EQ(ReadHeaderLine("Content-Length:  42 \r\n", false, &head), HeaderLine::kField);
  EXPECT_EQ(ReadHeaderLine("ETag: \"e\"\r\n", false, &head), HeaderLine::kField);
  EXPECT_EQ(ReadHeaderLine("no colon here\r\n", false, &head), HeaderLine::kOther);
  EXPECT_EQ(ReadHeaderLine("\r\n", false, &head), HeaderLine::kEnd);
  EXPECT_EQ(head.status, 206);
  EXPECT_EQ(head.content_length, 42);
  EXPECT_THAT(head.headers, ElementsAre(Pair("content-length", "42"), Pair("etag", "\"e\"")));
}

TEST(HttpHeaderLines, AStatusLineStartsAFreshReply) {
  ReplyHead head;
  ReadHeaderLine("HTTP/1.1 100 Continue\r\n", false, &head);
  ReadHeaderLine("X-Interim: 1\r\n", false, &head);
  ReadHeaderLine("HTTP/1.1 200 OK\r\n", false, &head);
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.headers.empty());
  EXPECT_EQ(head.content_length, -1);
}

TEST(HttpHeaderLines, AHeadRepliesContentLengthAnnouncesNoBody) {
  ReplyHead head;
  ReadHeaderLine("HTTP/1.1 200 OK\r\n", true, &head);
  ReadHeaderLine("Content-Length: 42\r\n", true, &head);
  EXPECT_EQ(head.content_length, -1);
  EXPECT_THAT(head.headers, ElementsAre(Pair("content-length", "42")));
}

TEST(HttpHeaderLines, ANegativeOrJunkContentLengthIsNone) {
  for (const char* line : {"Content-Length: -5\r\n", "Content-Length: 1e3\r\n",
                           "Content-Length: 99999999999999999999\r\n"}) {
    ReplyHead head;
    ReadHeaderLine(line, false, &head);
    EXPECT_EQ(head.content_length, -1) << line;
  }
}

TEST(HttpHeaderLines, StatusCodeIsThreeDigitsFrom100) {
  EXPECT_EQ(ParseHttpStatusCode("HTTP/1.1 404 Not Found"), 404);
  EXPECT_EQ(ParseHttpStatusCode("HTTP/2 200"), 200);
  EXPECT_EQ(ParseHttpStatusCode("HTTP/1.1 -99 x"), 0);
  EXPECT_EQ(ParseHttpStatusCode("HTTP/1.1 +20 x"), 0);
  EXPECT_EQ(ParseHttpStatusCode("HTTP/1.1 099 x"), 0);
  EXPECT_EQ(ParseHttpStatusCode("HTTP/1.1 20"), 0);
  EXPECT_EQ(ParseHttpStatusCode("HTTP/1.1"), 0);
}

}  // namespace
}  // namespace ferry::s3
