// The signer against the examples of AWS's "Signature Calculations for the
// Authorization Header" (S3 API reference): access key AKIAIOSFODNN7EXAMPLE,
// bucket examplebucket, 20130524T000000Z, us-east-1.
#include "ferry/s3/sigv4.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

const SigV4Credentials kAwsExample{"AKIAIOSFODNN7EXAMPLE",
                                   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
constexpr char kEmptyHash[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(SigV4Test, AwsExampleGetObjectWithRange) {
  SigV4Request r{.method = "GET",
                 .path = "/test.txt",
                 .headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                             {"Range", "bytes=0-9"},
                             {"x-amz-content-sha256", kEmptyHash},
                             {"x-amz-date", "20130524T000000Z"}},
                 .payload_hash = kEmptyHash};
  EXPECT_EQ(SignV4(r, kAwsExample, "us-east-1", "20130524T000000Z"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4Test, SigningWithTheDaysKeyGivesTheSameSignature) {
  SigV4Request r{.method = "GET",
                 .path = "/test.txt",
                 .headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                             {"x-amz-content-sha256", kEmptyHash},
                             {"x-amz-date", "20130524T000000Z"}},
                 .payload_hash = kEmptyHash};
  const std::string key = SigningKey(kAwsExample.secret_access_key, "20130524", "us-east-1");
  EXPECT_EQ(SignV4WithKey(r, kAwsExample.access_key_id, key, "us-east-1", "20130524T000000Z"),
            SignV4(r, kAwsExample, "us-east-1", "20130524T000000Z"));
}

TEST(SigV4Test, SigningKeyMatchesTheAwsDerivationExample) {
  // AWS's "derive a signing key" example: 20150830, us-east-1, iam.
  const std::string key = SigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830",
                                     "us-east-1", "iam");
  std::string hex;
  for (unsigned char c : key) {
    constexpr char kHex[] = "0123456789abcdef";
    hex += kHex[c >> 4];
    hex += kHex[c & 0xf];
  }
  EXPECT_EQ(hex, "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
}

// The Authorization header of the AWS examples' bucket-level GET with `query`.
std::string SignAwsExampleBucketGet(std::vector<std::pair<std::string, std::string>> query) {
  SigV4Request r{.method = "GET",
                 .path = "/",
                 .query = std::move(query),
                 .headers = {{"host", "examplebucket.s3.amazonaws.com"},
                             {"x-amz-content-sha256", kEmptyHash},
                             {"x-amz-date", "20130524T000000Z"}},
                 .payload_hash = kEmptyHash};
  return SignV4(r, kAwsExample, "us-east-1", "20130524T000000Z");
}

TEST(SigV4Test, AwsExampleListObjectsSortsTheQuery) {
  EXPECT_THAT(SignAwsExampleBucketGet({{"prefix", "J"}, {"max-keys", "2"}}),
              ::testing::EndsWith(
                  "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"));
}

TEST(SigV4Test, AwsExampleGetBucketLifecycleSignsAnEmptyQueryValue) {
  EXPECT_THAT(SignAwsExampleBucketGet({{"lifecycle", ""}}),
              ::testing::EndsWith(
                  "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"));
}

TEST(SigV4Test, CanonicalRequestLowercasesSortsAndTrimsHeaders) {
  SigV4Request r{.method = "PUT",
                 .path = "/b/k",
                 .query = {{"uploadId", "x y"}, {"partNumber", "2"}},
                 .headers = {{"X-Amz-Date", " 20130524T000000Z "}, {"Host", "h"}},
                 .payload_hash = kUnsignedPayload};
  EXPECT_EQ(CanonicalRequest(r),
            "PUT\n/b/k\npartNumber=2&uploadId=x%20y\n"
            "host:h\nx-amz-date:20130524T000000Z\n\nhost;x-amz-date\nUNSIGNED-PAYLOAD");
}

TEST(SigV4Test, UriEncodeKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(UriEncode("a b/(c)*~._-", true), "a%20b/%28c%29%2A~._-");
  EXPECT_EQ(UriEncode("dir/", false), "dir%2F");
  EXPECT_EQ(UriEncode("\xc3\xa9", true), "%C3%A9");
}

TEST(SigV4Test, EmptyQueryValueIsKeyEquals) {
  EXPECT_EQ(CanonicalQueryString({{"uploads", ""}}), "uploads=");
}

TEST(SigV4Test, Sha256OfEmptyIsTheKnownDigest) {
  EXPECT_EQ(Sha256Hex({}), kEmptyHash);
}

TEST(SigV4Test, AmzDateIsUtcBasicFormat) {
  EXPECT_EQ(AmzDate(absl::FromUnixSeconds(1369353600)), "20130524T000000Z");
}

TEST(SigV4Test, Sha1OfAbcIsTheKnownDigest) {
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

// AWS's generic SigV4 test suite (aws-sig-v4-test-suite: service
// "service", us-east-1, AKIDEXAMPLE, 20150830T123600Z): the signer is not
// S3-only (STS AssumeRole goes through it too).
const SigV4Credentials kSuiteKeys{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"};
constexpr char kSuiteDate[] = "20150830T123600Z";

std::string SuiteSignature(SigV4Request r) {
  r.headers.emplace_back("host", "example.amazonaws.com");
  r.headers.emplace_back("x-amz-date", kSuiteDate);
  const std::string auth = SignV4(r, kSuiteKeys, "us-east-1", kSuiteDate, "service");
  return auth.substr(auth.find("Signature=") + 10);
}

TEST(SigV4SuiteTest, GetVanilla) {
  EXPECT_EQ(SuiteSignature({.method = "GET", .path = "/", .payload_hash = kEmptyHash}),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(SigV4SuiteTest, GetVanillaQueryOrderKeyCase) {
  EXPECT_EQ(SuiteSignature({.method = "GET",
                            .path = "/",
                            .query = {{"Param2", "value2"}, {"Param1", "value1"}},
                            .payload_hash = kEmptyHash}),
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(SigV4SuiteTest, GetVanillaEmptyQueryKey) {
  EXPECT_EQ(SuiteSignature({.method = "GET",
                            .path = "/",
                            .query = {{"Param1", "value1"}},
                            .payload_hash = kEmptyHash}),
            "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb");
}

TEST(SigV4SuiteTest, PostVanilla) {
  EXPECT_EQ(SuiteSignature({.method = "POST", .path = "/", .payload_hash = kEmptyHash}),
            "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

TEST(SigV4SuiteTest, PostXWwwFormUrlencoded) {
  const std::string body = "Param1=value1";
  EXPECT_EQ(SuiteSignature({.method = "POST",
                            .path = "/",
                            .headers = {{"Content-Type", "application/x-www-form-urlencoded"}},
                            .payload_hash = Sha256Hex(std::span<const char>(body.data(),
                                                                            body.size()))}),
            "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
}

}  // namespace
}  // namespace ferry::s3
