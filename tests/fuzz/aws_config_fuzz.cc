// Fuzzes S3Config::FromEnvironment over the AWS CLI's shared files
// (~/.aws/config and ~/.aws/credentials), the ini dialect botocore reads,
// nested "s3 =" blocks included.
//
// The input gives the profile name, then the config file, then the
// credentials file (FuzzedDataProvider). Whatever the bytes: a config or
// InvalidArgument; an accepted one has no empty endpoint (none means
// AWS's), a region, credentials only in pairs, and names where its
// credentials come from. Nothing is run or fetched: that is the store's
// first request.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>

#include "ferry/s3/s3_config.h"
#include "fuzz_check.h"
#include "fuzz_file.h"

using ferry::fuzz::Check;
using ferry::fuzz::FuzzFile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FuzzFile* config_file = new FuzzFile("aws-config");
  static FuzzFile* credentials_file = new FuzzFile("aws-credentials");
  FuzzedDataProvider in(data, size);
  const std::string profile = in.ConsumeRandomLengthString(32);
  config_file->Set(in.ConsumeRandomLengthString(size));
  credentials_file->Set(in.ConsumeRemainingBytesAsString());
  std::map<std::string, std::string> env = {
      {"HOME", "/nonexistent-ferry-fuzz"},
      {"AWS_CONFIG_FILE", config_file->path()},
      {"AWS_SHARED_CREDENTIALS_FILE", credentials_file->path()},
  };
  if (!profile.empty()) env["AWS_PROFILE"] = profile;
  absl::StatusOr<ferry::s3::S3Config> c = ferry::s3::S3Config::FromEnvironment(env);
  if (!c.ok()) {
    Check(c.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  for (const std::string& e : c->endpoints) Check(!e.empty());
  Check(!c->region.empty());
  Check(c->access_key_id.empty() == c->secret_access_key.empty());
  Check(!c->credential_source.description.empty());
  return 0;
}
