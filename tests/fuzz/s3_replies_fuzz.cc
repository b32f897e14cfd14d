// Fuzzes the S3 adapter's readers of reply bodies: ListObjectsV2,
// ListBuckets, error bodies, Initiate/Complete multipart, CopyObject /
// UploadPartCopy, ListMultipartUploads, ListParts, and the tag scanner
// and entity decoder under them (s3_xml.h).
//
// The first byte picks the reply, the rest is its body. Whatever the
// bytes: each reader answers a value or DataLoss (a 200 reply carrying an
// <Error> answers that error's code), every element view lies inside the
// body, sizes are never negative, an error Status always names the
// operation, and escaping then unescaping any text gives it back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "ferry/s3/s3_error.h"
#include "ferry/s3/s3_replies.h"
#include "ferry/s3/s3_xml.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;
using ferry::fuzz::CheckInside;
namespace s3 = ferry::s3;

bool Contains(absl::string_view text, std::string_view part) {
  return absl::StrContains(text, absl::string_view(part.data(), part.size()));
}

template <typename T>
void Judge(const absl::StatusOr<T>& r, std::string_view operation) {
  if (r.ok()) return;
  Check(Contains(r.status().message(), operation));
}

void Scan(std::string_view body, std::string_view tag) {
  for (std::string_view e : s3::XmlElements(body, tag)) CheckInside(body, e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0];
  const std::string copy(reinterpret_cast<const char*>(data) + 1, size - 1);  // exact size for ASan
  const std::string_view body(copy);
  switch (which % 10) {
    case 0: {
      absl::StatusOr<s3::ListObjectsPage> page = s3::ParseListObjectsV2Reply(body);
      Judge(page, "ListObjectsV2");
      if (page.ok()) {
        for (const s3::ListedObject& o : page->objects) Check(o.size >= 0);
      } else {
        Check(page.status().code() == absl::StatusCode::kDataLoss);
      }
      break;
    }
    case 1: (void)s3::ParseListBucketsReply(body); break;
    case 2: {
      const absl::Status s = s3::S3ErrorStatus("GetObject", "b/k", 404, body, "rid");
      Check(!s.ok() && Contains(s.message(), "GetObject b/k"));
      Check(s3::S3ErrorCode(s) == s3::XmlText(body, "Code"));
      break;
    }
    case 3: Judge(s3::ParseInitiateMultipartReply(body), "CreateMultipartUpload"); break;
    case 4: Judge(s3::ParseCompleteMultipartReply(body), "CompleteMultipartUpload"); break;
    case 5: Judge(s3::ParseCopyReply("UploadPartCopy", "b/k", body), "UploadPartCopy"); break;
    case 6: (void)s3::ParseListMultipartUploadsReply(body); break;
    case 7: {
      absl::StatusOr<s3::ListPartsPage> page = s3::ParseListPartsReply("b/k", body);
      Judge(page, "ListParts");
      if (page.ok()) {
        for (const s3::UploadedPartInfo& p : page->parts) Check(p.size >= 0);
      }
      break;
    }
    case 8: {
      Scan(body, "Contents");
      Scan(body, "Key");
      Scan(body, "Error");
      (void)s3::XmlUnescape(body);
      break;
    }
    case 9: {
      Check(s3::XmlUnescape(s3::XmlEscape(body)) == body);
      break;
    }
  }
  return 0;
}
