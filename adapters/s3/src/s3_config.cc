// Parsing of S3Config. The context string is split on ';' then on the first
// '='; values are trimmed of blanks. What it leaves unset comes from the
// AWS variables, then from the AWS CLI's shared files, read with a small
// ini reader (botocore's rules for the keys we use, nested "s3 =" blocks
// included). Every failure names the key and the
// value so a misconfigured iRODS resource is fixed from the message alone.
#include "ferry/s3/s3_config.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "ferry/base/crypto.h"
#include "ferry/base/small_file.h"
#include "ferry/base/status_macros.h"
#include "ferry/s3/sigv4.h"

extern char** environ;

namespace ferry::s3 {
namespace {

absl::Status Bad(absl::string_view key, absl::string_view value, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("S3 config: ", key, "=\"", value, "\": ", why));
}

absl::StatusOr<int64_t> ParseInt(absl::string_view key, absl::string_view value, int64_t min,
                                 int64_t max) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v)) return Bad(key, value, "not an integer");
  if (v < min || v > max) {
    return Bad(key, value, absl::StrCat("out of range [", min, ", ", max, "]"));
  }
  return v;
}

// Reads an iRODS S3 keypair file: access key on the first line, secret on
// the second.
absl::Status ReadAuthFile(absl::string_view key, const std::string& path, S3Config& config) {
  absl::StatusOr<std::string> bytes = ReadSmallFile(path);
  if (!bytes.ok()) return Bad(key, path, bytes.status().message());
  std::vector<absl::string_view> lines = absl::StrSplit(*bytes, absl::MaxSplits('\n', 2));
  lines.resize(2);
  const std::string access(absl::StripAsciiWhitespace(lines[0]));
  const std::string secret(absl::StripAsciiWhitespace(lines[1]));
  if (access.empty() || secret.empty()) {
    return Bad(key, path, "expected the access key on line 1 and the secret on line 2");
  }
  config.access_key_id = access;
  config.secret_access_key = secret;
  return absl::OkStatus();
}

// "http://host:port/" -> use_https=false, endpoint "host:port".
absl::Status ParseEndpointUrl(absl::string_view key, absl::string_view url, S3Config& config) {
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "https://")) {
    config.use_https = true;
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    config.use_https = false;
  } else {
    return Bad(key, url, "expected http://host[:port] or https://host[:port]");
  }
  absl::ConsumeSuffix(&rest, "/");
  if (rest.empty() || absl::StrContains(rest, "/")) return Bad(key, url, "expected no path");
  config.endpoints = {std::string(rest)};
  return absl::OkStatus();
}

const std::string* Find(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

// What the context string set explicitly, so the environment and the
// profile files do not override it.
struct ExplicitKeys {
  bool region = false;
  bool request_style = false;
};

// One AWS shared file: section name -> key -> value. A nested block
// ("s3 =" followed by indented "key = value" lines) is kept as "s3.key".
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
using Section = std::map<std::string, std::string>;

// Reads an AWS CLI ini file the way botocore does for the parts we use:
// '#' and ';' start comment lines, keys are case-insensitive, values are
// trimmed. A missing or unreadable file reads as empty (the CLI too runs
// without one); one that is not a regular file or is too large to be one
// is InvalidArgument naming `variable`, the one that chose the path.
absl::StatusOr<IniSections> ReadIniFile(absl::string_view variable, const std::string& path) {
  IniSections sections;
  absl::StatusOr<std::string> bytes = ReadSmallFile(path);
  if (bytes.status().code() == absl::StatusCode::kFailedPrecondition) {
    return Bad(variable, path, bytes.status().message());
  }
  if (!bytes.ok()) return sections;
  std::string section;
  std::string nested;  // the open nested block ("s3"), or ""
  for (absl::string_view raw : absl::StrSplit(*bytes, '\n')) {
    const bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    absl::string_view text = absl::StripAsciiWhitespace(raw);
    if (text.empty() || text[0] == '#' || text[0] == ';') continue;
    if (text.front() == '[' && text.back() == ']') {
      section = std::string(absl::StripAsciiWhitespace(text.substr(1, text.size() - 2)));
      sections[section];
      nested.clear();
      continue;
    }
    const size_t eq = text.find('=');
    if (section.empty() || eq == absl::string_view::npos) continue;
    std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(text.substr(eq + 1)));
    if (indented && !nested.empty()) {
      sections[section][absl::StrCat(nested, ".", key)] = std::move(value);
    } else if (value.empty()) {
      nested = std::move(key);  // "s3 =" opens a nested block
    } else {
      nested.clear();
      sections[section][std::move(key)] = std::move(value);
    }
  }
  return sections;
}

// `path` with a leading "~/" replaced by $HOME from `env`; "" if it needs
// HOME and there is none.
std::string ExpandHome(const std::string& path, const std::map<std::string, std::string>& env) {
  if (path.rfind("~/", 0) != 0) return path;
  const std::string* home = Find(env, "HOME");
  return home == nullptr ? std::string() : absl::StrCat(*home, path.substr(1));
}

const Section* FindSection(const IniSections& ini, const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

const std::string* FindKey(const Section* section, const char* key) {
  if (section == nullptr) return nullptr;
  auto it = section->find(key);
  return it == section->end() || it->second.empty() ? nullptr : &it->second;
}

// True for botocore's spellings of true in AWS_USE_FIPS_ENDPOINT and kin.
bool IsTrue(const std::string* value) {
  return value != nullptr && absl::AsciiStrToLower(*value) == "true";
}

// Both shared files, and the sections of one profile in them.
struct SharedFiles {
  std::string credentials_path;
  std::string config_path;
  IniSections credentials_file;
  IniSections config_file;

  const Section* Credentials(const std::string& profile) const {
    return FindSection(credentials_file, profile);
  }
  const Section* Config(const std::string& profile) const {
    const Section* s = FindSection(config_file, absl::StrCat("profile ", profile));
    if (s == nullptr && profile == "default") s = FindSection(config_file, "default");
    return s;
  }
};

absl::Status LoadSharedFiles(const std::map<std::string, std::string>& env, SharedFiles& f) {
  const std::string* cred = Find(env, "AWS_SHARED_CREDENTIALS_FILE");
  const std::string* conf = Find(env, "AWS_CONFIG_FILE");
  f.credentials_path = ExpandHome(cred != nullptr ? *cred : "~/.aws/credentials", env);
  f.config_path = ExpandHome(conf != nullptr ? *conf : "~/.aws/config", env);
  if (!f.credentials_path.empty()) {
    FERRY_ASSIGN_OR_RETURN(f.credentials_file,
                           ReadIniFile("AWS_SHARED_CREDENTIALS_FILE", f.credentials_path));
  }
  if (!f.config_path.empty()) {
    FERRY_ASSIGN_OR_RETURN(f.config_file, ReadIniFile("AWS_CONFIG_FILE", f.config_path));
  }
  return absl::OkStatus();
}

// The selected profile of both shared files.
struct Profile {
  std::string name;
  const Section* credentials = nullptr;  // "[NAME]"
  const Section* config = nullptr;       // "[profile NAME]"
};

// Everything the credential chain reads, gathered once.
struct ChainInputs {
  const std::map<std::string, std::string>& env;
  const SharedFiles& files;
  const S3Config& config;  // region, for STS
  bool explicit_profile = false;
};

// The STS endpoint URL for the profile `p` (botocore's service-specific
// endpoint variables first, then regional STS).
std::string StsEndpoint(const ChainInputs& in, const Section* p) {
  if (const std::string* u = Find(in.env, "AWS_ENDPOINT_URL_STS")) return *u;
  if (const std::string* u = Find(in.env, "AWS_ENDPOINT_URL")) return *u;
  if (const std::string* u = FindKey(p, "sts.endpoint_url")) return *u;
  if (const std::string* u = FindKey(p, "endpoint_url")) return *u;
  const std::string& region = in.config.region;
  return absl::StrCat("https://sts.", region, ".amazonaws.com",
                      absl::StartsWith(region, "cn-") ? ".cn" : "");
}

std::string SessionName(const std::string* configured) {
  // botocore names its sessions botocore-session-<unix time>.
  return configured != nullptr ? *configured
                               : absl::StrCat("ferry-session-", absl::ToUnixSeconds(absl::Now()));
}

absl::StatusOr<int> DurationSeconds(const std::string& where, const std::string* value) {
  if (value == nullptr) return 0;
  FERRY_ASSIGN_OR_RETURN(int64_t s, ParseInt(where, *value, 900, 43200));
  return static_cast<int>(s);
}

AwsCredentialSource StaticSource(std::string description) {
  return AwsCredentialSource{.kind = AwsCredentialSource::Kind::kStatic,
                             .description = std::move(description)};
}

// The container endpoint, if the variables name one (botocore's
// ContainerProvider: a relative URI under 169.254.170.2, or a full URI that
// is HTTPS or on a loopback / the EKS pod identity address).
absl::StatusOr<std::optional<AwsCredentialSource>> ContainerSource(const ChainInputs& in) {
  AwsCredentialSource src{.kind = AwsCredentialSource::Kind::kContainer};
  if (const std::string* rel = Find(in.env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    src.endpoint = absl::StrCat("http://169.254.170.2", *rel);
    src.description = "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)";
  } else if (const std::string* full = Find(in.env, "AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
    absl::string_view rest = *full;
    const bool https = absl::ConsumePrefix(&rest, "https://");
    if (!https && !absl::ConsumePrefix(&rest, "http://")) {
      return Bad("AWS_CONTAINER_CREDENTIALS_FULL_URI", *full, "expected an http(s):// URL");
    }
    const absl::string_view host = rest.substr(0, rest.find_first_of(":/"));
    if (!https && host != "127.0.0.1" && host != "localhost" && host != "[::1]" &&
        host != "169.254.170.2" && host != "169.254.170.23" && host != "[fd00:ec2::23]") {
      return Bad("AWS_CONTAINER_CREDENTIALS_FULL_URI", *full,
                 "plain http is allowed only to a loopback address or the container "
                 "credentials address (as botocore)");
    }
    src.endpoint = *full;
    src.description = "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI)";
  } else {
    return std::nullopt;
  }
  if (const std::string* file = Find(in.env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
    src.authorization_token_file = *file;
  } else if (const std::string* token = Find(in.env, "AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
    src.authorization_token = *token;
  }
  return src;
}

std::optional<AwsCredentialSource> InstanceMetadataSource(const ChainInputs& in,
                                                          const Section* p) {
  if (IsTrue(Find(in.env, "AWS_EC2_METADATA_DISABLED"))) return std::nullopt;
  AwsCredentialSource src{.kind = AwsCredentialSource::Kind::kInstanceMetadata,
                          .description = "the EC2 instance role (IMDSv2)",
                          .endpoint = "http://169.254.169.254"};
  if (const std::string* e = Find(in.env, "AWS_EC2_METADATA_SERVICE_ENDPOINT")) {
    src.endpoint = *e;
  } else if (const std::string* file_e = FindKey(p, "ec2_metadata_service_endpoint")) {
    src.endpoint = *file_e;
  }
  while (!src.endpoint.empty() && src.endpoint.back() == '/') src.endpoint.pop_back();
  return src;
}

absl::StatusOr<std::optional<AwsCredentialSource>> ProfileSource(const ChainInputs& in,
                                                                 const std::string& name,
                                                                 S3Config* keys, int depth);

// botocore's SSOProvider: the profile's sso_account_id and sso_role_name,
// with sso_session (a "[sso-session NAME]" section holding sso_start_url
// and sso_region) or the legacy sso_start_url + sso_region in the profile.
// The token is the one `aws sso login` cached under
// ~/.aws/sso/cache/<sha1 of the session name, or of the start URL>.json.
absl::StatusOr<std::optional<AwsCredentialSource>> SsoSource(const ChainInputs& in,
                                                             const std::string& name,
                                                             const Section* conf,
                                                             const std::string& account) {
  const std::string where = absl::StrCat("profile ", name, " ");
  const std::string* role = FindKey(conf, "sso_role_name");
  if (role == nullptr) return Bad(where + "sso_account_id", account, "no sso_role_name beside it");
  std::string cache_key;
  const std::string* sso_region = nullptr;
  if (const std::string* session = FindKey(conf, "sso_session")) {
    const Section* s = FindSection(in.files.config_file, absl::StrCat("sso-session ", *session));
    if (s == nullptr) {
      return Bad(where + "sso_session", *session,
                 absl::StrCat("no [sso-session ", *session, "] in ", in.files.config_path));
    }
    sso_region = FindKey(s, "sso_region");
    cache_key = *session;
  } else if (const std::string* start = FindKey(conf, "sso_start_url")) {
    sso_region = FindKey(conf, "sso_region");
    cache_key = *start;
  } else {
    return Bad(where + "sso_account_id", account, "no sso_session or sso_start_url beside it");
  }
  if (sso_region == nullptr) return Bad(where + "sso_region", "", "missing");
  AwsCredentialSource src{.kind = AwsCredentialSource::Kind::kSso,
                          .description = absl::StrCat("SSO role ", *role, " of account ", account,
                                                      " (profile ", name, ")")};
  src.sso_account_id = account;
  src.sso_role_name = *role;
  // The token cache names its files by a SHA-1 (libcrypto's).
  if (absl::Status crypto = Crypto::Get().status(); !crypto.ok()) return crypto;
  src.sso_token_file = ExpandHome(absl::StrCat("~/.aws/sso/cache/", Sha1Hex(cache_key), ".json"),
                                  in.env);
  if (const std::string* u = Find(in.env, "AWS_ENDPOINT_URL_SSO")) {
    src.endpoint = *u;
  } else {
    src.endpoint = absl::StrCat("https://portal.sso.", *sso_region, ".amazonaws.com");
  }
  return src;
}

// botocore's AssumeRoleProvider for profile `name`: role_arn with
// source_profile or credential_source.
absl::StatusOr<std::optional<AwsCredentialSource>> AssumeRoleSource(const ChainInputs& in,
                                                                    const std::string& name,
                                                                    int depth) {
  const Section* p = in.files.Config(name);
  const std::string* role = FindKey(p, "role_arn");
  if (role == nullptr) return std::nullopt;
  const std::string* source_profile = FindKey(p, "source_profile");
  const std::string* credential_source = FindKey(p, "credential_source");
  if (source_profile == nullptr && credential_source == nullptr) return std::nullopt;
  const std::string where = absl::StrCat("profile ", name, " ");
  AwsCredentialSource src{.kind = AwsCredentialSource::Kind::kAssumeRole,
                          .description = absl::StrCat("role ", *role, " assumed by profile ", name),
                          .role_arn = *role,
                          .role_session_name = SessionName(FindKey(p, "role_session_name"))};
  if (const std::string* id = FindKey(p, "external_id")) src.external_id = *id;
  FERRY_ASSIGN_OR_RETURN(src.duration_seconds,
                         DurationSeconds(where + "duration_seconds", FindKey(p, "duration_seconds")));
  src.endpoint = StsEndpoint(in, p);
  src.sts_region = in.config.region;
  if (source_profile != nullptr && credential_source != nullptr) {
    return Bad(where + "credential_source", *credential_source,
               "a profile has source_profile or credential_source, not both");
  }
  if (source_profile != nullptr) {
    if (depth > 8) return Bad(where + "source_profile", *source_profile, "a loop of source_profiles");
    S3Config keys;
    // The source profile's own keys win over its role (botocore: a
    // source_profile with static keys uses them).
    FERRY_ASSIGN_OR_RETURN(std::optional<AwsCredentialSource> inner,
                           ProfileSource(in, *source_profile, &keys, depth + 1));
    if (!inner.has_value()) {
      return Bad(where + "source_profile", *source_profile,
                 "that profile has no credentials (keys, role_arn or credential_process)");
    }
    if (inner->kind == AwsCredentialSource::Kind::kStatic) {
      inner->keys = AwsCredentials{.access_key_id = keys.access_key_id,
                                   .secret_access_key = keys.secret_access_key,
                                   .session_token = keys.session_token};
    }
    src.source = std::make_shared<const AwsCredentialSource>(std::move(*inner));
  } else if (*credential_source == "Environment") {
    const std::string* id = Find(in.env, "AWS_ACCESS_KEY_ID");
    const std::string* secret = Find(in.env, "AWS_SECRET_ACCESS_KEY");
    if (id == nullptr || secret == nullptr) {
      return Bad(where + "credential_source", *credential_source,
                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set");
    }
    AwsCredentialSource env = StaticSource("environment variables (AWS_ACCESS_KEY_ID)");
    env.keys.access_key_id = *id;
    env.keys.secret_access_key = *secret;
    if (const std::string* t = Find(in.env, "AWS_SESSION_TOKEN")) env.keys.session_token = *t;
    src.source = std::make_shared<const AwsCredentialSource>(std::move(env));
  } else if (*credential_source == "Ec2InstanceMetadata") {
    std::optional<AwsCredentialSource> imds = InstanceMetadataSource(in, p);
    if (!imds.has_value()) {
      return Bad(where + "credential_source", *credential_source, "AWS_EC2_METADATA_DISABLED is set");
    }
    src.source = std::make_shared<const AwsCredentialSource>(std::move(*imds));
  } else if (*credential_source == "EcsContainer") {
    FERRY_ASSIGN_OR_RETURN(std::optional<AwsCredentialSource> ecs, ContainerSource(in));
    if (!ecs.has_value()) {
      return Bad(where + "credential_source", *credential_source,
                 "neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor _FULL_URI is set");
    }
    src.source = std::make_shared<const AwsCredentialSource>(std::move(*ecs));
  } else {
    return Bad(where + "credential_source", *credential_source,
               "expected Environment, Ec2InstanceMetadata or EcsContainer");
  }
  return src;
}

// The credentials profile `name` itself gives (role, web identity, keys,
// credential_process), in botocore's order; static keys land in `keys`.
absl::StatusOr<std::optional<AwsCredentialSource>> ProfileSource(const ChainInputs& in,
                                                                 const std::string& name,
                                                                 S3Config* keys, int depth) {
  const Section* cred = in.files.Credentials(name);
  const Section* conf = in.files.Config(name);
  FERRY_ASSIGN_OR_RETURN(std::optional<AwsCredentialSource> role,
                         AssumeRoleSource(in, name, depth));
  if (role.has_value()) return role;
  if (depth == 0) {
    // Web identity: the variables, else the profile's keys.
    const std::string* token_file = Find(in.env, "AWS_WEB_IDENTITY_TOKEN_FILE");
    const std::string* role_arn = Find(in.env, "AWS_ROLE_ARN");
    const std::string* session = Find(in.env, "AWS_ROLE_SESSION_NAME");
    std::string origin = "AWS_WEB_IDENTITY_TOKEN_FILE";
    if (token_file == nullptr || role_arn == nullptr) {
      token_file = FindKey(conf, "web_identity_token_file");
      role_arn = FindKey(conf, "role_arn");
      session = FindKey(conf, "role_session_name");
      origin = absl::StrCat("profile ", name, " web_identity_token_file");
    }
    if (token_file != nullptr && role_arn != nullptr) {
      return AwsCredentialSource{.kind = AwsCredentialSource::Kind::kWebIdentity,
                                 .description = absl::StrCat("web identity (", origin, ") for role ",
                                                             *role_arn),
                                 .role_arn = *role_arn,
                                 .role_session_name = SessionName(session),
                                 .web_identity_token_file = ExpandHome(*token_file, in.env),
                                 .endpoint = StsEndpoint(in, conf),
                                 .sts_region = in.config.region};
    }
  } else if (const std::string* token_file = FindKey(conf, "web_identity_token_file")) {
    if (const std::string* role_arn = FindKey(conf, "role_arn")) {
      return AwsCredentialSource{.kind = AwsCredentialSource::Kind::kWebIdentity,
                                 .description = absl::StrCat("web identity (profile ", name,
                                                             ") for role ", *role_arn),
                                 .role_arn = *role_arn,
                                 .role_session_name = SessionName(FindKey(conf, "role_session_name")),
                                 .web_identity_token_file = ExpandHome(*token_file, in.env),
                                 .endpoint = StsEndpoint(in, conf),
                                 .sts_region = in.config.region};
    }
  }
  if (const std::string* account = FindKey(conf, "sso_account_id")) {
    FERRY_ASSIGN_OR_RETURN(std::optional<AwsCredentialSource> sso,
                           SsoSource(in, name, conf, *account));
    if (sso.has_value()) return sso;
  }
  auto static_keys = [&](const Section* s, const std::string& path) -> std::optional<AwsCredentialSource> {
    const std::string* id = FindKey(s, "aws_access_key_id");
    const std::string* secret = FindKey(s, "aws_secret_access_key");
    if (id == nullptr || secret == nullptr) return std::nullopt;
    keys->access_key_id = *id;
    keys->secret_access_key = *secret;
    const std::string* token = FindKey(s, "aws_session_token");
    keys->session_token = token != nullptr ? *token : "";
    return StaticSource(absl::StrCat("profile ", name, " in ", path));
  };
  if (auto s = static_keys(cred, in.files.credentials_path)) return s;
  for (const Section* s : {cred, conf}) {
    if (const std::string* command = FindKey(s, "credential_process")) {
      return AwsCredentialSource{.kind = AwsCredentialSource::Kind::kProcess,
                                 .description = absl::StrCat("credential_process of profile ", name),
                                 .command = *command};
    }
  }
  if (auto s = static_keys(conf, in.files.config_path)) return s;
  return std::nullopt;
}

// botocore's chain (EnvProvider, then the profile's providers, then the
// container and the instance role): fills config.credential_source, and
// the keys for a static one.
absl::Status ResolveCredentials(const ChainInputs& in, const Profile& profile, S3Config& config) {
  if (!in.explicit_profile) {
    const std::string* id = Find(in.env, "AWS_ACCESS_KEY_ID");
    const std::string* secret = Find(in.env, "AWS_SECRET_ACCESS_KEY");
    if (id != nullptr && secret != nullptr) {
      config.access_key_id = *id;
      config.secret_access_key = *secret;
      const std::string* token = Find(in.env, "AWS_SESSION_TOKEN");
      config.session_token = token != nullptr ? *token : "";
      config.credential_source = StaticSource("environment variables (AWS_ACCESS_KEY_ID)");
      return absl::OkStatus();
    }
  }
  FERRY_ASSIGN_OR_RETURN(std::optional<AwsCredentialSource> from_profile,
                         ProfileSource(in, profile.name, &config, 0));
  if (from_profile.has_value()) {
    config.credential_source = std::move(*from_profile);
    return absl::OkStatus();
  }
  FERRY_ASSIGN_OR_RETURN(std::optional<AwsCredentialSource> container, ContainerSource(in));
  if (container.has_value()) {
    config.credential_source = std::move(*container);
    return absl::OkStatus();
  }
  if (auto imds = InstanceMetadataSource(in, profile.config)) {
    config.credential_source = std::move(*imds);
    return absl::OkStatus();
  }
  config.credential_source = StaticSource("no credentials found");
  return absl::OkStatus();
}

// Fills fields still unset from the AWS environment variables, then from
// the profile files (the AWS CLI's order); `overrides` win over both.
absl::Status FillFromEnvironment(const std::map<std::string, std::string>& env,
                                 const ExplicitKeys& set, const S3ConfigOverrides& overrides,
                                 S3Config& config) {
  SharedFiles files;
  FERRY_RETURN_IF_ERROR(LoadSharedFiles(env, files));
  Profile profile;
  const std::string* named = Find(env, "AWS_PROFILE");
  const bool explicit_profile = !overrides.profile.empty();
  profile.name = explicit_profile ? overrides.profile : named != nullptr ? *named : "default";
  profile.credentials = files.Credentials(profile.name);
  profile.config = files.Config(profile.name);
  if ((explicit_profile || named != nullptr) && profile.credentials == nullptr &&
      profile.config == nullptr) {
    return Bad(explicit_profile ? "profile" : "AWS_PROFILE", profile.name,
               absl::StrCat("no such profile in ", files.credentials_path, " ([", profile.name,
                            "]) or ", files.config_path, " ([profile ", profile.name, "])"));
  }
  const std::string where = absl::StrCat("profile ", profile.name, " ");

  if (!overrides.region.empty()) {
    config.region = overrides.region;
  } else if (!set.region) {
    if (const std::string* r = Find(env, "AWS_REGION")) {
      config.region = *r;
    } else if (const std::string* d = Find(env, "AWS_DEFAULT_REGION")) {
      config.region = *d;
    } else if (const std::string* p = FindKey(profile.config, "region")) {
      config.region = *p;
    }
  }
  if (overrides.access_key_id.empty() != overrides.secret_access_key.empty()) {
    return Bad(overrides.access_key_id.empty() ? "secret_access_key" : "access_key_id", "(given)",
               "an access key id and a secret access key go together: give both");
  }
  if (!overrides.access_key_id.empty() && !overrides.no_sign_request) {
    config.access_key_id = overrides.access_key_id;
    config.secret_access_key = overrides.secret_access_key;
    config.session_token = overrides.session_token;
    config.credential_source = StaticSource("the key and secret given to the client");
  } else if (overrides.no_sign_request) {
    config.credential_source = AwsCredentialSource{
        .kind = AwsCredentialSource::Kind::kAnonymous, .description = "none (unsigned requests)"};
  } else if (!config.access_key_id.empty()) {
    config.credential_source = StaticSource("S3_AUTH_FILE");
  } else {
    FERRY_RETURN_IF_ERROR(ResolveCredentials(
        ChainInputs{.env = env, .files = files, .config = config,
                    .explicit_profile = explicit_profile},
        profile, config));
  }
  if (!overrides.endpoint_url.empty()) {
    FERRY_RETURN_IF_ERROR(ParseEndpointUrl("endpoint_url", overrides.endpoint_url, config));
  } else if (config.endpoints.empty()) {
    if (const std::string* url = Find(env, "AWS_ENDPOINT_URL_S3")) {
      FERRY_RETURN_IF_ERROR(ParseEndpointUrl("AWS_ENDPOINT_URL_S3", *url, config));
    } else if (const std::string* any = Find(env, "AWS_ENDPOINT_URL")) {
      FERRY_RETURN_IF_ERROR(ParseEndpointUrl("AWS_ENDPOINT_URL", *any, config));
    } else if (const std::string* s3 = FindKey(profile.config, "s3.endpoint_url")) {
      FERRY_RETURN_IF_ERROR(ParseEndpointUrl(where + "s3.endpoint_url", *s3, config));
    } else if (const std::string* p = FindKey(profile.config, "endpoint_url")) {
      FERRY_RETURN_IF_ERROR(ParseEndpointUrl(where + "endpoint_url", *p, config));
    }
  }
  auto flag = [&](const char* variable, const char* key) {
    if (const std::string* v = Find(env, variable)) return IsTrue(v);
    return IsTrue(FindKey(profile.config, key));
  };
  config.use_fips_endpoint = flag("AWS_USE_FIPS_ENDPOINT", "use_fips_endpoint");
  config.use_dualstack_endpoint = flag("AWS_USE_DUALSTACK_ENDPOINT", "use_dualstack_endpoint");
  {
    const std::string* v = Find(env, "AWS_S3_US_EAST_1_REGIONAL_ENDPOINT");
    if (v == nullptr) v = FindKey(profile.config, "s3.us_east_1_regional_endpoint");
    config.us_east_1_regional_endpoint = v != nullptr && absl::AsciiStrToLower(*v) == "regional";
  }
  if (config.ca_bundle_path.empty()) {
    if (const std::string* ca = Find(env, "AWS_CA_BUNDLE")) {
      config.ca_bundle_path = ExpandHome(*ca, env);
    } else if (const std::string* p = FindKey(profile.config, "ca_bundle")) {
      config.ca_bundle_path = ExpandHome(*p, env);
    }
  }
  if (!set.request_style) {
    if (const std::string* style = FindKey(profile.config, "s3.addressing_style")) {
      if (*style == "virtual") {
        config.addressing_style = AddressingStyle::kVirtual;
      } else if (*style == "path") {
        config.addressing_style = AddressingStyle::kPath;
      } else if (*style == "auto") {
        config.addressing_style = AddressingStyle::kAuto;
      } else {
        return Bad(where + "s3.addressing_style", *style, "expected path, virtual or auto");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<S3Config> S3Config::FromContextString(
    std::string_view context, const std::map<std::string, std::string>& env,
    const S3ConfigOverrides& overrides) {
  S3Config config;
  ExplicitKeys set;
  for (absl::string_view item :
       absl::StrSplit(absl::string_view(context.data(), context.size()), ';', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    if (key == "S3_DEFAULT_HOSTNAME") {
      config.endpoints.clear();
      for (absl::string_view host : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
        host = absl::StripAsciiWhitespace(host);
        if (absl::StrContains(host, "/")) return Bad(key, value, "expected host[:port], no scheme or path");
        config.endpoints.emplace_back(host);
      }
      if (config.endpoints.empty()) return Bad(key, value, "no host");
    } else if (key == "S3_REGIONNAME") {
      if (value.empty()) return Bad(key, value, "empty region");
      config.region = std::string(value);
      set.region = true;
    } else if (key == "S3_AUTH_FILE") {
      FERRY_RETURN_IF_ERROR(ReadAuthFile(key, std::string(value), config));
    } else if (key == "S3_PROTO") {
      std::string p = absl::AsciiStrToLower(value);
      if (p == "http") {
        config.use_https = false;
      } else if (p == "https") {
        config.use_https = true;
      } else {
        return Bad(key, value, "expected HTTP or HTTPS");
      }
    } else if (key == "S3_RETRY_COUNT") {
      FERRY_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, value, 0, 100));
      config.retry_count = static_cast<int>(n);
    } else if (key == "S3_WAIT_TIME_SEC" || key == "S3_WAIT_TIME_SECONDS") {
      FERRY_ASSIGN_OR_RETURN(int64_t s, ParseInt(key, value, 0, 3600));
      config.retry_wait = absl::Seconds(s);
    } else if (key == "S3_MPU_CHUNK") {
      // MiB; S3 parts are 5 MiB..5 GiB.
      FERRY_ASSIGN_OR_RETURN(int64_t mib, ParseInt(key, value, 5, 5 << 10));
      config.mpu_chunk_bytes = mib << 20;
    } else if (key == "S3_MPU_THREADS") {
      FERRY_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, value, 1, 1024));
      config.mpu_threads = static_cast<int>(n);
    } else if (key == "S3_ENABLE_MPU") {
      std::string b = absl::AsciiStrToLower(value);
      if (b == "1" || b == "true" || b == "yes") {
        config.enable_mpu = true;
      } else if (b == "0" || b == "false" || b == "no") {
        config.enable_mpu = false;
      } else {
        return Bad(key, value, "expected 1/0 or true/false");
      }
    } else if (key == "HOST_MODE") {
      if (value == "archive_attached") {
        config.host_mode = HostMode::kArchiveAttached;
      } else if (value == "cacheless_attached") {
        config.host_mode = HostMode::kCachelessAttached;
      } else if (value == "cacheless_detached") {
        config.host_mode = HostMode::kCachelessDetached;
      } else if (value == "archive_detached") {
        return Bad(key, value,
                   "archive_detached is not supported (an archive resource needs a cache "
                   "resource on the same server); use archive_attached or a cacheless mode");
      } else {
        return Bad(key, value, "expected archive_attached, cacheless_attached or cacheless_detached");
      }
    } else if (key == "S3_URI_REQUEST_STYLE") {
      std::string s = absl::AsciiStrToLower(value);
      set.request_style = true;
      if (s == "path") {
        config.addressing_style = AddressingStyle::kPath;
      } else if (s == "virtual_hosted" || s == "virtual") {
        config.addressing_style = AddressingStyle::kVirtual;
      } else {
        return Bad(key, value, "expected path or virtual_hosted");
      }
    }
  }
  FERRY_RETURN_IF_ERROR(FillFromEnvironment(env, set, overrides, config));
  if (config.region.empty()) return Bad("region", config.region, "empty region");
  return config;
}

absl::StatusOr<S3Config> S3Config::FromEnvironment(const std::map<std::string, std::string>& env,
                                                   const S3ConfigOverrides& overrides) {
  return FromContextString("", env, overrides);
}

std::map<std::string, std::string> S3Config::ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view item(*e);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
  }
  return env;
}

}  // namespace ferry::s3
