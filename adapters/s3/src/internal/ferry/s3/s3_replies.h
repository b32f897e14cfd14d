// The readers of S3's reply bodies and headers, one per operation, apart
// from the requests that get them: S3ObjectStore sends, these decide what
// a reply says. Pure functions over bytes from the server, so each is
// unit-tested and fuzzed (tests/fuzz/s3_replies_fuzz.cc) without a peer.
// A reply that cannot be right (a listing entry without a size, a
// negative size, a truncated page that says not where to go on) is
// DataLoss naming the operation.
//
// Thread-safety: pure functions.
#ifndef FERRY_S3_S3_REPLIES_H_
#define FERRY_S3_S3_REPLIES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/s3/s3_object_store.h"

namespace ferry::s3 {

// "Sun, 06 Nov 1994 08:49:37 GMT" (Last-Modified); InfinitePast if absent
// or unreadable.
absl::Time ParseHttpDate(const std::string* value);
// "2009-10-12T17:50:30.000Z" (a listing's LastModified); InfinitePast if
// unreadable.
absl::Time ParseIsoDate(const std::string& value);

// HeadObject's headers (names lower-case): size, ETag, Last-Modified.
absl::StatusOr<ObjectInfo> ParseHeadObjectReply(
    const std::vector<std::pair<std::string, std::string>>& headers);

// A 206 reply's Content-Range ("bytes FIRST-LAST/SIZE", SIZE may be "*";
// null: none sent) against the `offset` its GET asked from: DataLoss if it
// is unreadable or its range starts elsewhere (its bytes belong at another
// place of the object). A reply without one is taken to start at
// `offset`; its body's length is the caller's to check.
absl::Status CheckContentRangeStart(const std::string* content_range, int64_t offset);

// ListObjectsV2Result.
absl::StatusOr<ListObjectsPage> ParseListObjectsV2Reply(std::string_view body);

// ListAllMyBucketsResult: the bucket names.
std::vector<std::string> ParseListBucketsReply(std::string_view body);

// InitiateMultipartUploadResult: the UploadId.
absl::StatusOr<std::string> ParseInitiateMultipartReply(std::string_view body);

// CompleteMultipartUploadResult (a 200 reply may carry an <Error>): the ETag.
absl::StatusOr<std::string> ParseCompleteMultipartReply(std::string_view body);

// CopyObjectResult / CopyPartResult of `operation` on `resource` (a 200
// reply may carry an <Error>): the ETag.
absl::StatusOr<std::string> ParseCopyReply(std::string_view operation, std::string_view resource,
                                           std::string_view body);

// One page of ListMultipartUploadsResult.
struct ListUploadsPage {
  std::vector<MultipartUploadInfo> uploads;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};
ListUploadsPage ParseListMultipartUploadsReply(std::string_view body);

// One page of ListPartsResult; `resource` names the upload in messages.
struct ListPartsPage {
  std::vector<UploadedPartInfo> parts;
  bool truncated = false;
  int next_marker = 0;  // when truncated
};
absl::StatusOr<ListPartsPage> ParseListPartsReply(std::string_view resource, std::string_view body);

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_REPLIES_H_
