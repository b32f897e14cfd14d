// ObjectStore: the asynchronous object-store operations the transfer engine
// needs, and nothing else.
//
// MultipartDownloader and MultipartUploader (ferry/transfer/) speak only
// this interface; the S3 adapter implements it over libcurl's multi
// interface, the iRODS adapter over its own protocol, and tests use an
// in-memory fake. Every call returns at once and completes through a
// callback, normally on one of the Runtime's I/O threads (never inline on
// the calling thread: callers may hold no lock, but must not rely on
// re-entrancy either way). Callbacks must not block.
//
//   ObjectStore& store = ...;
//   store.Head("bucket/key", [](absl::StatusOr<ObjectInfo> info) {
//     if (info.ok()) Use(info->size, info->etag);
//   });
//   store.GetRange("bucket/key", 0, 1024, etag,
//                  [](absl::StatusOr<std::string> bytes) { ... });
//
// Errors follow ferry's code table: NotFound (no such key/upload),
// PermissionDenied, Unauthenticated, DeadlineExceeded, Unavailable
// (connection refused/reset, throttling, server 5xx), DataLoss (malformed
// or truncated reply), InvalidArgument (bad input) and FailedPrecondition
// (an If-Match ETag no longer matches: the object changed).
#ifndef FERRY_TRANSFER_OBJECT_STORE_H_
#define FERRY_TRANSFER_OBJECT_STORE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "ferry/runtime/future.h"
#include "ferry/transfer/checksum.h"

namespace ferry {

// What a HEAD request tells about an object.
// User metadata stored with an object (S3: x-amz-meta-NAME: VALUE), names
// in lower case.
using ObjectMetadata = std::vector<std::pair<std::string, std::string>>;

struct ObjectInfo {
  int64_t size = 0;
  // Opaque version tag. Empty when the store has none: then no If-Match is
  // sent and a change mid-download cannot be detected.
  std::string etag;
  absl::Time last_modified = absl::InfinitePast();
  // The user metadata a HEAD returned (a listing returns none).
  ObjectMetadata metadata;
};

// One uploaded part, as CompleteMultipart wants it.
struct CompletedPart {
  int part_number = 0;  // 1-based
  std::string etag;
};

// Limits of a store's multipart uploads. S3's defaults; third-party stores
// (and tests) may report their own.
struct MultipartLimits {
  // Every part but the last must be at least this long (S3: 5 MiB).
  int64_t min_part_bytes = int64_t{5} << 20;
  // No part may be longer (S3: 5 GiB).
  int64_t max_part_bytes = int64_t{5} << 30;
  // Part numbers run from 1 to this (S3: 10,000).
  int max_parts = 10000;
};

// Completion of calls that return no value.
using StatusCallback = absl::AnyInvocable<void(absl::Status)>;

// Thread-safe: every method may be called from any thread, concurrently.
// Implementations copy `key`, `if_match` and `upload_id` before returning.
// REQUIRES: `bytes` stays valid and unchanged until `done` runs (so a
// retry can send the same buffer again without a copy).
class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Size, ETag and modification time of `key`.
  virtual void Head(std::string_view key, Callback<ObjectInfo> done) = 0;

  // Bytes [offset, offset + length) of `key`, fewer if the object ends
  // first. With a non-empty `if_match`, fails with FailedPrecondition when
  // the object's ETag is no longer `if_match`.
  virtual void GetRange(std::string_view key, int64_t offset, int64_t length,
                        std::string_view if_match, Callback<std::string> done) = 0;

  // As GetRange of dst.size() bytes, but they land in `dst` instead of a
  // new string: a downloader reuses its chunk buffers (fresh memory costs a
  // page fault per 4 KiB on first touch) and a direct read lands in the
  // reader's own buffer. Completes with the number of bytes written, fewer
  // than dst.size() only if the object ends first (0 past its end). On
  // error `dst` holds unspecified bytes. The default calls GetRange and
  // copies; stores that can write straight into `dst` override it.
  // REQUIRES: `dst` stays valid, and the caller neither reads nor writes
  // it, until `done` runs.
  virtual void GetRangeInto(std::string_view key, int64_t offset, std::span<char> dst,
                            std::string_view if_match, Callback<size_t> done);

  // Stores `bytes` as the whole object `key` in one request; returns its ETag.
  // `checksum` (algorithm kNone for none) is sent for the store to verify.
  // `metadata` is stored with it.
  virtual void Put(std::string_view key, std::span<const char> bytes, const Checksum& checksum,
                   const ObjectMetadata& metadata, Callback<std::string> done) = 0;
  void Put(std::string_view key, std::span<const char> bytes, const Checksum& checksum,
           Callback<std::string> done) {
    Put(key, bytes, checksum, {}, std::move(done));
  }

  // Starts a multipart upload of `key`; returns its upload id.
  // `metadata` is stored with the completed object.
  virtual void CreateMultipart(std::string_view key, const ObjectMetadata& metadata,
                               Callback<std::string> done) = 0;
  void CreateMultipart(std::string_view key, Callback<std::string> done) {
    CreateMultipart(key, {}, std::move(done));
  }

  // Uploads part `part_number` (1-based) of `upload_id`; returns the part's
  // ETag. Uploading the same number again replaces the part.
  virtual void UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                          std::span<const char> bytes, const Checksum& checksum,
                          Callback<std::string> done) = 0;

  // Joins `parts` (ascending part numbers) into the object; returns its ETag.
  virtual void CompleteMultipart(std::string_view key, std::string_view upload_id,
                                 std::vector<CompletedPart> parts, Callback<std::string> done) = 0;

  // Discards an unfinished upload and every part stored for it.
  virtual void AbortMultipart(std::string_view key, std::string_view upload_id,
                              StatusCallback done) = 0;

  // Limits MultipartUploader lays its parts out by.
  virtual MultipartLimits multipart_limits() const { return MultipartLimits(); }
};

}  // namespace ferry

#endif  // FERRY_TRANSFER_OBJECT_STORE_H_
