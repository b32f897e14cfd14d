// What ferry-cp and ferry-walk share on their command lines: the AWS CLI's
// S3 flags (how a parse ends is CommandLine's: help and --version on
// stdout, exit 0; a usage error as one line on stderr, exit 2).
#ifndef FERRY_EXAMPLES_TOOL_FLAGS_H_
#define FERRY_EXAMPLES_TOOL_FLAGS_H_

#include <string>

#include "command_line.h"
#include "ferry/adapters/builtin.h"

namespace ferry_tools {

struct AwsFlags {
  std::string endpoint_url;
  std::string profile;
  std::string region;
  bool no_sign_request = false;
};

inline void AddAwsFlags(CommandLine& cl, AwsFlags& flags) {
  cl.Option("--endpoint-url", &flags.endpoint_url,
            "S3 endpoint URL (scheme://host[:port]), as the AWS CLI's: beats every "
            "configured endpoint")
      .TypeName("URL");
  cl.Option("--profile", &flags.profile,
            "AWS profile of ~/.aws/config and credentials: its keys beat AWS_ACCESS_KEY_ID")
      .TypeName("NAME");
  cl.Option("--region", &flags.region,
            "AWS region (default: the AWS environment's, else us-east-1)")
      .TypeName("NAME");
  cl.Flag("--no-sign-request", &flags.no_sign_request, "anonymous S3 requests, for public buckets");
}

// The flags as the S3 adapter's overrides (docs/s3-on-aws.md): each wins
// over the context string, the environment and the shared files.
inline void ApplyAwsFlags(const AwsFlags& flags, ferry::BuiltinFileSystemOptions& options) {
  options.s3_endpoint_url = flags.endpoint_url;
  options.s3_profile = flags.profile;
  options.s3_region = flags.region;
  options.s3_no_sign_request = flags.no_sign_request;
}

}  // namespace ferry_tools

#endif  // FERRY_EXAMPLES_TOOL_FLAGS_H_
