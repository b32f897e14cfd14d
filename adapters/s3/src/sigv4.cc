// SigV4 signing with OpenSSL's libcrypto (EVP digest, HMAC). Pure
// functions: the caller supplies the time, so tests check the AWS
// documented vectors exactly.
#include "ferry/s3/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ferry/base/strings.h"

namespace ferry::s3 {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string Hex(const unsigned char* data, size_t n) {
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 0xf];
  }
  return out;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(absl::ascii_toupper(kHex[u >> 4]));
      out.push_back(absl::ascii_toupper(kHex[u & 0xf]));
    }
  }
  return out;
}

std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [k, v] : query) encoded.emplace_back(UriEncode(k, false), UriEncode(v, false));
  std::sort(encoded.begin(), encoded.end());
  return absl::StrJoin(encoded, "&", [](std::string* out, const auto& kv) {
    absl::StrAppend(out, kv.first, "=", kv.second);
  });
}

std::string Sha256Hex(std::span<const char> bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, EVP_sha256(), nullptr);
  return Hex(out, len);
}

std::string Sha1Hex(std::string_view bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, EVP_sha1(), nullptr);
  return Hex(out, len);
}

std::string AmzDate(absl::Time t) {
  return absl::FormatTime("%Y%m%dT%H%M%SZ", t, absl::UTCTimeZone());
}

std::string CanonicalRequest(const SigV4Request& request) {
  std::vector<std::pair<std::string, std::string>> headers;
  headers.reserve(request.headers.size());
  for (const auto& [name, value] : request.headers) {
    headers.emplace_back(absl::AsciiStrToLower(name),
                         std::string(absl::StripAsciiWhitespace(value)));
  }
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers;
  std::string signed_headers;
  for (const auto& [name, value] : headers) {
    absl::StrAppend(&canonical_headers, name, ":", value, "\n");
    absl::StrAppend(&signed_headers, signed_headers.empty() ? "" : ";", name);
  }
  return absl::StrCat(request.method, "\n", request.path, "\n",
                      CanonicalQueryString(request.query), "\n", canonical_headers, "\n",
                      signed_headers, "\n", request.payload_hash);
}

std::string SigningKey(std::string_view secret_access_key, std::string_view date,
                       std::string_view region, std::string_view service) {
  std::string key = Hmac(absl::StrCat("AWS4", ToAbsl(secret_access_key)), date);
  key = Hmac(key, region);
  key = Hmac(key, service);
  return Hmac(key, "aws4_request");
}

std::string SignV4(const SigV4Request& request, const SigV4Credentials& credentials,
                   std::string_view region, std::string_view amz_date, std::string_view service) {
  return SignV4WithKey(
      request, credentials.access_key_id,
      SigningKey(credentials.secret_access_key, amz_date.substr(0, 8), region, service), region,
      amz_date, service);
}

std::string SignV4WithKey(const SigV4Request& request, std::string_view access_key_id,
                          std::string_view signing_key, std::string_view region,
                          std::string_view amz_date, std::string_view service) {
  const std::string canonical = CanonicalRequest(request);
  std::string signed_headers;
  {
    std::vector<std::string> names;
    for (const auto& h : request.headers) names.push_back(absl::AsciiStrToLower(h.first));
    std::sort(names.begin(), names.end());
    signed_headers = absl::StrJoin(names, ";");
  }
  const std::string_view date = amz_date.substr(0, 8);
  const std::string scope = absl::StrCat(ToAbsl(date), "/", ToAbsl(region), "/",
                                         ToAbsl(service), "/aws4_request");
  const std::string string_to_sign =
      absl::StrCat("AWS4-HMAC-SHA256\n", ToAbsl(amz_date), "\n", scope, "\n",
                   Sha256Hex(std::span<const char>(canonical.data(), canonical.size())));
  const std::string sig = Hmac(signing_key, string_to_sign);
  return absl::StrCat("AWS4-HMAC-SHA256 Credential=", ToAbsl(access_key_id), "/", scope,
                      ",SignedHeaders=", signed_headers, ",Signature=",
                      Hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size()));
}

}  // namespace ferry::s3
