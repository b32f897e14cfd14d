// The reading of an HTTP reply's header lines as libcurl hands them over
// (CURLOPT_HEADERFUNCTION: one line per call, CRLF included, a status line
// for every reply of an attempt, 1xx interim ones too). Apart from the
// engine so the bytes a server sends are unit-tested and fuzzed
// (tests/fuzz/http_header_fuzz.cc) without a socket.
//
// Thread-safety: pure functions.
#ifndef FERRY_S3_HTTP_HEADER_LINES_H_
#define FERRY_S3_HTTP_HEADER_LINES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::s3 {

// What a reply's header lines have said so far.
struct ReplyHead {
  long status = 0;              // from the status line; 0 if unreadable
  int64_t content_length = -1;  // -1: none announced (or a HEAD reply's)
  // Names lower-cased, values trimmed; in the order received.
  std::vector<std::pair<std::string, std::string>> headers;
};

enum class HeaderLine {
  kStatus,  // "HTTP/...": a new reply starts; `head` was reset
  kEnd,     // the blank line after the headers
  kField,   // "Name: value", added to `head`
  kOther,   // no colon: ignored
};

// Reads one line into `head`. `head_request`: the reply to a HEAD, whose
// Content-Length describes a body that is not sent.
HeaderLine ReadHeaderLine(std::string_view line, bool head_request, ReplyHead* head);

// "HTTP/1.1 206 Partial Content" -> 206; 0 if there is no three-digit code
// (100..999).
long ParseHttpStatusCode(std::string_view status_line);

}  // namespace ferry::s3

#endif  // FERRY_S3_HTTP_HEADER_LINES_H_
