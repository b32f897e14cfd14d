#include "ferry/s3/http_header_lines.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "ferry/base/strings.h"

namespace ferry::s3 {

long ParseHttpStatusCode(std::string_view status_line) {
  const size_t space = status_line.find(' ');
  if (space == std::string_view::npos) return 0;
  const std::string_view code = status_line.substr(space + 1, 3);
  // Exactly three digits, the first not 0 (RFC 9110 15): SimpleAtoi would
  // take " 20", "+20" or "-99" too.
  if (code.size() != 3 || code[0] < '1' || code[0] > '9' || !absl::ascii_isdigit(code[1]) ||
      !absl::ascii_isdigit(code[2])) {
    return 0;
  }
  return (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
}

HeaderLine ReadHeaderLine(std::string_view line, bool head_request, ReplyHead* head) {
  const absl::string_view text = ToAbsl(line);
  if (absl::StartsWith(text, "HTTP/")) {
    head->headers.clear();
    head->status = ParseHttpStatusCode(line);
    head->content_length = -1;
    return HeaderLine::kStatus;
  }
  if (absl::StripAsciiWhitespace(text).empty()) return HeaderLine::kEnd;
  const size_t colon = text.find(':');
  if (colon == absl::string_view::npos) return HeaderLine::kOther;
  std::string name = absl::AsciiStrToLower(text.substr(0, colon));
  const absl::string_view value = absl::StripAsciiWhitespace(text.substr(colon + 1));
  int64_t len = 0;
  if (name == "content-length" && !head_request && absl::SimpleAtoi(value, &len) && len >= 0) {
    head->content_length = len;
  }
  head->headers.emplace_back(std::move(name), std::string(value));
  return HeaderLine::kField;
}

}  // namespace ferry::s3
