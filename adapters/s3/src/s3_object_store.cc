// S3ObjectStore: each ObjectStore call becomes one S3 REST request. A Call
// names the operation (for error messages), bucket, key, query and extra
// headers; Issue() adds host, x-amz-date, x-amz-content-sha256 and the
// session token, signs every header it sends (SigV4), and hands the
// request to the HttpClient, which retries transport failures and 5xx
// with the same signed headers (a signature stays valid for 15 minutes).
// Replies are read from the headers (HEAD, PUT, UploadPart) or the XML
// body (CreateMultipart, CompleteMultipart, listings).
// Error statuses are moved, never copied, into the caller's callback: a
// copy left behind on the I/O thread would drop its reference after the
// caller read the status, and Debian's uninstrumented abseil hides that
// refcount's synchronization from ThreadSanitizer.
#include "ferry/s3/s3_object_store.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_error.h"
#include "ferry/s3/s3_xml.h"

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
};

namespace {

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

absl::Time ParseHttpDate(const std::string* value) {
  absl::Time t = absl::InfinitePast();
  if (value == nullptr) return t;
  std::string err;
  if (!absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", *value, absl::UTCTimeZone(), &t, &err)) {
    return absl::InfinitePast();
  }
  return t;
}

absl::Time ParseIsoDate(const std::string& value) {
  absl::Time t = absl::InfinitePast();
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, value, &t, &err)) return absl::InfinitePast();
  return t;
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

}  // namespace

absl::StatusOr<std::unique_ptr<S3ObjectStore>> S3ObjectStore::Create(Runtime& runtime,
                                                                     const S3Config& config) {
  if (config.endpoints.empty()) {
    return absl::InvalidArgumentError("S3ObjectStore: the config has no endpoint");
  }
  if (config.access_key_id.empty() || config.secret_access_key.empty()) {
    return absl::InvalidArgumentError(
        "S3ObjectStore: no credentials (S3_AUTH_FILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)");
  }
  return std::unique_ptr<S3ObjectStore>(new S3ObjectStore(runtime, config));
}

S3ObjectStore::S3ObjectStore(Runtime& runtime, const S3Config& config)
    : runtime_(runtime),
      config_(config),
      credentials_{config.access_key_id, config.secret_access_key},
      http_(std::make_unique<HttpClient>(
          runtime, HttpClientOptions{.connect_timeout = config.connect_timeout,
                                     .stall_timeout = config.stall_timeout,
                                     .retry_count = config.retry_count,
                                     .retry_wait = config.retry_wait})) {}

S3ObjectStore::~S3ObjectStore() = default;

template <typename T>
void S3ObjectStore::FailLater(Callback<T> done, absl::Status status) {
  runtime_.Post([done = std::move(done), status = std::move(status)]() mutable {
    done(std::move(status));
  });
}

void S3ObjectStore::Issue(Call call, Callback<HttpResponse> done) {
  const std::string& endpoint =
      config_.endpoints[next_endpoint_.fetch_add(1, std::memory_order_relaxed) %
                        config_.endpoints.size()];
  const bool bucket_in_path = config_.path_style || call.bucket.empty();
  const std::string host = bucket_in_path ? endpoint : absl::StrCat(call.bucket, ".", endpoint);
  const std::string path =
      !bucket_in_path || call.bucket.empty()
          ? absl::StrCat("/", UriEncode(call.key, true))
      : call.key.empty()  // bucket-level call: "/bucket", no trailing slash
          ? absl::StrCat("/", UriEncode(call.bucket, false))
          : absl::StrCat("/", UriEncode(call.bucket, false), "/", UriEncode(call.key, true));
  const std::string amz_date = AmzDate(absl::Now());

  SigV4Request sig;
  sig.method = call.method;
  sig.path = path;
  sig.query = call.query;
  sig.payload_hash = call.payload_hash;
  sig.headers = std::move(call.headers);
  sig.headers.emplace_back("host", host);
  sig.headers.emplace_back("x-amz-date", amz_date);
  sig.headers.emplace_back("x-amz-content-sha256", call.payload_hash);
  if (!config_.session_token.empty()) {
    sig.headers.emplace_back("x-amz-security-token", config_.session_token);
  }
  std::string authorization = SignV4(sig, credentials_, config_.region, amz_date);

  HttpRequest req;
  req.method = call.method;
  req.url = absl::StrCat(config_.use_https ? "https://" : "http://", host, path);
  if (!call.query.empty()) absl::StrAppend(&req.url, "?", CanonicalQueryString(call.query));
  req.headers = std::move(sig.headers);
  req.headers.emplace_back("authorization", std::move(authorization));
  if (call.method == "POST") {
    // curl's default form-urlencoded type makes some servers swallow the body.
    req.headers.emplace_back("content-type", "application/xml");
  }
  req.body = call.body;
  req.expected_body_bytes = call.expected_body_bytes;

  http_->Send(std::move(req), [op = call.operation,
                               resource = ResourceName(call.bucket, call.key),
                               done = std::move(done)](
                                  absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) {
      done(absl::Status(r.status().code(),
                        absl::StrCat("S3 ", op, " ", resource, ": ", r.status().message())));
      return;
    }
    if (r->status < 200 || r->status > 299) {
      const std::string* rid = r->Header("x-amz-request-id");
      done(S3ErrorStatus(op, resource, r->status, r->body, rid != nullptr ? *rid : ""));
      return;
    }
    done(std::move(r));
  });
}

void S3ObjectStore::Head(std::string_view key, Callback<ObjectInfo> done) {
  auto bk = SplitKey("HeadObject", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  Call call{.operation = "HeadObject", .method = "HEAD", .bucket = bk->first, .key = bk->second};
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    ObjectInfo info;
    const std::string* len = r->Header("content-length");
    if (len == nullptr || !absl::SimpleAtoi(*len, &info.size)) {
      return done(absl::DataLossError("S3 HeadObject: reply without a valid Content-Length"));
    }
    if (const std::string* etag = r->Header("etag")) info.etag = *etag;
    info.last_modified = ParseHttpDate(r->Header("last-modified"));
    done(std::move(info));
  });
}

void S3ObjectStore::GetRange(std::string_view key, int64_t offset, int64_t length,
                             std::string_view if_match, Callback<std::string> done) {
  auto bk = SplitKey("GetObject", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  if (offset < 0 || length < 0) {
    return FailLater(std::move(done),
                     absl::InvalidArgumentError(absl::StrCat(
                         "S3 GetObject ", ToAbsl(key), ": bad range offset ", offset,
                         " length ", length)));
  }
  if (length == 0) {
    return runtime_.Post([done = std::move(done)]() mutable { done(std::string()); });
  }
  Call call{.operation = "GetObject", .method = "GET", .bucket = bk->first, .key = bk->second};
  call.headers.emplace_back("range", absl::StrCat("bytes=", offset, "-", offset + length - 1));
  if (!if_match.empty()) call.headers.emplace_back("if-match", std::string(if_match));
  call.expected_body_bytes = length;
  Issue(std::move(call), [done = std::move(done), offset, length](
                             absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) {
      // Past the end of the object: the range holds no byte.
      if (r.status().code() == absl::StatusCode::kOutOfRange) return done(std::string());
      return done(std::move(r).status());
    }
    if (r->status == 200) {
      // The server ignored Range and sent the whole object.
      if (offset >= static_cast<int64_t>(r->body.size())) return done(std::string());
      return done(r->body.substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
    }
    if (static_cast<int64_t>(r->body.size()) > length) {
      return done(absl::DataLossError(absl::StrCat("S3 GetObject: asked for ", length,
                                                   " bytes, got ", r->body.size())));
    }
    done(std::move(r->body));
  });
}

void S3ObjectStore::Put(std::string_view key, std::span<const char> bytes,
                        const Checksum& checksum, Callback<std::string> done) {
  auto bk = SplitKey("PutObject", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  Call call{.operation = "PutObject", .method = "PUT", .bucket = bk->first, .key = bk->second};
  AddChecksumHeader(checksum, call.headers);
  call.body = bytes;
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    const std::string* etag = r->Header("etag");
    done(etag != nullptr ? *etag : std::string());
  });
}

void S3ObjectStore::CreateMultipart(std::string_view key, Callback<std::string> done) {
  auto bk = SplitKey("CreateMultipartUpload", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  Call call{.operation = "CreateMultipartUpload", .method = "POST", .bucket = bk->first,
            .key = bk->second};
  call.query.emplace_back("uploads", "");
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    std::string id = XmlText(r->body, "UploadId");
    if (id.empty()) {
      return done(absl::DataLossError("S3 CreateMultipartUpload: reply without an UploadId"));
    }
    done(std::move(id));
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

void S3ObjectStore::CompleteMultipart(std::string_view key, std::string_view upload_id,
                                      std::vector<CompletedPart> parts,
                                      Callback<std::string> done) {
  auto bk = SplitKey("CompleteMultipartUpload", key);
  if (!bk.ok()) return FailLater(std::move(done), bk.status());
  auto body = std::make_shared<std::string>("<CompleteMultipartUpload>");
  for (const CompletedPart& p : parts) {
    absl::StrAppend(body.get(), "<Part><PartNumber>", p.part_number, "</PartNumber><ETag>",
                    XmlEscape(p.etag), "</ETag></Part>");
  }
  absl::StrAppend(body.get(), "</CompleteMultipartUpload>");
  Call call{.operation = "CompleteMultipartUpload", .method = "POST", .bucket = bk->first,
            .key = bk->second};
  call.query.emplace_back("uploadId", std::string(upload_id));
  call.body = std::span<const char>(body->data(), body->size());
  call.payload_hash = Sha256Hex(call.body);
  Issue(std::move(call), [done = std::move(done), body](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    // S3 may answer 200 and put the error in the body (the request ran long).
    if (!XmlElements(r->body, "Error").empty()) {
      return done(S3ErrorStatus("CompleteMultipartUpload", "", 200, r->body, ""));
    }
    done(XmlText(r->body, "ETag"));
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
    ListObjectsPage page;
    for (std::string_view c : XmlElements(r->body, "Contents")) {
      ListedObject o;
      o.key = XmlText(c, "Key");
      if (!absl::SimpleAtoi(XmlText(c, "Size"), &o.size)) {
        return done(absl::DataLossError(
            absl::StrCat("S3 ListObjectsV2: object \"", o.key, "\" without a valid Size")));
      }
      o.etag = XmlText(c, "ETag");
      o.last_modified = ParseIsoDate(XmlText(c, "LastModified"));
      page.objects.push_back(std::move(o));
    }
    for (std::string_view p : XmlElements(r->body, "CommonPrefixes")) {
      page.common_prefixes.push_back(XmlText(p, "Prefix"));
    }
    if (XmlText(r->body, "IsTruncated") == "true") {
      page.next_continuation_token = XmlText(r->body, "NextContinuationToken");
      if (page.next_continuation_token.empty()) {
        return done(absl::DataLossError(
            "S3 ListObjectsV2: truncated page without a NextContinuationToken"));
      }
    }
    done(std::move(page));
  });
}

absl::StatusOr<std::vector<ListedObject>> S3ObjectStore::ListAllObjects(std::string_view bucket,
                                                                       std::string_view prefix) {
  std::vector<ListedObject> all;
  ListObjectsOptions options{.prefix = std::string(prefix)};
  while (true) {
    Promise<ListObjectsPage> p;
    Future<ListObjectsPage> f = p.GetFuture();
    ListObjects(bucket, options, [p = std::move(p)](absl::StatusOr<ListObjectsPage> r) mutable {
      p.Set(std::move(r));
    });
    FERRY_ASSIGN_OR_RETURN(ListObjectsPage page, std::move(f).Get());
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
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
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
  Call call{.operation = "ListMultipartUploads", .method = "GET", .bucket = std::string(bucket)};
  call.query.emplace_back("uploads", "");
  if (!prefix.empty()) call.query.emplace_back("prefix", std::string(prefix));
  Issue(std::move(call), [done = std::move(done)](absl::StatusOr<HttpResponse> r) mutable {
    if (!r.ok()) return done(std::move(r).status());
    std::vector<MultipartUploadInfo> uploads;
    for (std::string_view u : XmlElements(r->body, "Upload")) {
      uploads.push_back({XmlText(u, "Key"), XmlText(u, "UploadId")});
    }
    done(std::move(uploads));
  });
}

}  // namespace ferry::s3
