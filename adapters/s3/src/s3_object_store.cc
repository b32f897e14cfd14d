// S3ObjectStore: each ObjectStore call becomes one S3 REST request. A Call
// names the operation (for error messages), bucket, key, query and extra
// headers; Issue() adds host, x-amz-date, x-amz-content-sha256 and the
// session token, signs every header it sends (SigV4), and hands the
// request to the HttpClient, which retries transport failures and 5xx
// with the same signed headers (a signature stays valid for 15 minutes).
// Replies are read from the headers (HEAD, PUT, UploadPart) or the XML
// body (CreateMultipart, CompleteMultipart, listings). GetRange and
// GetRangeInto send the same request (Call::RangedGet) and read its reply
// the same way (RangeBytes); GetRangeInto has curl write the body straight
// into the caller's buffer (HttpRequest::response_buffer).
// With several endpoints a request that cannot connect is re-signed (the
// host header changes) and sent to the next endpoint not marked down; the
// endpoint is marked down for kEndpointDownTime. That failover runs in the
// HTTP completion and uses the store, so the destructor first shuts the
// HTTP client down, which waits for completions already running.
// Error statuses are moved, never copied, into the caller's callback: a
// copy left behind on the I/O thread would drop its reference after the
// caller read the status, and Debian's uninstrumented abseil hides that
// refcount's synchronization from ThreadSanitizer.
#include "ferry/s3/s3_object_store.h"

#include <cstring>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "ferry/base/clock.h"
#include "ferry/base/crypto.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/retry_policy.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_error.h"
#include "ferry/s3/s3_replies.h"
#include "ferry/s3/curl_api.h"
#include "ferry/s3/http_client.h"
#include "ferry/s3/s3_xml.h"
#include "ferry/s3/s3_endpoint.h"
#include "ferry/s3/credentials_provider.h"
#include "absl/strings/cord.h"
#include "ferry/s3/sigv4.h"

namespace ferry::s3 {

struct S3ObjectStore::Call {
  const char* operation = "";
  std::string method = "GET";
  std::string bucket;
  std::string key;  // object key, may be empty (bucket-level calls)
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::span<const char> body;
  std::string payload_hash = kUnsignedPayload;
  int64_t expected_body_bytes = -1;
  std::span<char> response_buffer;  // see HttpRequest::response_buffer
  // Sent again once already for the bucket's own region (a redirect is
  // followed once).
  bool redirected = false;
  // Any HTTP status is handed back as a reply (HeadBucket's region probe).
  bool raw_reply = false;
  absl::Duration min_stall_timeout;  // see HttpRequest::min_stall_timeout
  BodySink body_sink;                // see HttpRequest::body_sink
  uint64_t stream_id = 0;            // see HttpRequest::stream_id

  // The GetObject of bytes [offset, offset + length) of "bucket/key" `key`
  // (GetRange, GetRangeInto), or with no length of every byte from
  // `offset` to the object's end (GetStream); If-Match `if_match` unless
  // empty. InvalidArgument for a key without bucket or a negative offset
  // or length. REQUIRES: length > 0 for the call to be sent.
  static absl::StatusOr<Call> RangedGet(std::string_view key, int64_t offset,
                                        std::optional<int64_t> length, std::string_view if_match);
};

namespace {

// botocore's read timeout, which it applies to every call.
constexpr absl::Duration kCompleteMultipartStallTimeout = absl::Seconds(60);

// "bucket/key" -> {bucket, key}. InvalidArgument naming the operation if
// either part is empty.
absl::StatusOr<std::pair<std::string, std::string>> SplitKey(const char* op,
                                                              std::string_view full) {
  const size_t slash = full.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == full.size()) {
    return absl::InvalidArgumentError(absl::StrCat("S3 ", op, " \"", ToAbsl(full),
                                                   "\": expected \"bucket/key\""));
  }
  return std::make_pair(std::string(full.substr(0, slash)), std::string(full.substr(slash + 1)));
}

// User metadata as x-amz-meta-NAME headers (signed with the rest).
void AddMetadataHeaders(const ObjectMetadata& metadata,
                        std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [name, value] : metadata) {
    headers.emplace_back(absl::StrCat("x-amz-meta-", name), value);
  }
}

void AddChecksumHeader(const Checksum& checksum,
                       std::vector<std::pair<std::string, std::string>>& headers) {
  switch (checksum.algorithm) {
    case ChecksumAlgorithm::kNone:
      break;
    case ChecksumAlgorithm::kMd5:
      headers.emplace_back("content-md5", absl::Base64Escape(checksum.value));
      break;
    case ChecksumAlgorithm::kCrc32c:
      headers.emplace_back("x-amz-checksum-crc32c", absl::Base64Escape(checksum.value));
      break;
  }
}

std::string ResourceName(const std::string& bucket, const std::string& key) {
  return key.empty() ? bucket : absl::StrCat(bucket, "/", key);
}

// The bytes of [offset, offset + length) in `r`, the reply to
// Call::RangedGet: a view into r's body, or into `buffer` if the body
// landed there (HttpResponse::body_in_buffer); empty past the object's
// end. A server that ignores Range answers 200 with the whole object, from
// which the range is cut. Moves the error out of `r`.
absl::StatusOr<std::string_view> RangeBytes(absl::StatusOr<HttpResponse>& r, int64_t offset,
                                            int64_t length, std::span<const char> buffer) {
  if (!r.ok()) {
    // Past the end of the object: the range holds no byte.
    if (r.status().code() == absl::StatusCode::kOutOfRange) return std::string_view();
    return std::move(r).status();
  }
  const std::string_view body = r->body_in_buffer
                                    ? std::string_view(buffer.data(), r->body_bytes)
                                    : std::string_view(r->body);
  if (r->status == 200) {  // Range ignored: the body is the whole object
    if (offset >= static_cast<int64_t>(body.size())) return std::string_view();
    return body.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
  }
  // The bytes of another place of the object would land at `offset`.
  if (absl::Status s = CheckContentRangeStart(r->Header("content-range"), offset); !s.ok()) {
    return absl::DataLossError(absl::StrCat("S3 GetObject of ", length, " bytes at offset ",
                                            offset, ": ", s.message()));
  }
  if (static_cast<int64_t>(body.size()) > length) {
    return absl::DataLossError(absl::StrCat("S3 GetObject: asked for ", length,
                                            " bytes at offset ", offset, ", got ", body.size()));
  }
  return body;
}

}  // namespace

absl::StatusOr<S3ObjectStore::Call> S3ObjectStore::Call::RangedGet(
    std::string_view key, int64_t offset, std::optional<int64_t> length,
    std::string_view if_match) {
  FERRY_ASSIGN_OR_RETURN(auto bk, SplitKey("GetObject", key));
  if (offset < 0 || length.value_or(0) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("S3 GetObject ", ToAbsl(key),
                                                   ": bad range offset ", offset, " length ",
                                                   length.value_or(0)));
  }
  Call call{.operation = "GetObject", .method = "GET", .bucket = std::move(bk.first),
            .key = std::move(bk.second)};
  // "bytes=N-": to the object's end, whatever its size now.
  call.headers.emplace_back(
      "range", length ? absl::StrCat("bytes=", offset, "-", offset + *length - 1)
                      : absl::StrCat("bytes=", offset, "-"));
  if (!if_match.empty()) call.headers.emplace_back("if-match", std::string(if_match));
  call.expected_body_bytes = length.value_or(-1);
  return call;
}

absl::StatusOr<std::unique_ptr<S3ObjectStore>> S3ObjectStore::Create(Runtime& runtime,
                                                                     const S3Config& config) {
  // libcurl and libcrypto are loaded here, on the first S3 use (curl_api.h,
  // ferry/base/crypto.h): a missing one is this call's error, not every
  // request's.
  FERRY_RETURN_IF_ERROR(Curl().status());
  FERRY_RETURN_IF_ERROR(Crypto::Get().status());
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<CredentialsProvider> credentials,
                         CredentialsProvider::Create(runtime, config));
  return std::unique_ptr<S3ObjectStore>(
      new S3ObjectStore(runtime, config, std::move(credentials)));
}

S3ObjectStore::S3ObjectStore(Runtime& runtime, const S3Config& config,
                             std::unique_ptr<CredentialsProvider> credentials)
    : runtime_(runtime),
      config_(config),
      credentials_(std::move(credentials)),
      http_(std::make_unique<HttpClient>(
          runtime, HttpClientOptions{.connect_timeout = config.connect_timeout,
                                     .stall_timeout = config.stall_timeout,
                                     .retry_count = config.retry_count,
                                     .retry_wait = config.retry_wait,
                                     .ca_bundle_path = config.ca_bundle_path})),
      endpoint_down_until_(new std::atomic<int64_t>[std::max<size_t>(1, config.endpoints.size())]) {
  for (size_t i = 0; i < std::max<size_t>(1, config_.endpoints.size()); ++i) {
    endpoint_down_until_[i].store(0);
  }
}

// The HTTP client shuts down first, in the destructor's body: it completes
// the calls still in flight with Cancelled and waits for callbacks running
// on an I/O thread, and those callbacks read this store (config, endpoint
// health; failover may even Send again, which then completes Cancelled)
// while it is still whole.
int64_t S3ObjectStore::body_bytes_received() const { return http_->body_bytes_received(); }

S3ObjectStore::~S3ObjectStore() {
  // A credential fetch in flight calls back into IssueTo: let it, then
  // cancel what it sent.
  credentials_->Shutdown();
  http_->Shutdown();
}

const std::string& S3ObjectStore::credential_description() const {
  return credentials_->description();
}

int64_t S3ObjectStore::credential_fetches() const { return credentials_->fetches(); }

std::string S3ObjectStore::BucketRegion(const std::string& bucket) {
  MutexLock l(&regions_mu_);
  auto it = bucket_regions_.find(bucket);
  return it == bucket_regions_.end() ? config_.region : it->second;
}

template <typename T>
void S3ObjectStore::FailLater(Callback<T> done, absl::Status status) {
  runtime_.Post([done = std::move(done), status = std::move(status)]() mutable {
    done(std::move(status));
  });
}

bool S3ObjectStore::EndpointDown(size_t endpoint, absl::Time now) const {
  return endpoint_down_until_[endpoint].load(std::memory_order_relaxed) > absl::ToUnixNanos(now);
}

size_t S3ObjectStore::PickEndpoint() {
  const size_t n = std::max<size_t>(1, config_.endpoints.size());
  const size_t first = next_endpoint_.fetch_add(1, std::memory_order_relaxed) % n;
  if (n == 1) return 0;
  const absl::Time now = NowFrom(nullptr);
  for (size_t i = 0; i < n; ++i) {
    if (!EndpointDown((first + i) % n, now)) return (first + i) % n;
  }
  return first;
}

size_t S3ObjectStore::NextHealthyEndpoint(size_t endpoint) const {
  const size_t n = std::max<size_t>(1, config_.endpoints.size());
  const absl::Time now = NowFrom(nullptr);
  for (size_t i = 1; i < n; ++i) {
    if (!EndpointDown((endpoint + i) % n, now)) return (endpoint + i) % n;
  }
  return endpoint;
}

void S3ObjectStore::Issue(Call call, Callback<HttpResponse> done) {
  IssueTo(std::make_shared<Call>(std::move(call)), PickEndpoint(), 0, std::move(done));
}

namespace {

// What to check when S3 refused the keys (or said 403 without a body, as
// to a HEAD): where they came from.
std::string CredentialHint(const absl::Status& status, long http_status, bool anonymous,
                           const std::string& source) {
  if (anonymous) {
    return http_status == 401 || http_status == 403 ||
                   status.code() == absl::StatusCode::kPermissionDenied ||
                   status.code() == absl::StatusCode::kUnauthenticated
               ? "; the request was unsigned (--no-sign-request / no_sign_request): only a "
                 "public bucket answers it"
               : "";
  }
  if (status.code() == absl::StatusCode::kUnauthenticated) {
    return absl::StrCat("; signed with credentials from ", source,
                        ": check that access key and secret belong together, are active, and that "
                        "a session token has not expired (and the clock is right)");
  }
  if (http_status == 403) {
    return absl::StrCat("; signed with credentials from ", source,
                        ": they lack permission for this, or (a HEAD carries no error detail) "
                        "the secret is wrong");
  }
  return "";
}

}  // namespace

void S3ObjectStore::IssueTo(std::shared_ptr<Call> call, size_t endpoint_index, size_t tried,
                            Callback<HttpResponse> done) {
  credentials_->Get([this, call = std::move(call), endpoint_index, tried, done = std::move(done)](
                        absl::StatusOr<AwsCredentials> keys) mutable {
    if (!keys.ok()) {
      return done(Annotate(keys.status(), absl::StrCat("S3 ", call->operation, " ",
                                                       ResourceName(call->bucket, call->key))));
    }
    SendSigned(std::move(call), endpoint_index, tried, *keys, std::move(done));
  });
}

void S3ObjectStore::SendSigned(std::shared_ptr<Call> call, size_t endpoint_index, size_t tried,
                               const AwsCredentials& keys, Callback<HttpResponse> done) {
  const std::string region = call->bucket.empty() ? config_.region : BucketRegion(call->bucket);
  const S3Target target = ResolveS3Target(
      config_, config_.endpoints.empty() ? std::string_view() : config_.endpoints[endpoint_index],
      region, call->bucket, call->key);
  const std::string amz_date =
      AmzDate(config_.signing_clock != nullptr ? config_.signing_clock->Now() : absl::Now());

  SigV4Request sig;
  sig.method = call->method;
  sig.path = target.path;
  sig.query = call->query;
  sig.payload_hash = call->payload_hash;
  sig.headers = call->headers;
  sig.headers.emplace_back("host", target.host);
  sig.headers.emplace_back("x-amz-date", amz_date);
  sig.headers.emplace_back("x-amz-content-sha256", call->payload_hash);
  if (!keys.session_token.empty()) {
    sig.headers.emplace_back("x-amz-security-token", keys.session_token);
  }
  std::string authorization;
  if (!credentials_->anonymous()) {
    std::string signing_key;
    {
      const std::string_view date = std::string_view(amz_date).substr(0, 8);
      MutexLock l(&signing_key_mu_);
      if (signing_key_date_ != date || signing_key_region_ != region ||
          signing_key_secret_ != keys.secret_access_key) {
        signing_key_ = SigningKey(keys.secret_access_key, date, region);
        signing_key_date_ = std::string(date);
        signing_key_region_ = region;
        signing_key_secret_ = keys.secret_access_key;
      }
      signing_key = signing_key_;
    }
    authorization = SignV4WithKey(sig, keys.access_key_id, signing_key, region, amz_date);
  }

  HttpRequest req;
  req.method = call->method;
  req.url = absl::StrCat(target.url_prefix, target.path);
  if (!call->query.empty()) absl::StrAppend(&req.url, "?", CanonicalQueryString(call->query));
  req.headers = std::move(sig.headers);
  if (!authorization.empty()) req.headers.emplace_back("authorization", std::move(authorization));
  if (call->method == "POST") {
    // curl's default form-urlencoded type makes some servers (s3proxy)
    // swallow the body.
    req.headers.emplace_back("content-type", "application/xml");
  }
  if (call->body.size() >= kExpectContinueBytes) {
    // The server may refuse before the body (NoSuchBucket, AccessDenied,
    // a redirect) and close: without this the refusal is lost in a reset
    // while the body is still going out, and the upload is retried blind.
    // curl honours the first Expect header it is given (not signed, as
    // botocore does not sign it).
    req.headers.emplace_back("expect", "100-continue");
  }
  req.body = call->body;
  req.expected_body_bytes = call->expected_body_bytes;
  req.response_buffer = call->response_buffer;
  // A server that is not there fails at once: retries are for resets and
  // 5xx of a server that answers.
  req.fail_fast_on_connect = true;
  req.min_stall_timeout = call->min_stall_timeout;
  req.body_sink = call->body_sink;
  req.stream_id = call->stream_id;

  http_->Send(std::move(req), [this, call, endpoint_index, tried, region, done = std::move(done)](
                                  absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok() && config_.endpoints.size() > 1 && IsConnectFailure(r.status())) {
      endpoint_down_until_[endpoint_index].store(
          absl::ToUnixNanos(NowFrom(nullptr) + kEndpointDownTime), std::memory_order_relaxed);
      const size_t next = NextHealthyEndpoint(endpoint_index);
      if (tried + 1 < config_.endpoints.size() && next != endpoint_index) {
        endpoint_failovers_.fetch_add(1, std::memory_order_relaxed);
        return IssueTo(std::move(call), next, tried + 1, std::move(done));
      }
    }
    const std::string resource = ResourceName(call->bucket, call->key);
    if (!r.ok()) {
      absl::Status failed = Annotate(r.status(), absl::StrCat("S3 ", call->operation, " ", resource));
      // A server that is not there stays so for a while: no layer above
      // (the file table's, the engine's retries) tries again.
      if (IsConnectFailure(r.status())) MarkRetriesExhausted(failed);
      done(std::move(failed));
      return;
    }
    if (call->raw_reply) return done(std::move(r));
    if (r->status == 301 || r->status == 307 || r->status == 400) {
      if (FollowRegionRedirect(call, endpoint_index, tried, region, *r, done)) return;
    }
    if (r->status < 200 || r->status > 299) {
      const std::string* rid = r->Header("x-amz-request-id");
      absl::Status error = S3ErrorStatus(call->operation, resource, r->status, r->body,
                                         rid != nullptr ? *rid : "");
      const std::string hint = CredentialHint(error, r->status, credentials_->anonymous(),
                                              credentials_->description());
      done(hint.empty() ? std::move(error) : AppendToMessage(error, hint));
      return;
    }
    done(std::move(r));
  });
}

bool S3ObjectStore::FollowRegionRedirect(const std::shared_ptr<Call>& call, size_t endpoint_index,
                                         size_t tried, const std::string& region,
                                         const HttpResponse& reply,
                                         Callback<HttpResponse>& done) {
  if (call->bucket.empty() || call->redirected) return false;
  std::string bucket_region;
  if (const std::string* h = reply.Header("x-amz-bucket-region")) bucket_region = *h;
  if (bucket_region.empty()) bucket_region = XmlText(reply.body, "Region");
  if (bucket_region.empty() && reply.status == 301) {
    // A 301 that names no region (some HEADs): ask HeadBucket, whose
    // answer carries x-amz-bucket-region whatever its status.
    auto probe = std::make_shared<Call>(
        Call{.operation = "HeadBucket", .method = "HEAD", .bucket = call->bucket});
    probe->raw_reply = true;
    probe->redirected = true;
    IssueTo(probe, endpoint_index, tried,
            [this, call, endpoint_index, tried, region, done = std::move(done)](
                absl::StatusOr<HttpResponse> r) mutable {
              const std::string* h = r.ok() ? r->Header("x-amz-bucket-region") : nullptr;
              if (h == nullptr || *h == region) {
                return done(absl::FailedPreconditionError(absl::StrCat(
                    "S3 ", call->operation, " ", ResourceName(call->bucket, call->key),
                    ": HTTP 301, the bucket is in another region and HeadBucket did not say "
                    "which (set the region)")));
              }
              RememberRegion(call->bucket, *h);
              call->redirected = true;
              IssueTo(std::move(call), endpoint_index, tried, std::move(done));
            });
    return true;
  }
  if (bucket_region.empty() || bucket_region == region) return false;
  RememberRegion(call->bucket, bucket_region);
  call->redirected = true;
  IssueTo(call, endpoint_index, tried, std::move(done));
  return true;
}

void S3ObjectStore::RememberRegion(const std::string& bucket, const std::string& region) {
  MutexLock l(&regions_mu_);
  bucket_regions_[bucket] = region;
}

void S3ObjectStore::Head(std::string_view key, Callback<ObjectInfo> done) {
  auto bk = SplitKey("HeadObject", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  Call call{.operation = "HeadObject", .method = "HEAD", .bucket = bk->first, .key = bk->second};
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    done(ParseHeadObjectReply(r->headers));
  });
}

void S3ObjectStore::GetRange(std::string_view key, int64_t offset, int64_t length,
                             std::string_view if_match, Callback<std::string> done) {
  auto call = Call::RangedGet(key, offset, length, if_match);
  if (!call.ok()) return FailLater(std::move(done), call.status());
  if (length == 0) {
    return runtime_.Post([done = std::move(done)]() mutable { done(std::string()); });
  }
  Issue(std::move(*call), [done = std::move(done), offset, length](
                              absl::StatusOr<HttpResponse> r) mutable {
    absl::StatusOr<std::string_view> bytes = RangeBytes(r, offset, length, {});
    if (!bytes.ok()) return done(std::move(bytes).status());
    if (bytes->empty()) return done(std::string());
    // The range is the whole body (the usual 206 reply): no copy.
    if (bytes->size() == r->body.size()) return done(std::move(r->body));
    done(std::string(*bytes));
  });
}

void S3ObjectStore::GetRangeInto(std::string_view key, int64_t offset, std::span<char> dst,
                                 std::string_view if_match, Callback<size_t> done) {
  const auto length = static_cast<int64_t>(dst.size());
  auto call = Call::RangedGet(key, offset, length, if_match);
  if (!call.ok()) return FailLater(std::move(done), call.status());
  if (dst.empty()) {
    return runtime_.Post([done = std::move(done)]() mutable { done(size_t{0}); });
  }
  call->response_buffer = dst;
  Issue(std::move(*call), [done = std::move(done), offset, dst](
                              absl::StatusOr<HttpResponse> r) mutable {
    absl::StatusOr<std::string_view> bytes =
        RangeBytes(r, offset, static_cast<int64_t>(dst.size()), dst);
    if (!bytes.ok()) return done(std::move(bytes).status());
    // Usually the bytes are at dst's front already. A server that ignored
    // Range left them in r's body (the object was larger than dst) or
    // further into dst (it was not): move them to the front. The regions
    // may overlap.
    if (!bytes->empty() && bytes->data() != dst.data()) {
      std::memmove(dst.data(), bytes->data(), bytes->size());
    }
    done(bytes->size());
  });
}

uint64_t S3ObjectStore::GetStream(std::string_view key, int64_t offset, std::string_view if_match,
                                  BodySink sink, Callback<HttpResponse> done) {
  const uint64_t id = http_->NewStreamId();
  auto call = Call::RangedGet(key, offset, std::nullopt, if_match);
  if (!call.ok()) {
    FailLater(std::move(done), call.status());
    return id;
  }
  call->body_sink = std::move(sink);
  call->stream_id = id;
  Issue(std::move(*call), std::move(done));
  return id;
}

void S3ObjectStore::ResumeStream(uint64_t id) { http_->Resume(id); }

void S3ObjectStore::CancelStream(uint64_t id) { http_->Cancel(id); }

void S3ObjectStore::Put(std::string_view key, std::span<const char> bytes,
                        const Checksum& checksum, const ObjectMetadata& metadata,
                        Callback<std::string> done) {
  auto bk = SplitKey("PutObject", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  Call call{.operation = "PutObject", .method = "PUT", .bucket = bk->first, .key = bk->second};
  AddChecksumHeader(checksum, call.headers);
  AddMetadataHeaders(metadata, call.headers);
  call.body = bytes;
  if (bytes.size() < kExpectContinueBytes || BucketChecked(bk->first)) {
    return SendPut(std::move(call), std::move(done));
  }
  // A server that refuses before reading the body (NoSuchBucket) and
  // closes may reset the connection under the body, and the refusal is
  // lost in the reset (versitygw; Expect: 100-continue does not help when
  // the server says Continue before it looks). One HeadBucket per bucket
  // and store turns that into NoSuchBucket at once.
  auto probe = std::make_shared<Call>(
      Call{.operation = "HeadBucket", .method = "HEAD", .bucket = bk->first});
  probe->raw_reply = true;
  IssueTo(probe, PickEndpoint(), 0,
          [this, call = std::move(call), done = std::move(done)](
              absl::StatusOr<HttpResponse> r) mutable {
            if (r.ok() && r->status == 404) {
              absl::Status missing = absl::NotFoundError(absl::StrCat(
                  "S3 PutObject ", ResourceName(call.bucket, call.key),
                  ": NoSuchBucket: the bucket does not exist (HeadBucket answered 404)"));
              missing.SetPayload(kS3ErrorCodePayload, absl::Cord("NoSuchBucket"));
              return done(std::move(missing));
            }
            if (const std::string* region = r.ok() ? r->Header("x-amz-bucket-region") : nullptr) {
              if (*region != BucketRegion(call.bucket)) RememberRegion(call.bucket, *region);
            }
            MarkBucketChecked(call.bucket);
            SendPut(std::move(call), std::move(done));
          });
}

void S3ObjectStore::SendPut(Call call, Callback<std::string> done) {
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    const std::string* etag = r->Header("etag");
    done(etag != nullptr ? *etag : std::string());
  });
}

bool S3ObjectStore::BucketChecked(const std::string& bucket) {
  MutexLock l(&regions_mu_);
  return checked_buckets_.count(bucket) > 0;
}

void S3ObjectStore::MarkBucketChecked(const std::string& bucket) {
  MutexLock l(&regions_mu_);
  checked_buckets_.insert(bucket);
}

void S3ObjectStore::CreateMultipart(std::string_view key, const ObjectMetadata& metadata,
                                    Callback<std::string> done) {
  auto bk = SplitKey("CreateMultipartUpload", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  Call call{.operation = "CreateMultipartUpload", .method = "POST", .bucket = bk->first,
            .key = bk->second};
  AddMetadataHeaders(metadata, call.headers);
  call.query.emplace_back("uploads", "");
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    done(ParseInitiateMultipartReply(r->body));
  });
}

void S3ObjectStore::UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                               std::span<const char> bytes, const Checksum& checksum,
                               Callback<std::string> done) {
  auto bk = SplitKey("UploadPart", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  const MultipartLimits limits = multipart_limits();
  if (part_number < 1 || part_number > limits.max_parts) {
    return FailLater(std::move(done), absl::InvalidArgumentError(absl::StrCat(
                                          "S3 UploadPart ", ToAbsl(key), ": part number ",
                                          part_number, " outside [1, ", limits.max_parts, "]")));
  }
  Call call{.operation = "UploadPart", .method = "PUT", .bucket = bk->first, .key = bk->second};
  call.query.emplace_back("partNumber", absl::StrCat(part_number));
  call.query.emplace_back("uploadId", std::string(upload_id));
  AddChecksumHeader(checksum, call.headers);
  call.body = bytes;
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    const std::string* etag = r->Header("etag");
    if (etag == nullptr) return done(absl::DataLossError("S3 UploadPart: reply without an ETag"));
    done(*etag);
  });
}

// Makes `xml` the body of `call`, signed by its hash; the pointer keeps it
// alive: hold it until the reply. An empty `xml` sends no body.
std::shared_ptr<const std::string> S3ObjectStore::AttachBody(Call& call, std::string xml) {
  auto body = std::make_shared<const std::string>(std::move(xml));
  if (!body->empty()) {
    call.body = std::span<const char>(body->data(), body->size());
    call.payload_hash = Sha256Hex(call.body);
  }
  return body;
}

void S3ObjectStore::CompleteMultipart(std::string_view key, std::string_view upload_id,
                                      std::vector<CompletedPart> parts,
                                      Callback<std::string> done) {
  auto bk = SplitKey("CompleteMultipartUpload", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  std::string xml = "<CompleteMultipartUpload>";
  for (const CompletedPart& p : parts) {
    absl::StrAppend(&xml, "<Part><PartNumber>", p.part_number, "</PartNumber><ETag>",
                    XmlEscape(p.etag), "</ETag></Part>");
  }
  absl::StrAppend(&xml, "</CompleteMultipartUpload>");
  Call call{.operation = "CompleteMultipartUpload", .method = "POST", .bucket = bk->first,
            .key = bk->second};
  call.query.emplace_back("uploadId", std::string(upload_id));
  // S3 may take minutes to assemble the parts. AWS keeps the reply alive
  // with whitespace, other servers are silent until done: a short stall
  // timeout (set for GETs and PUTs) must not fail a completed upload.
  call.min_stall_timeout = kCompleteMultipartStallTimeout;
  auto body = AttachBody(call, std::move(xml));
  Issue(std::move(call), [done = std::move(done), body](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    done(ParseCompleteMultipartReply(r->body));
  });
}

void S3ObjectStore::AbortMultipart(std::string_view key, std::string_view upload_id,
                                   StatusCallback done) {
  auto bk = SplitKey("AbortMultipartUpload", key);
  if (!bk.ok()) {
    return runtime_.Post([done = std::move(done), s = bk.status()]() mutable { done(s); });
  }
  Call call{.operation = "AbortMultipartUpload", .method = "DELETE", .bucket = bk->first,
            .key = bk->second};
  call.query.emplace_back("uploadId", std::string(upload_id));
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    done(std::move(r).status());
  });
}

MultipartLimits S3ObjectStore::multipart_limits() const { return MultipartLimits(); }

void S3ObjectStore::ListObjects(std::string_view bucket, const ListObjectsOptions& options,
                                Callback<ListObjectsPage> done) {
  Call call{.operation = "ListObjectsV2", .method = "GET", .bucket = std::string(bucket)};
  call.query.emplace_back("list-type", "2");
  if (!options.prefix.empty()) call.query.emplace_back("prefix", options.prefix);
  if (!options.delimiter.empty()) call.query.emplace_back("delimiter", options.delimiter);
  if (!options.continuation_token.empty()) {
    call.query.emplace_back("continuation-token", options.continuation_token);
  }
  call.query.emplace_back("max-keys", absl::StrCat(options.max_keys));
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    done(ParseListObjectsV2Reply(r->body));
  });
}

absl::StatusOr<std::vector<ListedObject>> S3ObjectStore::ListAllObjects(std::string_view bucket,
                                                                       std::string_view prefix) {
  std::vector<ListedObject> all;
  ListObjectsOptions options{.prefix = std::string(prefix)};
  while (true) {
    FERRY_ASSIGN_OR_RETURN(ListObjectsPage page,
                           BlockOn<ListObjectsPage>([&](Callback<ListObjectsPage> done) {
                             ListObjects(bucket, options, std::move(done));
                           }));
    for (ListedObject& o : page.objects) all.push_back(std::move(o));
    if (page.next_continuation_token.empty()) return all;
    options.continuation_token = std::move(page.next_continuation_token);
  }
}

void S3ObjectStore::DeleteObject(std::string_view key, StatusCallback done) {
  auto bk = SplitKey("DeleteObject", key);
  if (!bk.ok()) {
    return runtime_.Post([done = std::move(done), s = bk.status()]() mutable { done(s); });
  }
  Call call{.operation = "DeleteObject", .method = "DELETE", .bucket = bk->first,
            .key = bk->second};
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    done(std::move(r).status());
  });
}

void S3ObjectStore::CreateBucket(std::string_view bucket, StatusCallback done) {
  Call call{.operation = "CreateBucket", .method = "PUT", .bucket = std::string(bucket)};
  // Outside us-east-1 a bucket must name its region, or S3 refuses it
  // (IllegalLocationConstraintException) or makes it elsewhere.
  auto body = AttachBody(call, CreateBucketBody(config_.region));
  Issue(std::move(call), [done = std::move(done), body](absl::StatusOr<HttpResponse> r) mutable {
    done(std::move(r).status());
  });
}

void S3ObjectStore::DeleteBucket(std::string_view bucket, StatusCallback done) {
  Call call{.operation = "DeleteBucket", .method = "DELETE", .bucket = std::string(bucket)};
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    done(std::move(r).status());
  });
}

void S3ObjectStore::ListMultipartUploads(std::string_view bucket, std::string_view prefix,
                                         Callback<std::vector<MultipartUploadInfo>> done) {
  ListUploadsFrom(std::string(bucket), std::string(prefix), "", "", {}, std::move(done));
}

void S3ObjectStore::ListUploadsFrom(std::string bucket, std::string prefix, std::string key_marker,
                                    std::string upload_id_marker,
                                    std::vector<MultipartUploadInfo> uploads,
                                    Callback<std::vector<MultipartUploadInfo>> done) {
  Call call{.operation = "ListMultipartUploads", .method = "GET", .bucket = bucket};
  if (!key_marker.empty()) call.query.emplace_back("key-marker", key_marker);
  if (!prefix.empty()) call.query.emplace_back("prefix", prefix);
  if (!upload_id_marker.empty()) call.query.emplace_back("upload-id-marker", upload_id_marker);
  call.query.emplace_back("uploads", "");
  Issue(std::move(call), [this, bucket = std::move(bucket), prefix = std::move(prefix),
                          key_marker = std::move(key_marker),
                          upload_id_marker = std::move(upload_id_marker), uploads = std::move(uploads),
                          done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    ListUploadsPage page = ParseListMultipartUploadsReply(r->body);
    for (MultipartUploadInfo& u : page.uploads) uploads.push_back(std::move(u));
    if (!page.truncated) return done(std::move(uploads));
    if (page.next_key_marker.empty() ||
        (page.next_key_marker == key_marker && page.next_upload_id_marker == upload_id_marker)) {
      // Asked again with the same markers, it would answer the same page.
      return done(absl::DataLossError(absl::StrCat(
          "S3 ListMultipartUploads ", bucket, ": a truncated page that does not advance (key-marker \"",
          page.next_key_marker, "\")")));
    }
    ListUploadsFrom(std::move(bucket), std::move(prefix), std::move(page.next_key_marker),
                    std::move(page.next_upload_id_marker), std::move(uploads), std::move(done));
  });
}

void S3ObjectStore::ListParts(std::string_view key, std::string_view upload_id,
                              Callback<std::vector<UploadedPartInfo>> done) {
  auto bk = SplitKey("ListParts", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  ListPartsFrom(std::move(bk->first), std::move(bk->second), std::string(upload_id), 0, {},
                std::move(done));
}

void S3ObjectStore::ListPartsFrom(std::string bucket, std::string key, std::string upload_id,
                                  int marker, std::vector<UploadedPartInfo> parts,
                                  Callback<std::vector<UploadedPartInfo>> done) {
  // S3's page limit: 1000 parts.
  constexpr int kMaxPartsPerPage = 1000;
  Call call{.operation = "ListParts", .method = "GET", .bucket = bucket, .key = key};
  call.query.emplace_back("max-parts", absl::StrCat(kMaxPartsPerPage));
  if (marker > 0) call.query.emplace_back("part-number-marker", absl::StrCat(marker));
  call.query.emplace_back("uploadId", upload_id);
  Issue(std::move(call), [this, bucket = std::move(bucket), key = std::move(key),
                          upload_id = std::move(upload_id), marker, parts = std::move(parts),
                          done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    absl::StatusOr<ListPartsPage> page =
        ParseListPartsReply(absl::StrCat(bucket, "/", key), r->body);
    if (!page.ok()) return done(std::move(page).status());
    for (UploadedPartInfo& part : page->parts) parts.push_back(std::move(part));
    if (!page->truncated) return done(std::move(parts));
    const int next = page->next_marker;
    if (next <= marker) {
      return done(absl::DataLossError(
          absl::StrCat("S3 ListParts ", bucket, "/", key,
                       ": truncated page without a NextPartNumberMarker past ", marker)));
    }
    ListPartsFrom(std::move(bucket), std::move(key), std::move(upload_id), next,
                  std::move(parts), std::move(done));
  });
}

namespace {

// "bucket/key" of `source` as x-amz-copy-source wants it: percent-encoded
// like a path (botocore's form).
std::pair<std::string, std::string> CopySourceHeader(const std::pair<std::string, std::string>& src) {
  return {"x-amz-copy-source",
          absl::StrCat(UriEncode(src.first, false), "/", UriEncode(src.second, true))};
}

// The ETag of a CopyObject / UploadPartCopy reply. S3 may answer 200 and
// put the error in the body (a copy that ran long), so the body decides.
absl::StatusOr<std::string> CopyReplyEtag(const char* operation, std::string_view resource,
                                          absl::StatusOr<HttpResponse> r) {
  if (!r.ok()) return std::move(r).status();
  return ParseCopyReply(operation, resource, r->body);
}

}  // namespace

void S3ObjectStore::CopyObject(std::string_view source, std::string_view destination,
                               Callback<std::string> done) {
  auto src = SplitKey("CopyObject", source);
  if (!src.ok()) return FailLater(std::move(done), src.status());
  auto dst = SplitKey("CopyObject", destination);
  if (!dst.ok()) return FailLater(std::move(done), dst.status());
  Call call{.operation = "CopyObject", .method = "PUT", .bucket = dst->first, .key = dst->second};
  call.headers.push_back(CopySourceHeader(*src));
  Issue(std::move(call), [done = std::move(done), resource = std::string(destination)](
                             absl::StatusOr<HttpResponse> r) mutable {
    done(CopyReplyEtag("CopyObject", resource, std::move(r)));
  });
}

void S3ObjectStore::UploadPartCopy(std::string_view key, std::string_view upload_id, int part_number,
                                   std::string_view source, int64_t first, int64_t last,
                                   std::string_view source_etag, Callback<std::string> done) {
  auto src = SplitKey("UploadPartCopy", source);
  if (!src.ok()) return FailLater(std::move(done), src.status());
  auto dst = SplitKey("UploadPartCopy", key);
  if (!dst.ok()) return FailLater(std::move(done), dst.status());
  if (first < 0 || last < first) {
    return FailLater(std::move(done), absl::InvalidArgumentError(absl::StrCat(
                                          "S3 UploadPartCopy ", ToAbsl(key), ": bad range ", first,
                                          "-", last)));
  }
  Call call{.operation = "UploadPartCopy", .method = "PUT", .bucket = dst->first, .key = dst->second};
  call.query.emplace_back("partNumber", absl::StrCat(part_number));
  call.query.emplace_back("uploadId", std::string(upload_id));
  call.headers.push_back(CopySourceHeader(*src));
  call.headers.emplace_back("x-amz-copy-source-range", absl::StrCat("bytes=", first, "-", last));
  if (!source_etag.empty()) {
    call.headers.emplace_back("x-amz-copy-source-if-match", std::string(source_etag));
  }
  Issue(std::move(call), [done = std::move(done), resource = std::string(key)](
                             absl::StatusOr<HttpResponse> r) mutable {
    done(CopyReplyEtag("UploadPartCopy", resource, std::move(r)));
  });
}

void S3ObjectStore::ListBuckets(Callback<std::vector<std::string>> done) {
  Call call{.operation = "ListBuckets", .method = "GET"};
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    done(ParseListBucketsReply(r->body));
  });
}

}  // namespace ferry::s3
