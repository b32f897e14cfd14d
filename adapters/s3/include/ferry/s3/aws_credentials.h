// AwsCredentials and AwsCredentialSource: the keys a request is signed
// with, and where they come from, as botocore's credential chain finds
// them (S3Config::FromEnvironment picks the source; the S3 store fetches
// and refreshes what it names).
//
//   AwsCredentialSource imds{.kind = AwsCredentialSource::Kind::kInstanceMetadata,
//                            .description = "EC2 instance role (IMDSv2)",
//                            .endpoint = "http://169.254.169.254"};
#ifndef FERRY_S3_AWS_CREDENTIALS_H_
#define FERRY_S3_AWS_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/time/time.h"

namespace ferry::s3 {

// A plain value; copyable, thread-compatible.
struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none
  // When temporary credentials stop working; InfiniteFuture for keys that
  // do not expire.
  absl::Time expiration = absl::InfiniteFuture();
};

// One link of the chain: what to ask for credentials. A plain value;
// copyable, thread-compatible.
struct AwsCredentialSource {
  enum class Kind {
    // The keys of S3Config (access_key_id, secret_access_key, session_token):
    // environment, shared files, S3_AUTH_FILE, or set by the caller.
    kStatic,
    // Requests are sent unsigned (public buckets; --no-sign-request).
    kAnonymous,
    // `command` run by /bin/sh; prints botocore's credential_process JSON.
    kProcess,
    // STS AssumeRole of `role_arn`, signed with what `source` gives.
    kAssumeRole,
    // STS AssumeRoleWithWebIdentity of `role_arn` with the token in
    // `web_identity_token_file` (EKS, GitHub Actions).
    kWebIdentity,
    // The ECS/EKS container credentials endpoint `endpoint`, with the
    // Authorization `authorization_token` or the contents of
    // `authorization_token_file` when set.
    kContainer,
    // IMDSv2 at `endpoint`: a token PUT, then the instance role's keys.
    kInstanceMetadata,
    // IAM Identity Center (SSO): the role `sso_role_name` of account
    // `sso_account_id`, asked of the SSO portal `endpoint` with the access
    // token `aws sso login` cached in `sso_token_file`.
    kSso,
  };
  Kind kind = Kind::kStatic;
  // Where the keys came from, for error messages: "environment variables
  // (AWS_ACCESS_KEY_ID)", "profile dev in /root/.aws/credentials", ...
  std::string description = "the S3 config's keys";

  // kStatic as the `source` of a kAssumeRole (source_profile with keys,
  // credential_source = Environment); a top-level kStatic uses S3Config's.
  AwsCredentials keys;
  std::string command;                   // kProcess
  std::string role_arn;                  // kAssumeRole, kWebIdentity
  std::string role_session_name;         // kAssumeRole, kWebIdentity
  std::string external_id;               // kAssumeRole, optional
  int duration_seconds = 0;              // kAssumeRole, kWebIdentity; 0: STS's (1 h)
  std::string web_identity_token_file;   // kWebIdentity
  // kAssumeRole: the credentials that sign the AssumeRole call
  // (source_profile or credential_source).
  std::shared_ptr<const AwsCredentialSource> source;
  // kAssumeRole, kWebIdentity: the STS endpoint URL and its signing region;
  // kContainer: the full credentials URL; kInstanceMetadata: the IMDS base
  // URL; kSso: the SSO portal's base URL.
  std::string endpoint;
  std::string sts_region;
  std::string sso_token_file;            // kSso
  std::string sso_account_id;            // kSso
  std::string sso_role_name;             // kSso
  std::string authorization_token;       // kContainer
  std::string authorization_token_file;  // kContainer
};

}  // namespace ferry::s3

#endif  // FERRY_S3_AWS_CREDENTIALS_H_
