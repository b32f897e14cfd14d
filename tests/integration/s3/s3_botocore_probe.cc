// The ferry half of s3_botocore_test.py: what ferry resolves and sends, for
// the script to set beside botocore's answers to the same inputs.
//
//   s3_botocore_probe targets
//     one line per case: region bucket fips dualstack regional style -> host path
//   s3_botocore_probe requests HOST:PORT path|virtual
//     sends each operation of kOperations to HOST:PORT (the script's capture
//     server) signed at 2026-01-02T03:04:05Z with AKIDEXAMPLE, printing the
//     operation's name before it goes.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_endpoint.h"
#include "ferry/s3/s3_object_store.h"

namespace ferry::s3 {
namespace {

int Targets() {
  const char* regions[] = {"us-east-1", "eu-west-1", "cn-north-1", "aws-global", "us-gov-west-1"};
  const char* buckets[] = {"bkt", "my.bkt", "Bkt"};
  const char* styles[] = {"auto", "path", "virtual"};
  for (const char* region : regions) {
    for (const char* bucket : buckets) {
      for (int variant = 0; variant < 8; ++variant) {
        for (int s = 0; s < 3; ++s) {
          S3Config c;
          c.region = region;
          c.use_fips_endpoint = variant & 1;
          c.use_dualstack_endpoint = variant & 2;
          c.us_east_1_regional_endpoint = variant & 4;
          c.addressing_style = s == 0   ? AddressingStyle::kAuto
                               : s == 1 ? AddressingStyle::kPath
                                        : AddressingStyle::kVirtual;
          const S3Target t = ResolveS3Target(c, "", region, bucket, "a b/c");
          std::printf("%s %s %d %d %d %s %s%s\n", region, bucket, variant & 1, (variant & 2) >> 1,
                      (variant & 4) >> 2, styles[s], t.url_prefix.c_str(), t.path.c_str());
        }
      }
    }
  }
  return 0;
}

template <typename T, typename Start>
void Run(const char* name, Start start) {
  std::printf("%s\n", name);
  std::fflush(stdout);
  absl::StatusOr<T> r = BlockOn<T>(std::move(start));
  if (!r.ok()) std::fprintf(stderr, "%s: %s\n", name, r.status().ToString().c_str());
}

int Requests(const std::string& endpoint, const std::string& style) {
  Runtime runtime;
  ManualClock clock(absl::FromCivil(absl::CivilSecond(2026, 1, 2, 3, 4, 5), absl::UTCTimeZone()));
  S3Config c;
  c.endpoints = {endpoint};
  c.use_https = false;
  c.region = "us-east-1";
  c.access_key_id = "AKIDEXAMPLE";
  c.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  c.addressing_style = style == "virtual" ? AddressingStyle::kVirtual : AddressingStyle::kPath;
  c.retry_count = 0;
  c.signing_clock = &clock;
  auto store = S3ObjectStore::Create(runtime, c);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  S3ObjectStore& s = **store;
  const std::string key = "bkt/dir/a b+c~d.txt";
  const std::string body = "abc";
  const std::span<const char> bytes(body.data(), body.size());
  Run<std::string>("GetObject", [&](Callback<std::string> cb) { s.GetRange(key, 0, 10, "", std::move(cb)); });
  Run<std::string>("PutObject", [&](Callback<std::string> cb) { s.Put(key, bytes, {}, std::move(cb)); });
  Run<std::string>("CreateMultipartUpload", [&](Callback<std::string> cb) { s.CreateMultipart(key, std::move(cb)); });
  Run<std::string>("UploadPart", [&](Callback<std::string> cb) { s.UploadPart(key, "U1", 1, bytes, {}, std::move(cb)); });
  Run<std::vector<UploadedPartInfo>>("ListParts", [&](Callback<std::vector<UploadedPartInfo>> cb) { s.ListParts(key, "U1", std::move(cb)); });
  Run<std::string>("CompleteMultipartUpload", [&](Callback<std::string> cb) {
    s.CompleteMultipart(key, "U1", {{.part_number = 1, .etag = "\"e1\""}}, std::move(cb));
  });
  Run<bool>("AbortMultipartUpload", [&](Callback<bool> cb) {
    s.AbortMultipart(key, "U1", [cb = std::move(cb)](absl::Status st) mutable {
      if (st.ok()) return cb(true);
      cb(std::move(st));
    });
  });
  Run<ListObjectsPage>("ListObjectsV2", [&](Callback<ListObjectsPage> cb) {
    s.ListObjects("bkt", {.prefix = "dir/", .delimiter = "/"}, std::move(cb));
  });
  Run<ObjectInfo>("HeadObject", [&](Callback<ObjectInfo> cb) { s.Head(key, std::move(cb)); });
  Run<std::string>("CopyObject", [&](Callback<std::string> cb) {
    s.CopyObject("src/x y+z.bin", key, std::move(cb));
  });
  return 0;
}

}  // namespace
}  // namespace ferry::s3

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "targets") return ferry::s3::Targets();
  if (mode == "requests" && argc == 4) return ferry::s3::Requests(argv[2], argv[3]);
  std::fprintf(stderr, "usage: s3_botocore_probe targets | requests HOST:PORT path|virtual\n");
  return 2;
}
