// S3Config: where an S3 store is and how to talk to it, parsed from an
// iRODS-style resource context string or from the AWS environment, as the
// AWS SDKs resolve it (docs/s3-on-aws.md): no endpoint means AWS's own for
// the region, and credentials come from botocore's chain.
//
//   std::map<std::string, std::string> env = {{"AWS_ACCESS_KEY_ID", "AK"}, ...};
//   FERRY_ASSIGN_OR_RETURN(ferry::s3::S3Config config,
//       ferry::s3::S3Config::FromContextString(
//           "S3_DEFAULT_HOSTNAME=127.0.0.1:7070;S3_PROTO=HTTP;S3_REGIONNAME=us-east-1;"
//           "S3_AUTH_FILE=/etc/irods/s3.keypair", env));
//
// Context keys (iRODS S3 resource plugin names): S3_DEFAULT_HOSTNAME (comma
// list of host[:port]), S3_REGIONNAME, S3_AUTH_FILE (first line access key,
// second line secret), S3_PROTO (HTTP|HTTPS), S3_STSDATE ignored,
// S3_RETRY_COUNT, S3_WAIT_TIME_SEC, S3_MPU_CHUNK (MiB), S3_MPU_THREADS,
// S3_ENABLE_MPU, HOST_MODE (archive_attached|cacheless_attached|
// cacheless_detached; archive_detached is rejected), S3_URI_REQUEST_STYLE
// (path|virtual_hosted). Without S3_DEFAULT_HOSTNAME (or an endpoint
// variable) the endpoint is AWS's. Keys the adapter does not know are ignored (iRODS
// contexts carry many). The environment fills what the context leaves out,
// then the AWS CLI's profile files (see FromEnvironment), so a tool works
// wherever `aws s3` does:
//
//   # ~/.aws/config                     # ~/.aws/credentials
//   [profile minio]                     [minio]
//   region = eu-west-1                  aws_access_key_id = AK
//   s3 =                                aws_secret_access_key = SK
//     endpoint_url = https://minio.lan:9000
//     addressing_style = path
//   ca_bundle = /etc/ssl/lan-ca.pem
//
//   AWS_PROFILE=minio ferry-cp s3://bucket/key /tmp/key
#ifndef FERRY_S3_S3_CONFIG_H_
#define FERRY_S3_S3_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/s3/aws_credentials.h"

namespace ferry::s3 {

enum class HostMode { kArchiveAttached, kCachelessAttached, kCachelessDetached };

// Where the bucket goes in a request: virtual-hosted (bucket.host/key),
// path (host/bucket/key), or kAuto, the SDKs' default: virtual-hosted on
// AWS's own endpoints for a bucket that is a DNS label, path style for
// every other bucket and on custom endpoints (MinIO, versitygw, ...).
enum class AddressingStyle { kAuto, kPath, kVirtual };

// What a tool sets from its command line (`--endpoint-url`, `--profile`,
// `--region`, `--no-sign-request`); each wins over the context string, the
// environment and the shared files. Empty / false: not set. A plain value.
struct S3ConfigOverrides {
  std::string endpoint_url;  // scheme://host[:port]
  // As the CLI's --profile: the profile of the shared files, and (as
  // botocore does for an explicit profile) the AWS_ACCESS_KEY_ID
  // variables are then not read.
  std::string profile;
  std::string region;
  bool no_sign_request = false;  // send requests unsigned (public buckets)
  // Credentials a caller holds (a library's key/secret/token arguments, as
  // boto3's and s3fs's): both or neither; they win over every other source.
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
};

// A plain value; copyable, thread-compatible.
struct S3Config {
  // host[:port] of each endpoint. Requests rotate over them; an endpoint
  // that refuses a connection is skipped for a while (see S3ObjectStore).
  // Empty: AWS's endpoint for the region (see ResolveS3Target), which a
  // bucket of another region is redirected from.
  std::vector<std::string> endpoints;
  std::string region = "us-east-1";
  // The keys of AwsCredentialSource::Kind::kStatic.
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none (sent as x-amz-security-token)
  // Where the keys come from; kStatic (the default) uses the three above.
  AwsCredentialSource credential_source;
  // Temporary credentials are fetched again this long before they expire
  // (in the background while they still work; botocore's 15 minutes).
  absl::Duration credentials_refresh_ahead = absl::Minutes(15);
  bool use_https = true;
  // A bucket whose name is not a DNS label (dots, capitals, underscores) is
  // always addressed path style, as the AWS SDKs do.
  AddressingStyle addressing_style = AddressingStyle::kAuto;
  // AWS endpoints only (no custom endpoint): s3-fips / s3.dualstack hosts
  // (AWS_USE_FIPS_ENDPOINT, AWS_USE_DUALSTACK_ENDPOINT), and us-east-1 at
  // s3.us-east-1.amazonaws.com instead of the global s3.amazonaws.com
  // (AWS_S3_US_EAST_1_REGIONAL_ENDPOINT=regional).
  bool use_fips_endpoint = false;
  bool use_dualstack_endpoint = false;
  bool us_east_1_regional_endpoint = false;
  // PEM file of the CAs to trust for HTTPS instead of the system's store
  // (AWS_CA_BUNDLE, profile `ca_bundle`). The server's certificate and name
  // are always verified.
  std::string ca_bundle_path;
  // Retries of a request that failed with a retryable error (5xx,
  // SlowDown, connection errors), and the first wait, doubling each time.
  int retry_count = 3;
  absl::Duration retry_wait = absl::Seconds(2);
  int64_t mpu_chunk_bytes = int64_t{64} << 20;
  int mpu_threads = 10;
  bool enable_mpu = true;
  HostMode host_mode = HostMode::kCachelessAttached;
  // Where the time requests are signed at (x-amz-date) is read; null: the
  // wall clock. Tests fix it to compare signatures with another signer.
  const Clock* signing_clock = nullptr;
  // Connection setup limit, and how long a transfer may move no byte at
  // all before it fails with DeadlineExceeded.
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration stall_timeout = absl::Seconds(60);

  // Parses `context` ("K=V;K=V"), then fills credentials, region and
  // endpoint the context left unset from `env` (see FromEnvironment);
  // `overrides` win over both. InvalidArgument naming the key for a bad
  // value.
  static absl::StatusOr<S3Config> FromContextString(
      std::string_view context, const std::map<std::string, std::string>& env = {},
      const S3ConfigOverrides& overrides = {});

  // As the AWS CLI finds them, environment variables first, then profile
  // `AWS_PROFILE` (else "default"; overrides.profile wins) of the shared
  // files (docs/s3-on-aws.md is the user's version of this list):
  // - credentials, botocore's chain: AWS_ACCESS_KEY_ID +
  //   AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); the profile's role_arn
  //   with source_profile or credential_source (STS AssumeRole); web
  //   identity (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, or the
  //   profile's web_identity_token_file + role_arn); SSO (the profile's
  //   sso_account_id + sso_role_name with sso_session or sso_start_url, the
  //   token `aws sso login` cached; the portal at AWS_ENDPOINT_URL_SSO or
  //   https://portal.sso.REGION.amazonaws.com); the profile's keys in
  //   the credentials file (AWS_SHARED_CREDENTIALS_FILE, default
  //   $HOME/.aws/credentials, section "[NAME]"); its credential_process;
  //   its keys in the config file; the container endpoint
  //   (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI, with
  //   AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE)); the EC2 instance role
  //   (IMDSv2 at AWS_EC2_METADATA_SERVICE_ENDPOINT, unless
  //   AWS_EC2_METADATA_DISABLED=true). STS is at AWS_ENDPOINT_URL_STS,
  //   AWS_ENDPOINT_URL, the profile's `sts = endpoint_url`, else
  //   https://sts.REGION.amazonaws.com;
  // - region: AWS_REGION, AWS_DEFAULT_REGION, else the profile's `region`,
  //   else us-east-1;
  // - endpoint (scheme://host[:port]): AWS_ENDPOINT_URL_S3,
  //   AWS_ENDPOINT_URL, else the profile's nested `s3 = endpoint_url`, else
  //   its `endpoint_url`, else none: AWS's own for the region, shaped by
  //   AWS_USE_FIPS_ENDPOINT / AWS_USE_DUALSTACK_ENDPOINT (or the profile's
  //   use_fips_endpoint / use_dualstack_endpoint) and
  //   AWS_S3_US_EAST_1_REGIONAL_ENDPOINT (or the profile's nested
  //   `s3 = us_east_1_regional_endpoint`);
  // - CA bundle: AWS_CA_BUNDLE, else the profile's `ca_bundle`;
  // - addressing: the profile's nested `s3 = addressing_style`
  //   (auto|path|virtual).
  // The config file is AWS_CONFIG_FILE, default $HOME/.aws/config, with
  // sections "[profile NAME]" and "[default]". HOME is read from `env` too.
  // A missing file is no error; InvalidArgument if the profile named is in
  // neither file.
  static absl::StatusOr<S3Config> FromEnvironment(const std::map<std::string, std::string>& env,
                                                  const S3ConfigOverrides& overrides = {});

  // The process environment as a map, for the two functions above.
  static std::map<std::string, std::string> ProcessEnvironment();
};

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_CONFIG_H_
