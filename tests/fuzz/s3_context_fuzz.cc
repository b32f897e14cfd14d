// Fuzzes S3Config::FromContextString, the iRODS-style "K=V;K=V" resource
// string a user or an iRODS resource definition gives.
//
// Whatever the string: a config or InvalidArgument naming what is wrong;
// an accepted config has no empty endpoint (none at all means AWS's, and
// then a region), and its numbers within the ranges the header documents. The environment is empty but
// for HOME pointing nowhere, so no real ~/.aws file is read.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "ferry/s3/s3_config.h"
#include "fuzz_check.h"

using ferry::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string context(reinterpret_cast<const char*>(data), size);
  static const std::map<std::string, std::string> env = {{"HOME", "/nonexistent-ferry-fuzz"}};
  absl::StatusOr<ferry::s3::S3Config> c = ferry::s3::S3Config::FromContextString(context, env);
  if (!c.ok()) {
    Check(c.status().code() == absl::StatusCode::kInvalidArgument);
    Check(!c.status().message().empty());
    return 0;
  }
  for (const std::string& e : c->endpoints) Check(!e.empty());
  Check(!c->endpoints.empty() || !c->region.empty());
  Check(c->retry_count >= 0 && c->retry_count <= 100);
  Check(c->mpu_threads >= 1 && c->mpu_threads <= 1024);
  Check(c->mpu_chunk_bytes >= (int64_t{5} << 20));
  return 0;
}
