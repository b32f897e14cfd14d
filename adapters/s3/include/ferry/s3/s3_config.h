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
// contexts carry many). The environment fills what the context leaves out.
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
  // host[:port] of each endpoint; requests go to the first (round robin
  // over several is future work).
  std::vector<std::string> endpoints;
  std::string region = "us-east-1";
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none (sent as x-amz-security-token)
  bool use_https = true;
  // Path style (http://host/bucket/key) works with every S3 server;
  // virtual-hosted style (http://bucket.host/key) is AWS's default.
  bool path_style = true;
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

  // From AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
  // AWS_REGION (else AWS_DEFAULT_REGION) and AWS_ENDPOINT_URL
  // (scheme://host[:port]). InvalidArgument if there is no endpoint.
  static absl::StatusOr<S3Config> FromEnvironment(const std::map<std::string, std::string>& env);

  // The process environment as a map, for the two functions above.
  static std::map<std::string, std::string> ProcessEnvironment();
};

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_CONFIG_H_
