// S3ObjectStore: ferry::ObjectStore over S3's REST API (SigV4-signed,
// libcurl multi transport on the Runtime's io_context), plus the few
// bucket-level calls tools and tests need (ListObjectsV2, DeleteObject,
// CopyObject, CreateBucket, ListBuckets, ListMultipartUploads, ListParts).
// Tested against versitygw and s3proxy (tests/integration/s3_compat).
//
//   FERRY_ASSIGN_OR_RETURN(auto config, ferry::s3::S3Config::FromContextString(ctx));
//   FERRY_ASSIGN_OR_RETURN(auto store, ferry::s3::S3ObjectStore::Create(runtime, config));
//   ferry::MultipartDownloadManager downloads(*store, runtime);
//   FERRY_ASSIGN_OR_RETURN(auto object, downloads.Open("bucket/dir/file.bin"));
//
// Keys are "bucket/object-key" (the object key may contain '/'). ETags are
// kept exactly as S3 sends them (quoted) and sent back the same way in
// If-Match and CompleteMultipartUpload. Bodies are not hashed
// (x-amz-content-sha256: UNSIGNED-PAYLOAD); pass a Checksum to Put and
// UploadPart for the server to verify (Content-MD5 or
// x-amz-checksum-crc32c). Errors: see ferry/s3/s3_error.h.
//
// AWS: with no endpoint configured, requests go to AWS's endpoint for the
// region (ResolveS3Target); a bucket S3 says lives elsewhere (301/400 with
// x-amz-bucket-region, else HeadBucket) is remembered by this store and
// the request re-signed for its region and sent again, once. Credentials
// come from S3Config::credential_source, fetched at the first request and
// refreshed ahead of expiry (CredentialsProvider); an error S3 gives for
// refused keys names where they came from.
//
// A connection that cannot be made (refused, unresolvable, timed out)
// fails at once, with no retry: retries are for resets and 5xx of a
// server that answers.
//
// Endpoints: requests rotate over S3Config::endpoints. With more than one,
// an endpoint that refuses a connection is skipped for kEndpointDownTime
// and the request goes at once to the next endpoint (a refused connection
// sent nothing, so this is safe for every method); when every endpoint is
// down the request fails Unavailable.
#ifndef FERRY_S3_S3_OBJECT_STORE_H_
#define FERRY_S3_S3_OBJECT_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/mutex.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_config.h"
#include "ferry/transfer/object_store.h"

namespace ferry::s3 {

// The wire pieces (src/internal): the HTTP engine and the credentials.
class HttpClient;
struct HttpResponse;
enum class BodySinkAction : int;  // http_client.h
class CredentialsProvider;

// One object of a listing.
struct ListedObject {
  std::string key;  // without the bucket
  int64_t size = 0;
  std::string etag;
  absl::Time last_modified = absl::InfinitePast();
};

struct ListObjectsOptions {
  std::string prefix;
  std::string delimiter;           // "" lists recursively; "/" one level
  std::string continuation_token;  // from the previous page
  int max_keys = 1000;             // S3 caps a page at 1000
};

// One page of ListObjectsV2. A page may hold fewer than max_keys objects,
// even none, and still have a next token (s3proxy counts unfinished
// multipart uploads against max_keys): follow the token until it is empty.
struct ListObjectsPage {
  std::vector<ListedObject> objects;
  std::vector<std::string> common_prefixes;
  // Non-empty when there are more pages: pass it as continuation_token.
  std::string next_continuation_token;
};

// One part of an unfinished multipart upload (ListParts).
struct UploadedPartInfo {
  int part_number = 0;
  int64_t size = 0;
  std::string etag;  // quoted, as S3 sends it
};

struct MultipartUploadInfo {
  std::string key;  // without the bucket
  std::string upload_id;
  absl::Time initiated = absl::InfinitePast();  // InfinitePast: not sent
};

// Thread-safe (see ObjectStore). REQUIRES: destroyed before the Runtime;
// destruction fails calls still in flight with Cancelled.
class S3ObjectStore : public ObjectStore {
 public:
  // InvalidArgument if `config` has no credentials (its credential_source
  // is kStatic without keys). Temporary credentials are fetched at the
  // first request.
  static absl::StatusOr<std::unique_ptr<S3ObjectStore>> Create(Runtime& runtime,
                                                               const S3Config& config);
  ~S3ObjectStore() override;

  void Head(std::string_view key, Callback<ObjectInfo> done) override;
  void GetRange(std::string_view key, int64_t offset, int64_t length, std::string_view if_match,
                Callback<std::string> done) override;
  // One ranged GET whose body curl writes straight into `dst`: no buffer
  // is allocated per call. Errors as GetRange's.
  void GetRangeInto(std::string_view key, int64_t offset, std::span<char> dst,
                    std::string_view if_match, Callback<size_t> done) override;
  // One GET of bytes [offset, end of object) of "bucket/key" `key` whose
  // 2xx body goes to `sink` piece by piece as it arrives (HttpRequest::
  // body_sink: called with the HTTP lock held, so it must not call the
  // store), for a reader that takes a long object in pieces without a
  // request per piece. The sink sees the reply's status and headers with
  // each piece: a 206's Content-Range is its to check (a server may answer
  // another range, or ignore Range with a 200). The sink's kPause stops the transfer until
  // ResumeStream(id); CancelStream(id) ends it. With a non-empty
  // `if_match`, FailedPrecondition when the object's ETag is no longer it.
  // `done` gets the reply (its body empty) or the error, as GetRange's;
  // never retried once the sink took a byte. Returns the stream's id.
  uint64_t GetStream(std::string_view key, int64_t offset, std::string_view if_match,
                     std::function<BodySinkAction(const HttpResponse&, std::string_view)> sink,
                     Callback<HttpResponse> done);
  void ResumeStream(uint64_t id);
  void CancelStream(uint64_t id);

  using ObjectStore::CreateMultipart;
  using ObjectStore::Put;
  void Put(std::string_view key, std::span<const char> bytes, const Checksum& checksum,
           const ObjectMetadata& metadata, Callback<std::string> done) override;
  void CreateMultipart(std::string_view key, const ObjectMetadata& metadata,
                       Callback<std::string> done) override;
  void UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                  std::span<const char> bytes, const Checksum& checksum,
                  Callback<std::string> done) override;
  void CompleteMultipart(std::string_view key, std::string_view upload_id,
                         std::vector<CompletedPart> parts, Callback<std::string> done) override;
  void AbortMultipart(std::string_view key, std::string_view upload_id,
                      StatusCallback done) override;
  MultipartLimits multipart_limits() const override;

  // One page of the objects of `bucket` (ListObjectsV2).
  void ListObjects(std::string_view bucket, const ListObjectsOptions& options,
                   Callback<ListObjectsPage> done);
  // Every object of `bucket` under `prefix`, following continuation
  // tokens. Blocking. REQUIRES: not called on an I/O thread.
  absl::StatusOr<std::vector<ListedObject>> ListAllObjects(std::string_view bucket,
                                                           std::string_view prefix);
  // Deletes "bucket/key" (S3 answers success for a missing key too).
  void DeleteObject(std::string_view key, StatusCallback done);
  // Creates `bucket`; AlreadyExists if it is there (BucketAlreadyOwnedByYou).
  void CreateBucket(std::string_view bucket, StatusCallback done);
  // Deletes the empty `bucket`.
  void DeleteBucket(std::string_view bucket, StatusCallback done);
  // Unfinished multipart uploads in `bucket` under `prefix`, every page
  // followed (DataLoss for a listing that does not advance).
  void ListMultipartUploads(std::string_view bucket, std::string_view prefix,
                            Callback<std::vector<MultipartUploadInfo>> done);
  // The parts stored so far for upload `upload_id` of "bucket/key", in
  // ascending part number, every page followed. NotFound (NoSuchUpload) if
  // the upload is unknown, completed or aborted.
  void ListParts(std::string_view key, std::string_view upload_id,
                 Callback<std::vector<UploadedPartInfo>> done);
  // Server-side copy of "bucket/key" `source` to "bucket/key" `destination`
  // (either bucket; the data does not pass through the client); returns
  // the new object's ETag. NotFound if `source` is missing. S3 copies at
  // most 5 GiB in one request.
  void CopyObject(std::string_view source, std::string_view destination,
                  Callback<std::string> done);
  // Part `part_number` of multipart upload `upload_id` of "bucket/key"
  // `key`, copied server-side from bytes [first, last] of "bucket/key"
  // `source` (UploadPartCopy); with `source_etag` non-empty, only while the
  // source still has that ETag (PreconditionFailed -> FailedPrecondition
  // otherwise, so a copy never mixes two versions). Returns the part's ETag.
  void UploadPartCopy(std::string_view key, std::string_view upload_id, int part_number,
                      std::string_view source, int64_t first, int64_t last,
                      std::string_view source_etag, Callback<std::string> done);
  // The names of the caller's buckets.
  void ListBuckets(Callback<std::vector<std::string>> done);

  // How long an endpoint that refused a connection is skipped: long enough
  // that a dead server costs one refused connect per interval, not one per
  // request; short enough that a restarted one soon gets its share again.
  static constexpr absl::Duration kEndpointDownTime = absl::Seconds(30);
  // Requests sent to another endpoint because theirs refused the connection.
  int64_t endpoint_failovers() const {
    return endpoint_failovers_.load(std::memory_order_relaxed);
  }

  // Response body bytes received over the store's life (see HttpClient).
  int64_t body_bytes_received() const;
  const S3Config& config() const { return config_; }
  // Where the signing keys come from (S3Config::credential_source).
  const std::string& credential_description() const;
  // Credential fetches so far (1 for temporary keys used within their
  // lifetime; more once they were refreshed).
  int64_t credential_fetches() const;
  // The region requests for `bucket` are signed for: config().region until
  // S3 redirected one (x-amz-bucket-region), then the bucket's own.
  std::string BucketRegion(const std::string& bucket);

  // Request bodies at least this large are sent with Expect: 100-continue,
  // so a refusal (NoSuchBucket, a redirect) arrives before the body; a
  // PutObject this large first checks its bucket exists (once per bucket).
  static constexpr size_t kExpectContinueBytes = size_t{1} << 20;

 private:
  struct Call;
  S3ObjectStore(Runtime& runtime, const S3Config& config,
                std::unique_ptr<CredentialsProvider> credentials);
  static std::shared_ptr<const std::string> AttachBody(Call& call, std::string xml);
  // Signs and sends `call`; a non-2xx reply becomes an S3 error Status.
  void Issue(Call call, Callback<HttpResponse> done);
  // Issue() to endpoint `endpoint`, `tried` endpoints already refused.
  void IssueTo(std::shared_ptr<Call> call, size_t endpoint, size_t tried,
               Callback<HttpResponse> done);
  // IssueTo() once the keys are known.
  void SendSigned(std::shared_ptr<Call> call, size_t endpoint, size_t tried,
                  const AwsCredentials& keys, Callback<HttpResponse> done);
  // For a 301/307/400 that names the bucket's region (or a 301 whose
  // HeadBucket does): remembers it and sends `call` again, re-signed; true
  // if it took `done`.
  bool FollowRegionRedirect(const std::shared_ptr<Call>& call, size_t endpoint, size_t tried,
                            const std::string& region, const HttpResponse& reply,
                            Callback<HttpResponse>& done);
  void RememberRegion(const std::string& bucket, const std::string& region);
  // PutObject of `call`, its reply's ETag to `done`.
  void SendPut(Call call, Callback<std::string> done);
  // Whether a large Put already found `bucket` (see Put).
  bool BucketChecked(const std::string& bucket);
  void MarkBucketChecked(const std::string& bucket);
  // The next endpoint in rotation that is not marked down (any if all are).
  size_t PickEndpoint();
  // The next endpoint after `endpoint` not marked down, or `endpoint`
  // itself if there is none.
  size_t NextHealthyEndpoint(size_t endpoint) const;
  bool EndpointDown(size_t endpoint, absl::Time now) const;
  // Fetches ListParts pages from `marker` on, appending to `parts`.
  void ListUploadsFrom(std::string bucket, std::string prefix, std::string key_marker,
                       std::string upload_id_marker, std::vector<MultipartUploadInfo> uploads,
                       Callback<std::vector<MultipartUploadInfo>> done);
  void ListPartsFrom(std::string bucket, std::string key, std::string upload_id, int marker,
                     std::vector<UploadedPartInfo> parts,
                     Callback<std::vector<UploadedPartInfo>> done);
  // Completes `done` with `status` on an I/O thread (never inline).
  template <typename T>
  void FailLater(Callback<T> done, absl::Status status);

  Runtime& runtime_;
  const S3Config config_;
  const std::unique_ptr<CredentialsProvider> credentials_;
  // The day's SigV4 signing key, kept (see SigningKey): every request of a
  // day, region and secret signs with the same one.
  Mutex signing_key_mu_;
  std::string signing_key_date_ ABSL_GUARDED_BY(signing_key_mu_);
  std::string signing_key_region_ ABSL_GUARDED_BY(signing_key_mu_);
  std::string signing_key_secret_ ABSL_GUARDED_BY(signing_key_mu_);
  std::string signing_key_ ABSL_GUARDED_BY(signing_key_mu_);
  // Buckets S3 said live outside config_.region, and where (per store: no
  // process-wide state).
  Mutex regions_mu_;
  std::map<std::string, std::string> bucket_regions_ ABSL_GUARDED_BY(regions_mu_);
  // Buckets a HeadBucket found before a large PutObject.
  std::set<std::string> checked_buckets_ ABSL_GUARDED_BY(regions_mu_);
  std::unique_ptr<HttpClient> http_;
  std::atomic<uint64_t> next_endpoint_{0};
  // Per endpoint: until when (absl::ToUnixNanos) it is skipped.
  std::unique_ptr<std::atomic<int64_t>[]> endpoint_down_until_;
  std::atomic<int64_t> endpoint_failovers_{0};
};

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_OBJECT_STORE_H_
