#include "ferry/s3/s3_config.h"

#include "ferry/s3/sigv4.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::s3 {

// How a config shows in a failed expectation: the fields the tests check
// (in ferry::s3, where gMock's printer looks).
void PrintTo(const S3Config& c, std::ostream* os) {
  *os << "{endpoints=" << absl::StrJoin(c.endpoints, ",") << " region=" << c.region
      << " access_key_id=" << c.access_key_id << " session_token=" << c.session_token
      << " use_https=" << c.use_https << " addressing_style=" << static_cast<int>(c.addressing_style)
      << " ca_bundle_path=" << c.ca_bundle_path << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What a test expects of a resolved S3Config, in the struct's order;
// fields left unset are not checked. Endpoints are comma-joined.
struct Resolved {
  std::optional<std::string> endpoints;
  std::optional<std::string> region;
  std::optional<std::string> access_key_id;
  std::optional<std::string> secret_access_key;
  std::optional<std::string> session_token;
  std::optional<bool> use_https;
  std::optional<AddressingStyle> addressing_style;
  std::optional<std::string> ca_bundle_path;
};

// Matches an S3Config with every field `want` sets; says which differ.
MATCHER_P(ResolvesMatcher, want, "resolves to the expected endpoints, region, keys and options") {
  bool matches = true;
  auto check = [&](const char* name, const auto& expected, const auto& actual) {
    if (expected.has_value() && *expected != actual) {
      *result_listener << name << " is " << ::testing::PrintToString(actual) << ", not "
                       << ::testing::PrintToString(*expected) << "; ";
      matches = false;
    }
  };
  check("endpoints", want.endpoints, absl::StrJoin(arg.endpoints, ","));
  check("region", want.region, arg.region);
  check("access_key_id", want.access_key_id, arg.access_key_id);
  check("secret_access_key", want.secret_access_key, arg.secret_access_key);
  check("session_token", want.session_token, arg.session_token);
  check("use_https", want.use_https, arg.use_https);
  check("addressing_style", want.addressing_style, arg.addressing_style);
  check("ca_bundle_path", want.ca_bundle_path, arg.ca_bundle_path);
  return matches;
}

::testing::Matcher<S3Config> Resolves(const Resolved& want) { return ResolvesMatcher(want); }

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
  EXPECT_THAT(*c, Resolves({.endpoints = "h1:7070,h2:7071",
                            .region = "eu-west-1",
                            .access_key_id = "AKID",
                            .secret_access_key = "SECRET",
                            .use_https = false}));
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

// A context string S3Config refuses, and the key its error names.
struct BadContext {
  const char* name;
  const char* context;
  const char* names;
};

void PrintTo(const BadContext& b, std::ostream* os) { *os << b.name; }

class S3ConfigBadContextTest : public ::testing::TestWithParam<BadContext> {};

TEST_P(S3ConfigBadContextTest, IsInvalidArgumentNamingTheKey) {
  auto c = S3Config::FromContextString(GetParam().context);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr(GetParam().names));
}

INSTANTIATE_TEST_SUITE_P(
    Contexts, S3ConfigBadContextTest,
    ::testing::Values(
        BadContext{"BadNumber", "S3_DEFAULT_HOSTNAME=h;S3_RETRY_COUNT=lots", "S3_RETRY_COUNT"},
        BadContext{"ChunkBelowS3MinimumPart", "S3_DEFAULT_HOSTNAME=h;S3_MPU_CHUNK=4",
                   "S3_MPU_CHUNK"},
        BadContext{"BadProto", "S3_DEFAULT_HOSTNAME=h;S3_PROTO=ftp", "S3_PROTO"},
        BadContext{"MissingAuthFile", "S3_DEFAULT_HOSTNAME=h;S3_AUTH_FILE=/nonexistent/keys",
                   "S3_AUTH_FILE"},
        // (No S3_DEFAULT_HOSTNAME at all is AWS: S3ConfigAwsTest.)
        BadContext{"EmptyHostname", "S3_DEFAULT_HOSTNAME= ;S3_REGIONNAME=x",
                   "S3_DEFAULT_HOSTNAME"}),
    [](const ::testing::TestParamInfo<BadContext>& p) { return p.param.name; });

TEST(S3ConfigTest, AuthFileWithOneLineIsRejected) {
  const std::string auth = WriteKeypair("keys2", "AKID\n");
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h;S3_AUTH_FILE=" + auth);
  EXPECT_THAT(c.status().message(), HasSubstr("line 2"));
}

// Keys, session token, region and endpoint, as AWS variables.
std::map<std::string, std::string> AwsVariables() {
  return {{"AWS_ACCESS_KEY_ID", "AK"},
          {"AWS_SECRET_ACCESS_KEY", "SK"},
          {"AWS_SESSION_TOKEN", "TOK"},
          {"AWS_DEFAULT_REGION", "ap-south-1"},
          {"AWS_ENDPOINT_URL", "http://127.0.0.1:7070/"}};
}

TEST(S3ConfigTest, EnvironmentSuppliesCredentialsRegionAndEndpoint) {
  auto c = S3Config::FromEnvironment(AwsVariables());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.endpoints = "127.0.0.1:7070",
                            .region = "ap-south-1",
                            .access_key_id = "AK",
                            .secret_access_key = "SK",
                            .session_token = "TOK",
                            .use_https = false}));
}

TEST(S3ConfigTest, AwsRegionWinsOverDefaultRegion) {
  auto c = S3Config::FromEnvironment({{"AWS_REGION", "r1"},
                                      {"AWS_DEFAULT_REGION", "r2"},
                                      {"AWS_ENDPOINT_URL", "https://s3.example.com"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.region = "r1", .use_https = true}));
}

TEST(S3ConfigTest, ContextWinsOverEnvironment) {
  const std::string auth = WriteKeypair("keys3", "CTXKEY\nCTXSECRET\n");
  std::map<std::string, std::string> env = AwsVariables();
  env["AWS_REGION"] = "env-region";  // the strongest region variable too
  auto c = S3Config::FromContextString(
      "S3_DEFAULT_HOSTNAME=ctx:1;S3_REGIONNAME=ctx-region;S3_AUTH_FILE=" + auth, env);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.endpoints = "ctx:1",
                            .region = "ctx-region",
                            .access_key_id = "CTXKEY"}));
}

TEST(S3ConfigTest, EndpointUrlWithoutSchemeIsRejected) {
  auto c = S3Config::FromEnvironment({{"AWS_ENDPOINT_URL", "127.0.0.1:7070"}});
  EXPECT_THAT(c.status().message(), HasSubstr("AWS_ENDPOINT_URL"));
}

// ---- AWS CLI profile files (~/.aws/config, ~/.aws/credentials) ----

// A fresh HOME with .aws/config and .aws/credentials holding `config` and
// `credentials` (a file is not written when its text is empty).
std::string MakeHome(const std::string& name, const std::string& config,
                     const std::string& credentials) {
  const std::string home = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home + "/.aws");
  if (!config.empty()) std::ofstream(home + "/.aws/config") << config;
  if (!credentials.empty()) std::ofstream(home + "/.aws/credentials") << credentials;
  return home;
}

constexpr char kProfileConfig[] =
    "# comment\n"
    "[default]\n"
    "region = eu-west-1\n"
    "endpoint_url = http://default-host:9000\n"
    "\n"
    "[profile nested]\n"
    "region=ap-south-1\n"
    "; another comment\n"
    "s3 =\n"
    "  endpoint_url = https://nested-host:9443/\n"
    "  addressing_style = virtual\n"
    "endpoint_url = http://global-host:1\n"
    "ca_bundle = ~/ca.pem\n"
    "\n"
    "[profile keys-in-config]\n"
    "aws_access_key_id = CFGKEY\n"
    "aws_secret_access_key = CFGSECRET\n"
    "endpoint_url = http://cfg-host:2\n";

constexpr char kProfileCredentials[] =
    "[default]\n"
    "aws_access_key_id = DEFKEY\n"
    "aws_secret_access_key = DEFSECRET\n"
    "[nested]\n"
    "aws_access_key_id = NESTKEY\n"
    "aws_secret_access_key = NESTSECRET\n"
    "aws_session_token = NESTTOKEN\n";

TEST(S3ConfigProfileTest, DefaultProfileGivesKeysRegionAndEndpoint) {
  const std::string home = MakeHome("p1", kProfileConfig, kProfileCredentials);
  auto c = S3Config::FromEnvironment({{"HOME", home}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.endpoints = "default-host:9000",
                            .region = "eu-west-1",
                            .access_key_id = "DEFKEY",
                            .secret_access_key = "DEFSECRET",
                            .session_token = "",
                            .use_https = false,
                            .addressing_style = AddressingStyle::kAuto}));
}

TEST(S3ConfigProfileTest, NamedProfileReadsTheNestedS3Block) {
  const std::string home = MakeHome("p2", kProfileConfig, kProfileCredentials);
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "nested"}});
  ASSERT_TRUE(c.ok()) << c.status();
  // The s3-specific endpoint wins over the profile's global one.
  EXPECT_THAT(*c, Resolves({.endpoints = "nested-host:9443",
                            .region = "ap-south-1",
                            .access_key_id = "NESTKEY",
                            .session_token = "NESTTOKEN",
                            .use_https = true,
                            .addressing_style = AddressingStyle::kVirtual,
                            .ca_bundle_path = home + "/ca.pem"}));
}

TEST(S3ConfigProfileTest, KeysMayLiveInTheConfigFile) {
  const std::string home = MakeHome("p3", kProfileConfig, kProfileCredentials);
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "keys-in-config"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.region = "us-east-1",  // the profile has none: the built-in default
                            .access_key_id = "CFGKEY",
                            .secret_access_key = "CFGSECRET"}));
}

// AWS variables set over the "nested" profile (which has its own keys and
// session token, region, endpoint and CA bundle), and what they must win.
struct VariablesOverProfile {
  const char* name;
  std::map<std::string, std::string> variables;
  Resolved want;
};

void PrintTo(const VariablesOverProfile& v, std::ostream* os) { *os << v.name; }

class S3ConfigVariablesOverProfileTest : public ::testing::TestWithParam<VariablesOverProfile> {};

TEST_P(S3ConfigVariablesOverProfileTest, WinOverTheFiles) {
  std::map<std::string, std::string> env = GetParam().variables;
  env["HOME"] =
      MakeHome(absl::StrCat("p4-", GetParam().name), kProfileConfig, kProfileCredentials);
  env["AWS_PROFILE"] = "nested";
  auto c = S3Config::FromEnvironment(env);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves(GetParam().want));
}

INSTANTIATE_TEST_SUITE_P(
    Variables, S3ConfigVariablesOverProfileTest,
    ::testing::Values(
        // The keys come as a set: the profile's session token is not mixed in.
        VariablesOverProfile{
            "Keys",
            {{"AWS_ACCESS_KEY_ID", "ENVKEY"}, {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"}},
            {.access_key_id = "ENVKEY", .secret_access_key = "ENVSECRET", .session_token = ""}},
        VariablesOverProfile{
            "Region", {{"AWS_DEFAULT_REGION", "env-region"}}, {.region = "env-region"}},
        VariablesOverProfile{"Endpoint",
                             {{"AWS_ENDPOINT_URL", "http://env-host:3"}},
                             {.endpoints = "env-host:3", .use_https = false}},
        VariablesOverProfile{
            "CaBundle", {{"AWS_CA_BUNDLE", "/env/ca.pem"}}, {.ca_bundle_path = "/env/ca.pem"}}),
    [](const ::testing::TestParamInfo<VariablesOverProfile>& p) {
      return std::string(p.param.name);
    });

TEST(S3ConfigProfileTest, S3EndpointVariableWinsOverTheGenericOne) {
  auto c = S3Config::FromEnvironment(
      {{"AWS_ENDPOINT_URL", "http://generic:1"}, {"AWS_ENDPOINT_URL_S3", "http://s3only:2"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->endpoints, ElementsAre("s3only:2"));
}

TEST(S3ConfigProfileTest, FileLocationsComeFromTheVariables) {
  const std::string dir = MakeHome("p5", "", "");
  std::ofstream(dir + "/my-config") << "[profile x]\nendpoint_url = http://from-var:5\n";
  std::ofstream(dir + "/my-creds") << "[x]\naws_access_key_id = XK\naws_secret_access_key = XS\n";
  auto c = S3Config::FromEnvironment({{"AWS_CONFIG_FILE", dir + "/my-config"},
                                      {"AWS_SHARED_CREDENTIALS_FILE", dir + "/my-creds"},
                                      {"AWS_PROFILE", "x"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.endpoints = "from-var:5", .access_key_id = "XK"}));
}

TEST(S3ConfigProfileTest, UnknownProfileIsRejectedByName) {
  const std::string home = MakeHome("p6", kProfileConfig, kProfileCredentials);
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "nope"}});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("AWS_PROFILE"));
  EXPECT_THAT(c.status().message(), HasSubstr("nope"));
}

TEST(S3ConfigProfileTest, MissingFilesAreNoError) {
  const std::string home = MakeHome("p7", "", "");
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_ENDPOINT_URL", "http://h:1"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->access_key_id.empty());
}

TEST(S3ConfigProfileTest, ContextStillWinsOverTheProfile) {
  const std::string home = MakeHome("p8", kProfileConfig, kProfileCredentials);
  auto c = S3Config::FromContextString(
      "S3_DEFAULT_HOSTNAME=ctx:1;S3_REGIONNAME=ctx-region;S3_URI_REQUEST_STYLE=path",
      {{"HOME", home}, {"AWS_PROFILE", "nested"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.endpoints = "ctx:1",
                            .region = "ctx-region",
                            .access_key_id = "NESTKEY",  // the context had no keys
                            .addressing_style = AddressingStyle::kPath}));
}

TEST(S3ConfigProfileTest, BadAddressingStyleNamesTheProfile) {
  const std::string home = MakeHome(
      "p9", "[default]\nendpoint_url = http://h:1\ns3 =\n  addressing_style = sideways\n", "");
  auto c = S3Config::FromEnvironment({{"HOME", home}});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("addressing_style"));
}

TEST(S3ConfigProfileTest, ConfigFileThatNeverEndsIsRejectedByItsVariable) {
  auto c = S3Config::FromEnvironment(
      {{"AWS_ENDPOINT_URL", "http://h:1"}, {"AWS_CONFIG_FILE", "/dev/zero"}});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("AWS_CONFIG_FILE"));
  EXPECT_THAT(c.status().message(), HasSubstr("larger than"));
}

TEST(S3ConfigProfileTest, CredentialsFileDevNullReadsAsNoCredentials) {
  auto c = S3Config::FromEnvironment({{"AWS_ENDPOINT_URL", "http://h:1"},
                                      {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
                                      {"AWS_CONFIG_FILE", "/dev/null"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "");
}

TEST(S3ConfigTest, AuthFileThatIsADeviceIsRejectedAtOnce) {
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=h:1;S3_AUTH_FILE=/dev/zero", {});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("S3_AUTH_FILE"));
}


// ---- AWS as the SDKs resolve it: no endpoint, region, variants ----

using Kind = AwsCredentialSource::Kind;

TEST(S3ConfigAwsTest, NoEndpointMeansAwsInUsEast1) {
  auto c = S3Config::FromEnvironment(
      {{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}, {"HOME", "/nonexistent"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->endpoints.empty());
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_TRUE(c->use_https);
  EXPECT_EQ(c->addressing_style, AddressingStyle::kAuto);
}

TEST(S3ConfigAwsTest, FipsDualstackAndRegionalVariablesAreRead) {
  auto c = S3Config::FromEnvironment({{"AWS_USE_FIPS_ENDPOINT", "true"},
                                      {"AWS_USE_DUALSTACK_ENDPOINT", "TRUE"},
                                      {"AWS_S3_US_EAST_1_REGIONAL_ENDPOINT", "regional"},
                                      {"HOME", "/nonexistent"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->use_fips_endpoint);
  EXPECT_TRUE(c->use_dualstack_endpoint);
  EXPECT_TRUE(c->us_east_1_regional_endpoint);
}

TEST(S3ConfigAwsTest, ProfileKeysShapeTheAwsEndpoint) {
  const std::string home = MakeHome(
      "aws1", "[default]\nuse_fips_endpoint = true\ns3 =\n  us_east_1_regional_endpoint = regional\n",
      "");
  auto c = S3Config::FromEnvironment({{"HOME", home}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->use_fips_endpoint);
  EXPECT_FALSE(c->use_dualstack_endpoint);
  EXPECT_TRUE(c->us_east_1_regional_endpoint);
}

TEST(S3ConfigAwsTest, LegacyUsEast1IsTheDefault) {
  auto c = S3Config::FromEnvironment({{"AWS_S3_US_EAST_1_REGIONAL_ENDPOINT", "legacy"},
                                      {"HOME", "/nonexistent"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->us_east_1_regional_endpoint);
}

// ---- What a tool passes (--endpoint-url, --region, --profile, --no-sign-request) ----

TEST(S3ConfigOverridesTest, EndpointAndRegionWinOverEverything) {
  auto c = S3Config::FromContextString("S3_DEFAULT_HOSTNAME=ctx:1;S3_REGIONNAME=ctx-region",
                                       AwsVariables(),
                                       {.endpoint_url = "http://cli:9", .region = "cli-region"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Resolves({.endpoints = "cli:9", .region = "cli-region", .use_https = false}));
}

TEST(S3ConfigOverridesTest, ExplicitProfileIgnoresTheKeyVariables) {
  const std::string home = MakeHome("ov1", kProfileConfig, kProfileCredentials);
  std::map<std::string, std::string> env = AwsVariables();
  env["HOME"] = home;
  auto c = S3Config::FromEnvironment(env, {.profile = "nested"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "NESTKEY");
  EXPECT_THAT(c->credential_source.description, HasSubstr("profile nested"));
}

TEST(S3ConfigOverridesTest, UnknownExplicitProfileIsRejectedByName) {
  auto c = S3Config::FromEnvironment({{"HOME", "/nonexistent"}}, {.profile = "nope"});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("nope"));
}

TEST(S3ConfigOverridesTest, NoSignRequestIsAnonymousEvenWithKeys) {
  auto c = S3Config::FromEnvironment(AwsVariables(), {.no_sign_request = true});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kAnonymous);
}

TEST(S3ConfigOverridesTest, GivenKeyAndSecretWinOverTheEnvironment) {
  auto c = S3Config::FromEnvironment(
      AwsVariables(), {.access_key_id = "GIVEN", .secret_access_key = "GS", .session_token = "GT"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "GIVEN");
  EXPECT_EQ(c->secret_access_key, "GS");
  EXPECT_EQ(c->session_token, "GT");
  EXPECT_EQ(c->credential_source.kind, Kind::kStatic);
  EXPECT_THAT(c->credential_source.description, HasSubstr("given"));
}

TEST(S3ConfigOverridesTest, AKeyWithoutASecretIsRejected) {
  auto c = S3Config::FromEnvironment(AwsVariables(), {.access_key_id = "GIVEN"});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("give both"));
}

// ---- The credential chain, botocore's order ----

TEST(S3ConfigChainTest, KeyVariablesComeFirst) {
  auto c = S3Config::FromEnvironment(AwsVariables());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kStatic);
  EXPECT_THAT(c->credential_source.description, HasSubstr("environment"));
}

constexpr char kRoleConfig[] =
    "[profile dev]\n"
    "role_arn = arn:aws:iam::123:role/dev\n"
    "source_profile = base\n"
    "role_session_name = me\n"
    "external_id = ext\n"
    "[profile ci]\n"
    "role_arn = arn:aws:iam::123:role/ci\n"
    "credential_source = Environment\n"
    "[profile proc]\n"
    "credential_process = /bin/get-creds --x\n"
    "[profile web]\n"
    "role_arn = arn:aws:iam::123:role/web\n"
    "web_identity_token_file = /var/token\n";
constexpr char kRoleCredentials[] = "[base]\naws_access_key_id = BASEKEY\naws_secret_access_key = BASESECRET\n";

TEST(S3ConfigChainTest, RoleWithSourceProfileIsAssumeRoleSignedByItsKeys) {
  const std::string home = MakeHome("ch1", kRoleConfig, kRoleCredentials);
  auto c = S3Config::FromEnvironment(
      {{"HOME", home}, {"AWS_PROFILE", "dev"}, {"AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1"}});
  ASSERT_TRUE(c.ok()) << c.status();
  const AwsCredentialSource& s = c->credential_source;
  EXPECT_EQ(s.kind, Kind::kAssumeRole);
  EXPECT_EQ(s.role_arn, "arn:aws:iam::123:role/dev");
  EXPECT_EQ(s.role_session_name, "me");
  EXPECT_EQ(s.external_id, "ext");
  EXPECT_EQ(s.endpoint, "http://127.0.0.1:1");
  ASSERT_NE(s.source, nullptr);
  EXPECT_EQ(s.source->kind, Kind::kStatic);
  EXPECT_EQ(s.source->keys.access_key_id, "BASEKEY");
}

TEST(S3ConfigChainTest, StsIsRegionalByDefault) {
  const std::string home = MakeHome("ch2", kRoleConfig, kRoleCredentials);
  auto c = S3Config::FromEnvironment(
      {{"HOME", home}, {"AWS_PROFILE", "dev"}, {"AWS_REGION", "eu-west-1"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.endpoint, "https://sts.eu-west-1.amazonaws.com");
  EXPECT_EQ(c->credential_source.sts_region, "eu-west-1");
}

TEST(S3ConfigChainTest, CredentialSourceEnvironmentSignsWithTheVariables) {
  const std::string home = MakeHome("ch3", kRoleConfig, "");
  auto c = S3Config::FromEnvironment({{"HOME", home},
                                      {"AWS_PROFILE", "ci"},
                                      {"AWS_ACCESS_KEY_ID", "EK"},
                                      {"AWS_SECRET_ACCESS_KEY", "ES"}});
  ASSERT_TRUE(c.ok()) << c.status();
  // The key variables come first in the chain: with them set, botocore
  // uses them as they are (the role is for an explicit --profile).
  EXPECT_EQ(c->credential_source.kind, Kind::kStatic);
  auto explicit_profile = S3Config::FromEnvironment(
      {{"HOME", home}, {"AWS_ACCESS_KEY_ID", "EK"}, {"AWS_SECRET_ACCESS_KEY", "ES"}},
      {.profile = "ci"});
  ASSERT_TRUE(explicit_profile.ok()) << explicit_profile.status();
  EXPECT_EQ(explicit_profile->credential_source.kind, Kind::kAssumeRole);
  ASSERT_NE(explicit_profile->credential_source.source, nullptr);
  EXPECT_EQ(explicit_profile->credential_source.source->keys.access_key_id, "EK");
}

TEST(S3ConfigChainTest, CredentialProcessOfTheProfile) {
  const std::string home = MakeHome("ch4", kRoleConfig, "");
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "proc"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kProcess);
  EXPECT_EQ(c->credential_source.command, "/bin/get-creds --x");
}

TEST(S3ConfigChainTest, WebIdentityFromTheVariables) {
  auto c = S3Config::FromEnvironment({{"HOME", "/nonexistent"},
                                      {"AWS_WEB_IDENTITY_TOKEN_FILE", "/t"},
                                      {"AWS_ROLE_ARN", "arn:aws:iam::1:role/r"},
                                      {"AWS_ROLE_SESSION_NAME", "s"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kWebIdentity);
  EXPECT_EQ(c->credential_source.web_identity_token_file, "/t");
  EXPECT_EQ(c->credential_source.role_session_name, "s");
}

TEST(S3ConfigChainTest, WebIdentityFromTheProfile) {
  const std::string home = MakeHome("ch5", kRoleConfig, "");
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "web"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kWebIdentity);
  EXPECT_EQ(c->credential_source.role_arn, "arn:aws:iam::123:role/web");
}

TEST(S3ConfigChainTest, SsoSessionProfileReadsTheLoginCache) {
  const std::string home = MakeHome(
      "ch6",
      "[profile sso]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Admin\n"
      "[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n",
      "");
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "sso"}});
  ASSERT_TRUE(c.ok()) << c.status();
  const AwsCredentialSource& s = c->credential_source;
  EXPECT_EQ(s.kind, Kind::kSso);
  EXPECT_EQ(s.sso_account_id, "111");
  EXPECT_EQ(s.sso_role_name, "Admin");
  EXPECT_EQ(s.endpoint, "https://portal.sso.eu-west-1.amazonaws.com");
  // botocore's cache file: the SHA-1 of the session name.
  EXPECT_EQ(s.sso_token_file,
            home + "/.aws/sso/cache/" + Sha1Hex("corp") + ".json");
}

TEST(S3ConfigChainTest, LegacySsoProfileKeysTheCacheByStartUrl) {
  const std::string home = MakeHome(
      "ch7",
      "[profile sso]\nsso_start_url = https://x.awsapps.com/start\nsso_region = us-east-2\n"
      "sso_account_id = 111\nsso_role_name = Admin\n",
      "");
  auto c = S3Config::FromEnvironment({{"HOME", home}, {"AWS_PROFILE", "sso"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.sso_token_file,
            home + "/.aws/sso/cache/" + Sha1Hex("https://x.awsapps.com/start") + ".json");
}

TEST(S3ConfigChainTest, ContainerFullUriWithItsToken) {
  auto c = S3Config::FromEnvironment(
      {{"HOME", "/nonexistent"},
       {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds"},
       {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "tok"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kContainer);
  EXPECT_EQ(c->credential_source.endpoint, "http://127.0.0.1:9/creds");
  EXPECT_EQ(c->credential_source.authorization_token, "tok");
}

TEST(S3ConfigChainTest, ContainerRelativeUriIsUnderTheEcsAddress) {
  auto c = S3Config::FromEnvironment(
      {{"HOME", "/nonexistent"}, {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/creds/x"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.endpoint, "http://169.254.170.2/v2/creds/x");
}

TEST(S3ConfigChainTest, ContainerPlainHttpToAnotherHostIsRefused) {
  auto c = S3Config::FromEnvironment(
      {{"HOME", "/nonexistent"}, {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://evil.example/c"}});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("AWS_CONTAINER_CREDENTIALS_FULL_URI"));
}

TEST(S3ConfigChainTest, InstanceRoleIsTheLastResort) {
  auto c = S3Config::FromEnvironment(
      {{"HOME", "/nonexistent"}, {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9/"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kInstanceMetadata);
  EXPECT_EQ(c->credential_source.endpoint, "http://127.0.0.1:9");
}

TEST(S3ConfigChainTest, DisabledInstanceMetadataLeavesNoCredentials) {
  auto c = S3Config::FromEnvironment(
      {{"HOME", "/nonexistent"}, {"AWS_EC2_METADATA_DISABLED", "true"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credential_source.kind, Kind::kStatic);
  EXPECT_TRUE(c->access_key_id.empty());
}

}  // namespace
}  // namespace ferry::s3
