// Helpers for tests against the S3 peers. Everything here is plain and
// deterministic: the config is fixed but for the stall timeout, bucket
// names come from the running test's name (so tests never share a bucket
// and a re-run reuses its own), and payloads come from a seeded
// std::mt19937, one 32-bit draw per four bytes (tests upload tens of MiB,
// so a draw per byte would cost more than the transfer).
#include "testing/s3_peer.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "gtest/gtest.h"

namespace ferry::peers {
namespace {

// S3's longest bucket name.
constexpr size_t kMaxBucketNameLength = 63;

}  // namespace

s3::S3Config S3PeerConfig(uint16_t port, absl::Duration stall_timeout) {
  s3::S3Config c;
  c.endpoints = {absl::StrCat("127.0.0.1:", port)};
  c.use_https = false;
  c.access_key_id = kS3AccessKeyId;
  c.secret_access_key = kS3SecretAccessKey;
  c.retry_count = 0;  // tests see the first error as it is
  c.connect_timeout = absl::Seconds(5);
  c.stall_timeout = stall_timeout;
  return c;
}

std::string TestBucketName(std::string_view prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = absl::AsciiStrToLower(absl::StrCat(ToAbsl(prefix), info->name()));
  for (char& c : name) {
    if (!absl::ascii_isalnum(c)) c = '-';
  }
  if (name.size() > kMaxBucketNameLength) name.resize(kMaxBucketNameLength);
  return name;
}

absl::Status CreateBucketIfMissing(s3::S3ObjectStore& store, std::string_view bucket) {
  absl::Status s = WaitStatus([&](StatusCallback cb) { store.CreateBucket(bucket, std::move(cb)); });
  return s.code() == absl::StatusCode::kAlreadyExists ? absl::OkStatus() : s;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += sizeof(uint32_t)) {
    const uint32_t word = gen();
    std::memcpy(&s[i], &word, std::min(sizeof(word), n - i));
  }
  return s;
}

}  // namespace ferry::peers
