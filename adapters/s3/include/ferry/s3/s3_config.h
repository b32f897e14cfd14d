// S3Config: where an S3 store is and how to talk to it, parsed from an
// iRODS-style resource context string or from the AWS environment.
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
// (path|virtual_hosted). Keys the adapter does not know are ignored (iRODS
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

namespace ferry::s3 {

enum class HostMode { kArchiveAttached, kCachelessAttached, kCachelessDetached };

// A plain value; copyable, thread-compatible.
struct S3Config {
  // host[:port] of each endpoint. Requests rotate over them; an endpoint
  // that refuses a connection is skipped for a while (see S3ObjectStore).
  std::vector<std::string> endpoints;
  std::string region = "us-east-1";
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none (sent as x-amz-security-token)
  bool use_https = true;
  // Path style (http://host/bucket/key) works with every S3 server;
  // virtual-hosted style (http://bucket.host/key) is AWS's default. A
  // bucket whose name is not a DNS label (dots, capitals, underscores) is
  // always addressed path style, as the AWS SDKs do.
  bool path_style = true;
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
  // Connection setup limit, and how long a transfer may move no byte at
  // all before it fails with DeadlineExceeded.
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration stall_timeout = absl::Seconds(60);

  // Parses `context` ("K=V;K=V"), then fills credentials, region and
  // endpoint the context left unset from `env` (see FromEnvironment).
  // InvalidArgument naming the key for a bad value.
  static absl::StatusOr<S3Config> FromContextString(
      std::string_view context, const std::map<std::string, std::string>& env = {});

  // As the AWS CLI finds them, environment variables first, then profile
  // `AWS_PROFILE` (else "default") of the shared files:
  // - credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
  //   AWS_SESSION_TOKEN), else aws_access_key_id / aws_secret_access_key /
  //   aws_session_token of the profile in the credentials file
  //   (AWS_SHARED_CREDENTIALS_FILE, default $HOME/.aws/credentials, section
  //   "[NAME]"), else of the config file;
  // - region: AWS_REGION, AWS_DEFAULT_REGION, else the profile's `region`;
  // - endpoint (scheme://host[:port]): AWS_ENDPOINT_URL_S3,
  //   AWS_ENDPOINT_URL, else the profile's nested `s3 = endpoint_url`, else
  //   its `endpoint_url`;
  // - CA bundle: AWS_CA_BUNDLE, else the profile's `ca_bundle`;
  // - addressing: the profile's nested `s3 = addressing_style`
  //   (path|virtual; "auto" keeps path style).
  // The config file is AWS_CONFIG_FILE, default $HOME/.aws/config, with
  // sections "[profile NAME]" and "[default]". HOME is read from `env` too.
  // A missing file is no error; InvalidArgument if AWS_PROFILE names a
  // profile neither file has, or if there is no endpoint.
  static absl::StatusOr<S3Config> FromEnvironment(const std::map<std::string, std::string>& env);

  // The process environment as a map, for the two functions above.
  static std::map<std::string, std::string> ProcessEnvironment();
};

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_CONFIG_H_
