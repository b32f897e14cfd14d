// Fuzzes the reading of HTTP reply header lines (http_header_lines.h), as
// libcurl hands them to the S3 engine: one line per call.
//
// The first byte says whether the request was a HEAD; the rest is cut
// into lines at '\n' (kept, as curl keeps CRLF). Whatever the bytes: the
// status is 0 or a three-digit code, Content-Length is -1 or what a
// content-length field said (never for a HEAD), names are lower-case
// and values trimmed, and a status line starts a fresh reply. The
// headers then go to HeadObject's reader (s3_replies.h), whose size is
// never negative.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "ferry/s3/http_header_lines.h"
#include "ferry/s3/s3_replies.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;
namespace s3 = ferry::s3;

bool Trimmed(std::string_view v) {
  return v.empty() || (!absl::ascii_isspace(static_cast<unsigned char>(v.front())) &&
                       !absl::ascii_isspace(static_cast<unsigned char>(v.back())));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool head_request = data[0] & 1;
  const std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  s3::ReplyHead head;
  size_t pos = 0;
  while (pos < all.size()) {
    const size_t nl = all.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? all.size() : nl + 1;
    const std::string line(all.substr(pos, end - pos));  // exact size for ASan
    pos = end;
    const size_t before = head.headers.size();
    const s3::HeaderLine kind = s3::ReadHeaderLine(line, head_request, &head);
    Check(head.status == 0 || (head.status >= 100 && head.status <= 999));
    Check(head.content_length >= -1);
    if (head_request) Check(head.content_length == -1);
    switch (kind) {
      case s3::HeaderLine::kStatus:
        Check(head.headers.empty() && head.content_length == -1);
        Check(head.status == s3::ParseHttpStatusCode(line));
        break;
      case s3::HeaderLine::kField: {
        Check(head.headers.size() == before + 1);
        const auto& [name, value] = head.headers.back();
        Check(name == absl::AsciiStrToLower(name));
        Check(Trimmed(value));
        break;
      }
      case s3::HeaderLine::kEnd:
      case s3::HeaderLine::kOther:
        Check(head.headers.size() == before);
        break;
    }
  }
  absl::StatusOr<ferry::ObjectInfo> info = s3::ParseHeadObjectReply(head.headers);
  if (info.ok()) {
    Check(info->size >= 0);
  } else {
    Check(info.status().code() == absl::StatusCode::kDataLoss);
  }
  return 0;
}
