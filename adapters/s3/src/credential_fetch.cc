// Credential fetchers. HTTP here is curl's easy interface, one exchange per
// fetch on a blocking-pool thread: fetches are rare (once an hour or so)
// and must not wait behind the store's transfers. STS requests are form
// posts, AssumeRole signed with SigV4 (service "sts") by the source's keys.
#include "ferry/s3/credential_fetch.h"

#include <curl/curl.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "ferry/base/crypto.h"
#include "ferry/base/small_file.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/s3/curl_api.h"
#include "ferry/s3/s3_xml.h"
#include "ferry/s3/sigv4.h"

namespace ferry::s3 {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Reply {
  long status = 0;
  std::string body;
};

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One HTTP exchange. Unavailable if no reply came (naming `what` and the URL).
absl::StatusOr<Reply> Exchange(std::string_view what, const std::string& method,
                               const std::string& url, const Headers& headers,
                               const std::string& body, absl::Duration timeout,
                               const std::string& ca_bundle_path) {
  FERRY_ASSIGN_OR_RETURN(const CurlApi* api, Curl());
  std::unique_ptr<CURL, decltype(api->easy_cleanup)> curl(api->easy_init(), api->easy_cleanup);
  if (curl == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
  curl_slist* list = nullptr;
  for (const auto& [k, v] : headers) {
    list = api->slist_append(list, absl::StrCat(k, ": ", v).c_str());
  }
  list = api->slist_append(list, "Expect:");
  std::unique_ptr<curl_slist, decltype(api->slist_free_all)> list_owner(list,
                                                                       api->slist_free_all);
  Reply reply;
  CURL* c = curl.get();
  api->easy_setopt(c, CURLOPT_URL, url.c_str());
  api->easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  api->easy_setopt(c, CURLOPT_HTTPHEADER, list);
  api->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  api->easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  api->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  api->easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  api->easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  if (method == "POST" || method == "PUT") {
    api->easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    api->easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  } else if (method == "HEAD") {
    api->easy_setopt(c, CURLOPT_NOBODY, 1L);
  }
  if (!ca_bundle_path.empty()) api->easy_setopt(c, CURLOPT_CAINFO, ca_bundle_path.c_str());
  char error[CURL_ERROR_SIZE] = {0};
  api->easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = api->easy_perform(c);
  if (rc != CURLE_OK) {
    const std::string text = absl::StrCat(ToAbsl(what), ": ", method, " ", url, ": ",
                                          error[0] != 0 ? error : api->easy_strerror(rc));
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
      return absl::UnauthenticatedError(text);
    }
    if (rc == CURLE_OPERATION_TIMEDOUT) return absl::DeadlineExceededError(text);
    return absl::UnavailableError(text);
  }
  api->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

std::string FormEncode(const Headers& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    absl::StrAppend(&out, out.empty() ? "" : "&", UriEncode(k, false), "=", UriEncode(v, false));
  }
  return out;
}

absl::StatusOr<absl::Time> ParseExpiration(std::string_view text, std::string_view what) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, ToAbsl(text), &t, &err)) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(what), ": Expiration \"", ToAbsl(text), "\" is not RFC 3339: ", err));
  }
  return t;
}

std::string HostOf(const std::string& url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "https://")) absl::ConsumePrefix(&rest, "http://");
  return std::string(rest.substr(0, rest.find('/')));
}

// STS answers errors as <ErrorResponse><Error><Code>..</Code><Message>..
absl::Status StsError(std::string_view what, const Reply& r) {
  const std::string code = XmlText(r.body, "Code");
  const std::string message = XmlText(r.body, "Message");
  const std::string text = absl::StrCat(ToAbsl(what), ": HTTP ", r.status, code.empty() ? "" : " ",
                                        code, message.empty() ? "" : ": ", message);
  if (r.status == 403 || r.status == 401 || code == "InvalidClientTokenId" ||
      code == "SignatureDoesNotMatch" || code == "ExpiredTokenException" ||
      code == "InvalidIdentityToken" || code == "AccessDenied") {
    return absl::UnauthenticatedError(text);
  }
  if (r.status >= 500) return absl::UnavailableError(text);
  return absl::InvalidArgumentError(text);
}

absl::StatusOr<AwsCredentials> StsCall(const AwsCredentialSource& source, Headers params,
                                       const AwsCredentials* signer,
                                       const CredentialFetchOptions& options,
                                       std::string_view what) {
  if (signer != nullptr) FERRY_RETURN_IF_ERROR(Crypto::Get().status());  // sigv4.cc signs with it
  params.emplace_back("Version", "2011-06-15");
  if (source.duration_seconds > 0) {
    params.emplace_back("DurationSeconds", absl::StrCat(source.duration_seconds));
  }
  const std::string body = FormEncode(params);
  const std::string url =
      absl::EndsWith(source.endpoint, "/") ? source.endpoint : absl::StrCat(source.endpoint, "/");
  Headers headers = {{"content-type", "application/x-www-form-urlencoded; charset=utf-8"}};
  if (signer != nullptr) {
    const std::string amz_date = AmzDate(absl::Now());
    SigV4Request req{.method = "POST", .path = "/",
                     .payload_hash = Sha256Hex(std::span<const char>(body.data(), body.size()))};
    req.headers = headers;
    req.headers.emplace_back("host", HostOf(url));
    req.headers.emplace_back("x-amz-date", amz_date);
    if (!signer->session_token.empty()) {
      req.headers.emplace_back("x-amz-security-token", signer->session_token);
    }
    const std::string auth =
        SignV4(req, {signer->access_key_id, signer->secret_access_key}, source.sts_region,
               amz_date, "sts");
    headers = std::move(req.headers);
    headers.erase(std::remove_if(headers.begin(), headers.end(),
                                 [](const auto& h) { return h.first == "host"; }),
                  headers.end());
    headers.emplace_back("authorization", auth);
  }
  FERRY_ASSIGN_OR_RETURN(Reply r, Exchange(what, "POST", url, headers, body, options.sts_timeout,
                                           options.ca_bundle_path));
  if (r.status != 200) return StsError(what, r);
  return ParseStsCredentials(r.body, what);
}

absl::StatusOr<AwsCredentials> FromProcess(const AwsCredentialSource& source) {
  const std::string what = absl::StrCat("credential_process \"", source.command, "\"");
  FILE* pipe = popen(source.command.c_str(), "r");
  if (pipe == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot start"));
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0 && out.size() < (1 << 20)) out.append(buf, n);
  const int rc = pclose(pipe);
  if (rc != 0) {
    return absl::UnauthenticatedError(absl::StrCat(
        what, ": exited with status ", WIFEXITED(rc) ? WEXITSTATUS(rc) : rc,
        " (its stderr went to ours)"));
  }
  return ParseCredentialsJson(out, what);
}

absl::StatusOr<AwsCredentials> FromContainer(const AwsCredentialSource& source,
                                             const CredentialFetchOptions& options) {
  const std::string what = absl::StrCat("container credentials at ", source.endpoint);
  Headers headers;
  if (!source.authorization_token_file.empty()) {
    absl::StatusOr<std::string> token = ReadSmallFile(source.authorization_token_file);
    if (!token.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE ", source.authorization_token_file,
          ": ", token.status().message()));
    }
    headers.emplace_back("authorization", std::string(absl::StripAsciiWhitespace(*token)));
  } else if (!source.authorization_token.empty()) {
    headers.emplace_back("authorization", source.authorization_token);
  }
  // botocore retries the container endpoint a few times: it may still be
  // starting with the task.
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<Reply> r = Exchange(what, "GET", source.endpoint, headers, "",
                                       options.metadata_timeout * 2, options.ca_bundle_path);
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    if (r->status != 200) {
      return absl::UnauthenticatedError(absl::StrCat(what, ": HTTP ", r->status, ": ", r->body));
    }
    return ParseCredentialsJson(r->body, what);
  }
  return last;
}

absl::StatusOr<AwsCredentials> FromInstanceMetadata(const AwsCredentialSource& source,
                                                    const CredentialFetchOptions& options) {
  const std::string what = absl::StrCat("EC2 instance metadata (IMDSv2) at ", source.endpoint);
  auto with_hint = [&](absl::Status s) {
    return absl::Status(
        s.code(), absl::StrCat(s.message(),
                               "; not on EC2? set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a "
                               "profile, or AWS_EC2_METADATA_DISABLED=true"));
  };
  absl::StatusOr<Reply> token =
      Exchange(what, "PUT", source.endpoint + "/latest/api/token",
               {{"x-aws-ec2-metadata-token-ttl-seconds", "21600"}}, "", options.metadata_timeout,
               "");
  if (!token.ok()) return with_hint(token.status());
  if (token->status != 200) {
    return absl::UnavailableError(
        absl::StrCat(what, ": token PUT answered HTTP ", token->status));
  }
  const Headers auth = {{"x-aws-ec2-metadata-token", token->body}};
  const std::string base = source.endpoint + "/latest/meta-data/iam/security-credentials/";
  FERRY_ASSIGN_OR_RETURN(Reply role,
                         Exchange(what, "GET", base, auth, "", options.metadata_timeout, ""));
  const std::string name(absl::StripAsciiWhitespace(role.body.substr(0, role.body.find('\n'))));
  if (role.status != 200 || name.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat(what, ": no instance role (HTTP ", role.status, "); attach one to the instance"));
  }
  FERRY_ASSIGN_OR_RETURN(Reply keys,
                         Exchange(what, "GET", base + name, auth, "", options.metadata_timeout, ""));
  if (keys.status != 200) {
    return absl::UnauthenticatedError(
        absl::StrCat(what, ": role ", name, " answered HTTP ", keys.status));
  }
  return ParseCredentialsJson(keys.body, absl::StrCat(what, " role ", name));
}

absl::StatusOr<AwsCredentials> FromSso(const AwsCredentialSource& source,
                                       const CredentialFetchOptions& options) {
  const std::string what = absl::StrCat("SSO GetRoleCredentials at ", source.endpoint);
  const std::string login = "; run `aws sso login` for this profile";
  absl::StatusOr<std::string> cached = ReadSmallFile(source.sso_token_file);
  if (!cached.ok()) {
    return absl::UnauthenticatedError(absl::StrCat(what, ": no cached SSO token (",
                                                   source.sso_token_file, ")", login));
  }
  nlohmann::json doc = nlohmann::json::parse(*cached, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("accessToken") || !doc["accessToken"].is_string()) {
    return absl::UnauthenticatedError(
        absl::StrCat(what, ": ", source.sso_token_file, " holds no accessToken", login));
  }
  if (doc.contains("expiresAt") && doc["expiresAt"].is_string()) {
    std::string at = doc["expiresAt"].get<std::string>();
    if (absl::EndsWith(at, "UTC")) at = absl::StrCat(at.substr(0, at.size() - 3), "Z");
    absl::StatusOr<absl::Time> expires = ParseExpiration(at, what);
    if (expires.ok() && *expires <= absl::Now()) {
      return absl::UnauthenticatedError(
          absl::StrCat(what, ": the cached SSO token expired at ", at, login));
    }
  }
  const std::string url = absl::StrCat(
      source.endpoint, absl::EndsWith(source.endpoint, "/") ? "" : "/",
      "federation/credentials?account_id=", UriEncode(source.sso_account_id, false),
      "&role_name=", UriEncode(source.sso_role_name, false));
  FERRY_ASSIGN_OR_RETURN(
      Reply r, Exchange(what, "GET", url,
                        {{"x-amz-sso_bearer_token", doc["accessToken"].get<std::string>()}}, "",
                        options.sts_timeout, options.ca_bundle_path));
  if (r.status != 200) {
    return absl::UnauthenticatedError(absl::StrCat(what, ": HTTP ", r.status, ": ", r.body, login));
  }
  nlohmann::json reply = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* role =
      reply.is_object() && reply.contains("roleCredentials") ? &reply["roleCredentials"] : nullptr;
  auto field = [&](const char* name) -> std::string {
    return role != nullptr && role->is_object() && role->contains(name) &&
                   (*role)[name].is_string()
               ? (*role)[name].get<std::string>()
               : "";
  };
  AwsCredentials c{.access_key_id = field("accessKeyId"),
                   .secret_access_key = field("secretAccessKey"),
                   .session_token = field("sessionToken")};
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": answer without roleCredentials"));
  }
  if (role->contains("expiration") && (*role)["expiration"].is_number_integer()) {
    c.expiration = absl::FromUnixMillis((*role)["expiration"].get<int64_t>());
  }
  return c;
}

}  // namespace

absl::StatusOr<AwsCredentials> ParseCredentialsJson(std::string_view json, std::string_view what) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  auto field = [&](const char* name) -> std::string {
    if (!doc.is_object()) return "";
    auto it = doc.find(name);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
  };
  AwsCredentials c{.access_key_id = field("AccessKeyId"),
                   .secret_access_key = field("SecretAccessKey"),
                   .session_token = field("Token")};
  if (c.session_token.empty()) c.session_token = field("SessionToken");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(what), ": expected JSON with AccessKeyId and SecretAccessKey"));
  }
  if (const std::string e = field("Expiration"); !e.empty()) {
    FERRY_ASSIGN_OR_RETURN(c.expiration, ParseExpiration(e, what));
  }
  return c;
}

absl::StatusOr<AwsCredentials> ParseStsCredentials(std::string_view xml, std::string_view what) {
  const std::vector<std::string_view> creds = XmlElements(xml, "Credentials");
  const std::string_view scope = creds.empty() ? xml : creds.front();
  AwsCredentials c{.access_key_id = XmlText(scope, "AccessKeyId"),
                   .secret_access_key = XmlText(scope, "SecretAccessKey"),
                   .session_token = XmlText(scope, "SessionToken")};
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(what), ": STS answer without Credentials"));
  }
  if (const std::string e = XmlText(scope, "Expiration"); !e.empty()) {
    FERRY_ASSIGN_OR_RETURN(c.expiration, ParseExpiration(e, what));
  }
  return c;
}

absl::StatusOr<AwsCredentials> FetchCredentials(const AwsCredentialSource& source,
                                                const CredentialFetchOptions& options) {
  using Kind = AwsCredentialSource::Kind;
  switch (source.kind) {
    case Kind::kStatic:
      return source.keys;
    case Kind::kAnonymous:
      return AwsCredentials{};
    case Kind::kProcess:
      return FromProcess(source);
    case Kind::kContainer:
      return FromContainer(source, options);
    case Kind::kInstanceMetadata:
      return FromInstanceMetadata(source, options);
    case Kind::kSso:
      return FromSso(source, options);
    case Kind::kWebIdentity: {
      const std::string what = absl::StrCat("STS AssumeRoleWithWebIdentity of ", source.role_arn,
                                            " at ", source.endpoint);
      absl::StatusOr<std::string> token = ReadSmallFile(source.web_identity_token_file);
      if (!token.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": web identity token file ", source.web_identity_token_file, ": ",
            token.status().message()));
      }
      return StsCall(source,
                     {{"Action", "AssumeRoleWithWebIdentity"},
                      {"RoleArn", source.role_arn},
                      {"RoleSessionName", source.role_session_name},
                      {"WebIdentityToken", std::string(absl::StripAsciiWhitespace(*token))}},
                     nullptr, options, what);
    }
    case Kind::kAssumeRole: {
      const std::string what =
          absl::StrCat("STS AssumeRole of ", source.role_arn, " at ", source.endpoint);
      if (source.source == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": no source credentials"));
      }
      absl::StatusOr<AwsCredentials> signer = FetchCredentials(*source.source, options);
      if (!signer.ok()) {
        return absl::Status(signer.status().code(),
                            absl::StrCat(what, ": its source, ", source.source->description, ": ",
                                         signer.status().message()));
      }
      Headers params = {{"Action", "AssumeRole"},
                        {"RoleArn", source.role_arn},
                        {"RoleSessionName", source.role_session_name}};
      if (!source.external_id.empty()) params.emplace_back("ExternalId", source.external_id);
      absl::StatusOr<AwsCredentials> assumed = StsCall(source, std::move(params), &*signer, options, what);
      if (!assumed.ok()) {
        return absl::Status(assumed.status().code(),
                            absl::StrCat(assumed.status().message(), " (signed with credentials from ",
                                         source.source->description, ")"));
      }
      return assumed;
    }
  }
  return absl::InternalError("unknown credential source");
}

}  // namespace ferry::s3
