// Fetching AWS credentials from one AwsCredentialSource: the STS calls
// (AssumeRole, AssumeRoleWithWebIdentity), the container and IMDSv2
// endpoints, and credential_process. Blocking: each call is a one-off HTTP
// exchange (curl easy) or a child process, run on the Runtime's blocking
// pool by CredentialsProvider, never on an I/O thread.
//
//   absl::StatusOr<AwsCredentials> c = FetchCredentials(source, {.ca_bundle_path = ca});
#ifndef FERRY_S3_CREDENTIAL_FETCH_H_
#define FERRY_S3_CREDENTIAL_FETCH_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/s3/aws_credentials.h"

namespace ferry::s3 {

struct CredentialFetchOptions {
  std::string ca_bundle_path;  // for HTTPS STS / container endpoints; empty: system store
  // Per HTTP exchange. IMDS and container endpoints answer in milliseconds
  // where they exist (botocore waits 1 s for IMDS), STS may take longer.
  absl::Duration metadata_timeout = absl::Seconds(1);
  absl::Duration sts_timeout = absl::Seconds(10);
};

// The credentials `source` gives now. Errors name the source and what to
// check: Unauthenticated (STS or the endpoint refused), Unavailable (could
// not reach it), InvalidArgument (a malformed answer or token file).
// kStatic returns source.keys; kAnonymous empty keys.
absl::StatusOr<AwsCredentials> FetchCredentials(const AwsCredentialSource& source,
                                                const CredentialFetchOptions& options);

// Readers of the answers, exposed for tests.
// credential_process / container / IMDS JSON: AccessKeyId, SecretAccessKey,
// Token or SessionToken, Expiration (RFC 3339).
absl::StatusOr<AwsCredentials> ParseCredentialsJson(std::string_view json, std::string_view what);
// An STS AssumeRole(WithWebIdentity)Response's <Credentials>.
absl::StatusOr<AwsCredentials> ParseStsCredentials(std::string_view xml, std::string_view what);

}  // namespace ferry::s3

#endif  // FERRY_S3_CREDENTIAL_FETCH_H_
