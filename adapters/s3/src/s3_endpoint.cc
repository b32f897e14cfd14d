// S3 endpoint resolution: botocore's ruleset for the cases ferry meets
// (aws and aws-cn partitions, FIPS, dual-stack, the us-east-1 global
// endpoint), checked against botocore itself in s3_endpoint_test.
#include "ferry/s3/s3_endpoint.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/s3/sigv4.h"

namespace ferry::s3 {

std::string AwsS3Host(std::string_view region, bool fips, bool dualstack,
                      bool us_east_1_regional) {
  std::string r(region);
  const bool global = r == "aws-global";
  if (global) r = "us-east-1";
  if ((global || (r == "us-east-1" && !us_east_1_regional)) && !fips && !dualstack) {
    return "s3.amazonaws.com";
  }
  const char* suffix = absl::StartsWith(r, "cn-") ? "amazonaws.com.cn" : "amazonaws.com";
  return absl::StrCat("s3", fips ? "-fips" : "", dualstack ? ".dualstack" : "", ".", r, ".",
                      suffix);
}

bool DnsCompatibleBucket(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  if (bucket.front() == '-' || bucket.back() == '-') return false;
  for (char c : bucket) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return true;
}

S3Target ResolveS3Target(const S3Config& config, std::string_view endpoint,
                         std::string_view region, std::string_view bucket, std::string_view key) {
  const bool aws = endpoint.empty();
  const std::string base =
      aws ? AwsS3Host(region, config.use_fips_endpoint, config.use_dualstack_endpoint,
                      config.us_east_1_regional_endpoint)
          : std::string(endpoint);
  const bool virtual_hosted =
      !bucket.empty() && DnsCompatibleBucket(bucket) &&
      (config.addressing_style == AddressingStyle::kVirtual ||
       (config.addressing_style == AddressingStyle::kAuto && aws));
  S3Target t;
  t.host = virtual_hosted ? absl::StrCat(ToAbsl(bucket), ".", base) : base;
  t.url_prefix = absl::StrCat(config.use_https || aws ? "https://" : "http://", t.host);
  if (virtual_hosted || bucket.empty()) {
    t.path = absl::StrCat("/", UriEncode(key, true));
  } else if (key.empty()) {  // bucket-level call: "/bucket", no trailing slash
    t.path = absl::StrCat("/", UriEncode(bucket, false));
  } else {
    t.path = absl::StrCat("/", UriEncode(bucket, false), "/", UriEncode(key, true));
  }
  return t;
}

}  // namespace ferry::s3
