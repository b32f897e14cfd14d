#include "ferry/s3/s3_config.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string WriteKeypair(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(S3ConfigTest, ParsesTheIrodsContextKeys) {
  const std::string auth = WriteKeypair("keys1", "AKID\nSECRET\n");
  auto c = S3Config::FromContextString(
      "S3_DEFAULT_HOSTNAME=h1:7070,h2:7071;S3_REGIONNAME=eu-west-1;S3_AUTH_FILE=" + auth +
      ";S3_PROTO=HTTP;S3_RETRY_COUNT=5;S3_WAIT_TIME_SEC=3;S3_MPU_CHUNK=16;S3_MPU_THREADS=4;"
      "HOST_MODE=cacheless_detached;S3_STSDATE=both");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->endpoints, ElementsAre("h1:7070", "h2:7071"));
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_EQ(c->access_key_id, "AKID");
  EXPECT_EQ(c->secret_access_key, "SECRET");
  EXPECT_FALSE(c->use_https);
  EXPECT_EQ(c->retry_count, 5);
  EXPECT_EQ(c->retry_wait, absl::Seconds(3));
  EXPECT_EQ(c->mpu_chunk_bytes, 16 << 20);
  EXPECT_EQ(c->mpu_threads, 4);
  EXPECT_EQ(c->host_mode, HostMode::kCachelessDetached);
}

TEST(S3ConfigTest, ArchiveDetachedIsRejectedWithAReason) {
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h;HOST_MODE=archive_detached");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("HOST_MODE"));
  EXPECT_THAT(c.status().message(), HasSubstr("not supported"));
}

TEST(S3ConfigTest, BadNumberNamesTheKey) {
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h;S3_RETRY_COUNT=lots");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("S3_RETRY_COUNT"));
}

TEST(S3ConfigTest, ChunkBelowS3MinimumPartIsRejected) {
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h;S3_MPU_CHUNK=4");
  EXPECT_THAT(c.status().message(), HasSubstr("S3_MPU_CHUNK"));
}

TEST(S3ConfigTest, BadProtoNamesTheKey) {
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h;S3_PROTO=ftp");
  EXPECT_THAT(c.status().message(), HasSubstr("S3_PROTO"));
}

TEST(S3ConfigTest, MissingAuthFileNamesTheKey) {
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h;S3_AUTH_FILE=/nonexistent/keys");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("S3_AUTH_FILE"));
}

TEST(S3ConfigTest, AuthFileWithOneLineIsRejected) {
  const std::string auth = WriteKeypair("keys2", "AKID\n");
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h;S3_AUTH_FILE=" + auth);
  EXPECT_THAT(c.status().message(), HasSubstr("line 2"));
}

TEST(S3ConfigTest, NoEndpointIsRejected) {
  auto c = S3Config::FromContextString("S3_REGIONNAME=x");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("S3_DEFAULT_HOSTNAME"));
}

TEST(S3ConfigTest, EnvironmentSuppliesCredentialsRegionAndEndpoint) {
  auto c = S3Config::FromEnvironment({{"AWS_ACCESS_KEY_ID", "AK"},
                                      {"AWS_SECRET_ACCESS_KEY", "SK"},
                                      {"AWS_SESSION_TOKEN", "TOK"},
                                      {"AWS_DEFAULT_REGION", "ap-south-1"},
                                      {"AWS_ENDPOINT_URL", "http://127.0.0.1:7070/"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AK");
  EXPECT_EQ(c->secret_access_key, "SK");
  EXPECT_EQ(c->session_token, "TOK");
  EXPECT_EQ(c->region, "ap-south-1");
  EXPECT_THAT(c->endpoints, ElementsAre("127.0.0.1:7070"));
  EXPECT_FALSE(c->use_https);
}

TEST(S3ConfigTest, AwsRegionWinsOverDefaultRegion) {
  auto c = S3Config::FromEnvironment({{"AWS_REGION", "r1"},
                                      {"AWS_DEFAULT_REGION", "r2"},
                                      {"AWS_ENDPOINT_URL", "https://s3.example.com"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->region, "r1");
  EXPECT_TRUE(c->use_https);
}

TEST(S3ConfigTest, ContextWinsOverEnvironment) {
  const std::string auth = WriteKeypair("keys3", "CTXKEY\nCTXSECRET\n");
  auto c = S3Config::FromContextString(
      "S3_DEFAULT_HOSTNAME=ctx:1;S3_REGIONNAME=ctx-region;S3_AUTH_FILE=" + auth,
      {{"AWS_ACCESS_KEY_ID", "AK"},
       {"AWS_SECRET_ACCESS_KEY", "SK"},
       {"AWS_REGION", "env-region"},
       {"AWS_ENDPOINT_URL", "http://env:2"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "CTXKEY");
  EXPECT_EQ(c->region, "ctx-region");
  EXPECT_THAT(c->endpoints, ElementsAre("ctx:1"));
}

TEST(S3ConfigTest, EndpointUrlWithoutSchemeIsRejected) {
  auto c = S3Config::FromEnvironment({{"AWS_ENDPOINT_URL", "127.0.0.1:7070"}});
  EXPECT_THAT(c.status().message(), HasSubstr("AWS_ENDPOINT_URL"));
}

}  // namespace
}  // namespace ferry::s3
