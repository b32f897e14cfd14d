// The credential answers ferry reads (credential_process / container /
// IMDS JSON, STS XML) and credential_process itself: no wire involved.
// The HTTP sources run against stand-ins in s3_compat/aws_credentials_test.
#include "ferry/s3/credential_fetch.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {
namespace {

using ::testing::HasSubstr;

TEST(ParseCredentialsJsonTest, ReadsKeysTokenAndExpiration) {
  auto c = ParseCredentialsJson(
      R"({"Version": 1, "AccessKeyId": "AK", "SecretAccessKey": "SK", "SessionToken": "TOK",
          "Expiration": "2026-11-27T23:00:00Z"})",
      "test");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AK");
  EXPECT_EQ(c->secret_access_key, "SK");
  EXPECT_EQ(c->session_token, "TOK");
  EXPECT_EQ(c->expiration, absl::FromUnixSeconds(1795820400));
}

TEST(ParseCredentialsJsonTest, ImdsSpellsTheTokenToken) {
  auto c = ParseCredentialsJson(R"({"Code": "Success", "AccessKeyId": "AK",
      "SecretAccessKey": "SK", "Token": "IMDSTOK", "Expiration": "2026-11-27T23:00:00Z"})",
                                "test");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->session_token, "IMDSTOK");
}

TEST(ParseCredentialsJsonTest, KeysWithoutExpirationNeverExpire) {
  auto c = ParseCredentialsJson(R"({"AccessKeyId": "AK", "SecretAccessKey": "SK"})", "test");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->expiration, absl::InfiniteFuture());
}

TEST(ParseCredentialsJsonTest, MissingSecretIsInvalidArgumentNamingTheSource) {
  auto c = ParseCredentialsJson(R"({"AccessKeyId": "AK"})", "credential_process \"x\"");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("credential_process \"x\""));
}

TEST(ParseCredentialsJsonTest, NotJsonIsInvalidArgument) {
  EXPECT_EQ(ParseCredentialsJson("<html>", "t").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseStsCredentialsTest, ReadsTheCredentialsElement) {
  auto c = ParseStsCredentials(
      "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA</AccessKeyId>"
      "<SecretAccessKey>S</SecretAccessKey><SessionToken>T&amp;1</SessionToken>"
      "<Expiration>2026-11-27T23:00:00Z</Expiration></Credentials></AssumeRoleResult>"
      "</AssumeRoleResponse>",
      "sts");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "ASIA");
  EXPECT_EQ(c->session_token, "T&1");
  EXPECT_EQ(c->expiration, absl::FromUnixSeconds(1795820400));
}

TEST(CredentialProcessTest, ItsJsonBecomesTheKeys) {
  const std::string script = ::testing::TempDir() + "/creds.sh";
  std::ofstream(script) << "#!/bin/sh\necho '{\"Version\":1,\"AccessKeyId\":\"PK\","
                           "\"SecretAccessKey\":\"PS\",\"SessionToken\":\"PT\"}'\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto c = FetchCredentials(
      {.kind = AwsCredentialSource::Kind::kProcess, .command = script + " --profile x"}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "PK");
  EXPECT_EQ(c->session_token, "PT");
}

TEST(CredentialProcessTest, FailingCommandIsUnauthenticatedNamingIt) {
  auto c = FetchCredentials({.kind = AwsCredentialSource::Kind::kProcess, .command = "exit 3"}, {});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(c.status().message(), HasSubstr("exit 3"));
  EXPECT_THAT(c.status().message(), HasSubstr("status 3"));
}

}  // namespace
}  // namespace ferry::s3
