// S3 error replies as ferry Statuses.
//
// An S3 error body (<Error><Code>NoSuchKey</Code><Message>...</Message>
// <RequestId>...</RequestId></Error>) becomes a Status whose code follows
// ferry's table and whose message names the operation, the resource, the S3
// code, S3's message, the HTTP status and the request id:
//
//   "S3 GetObject bucket/key: NoSuchKey: The specified key does not exist.
//    (HTTP 404, request id 17A...)"
//
// The S3 code is also attached as a payload, read back with S3ErrorCode().
#ifndef FERRY_S3_S3_ERROR_H_
#define FERRY_S3_S3_ERROR_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace ferry::s3 {

// Status payload type URL holding the S3 error code.
inline constexpr char kS3ErrorCodePayload[] = "ferry.s3/error-code";

// The ferry code for S3 error `s3_code` at HTTP `http_status`; `s3_code`
// may be empty (HEAD replies carry no body), then the HTTP status decides.
absl::StatusCode S3ErrorCodeToStatusCode(std::string_view s3_code, long http_status);

// The Status for a non-2xx reply. `body` is the reply body (may be empty),
// `request_id` the x-amz-request-id header (used when the body has none).
absl::Status S3ErrorStatus(std::string_view operation, std::string_view resource,
                           long http_status, std::string_view body, std::string_view request_id);

// The S3 code carried by `status`, or "" if it carries none.
std::string S3ErrorCode(const absl::Status& status);

// True for errors worth retrying: Unavailable (5xx, SlowDown, connection
// refused/reset) and DeadlineExceeded.
bool IsRetryable(const absl::Status& status);

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_ERROR_H_
