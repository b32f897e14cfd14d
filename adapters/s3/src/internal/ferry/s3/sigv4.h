// AWS Signature Version 4 for S3 requests (Authorization header form).
//
//   ferry::s3::SigV4Request req{.method = "GET", .path = "/bucket/key",
//       .headers = {{"host", "127.0.0.1:7070"}, {"range", "bytes=0-9"},
//                   {"x-amz-content-sha256", ferry::s3::kUnsignedPayload},
//                   {"x-amz-date", "20130524T000000Z"}},
//       .payload_hash = ferry::s3::kUnsignedPayload};
//   std::string auth = ferry::s3::SignV4(req, {"AKID", "SECRET"}, "us-east-1",
//                                        "20130524T000000Z");
//
// The signer builds the canonical request (method, the path as given, the
// sorted and RFC 3986-encoded query, the sorted lower-case headers), the
// string to sign, and the HMAC-SHA256 chain of the secret over date,
// region, "s3" and "aws4_request". Every header passed is signed.
#ifndef FERRY_S3_SIGV4_H_
#define FERRY_S3_SIGV4_H_

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace ferry::s3 {

// x-amz-content-sha256 value for a body that is not hashed.
inline constexpr char kUnsignedPayload[] = "UNSIGNED-PAYLOAD";

// RFC 3986 percent-encoding: unreserved characters (A-Z a-z 0-9 - . _ ~)
// stay, every other byte becomes %XX (upper-case hex); '/' stays when
// `keep_slash` (object keys in paths).
std::string UriEncode(std::string_view s, bool keep_slash);

// Query parameters, unencoded, as "k=v&k=v" sorted by encoded key then
// value; a parameter with no value gives "k=" (SigV4's canonical form, and
// what the request must carry for the signature to match).
std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query);

// Lower-case hex SHA-256 of `bytes`.
std::string Sha256Hex(std::span<const char> bytes);

// Lower-case hex SHA-1 of `bytes` (the SSO token cache names its files so).
std::string Sha1Hex(std::string_view bytes);

// "20130524T000000Z" for `t` (UTC).
std::string AmzDate(absl::Time t);

struct SigV4Credentials {
  std::string access_key_id;
  std::string secret_access_key;
};

struct SigV4Request {
  std::string method;
  // The encoded absolute path exactly as sent ("/bucket/a%20b").
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;  // unencoded
  // Every header to sign, names in any case, values as sent. Must include
  // host, x-amz-date and x-amz-content-sha256.
  std::vector<std::pair<std::string, std::string>> headers;
  // Hex SHA-256 of the body, or kUnsignedPayload.
  std::string payload_hash;
};

// The canonical request (exposed for tests and for debugging a
// SignatureDoesNotMatch against the server's own canonical request).
std::string CanonicalRequest(const SigV4Request& request);

// The Authorization header value for `request` at `amz_date`
// ("YYYYMMDDTHHMMSSZ", the request's x-amz-date).
std::string SignV4(const SigV4Request& request, const SigV4Credentials& credentials,
                   std::string_view region, std::string_view amz_date,
                   std::string_view service = "s3");

// The key a day's signatures are made with: the HMAC chain of the secret
// over `date` ("YYYYMMDD"), region, service and "aws4_request". Four of a
// signature's five HMACs, the same for every request of that day, so a
// signer that sends many keeps it (OpenSSL 3 allocates and looks its
// algorithm up on each HMAC: ~40 allocations per request for the chain).
std::string SigningKey(std::string_view secret_access_key, std::string_view date,
                       std::string_view region, std::string_view service = "s3");

// SignV4 with the day's `signing_key` (SigningKey of amz_date's date).
std::string SignV4WithKey(const SigV4Request& request, std::string_view access_key_id,
                          std::string_view signing_key, std::string_view region,
                          std::string_view amz_date, std::string_view service = "s3");

}  // namespace ferry::s3

#endif  // FERRY_S3_SIGV4_H_
