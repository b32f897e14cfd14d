// S3FileSystem: one S3 endpoint as a ferry::fs::FileSystem (scheme "s3").
//
// Paths are "bucket/key"; a "directory" is a bucket or a key prefix ending
// at '/'. Stat is HEAD (else a one-key listing of "key/" says directory);
// List is ListObjectsV2 with delimiter '/'; Walk a flat ListObjectsV2 of
// the prefix, page by page, with each key's parent prefixes reported once
// as directories. Keys go out as the server lists them (the engine's
// SafeRelativePath decides what may be written locally). Files are
// descriptors of the client's ObjectFileTable: a reader moves only the
// bytes it reads (concurrent positional reads are parallel ranged GETs);
// a writer streams multipart parts laid out by the declared size, its
// Close completes the upload and Discard (or an unclosed writer's
// destruction) aborts it, so no orphan parts and no partial object.
// CopyWithin is server-side: one CopyObject up to 5 GiB, a multipart
// upload of UploadPartCopy parts past it; the bytes never pass through.
//
// Thread-safety: thread-safe. REQUIRES: the Runtime outlives it; not
// called on an I/O thread.
#ifndef FERRY_S3_S3_FILE_SYSTEM_H_
#define FERRY_S3_S3_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"
#include "ferry/s3/s3_client.h"
#include "ferry/s3/s3_config.h"

namespace ferry::s3 {

struct S3FileSystemOptions {
  // Bytes per engine chunk (and multipart part) and chunks in flight; 0:
  // 8 MiB and 10, the AWS CLI's defaults, so the two compare like for like.
  fs::ChunkPreferences chunks;
  // CreateDir of a path in a bucket that does not exist creates the bucket.
  bool make_bucket = false;
  // CopyWithin: objects up to this size go in one CopyObject (0: 5 GiB, S3's
  // limit for one); larger ones as a multipart upload of UploadPartCopy
  // parts of `copy_part_bytes` (0: 512 MiB; raised to stay within 10,000
  // parts), `chunks.parallelism` at a time. The data never passes through ferry.
  int64_t copy_object_max_bytes = 0;
  int64_t copy_part_bytes = 0;
  // The provider's S3Config::stall_timeout (a transfer that moves no byte
  // for this long fails); zero keeps the config's.
  absl::Duration stall_timeout = absl::ZeroDuration();
  // The provider's command-line settings (--endpoint-url, --profile,
  // --region, --no-sign-request), over the AWS environment and files.
  S3ConfigOverrides config_overrides;
};

// The fs::FileSystem operations are those of the interface (see the top of
// this file for how S3 carries them out); this class adds only what is
// S3's own. Made by Create.
class S3FileSystem : public fs::FileSystem {
 public:
  static absl::StatusOr<std::shared_ptr<S3FileSystem>> Create(
      Runtime& runtime, S3Config config, const S3FileSystemOptions& options = {});

  virtual S3Client& client() = 0;
};

// s3:// URLs -> one S3FileSystem per registry, configured from the process
// environment (the AWS variables and ~/.aws, as the AWS CLI reads them)
// and options.config_overrides at the first URL resolved.
std::unique_ptr<fs::FileSystemProvider> NewS3Provider(const S3FileSystemOptions& options = {});

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_FILE_SYSTEM_H_
