// Test helpers for the S3 peers of the ctest fixtures (peer_versitygw,
// peer_s3proxy; tests/peers/FerryPeers.cmake): their fixed ports and keys,
// a config that reaches them, a bucket of its own for each test, seeded
// random payloads, and blocking twins of S3ObjectStore's async calls.
//
//   auto store = ferry::s3::S3ObjectStore::Create(
//       runtime, ferry::peers::S3PeerConfig(ferry::peers::kVersitygwPort,
//                                           absl::Seconds(5)));
//   const std::string bucket = ferry::peers::TestBucketName("ferry-");
//   ASSERT_TRUE(ferry::peers::CreateBucketIfMissing(**store, bucket).ok());
//   const std::string data = ferry::peers::RandomBytes(1 << 20, /*seed=*/1);
//   auto etag = ferry::peers::Wait<std::string>([&](ferry::Callback<std::string> cb) {
//     (*store)->Put(bucket + "/k", ferry::peers::AsSpan(data), {}, std::move(cb));
//   });
#ifndef FERRY_TESTING_S3_PEER_H_
#define FERRY_TESTING_S3_PEER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_config.h"
#include "ferry/s3/s3_object_store.h"
#include "gtest/gtest.h"

namespace ferry::peers {

// Where the S3 peers listen (fixed in tests/peers/versitygw and
// tests/peers/s3proxy), and the keys both accept.
inline constexpr uint16_t kVersitygwPort = 7070;
inline constexpr uint16_t kS3proxyPort = 8080;
inline constexpr char kS3AccessKeyId[] = "AKIDLOCAL";
inline constexpr char kS3SecretAccessKey[] = "SECRETLOCAL";

// A config for the S3 peer on 127.0.0.1:`port`, plain HTTP, with the peers'
// keys. No retries, so a test sees the first error as it is; connects time
// out after 5 s (a local peer answers in milliseconds); a stalled transfer
// fails after `stall_timeout` (what the test's payloads and faults need).
s3::S3Config S3PeerConfig(uint16_t port, absl::Duration stall_timeout);

// The bucket of the running gtest test: `prefix` and the test's name,
// lower-cased, every character but [a-z0-9] turned into '-' (a
// parameterized test's "Name/0" too), cut to S3's 63-character limit.
// REQUIRES: called while a test runs (e.g. from SetUp).
std::string TestBucketName(std::string_view prefix);

// Creates `bucket`, blocking. A bucket that already exists is OK: a test
// run again finds the bucket its earlier run made.
absl::Status CreateBucketIfMissing(s3::S3ObjectStore& store, std::string_view bucket);

// `n` pseudo-random bytes, the same for the same `seed` (incompressible
// payloads whose mix-ups a byte compare catches).
std::string RandomBytes(size_t n, uint32_t seed);

// The bytes of `s`, as S3ObjectStore's Put/UploadPart and ComputeChecksum
// take them. REQUIRES: `s` outlives the span.
inline std::span<const char> AsSpan(const std::string& s) {
  return std::span<const char>(s.data(), s.size());
}

// Blocking twins of the async calls: `start` receives the completion
// callback (a Callback<T>, or a StatusCallback for WaitStatus) and starts
// the call; Wait returns once the callback ran.
//   auto info = Wait<ObjectInfo>([&](Callback<ObjectInfo> cb) { store.Head(key, std::move(cb)); });
template <typename T, typename Start>
absl::StatusOr<T> Wait(Start start) {
  return BlockOn<T>(std::move(start));
}

template <typename Start>
absl::Status WaitStatus(Start start) {
  Promise<bool> p;
  Future<bool> f = p.GetFuture();
  start([p = std::move(p)](absl::Status s) mutable {
    if (s.ok()) {
      p.Set(true);
    } else {
      p.Set(std::move(s));  // keep no reference on the I/O thread
    }
  });
  return std::move(f).Get().status();
}

// A fixture with an S3ObjectStore on an S3 peer and a bucket of the test's
// own. `Base` is ::testing::Test, or TestWithParam<...> for a test run
// against each peer.
//   class MyTest : public ferry::peers::S3BucketTest<> {
//     void SetUp() override { OpenBucket(S3PeerConfig(kVersitygwPort, absl::Seconds(5)), "my-"); }
//   };
template <typename Base = ::testing::Test>
class S3BucketTest : public Base {
 protected:
  // Connects store_ to `config` and creates bucket_, TestBucketName(prefix).
  // Call from SetUp: a failure is fatal to the test.
  void OpenBucket(const s3::S3Config& config, std::string_view prefix) {
    auto s = s3::S3ObjectStore::Create(rt_, config);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    bucket_ = TestBucketName(prefix);
    absl::Status created = CreateBucketIfMissing(*store_, bucket_);
    ASSERT_TRUE(created.ok()) << created;
  }

  // "bucket_/name".
  std::string Key(std::string_view name) { return absl::StrCat(bucket_, "/", ToAbsl(name)); }

  Runtime rt_{RuntimeOptions{.io_threads = 2, .memory_budget_bytes = int64_t{256} << 20}};
  std::unique_ptr<s3::S3ObjectStore> store_;
  std::string bucket_;
};

}  // namespace ferry::peers

#endif  // FERRY_TESTING_S3_PEER_H_
