// What ferry-cp and ferry-walk share on their command lines: the AWS CLI's
// S3 flags and how a CLI11 parse ends (help and --version on stdout, exit
// 0; a usage error as one line on stderr, exit 2).
#ifndef FERRY_EXAMPLES_TOOL_FLAGS_H_
#define FERRY_EXAMPLES_TOOL_FLAGS_H_

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "ferry/adapters/builtin.h"

namespace ferry_tools {

struct AwsFlags {
  std::string endpoint_url;
  std::string profile;
  std::string region;
  bool no_sign_request = false;
};

inline void AddAwsFlags(CLI::App& app, AwsFlags& flags) {
  app.add_option("--endpoint-url", flags.endpoint_url,
                 "S3 endpoint URL (scheme://host[:port]), as the AWS CLI's: beats every "
                 "configured endpoint")
      ->type_name("URL");
  app.add_option("--profile", flags.profile,
                 "AWS profile of ~/.aws/config and credentials: its keys beat AWS_ACCESS_KEY_ID")
      ->type_name("NAME");
  app.add_option("--region", flags.region, "AWS region (default: the AWS environment's, else "
                                           "us-east-1)")
      ->type_name("NAME");
  app.add_flag("--no-sign-request", flags.no_sign_request,
               "anonymous S3 requests, for public buckets");
}

// The flags as the S3 adapter's overrides (docs/s3-on-aws.md): each wins
// over the context string, the environment and the shared files.
inline void ApplyAwsFlags(const AwsFlags& flags, ferry::BuiltinFileSystemOptions& options) {
  options.s3_endpoint_url = flags.endpoint_url;
  options.s3_profile = flags.profile;
  options.s3_region = flags.region;
  options.s3_no_sign_request = flags.no_sign_request;
}

// Parses; nullopt to go on, else the exit status (help and version are
// printed on stdout by CLI11; a usage error is one line naming the flag).
inline std::optional<int> ParseOrExit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "%s: %s (%s --help lists the options)\n", app.get_name().c_str(),
                 e.what(), app.get_name().c_str());
    return 2;
  }
  return std::nullopt;
}

inline int UsageError(const CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: %s (%s --help lists the options)\n", app.get_name().c_str(),
               message.c_str(), app.get_name().c_str());
  return 2;
}

}  // namespace ferry_tools

#endif  // FERRY_EXAMPLES_TOOL_FLAGS_H_
