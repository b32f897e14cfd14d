// Where an S3 request goes: scheme, host and path for a bucket and key,
// as the AWS SDKs resolve them. A pure function of the config and the
// bucket's region, so the rules are unit-tested without AWS.
//
//   S3Target t = ResolveS3Target(config, "eu-west-1", "bkt", "a b/c");
//   // t.url_prefix == "https://bkt.s3.eu-west-1.amazonaws.com", t.path == "/a%20b/c"
#ifndef FERRY_S3_S3_ENDPOINT_H_
#define FERRY_S3_S3_ENDPOINT_H_

#include <string>
#include <string_view>

#include "ferry/s3/s3_config.h"

namespace ferry::s3 {

struct S3Target {
  std::string host;        // the Host header: "bkt.s3.eu-west-1.amazonaws.com", "127.0.0.1:7070"
  std::string url_prefix;  // scheme://host
  std::string path;        // encoded, as signed and sent: "/bkt/a%20b" or "/a%20b"
};

// AWS's S3 host for `region` (botocore's endpoint rules): s3.REGION.
// amazonaws.com (.com.cn in China), "-fips" and ".dualstack" variants,
// and the global s3.amazonaws.com for us-east-1 (and aws-global) unless
// `us_east_1_regional` or a variant is asked for.
std::string AwsS3Host(std::string_view region, bool fips, bool dualstack, bool us_east_1_regional);

// True if `bucket` can be the first label of a host name: 3-63 of
// [a-z0-9-], not starting or ending with '-'. Dots are excluded too: a
// bucket "a.b" under a "*.s3.host" TLS certificate would not match it.
bool DnsCompatibleBucket(std::string_view bucket);

// The target of a request for `bucket` (empty: ListBuckets) and `key`
// (empty: a bucket-level call) signed for `region`: `endpoint` (one of
// config.endpoints) when non-empty, else AWS's host for `region`;
// virtual-hosted or path style by config.addressing_style (kAuto:
// virtual-hosted on AWS's hosts only).
S3Target ResolveS3Target(const S3Config& config, std::string_view endpoint,
                         std::string_view region, std::string_view bucket, std::string_view key);

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_ENDPOINT_H_
