// Parsing of S3Config. The context string is split on ';' then on the first
// '='; values are trimmed of blanks. What it leaves unset comes from the
// AWS variables, then from the AWS CLI's shared files, read with a small
// ini reader (botocore's rules for the keys we use, nested "s3 =" blocks
// included). Every failure names the key and the
// value so a misconfigured iRODS resource is fixed from the message alone.
#include "ferry/s3/s3_config.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ferry/base/small_file.h"
#include "ferry/base/status_macros.h"

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

const std::map<std::string, std::string>* FindSection(const IniSections& ini,
                                                      const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

const std::string* FindKey(const std::map<std::string, std::string>* section, const char* key) {
  if (section == nullptr) return nullptr;
  auto it = section->find(key);
  return it == section->end() || it->second.empty() ? nullptr : &it->second;
}

// The selected profile of both shared files.
struct Profile {
  std::string name;
  std::string credentials_path;
  std::string config_path;
  IniSections credentials_file;
  IniSections config_file;
  const std::map<std::string, std::string>* credentials = nullptr;  // "[NAME]"
  const std::map<std::string, std::string>* config = nullptr;       // "[profile NAME]"
};

absl::Status LoadProfile(const std::map<std::string, std::string>& env, Profile& p) {
  const std::string* named = Find(env, "AWS_PROFILE");
  p.name = named != nullptr ? *named : "default";
  const std::string* cred = Find(env, "AWS_SHARED_CREDENTIALS_FILE");
  const std::string* conf = Find(env, "AWS_CONFIG_FILE");
  p.credentials_path = ExpandHome(cred != nullptr ? *cred : "~/.aws/credentials", env);
  p.config_path = ExpandHome(conf != nullptr ? *conf : "~/.aws/config", env);
  if (!p.credentials_path.empty()) {
    FERRY_ASSIGN_OR_RETURN(p.credentials_file,
                           ReadIniFile("AWS_SHARED_CREDENTIALS_FILE", p.credentials_path));
  }
  if (!p.config_path.empty()) {
    FERRY_ASSIGN_OR_RETURN(p.config_file, ReadIniFile("AWS_CONFIG_FILE", p.config_path));
  }
  p.credentials = FindSection(p.credentials_file, p.name);
  p.config = FindSection(p.config_file, absl::StrCat("profile ", p.name));
  if (p.config == nullptr && p.name == "default") p.config = FindSection(p.config_file, "default");
  if (named != nullptr && p.credentials == nullptr && p.config == nullptr) {
    return Bad("AWS_PROFILE", p.name,
               absl::StrCat("no such profile in ", p.credentials_path, " ([", p.name, "]) or ",
                            p.config_path, " ([profile ", p.name, "])"));
  }
  return absl::OkStatus();
}

// Fills fields still unset from the AWS environment variables, then from
// the profile files (the AWS CLI's order).
absl::Status FillFromEnvironment(const std::map<std::string, std::string>& env,
                                 const ExplicitKeys& set, S3Config& config) {
  Profile profile;
  FERRY_RETURN_IF_ERROR(LoadProfile(env, profile));
  const std::string where = absl::StrCat("profile ", profile.name, " ");

  if (config.access_key_id.empty()) {
    const std::string* id = Find(env, "AWS_ACCESS_KEY_ID");
    const std::string* secret = Find(env, "AWS_SECRET_ACCESS_KEY");
    const std::string* token = Find(env, "AWS_SESSION_TOKEN");
    for (const auto* section : {profile.credentials, profile.config}) {
      if (id != nullptr && secret != nullptr) break;
      id = FindKey(section, "aws_access_key_id");
      secret = FindKey(section, "aws_secret_access_key");
      token = FindKey(section, "aws_session_token");
    }
    if (id != nullptr && secret != nullptr) {
      config.access_key_id = *id;
      config.secret_access_key = *secret;
      if (token != nullptr) config.session_token = *token;
    }
  }
  if (!set.region) {
    if (const std::string* r = Find(env, "AWS_REGION")) {
      config.region = *r;
    } else if (const std::string* d = Find(env, "AWS_DEFAULT_REGION")) {
      config.region = *d;
    } else if (const std::string* p = FindKey(profile.config, "region")) {
      config.region = *p;
    }
  }
  if (config.endpoints.empty()) {
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
        config.path_style = false;
      } else if (*style == "path" || *style == "auto") {
        config.path_style = true;  // auto: path style works with every server
      } else {
        return Bad(where + "s3.addressing_style", *style, "expected path, virtual or auto");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<S3Config> S3Config::FromContextString(
    std::string_view context, const std::map<std::string, std::string>& env) {
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
        config.path_style = true;
      } else if (s == "virtual_hosted" || s == "virtual") {
        config.path_style = false;
      } else {
        return Bad(key, value, "expected path or virtual_hosted");
      }
    }
  }
  FERRY_RETURN_IF_ERROR(FillFromEnvironment(env, set, config));
  if (config.endpoints.empty()) {
    return absl::InvalidArgumentError(
        "S3 config: no endpoint (set S3_DEFAULT_HOSTNAME, AWS_ENDPOINT_URL or the profile's "
        "endpoint_url)");
  }
  return config;
}

absl::StatusOr<S3Config> S3Config::FromEnvironment(const std::map<std::string, std::string>& env) {
  return FromContextString("", env);
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
