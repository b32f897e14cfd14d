// SigV4 signing with OpenSSL's libcrypto (ferry::Crypto: SHA-256, HMAC).
// Pure functions: the caller supplies the time, so tests check the AWS
// documented vectors exactly.
#include "ferry/s3/sigv4.h"


#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ferry/base/crypto.h"
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

// libcrypto, which S3ObjectStore::Create and the credential sources load
// before anything is signed (their error names the library). A signer
// reached without it gets empty digests: a request the server refuses,
// never a crash.
const Crypto* LoadedCrypto() {
  absl::StatusOr<const Crypto*> crypto = Crypto::Get();
  return crypto.ok() ? *crypto : nullptr;
}

std::span<const char> Span(std::string_view s) { return std::span<const char>(s.data(), s.size()); }

std::string Hmac(std::string_view key, std::string_view data) {
  const Crypto* crypto = LoadedCrypto();
  return crypto == nullptr ? std::string() : crypto->HmacSha256(Span(key), Span(data));
}

std::string HexOf(const std::string& digest) {
  return Hex(reinterpret_cast<const unsigned char*>(digest.data()), digest.size());
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
  const Crypto* crypto = LoadedCrypto();
  return crypto == nullptr ? std::string() : HexOf(crypto->Sha256(bytes));
}

std::string Sha1Hex(std::string_view bytes) {
  const Crypto* crypto = LoadedCrypto();
  return crypto == nullptr ? std::string() : HexOf(crypto->Sha1(Span(bytes)));
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
