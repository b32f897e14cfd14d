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

namespace ferry_tools {

struct AwsFlags {
  std::string endpoint_url;
  std::string profile;
  std::string region;
  bool no_sign_request = false;
};

inline void AddAwsFlags(CLI::App& app, AwsFlags& flags) {
  app.add_option("--endpoint-url", flags.endpoint_url,
                 "S3 endpoint URL, as the AWS CLI's (sets AWS_ENDPOINT_URL for this run)")
      ->type_name("URL");
  app.add_option("--profile", flags.profile,
                 "AWS profile of ~/.aws/config and credentials (sets AWS_PROFILE)")
      ->type_name("NAME");
  app.add_option("--region", flags.region, "AWS region (sets AWS_REGION)")->type_name("NAME");
  app.add_flag("--no-sign-request", flags.no_sign_request,
               "anonymous S3 requests (not supported yet: a usage error)");
}

// The flags become the environment the S3 configuration reads, before any
// filesystem is made: the one interface the tools and the S3 adapter share.
// Returns a usage error's text, or nullopt.
inline std::optional<std::string> ApplyAwsFlags(const AwsFlags& flags) {
  if (flags.no_sign_request) {
    return "--no-sign-request: unsigned S3 requests are not supported yet";
  }
  if (!flags.endpoint_url.empty()) {
    ::setenv("AWS_ENDPOINT_URL", flags.endpoint_url.c_str(), 1);
    // The AWS CLI's --endpoint-url beats every configured endpoint; the
    // S3-specific variable would otherwise win over AWS_ENDPOINT_URL.
    ::unsetenv("AWS_ENDPOINT_URL_S3");
  }
  if (!flags.profile.empty()) ::setenv("AWS_PROFILE", flags.profile.c_str(), 1);
  if (!flags.region.empty()) ::setenv("AWS_REGION", flags.region.c_str(), 1);
  return std::nullopt;
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
