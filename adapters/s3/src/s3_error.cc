// The S3 error table. Codes S3 documents as specific win over the HTTP
// status (S3 returns 403 for both AccessDenied and SignatureDoesNotMatch,
// which ferry tells apart); unknown codes fall back to the HTTP status.
#include "ferry/s3/s3_error.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/s3/s3_xml.h"

namespace ferry::s3 {

absl::StatusCode S3ErrorCodeToStatusCode(std::string_view c, long http_status) {
  using C = absl::StatusCode;
  if (c == "NoSuchKey" || c == "NoSuchBucket" || c == "NoSuchUpload" || c == "NotFound") {
    return C::kNotFound;
  }
  if (c == "AccessDenied" || c == "AllAccessDisabled" || c == "AccountProblem") {
    return C::kPermissionDenied;
  }
  if (c == "SignatureDoesNotMatch" || c == "InvalidAccessKeyId" || c == "ExpiredToken" ||
      c == "InvalidToken" || c == "TokenRefreshRequired" || c == "RequestTimeTooSkewed" ||
      c == "AuthorizationHeaderMalformed" || c == "MissingSecurityHeader" ||
      // versitygw's answer (404!) to an access key it does not know: an
      // authentication failure, not a missing object.
      c == "XAdminUserNotFound") {
    return C::kUnauthenticated;
  }
  if (c == "PreconditionFailed") return C::kFailedPrecondition;
  if (c == "SlowDown" || c == "ServiceUnavailable" || c == "InternalError" ||
      c == "RequestTimeout") {
    return C::kUnavailable;
  }
  if (c == "BucketAlreadyOwnedByYou" || c == "BucketAlreadyExists") return C::kAlreadyExists;
  if (c == "InvalidRange") return C::kOutOfRange;
  if (c == "InvalidDigest" || c == "BadDigest" || c == "IncompleteBody") return C::kDataLoss;
  if (c == "EntityTooSmall" || c == "EntityTooLarge" || c == "InvalidPart" ||
      c == "InvalidPartOrder" || c == "InvalidArgument" || c == "InvalidBucketName" ||
      c == "KeyTooLongError" || c == "MalformedXML") {
    return C::kInvalidArgument;
  }
  if (http_status == 404) return C::kNotFound;
  if (http_status == 403) return C::kPermissionDenied;
  if (http_status == 401) return C::kUnauthenticated;
  if (http_status == 412) return C::kFailedPrecondition;
  if (http_status == 416) return C::kOutOfRange;
  if (http_status == 409) return C::kAlreadyExists;
  if (http_status == 408 || http_status == 429 || http_status >= 500) return C::kUnavailable;
  if (http_status >= 400) return C::kInvalidArgument;
  return C::kUnknown;
}

absl::Status S3ErrorStatus(std::string_view operation, std::string_view resource,
                           long http_status, std::string_view body, std::string_view request_id) {
  std::string code = XmlText(body, "Code");
  std::string message = XmlText(body, "Message");
  std::string rid = XmlText(body, "RequestId");
  if (rid.empty()) rid = std::string(request_id);
  std::string text = absl::StrCat("S3 ", ToAbsl(operation), " ", ToAbsl(resource), ": ",
                                  code.empty() ? absl::StrCat("HTTP ", http_status) : code);
  if (!message.empty()) absl::StrAppend(&text, ": ", message);
  absl::StrAppend(&text, " (HTTP ", http_status);
  if (!rid.empty()) absl::StrAppend(&text, ", request id ", rid);
  absl::StrAppend(&text, ")");
  absl::Status status(S3ErrorCodeToStatusCode(code, http_status), text);
  if (!code.empty()) status.SetPayload(kS3ErrorCodePayload, absl::Cord(code));
  return status;
}

std::string S3ErrorCode(const absl::Status& status) {
  absl::optional<absl::Cord> p = status.GetPayload(kS3ErrorCodePayload);
  return p.has_value() ? std::string(*p) : std::string();
}

bool IsRetryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace ferry::s3
