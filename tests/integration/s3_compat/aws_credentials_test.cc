// The credential chain against local stand-ins of AWS's credential
// endpoints (aws_standins.py: IMDSv2, the container endpoint, STS), the
// keys they hand out then used against versitygw; and the fast, actionable
// failures of issue #29 (a server that is not there, a missing bucket,
// keys the server refuses).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_config.h"
#include "ferry/s3/s3_object_store.h"
#include "ferry/s3/sigv4.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/s3_peer.h"

namespace ferry::s3 {
namespace {

using ::ferry::peers::AsSpan;
using ::ferry::peers::Wait;
using ::testing::HasSubstr;

// aws_standins.py as a child process: started with `args`, stopped (its
// stdin closed, then SIGTERM) by the destructor. Tests may own processes.
class StandIns {
 public:
  explicit StandIns(const std::string& args) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      const std::string cmd = absl::StrCat("exec python3 ", FERRY_AWS_STANDINS, " ", args);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    FILE* f = fdopen(out[0], "r");
    char line[64] = {0};
    if (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
      int port = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &port)) port_ = port;
    }
    if (f != nullptr) std::fclose(f);
  }
  ~StandIns() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string url(const std::string& path = "") const {
    return absl::StrCat("http://127.0.0.1:", port_, path);
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int port_ = 0;
};

// An environment with no keys, pointed at versitygw; `more` adds to it.
std::map<std::string, std::string> Env(std::map<std::string, std::string> more) {
  more.emplace("HOME", "/nonexistent");
  more.emplace("AWS_ENDPOINT_URL", absl::StrCat("http://127.0.0.1:", peers::kVersitygwPort));
  return more;
}

class AwsCredentialsTest : public ::testing::Test {
 protected:
  // A store made from `env` (S3Config::FromEnvironment), no retries.
  std::unique_ptr<S3ObjectStore> Store(const std::map<std::string, std::string>& env,
                                       const S3ConfigOverrides& overrides = {}) {
    auto c = S3Config::FromEnvironment(env, overrides);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return nullptr;
    c->retry_count = 0;
    return Create(*c);
  }
  std::unique_ptr<S3ObjectStore> Create(const S3Config& c) {
    auto s = S3ObjectStore::Create(rt_, c);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // A PutObject then a GetObject of it: the keys work against versitygw.
  absl::Status RoundTrip(S3ObjectStore& store, const std::string& key) {
    absl::Status made = peers::CreateBucketIfMissing(store, "creds");
    if (!made.ok()) return made;
    const std::string data = "signed with fetched keys";
    auto put = Wait<std::string>([&](Callback<std::string> cb) {
      store.Put("creds/" + key, AsSpan(data), {}, std::move(cb));
    });
    if (!put.ok()) return put.status();
    auto got = Wait<std::string>([&](Callback<std::string> cb) {
      store.GetRange("creds/" + key, 0, static_cast<int64_t>(data.size()), "", std::move(cb));
    });
    if (!got.ok()) return got.status();
    return *got == data ? absl::OkStatus() : absl::DataLossError("read back other bytes");
  }
  static absl::StatusOr<ObjectInfo> Head(S3ObjectStore& store, const std::string& key) {
    return Wait<ObjectInfo>([&](Callback<ObjectInfo> cb) { store.Head(key, std::move(cb)); });
  }
  static std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  Runtime rt_;
};

TEST_F(AwsCredentialsTest, InstanceRoleKeysFromImdsV2SignRequests) {
  StandIns aws("");
  ASSERT_GT(aws.port(), 0);
  auto store = Store(Env({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", aws.url()}}));
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->credential_description(), HasSubstr("IMDSv2"));
  const absl::Status round_trip = RoundTrip(*store, "imds");
  EXPECT_TRUE(round_trip.ok()) << round_trip;
  EXPECT_EQ(store->credential_fetches(), 1);
}

TEST_F(AwsCredentialsTest, UnreachableImdsFailsWithinASecondSayingWhatToSet) {
  auto store = Store(Env({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1"}}));
  ASSERT_NE(store, nullptr);
  const absl::Time start = absl::Now();
  auto info = Head(*store, "creds/x");
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable) << info.status();
  EXPECT_THAT(info.status().message(), HasSubstr("AWS_EC2_METADATA_DISABLED"));
}

TEST_F(AwsCredentialsTest, ContainerEndpointWithTheTokenFileGivesKeys) {
  StandIns aws("--ecs-token secret-ecs");
  const std::string token = WriteFile("ecs-token", "secret-ecs\n");
  auto store = Store(Env({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", aws.url("/ecs/creds")},
                          {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token}}));
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(RoundTrip(*store, "ecs").ok());
}

TEST_F(AwsCredentialsTest, ContainerEndpointRefusingTheTokenIsUnauthenticatedNamingIt) {
  StandIns aws("--ecs-token secret-ecs");
  auto store = Store(Env({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", aws.url("/ecs/creds")},
                          {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong"}}));
  ASSERT_NE(store, nullptr);
  auto info = Head(*store, "creds/x");
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnauthenticated) << info.status();
  EXPECT_THAT(info.status().message(), HasSubstr("AWS_CONTAINER_CREDENTIALS_FULL_URI"));
}

TEST_F(AwsCredentialsTest, AssumeRoleIsSignedWithTheSourceProfilesKeys) {
  StandIns aws("--source-key BASEKEY");
  const std::string dir = ::testing::TempDir() + "/assume";
  std::filesystem::create_directories(dir);
  const std::string config = WriteFile("assume/config",
                                       "[profile dev]\nrole_arn = arn:aws:iam::1:role/dev\n"
                                       "source_profile = base\n");
  const std::string creds = WriteFile(
      "assume/credentials", "[base]\naws_access_key_id = BASEKEY\naws_secret_access_key = BS\n");
  auto store = Store(Env({{"AWS_CONFIG_FILE", config},
                          {"AWS_SHARED_CREDENTIALS_FILE", creds},
                          {"AWS_ENDPOINT_URL_STS", aws.url()}}),
                     {.profile = "dev"});
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->credential_description(), HasSubstr("arn:aws:iam::1:role/dev"));
  EXPECT_TRUE(RoundTrip(*store, "assume-role").ok());
}

TEST_F(AwsCredentialsTest, StsRefusingTheSourceKeysSaysWhichSource) {
  StandIns aws("--source-key SOMEONE-ELSE");
  const std::string config = WriteFile(
      "assume-bad-config", "[profile dev]\nrole_arn = arn:aws:iam::1:role/dev\n"
                           "credential_source = Environment\n");
  auto store = Store(Env({{"AWS_CONFIG_FILE", config},
                          {"AWS_ACCESS_KEY_ID", "ENVKEY"},
                          {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"},
                          {"AWS_ENDPOINT_URL_STS", aws.url()}}),
                     {.profile = "dev"});
  ASSERT_NE(store, nullptr);
  auto info = Head(*store, "creds/x");
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnauthenticated) << info.status();
  EXPECT_THAT(info.status().message(), HasSubstr("InvalidClientTokenId"));
  EXPECT_THAT(info.status().message(), HasSubstr("environment variables"));
}

TEST_F(AwsCredentialsTest, WebIdentityTokenIsExchangedAtSts) {
  StandIns aws("--web-token the-jwt");
  const std::string token = WriteFile("web-token", "the-jwt\n");
  auto store = Store(Env({{"AWS_WEB_IDENTITY_TOKEN_FILE", token},
                          {"AWS_ROLE_ARN", "arn:aws:iam::1:role/web"},
                          {"AWS_ENDPOINT_URL_STS", aws.url()}}));
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(RoundTrip(*store, "web-identity").ok());
}

TEST_F(AwsCredentialsTest, CredentialProcessOutputSignsRequests) {
  const std::string script = WriteFile(
      "creds-process.sh",
      absl::StrCat("#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"", peers::kS3AccessKeyId,
                   "\", \"SecretAccessKey\": \"", peers::kS3SecretAccessKey, "\"}'\n"));
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const std::string config =
      WriteFile("process-config", absl::StrCat("[default]\ncredential_process = ", script, "\n"));
  auto store = Store(Env({{"AWS_CONFIG_FILE", config}}));
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(RoundTrip(*store, "process").ok());
}

// `aws sso login`'s cache for session "corp": the token file and a config
// whose profile "dev" uses it (in a fresh HOME).
std::string SsoHome(const std::string& name, const std::string& token_json) {
  const std::string home = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home + "/.aws/sso/cache");
  std::ofstream(home + "/.aws/config")
      << "[profile dev]\nsso_session = corp\nsso_account_id = 123456789012\n"
         "sso_role_name = ReadOnly\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\n"
         "sso_region = eu-west-1\n";
  std::ofstream(absl::StrCat(home, "/.aws/sso/cache/", Sha1Hex("corp"), ".json")) << token_json;
  return home;
}

TEST_F(AwsCredentialsTest, SsoProfileUsesTheCachedLoginToken) {
  StandIns aws("--sso-token tok-1");
  const std::string home = SsoHome(
      "sso1", R"({"accessToken": "tok-1", "expiresAt": "2099-01-01T00:00:00Z"})");
  auto store = Store({{"HOME", home},
                      {"AWS_ENDPOINT_URL_S3", absl::StrCat("http://127.0.0.1:", peers::kVersitygwPort)},
                      {"AWS_ENDPOINT_URL_SSO", aws.url()}},
                     {.profile = "dev"});
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->credential_description(), HasSubstr("SSO role ReadOnly"));
  const absl::Status round_trip = RoundTrip(*store, "sso");
  EXPECT_TRUE(round_trip.ok()) << round_trip;
}

TEST_F(AwsCredentialsTest, ExpiredSsoTokenSaysToLogInAgain) {
  const std::string home = SsoHome(
      "sso2", R"({"accessToken": "tok-1", "expiresAt": "2020-01-01T00:00:00Z"})");
  auto store = Store({{"HOME", home},
                      {"AWS_ENDPOINT_URL_S3", absl::StrCat("http://127.0.0.1:", peers::kVersitygwPort)},
                      {"AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:1"}},
                     {.profile = "dev"});
  ASSERT_NE(store, nullptr);
  auto info = Head(*store, "creds/x");
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnauthenticated) << info.status();
  EXPECT_THAT(info.status().message(), HasSubstr("aws sso login"));
}

TEST_F(AwsCredentialsTest, KeysExpiringDuringACopyAreRefreshedWithoutAFailedRequest) {
  // Keys live 4 s, less than twice the 3 s window: the store fetches again
  // at half their life (2 s ahead, in the background) and would wait only
  // in their last 1.3 s; over 7 s of back-to-back requests the keys are
  // replaced at least twice and no request fails.
  StandIns aws("--expires-in 4");
  auto c = S3Config::FromEnvironment(Env({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", aws.url()}}));
  ASSERT_TRUE(c.ok()) << c.status();
  c->retry_count = 0;
  c->credentials_refresh_ahead = absl::Seconds(3);
  auto store = Create(*c);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(peers::CreateBucketIfMissing(*store, "creds").ok());
  const std::string data = peers::RandomBytes(64 << 10, 7);
  int requests = 0;
  for (const absl::Time end = absl::Now() + absl::Seconds(7); absl::Now() < end; ++requests) {
    auto put = Wait<std::string>([&](Callback<std::string> cb) {
      store->Put("creds/refresh", AsSpan(data), {}, std::move(cb));
    });
    ASSERT_TRUE(put.ok()) << "request " << requests << ": " << put.status();
  }
  EXPECT_GE(store->credential_fetches(), 3) << requests << " requests";
}

// ---- Fast, actionable failures ----

TEST_F(AwsCredentialsTest, RefusedEndpointFailsInUnderASecondDespiteRetries) {
  auto c = S3Config::FromEnvironment(
      {{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"},
       {"AWS_ENDPOINT_URL", "http://127.0.0.1:1"}, {"HOME", "/nonexistent"}});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_GT(c->retry_count, 0);  // the defaults: retries are on
  auto store = Create(*c);
  const absl::Time start = absl::Now();
  auto info = Head(*store, "b/k");
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable) << info.status();
}

TEST_F(AwsCredentialsTest, UnresolvableEndpointFailsInUnderASecond) {
  auto c = S3Config::FromEnvironment(
      {{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"},
       {"AWS_ENDPOINT_URL", "http://no-such-host.invalid:9000"}, {"HOME", "/nonexistent"}});
  ASSERT_TRUE(c.ok()) << c.status();
  auto store = Create(*c);
  const absl::Time start = absl::Now();
  auto info = Head(*store, "b/k");
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable) << info.status();
}

TEST_F(AwsCredentialsTest, LargeUploadToAMissingBucketIsNoSuchBucketAtOnce) {
  auto store = Store(Env({{"AWS_ACCESS_KEY_ID", peers::kS3AccessKeyId},
                          {"AWS_SECRET_ACCESS_KEY", peers::kS3SecretAccessKey}}));
  ASSERT_NE(store, nullptr);
  const std::string data = peers::RandomBytes(8 << 20, 3);
  const absl::Time start = absl::Now();
  auto put = Wait<std::string>([&](Callback<std::string> cb) {
    store->Put("no-such-bucket-29/x", AsSpan(data), {}, std::move(cb));
  });
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(put.status().code(), absl::StatusCode::kNotFound) << put.status();
  EXPECT_THAT(put.status().message(), HasSubstr("NoSuchBucket"));
}

TEST_F(AwsCredentialsTest, MultipartUploadToAMissingBucketStopsAtItsFirstRequest) {
  auto store = Store(Env({{"AWS_ACCESS_KEY_ID", peers::kS3AccessKeyId},
                          {"AWS_SECRET_ACCESS_KEY", peers::kS3SecretAccessKey}}));
  ASSERT_NE(store, nullptr);
  auto upload = Wait<std::string>([&](Callback<std::string> cb) {
    store->CreateMultipart("no-such-bucket-29/x", std::move(cb));
  });
  EXPECT_EQ(upload.status().code(), absl::StatusCode::kNotFound) << upload.status();
  EXPECT_THAT(upload.status().message(), HasSubstr("NoSuchBucket"));
}

TEST_F(AwsCredentialsTest, WrongSecretSaysWhereTheKeysCameFrom) {
  auto store = Store(Env({{"AWS_ACCESS_KEY_ID", peers::kS3AccessKeyId},
                          {"AWS_SECRET_ACCESS_KEY", "not-the-secret"}}));
  ASSERT_NE(store, nullptr);
  const std::string data = "x";
  auto put = Wait<std::string>([&](Callback<std::string> cb) {
    store->Put("creds/x", AsSpan(data), {}, std::move(cb));
  });
  EXPECT_EQ(put.status().code(), absl::StatusCode::kUnauthenticated) << put.status();
  EXPECT_THAT(put.status().message(), HasSubstr("environment variables (AWS_ACCESS_KEY_ID)"));
}

TEST_F(AwsCredentialsTest, WrongSecretOnAHeadSaysWhereTheKeysCameFrom) {
  auto store = Store(Env({{"AWS_ACCESS_KEY_ID", peers::kS3AccessKeyId},
                          {"AWS_SECRET_ACCESS_KEY", "not-the-secret"}}));
  ASSERT_NE(store, nullptr);
  auto info = Head(*store, "creds/x");
  EXPECT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr("environment variables (AWS_ACCESS_KEY_ID)"));
}

TEST_F(AwsCredentialsTest, UnsignedRequestToAPrivateBucketSaysItWasUnsigned) {
  auto store = Store(Env({}), {.no_sign_request = true});
  ASSERT_NE(store, nullptr);
  auto info = Head(*store, "creds/x");
  EXPECT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr("unsigned"));
}

}  // namespace
}  // namespace ferry::s3
