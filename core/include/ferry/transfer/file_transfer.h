// Whole-file transfers between a local file and an object store, built on
// MultipartDownloader and MultipartUploader: what `ferry-cp`, Python's
// ferry.s3.download / upload and, later, the iRODS get/put paths call.
//
//   ferry::MultipartDownloadManager downloads(store, runtime);
//   FERRY_ASSIGN_OR_RETURN(ferry::TransferStats stats,
//       ferry::DownloadToFile(downloads, "bucket/big.bin", "/tmp/big.bin",
//                             {.progress = [](const ferry::TransferProgress& p) {
//                                Draw(p.bytes_done, p.bytes_total);
//                                return absl::OkStatus();
//                              }}));
//
// Neither function leaves a half-done result that looks complete:
//  - a download lands in a temporary file in the destination's directory
//    and is renamed over the destination only once every byte has arrived
//    and been written; on any error (or a progress callback that says stop)
//    the temporary is removed and the destination is left as it was;
//  - an upload streams multipart parts while it reads the file; on any
//    error the multipart upload is aborted (no orphan parts) and the object
//    that was there before, if any, is untouched.
//
// Thread-safety: the functions are thread-safe and block the caller.
// REQUIRES: not called on an I/O or blocking-pool thread of the Runtime.
#ifndef FERRY_TRANSFER_FILE_TRANSFER_H_
#define FERRY_TRANSFER_FILE_TRANSFER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/transfer/multipart_downloader.h"
#include "ferry/transfer/multipart_uploader.h"
#include "ferry/transfer/object_store.h"
#include "ferry/transfer/transfer_stats.h"

namespace ferry {

class Runtime;

struct TransferOptions {
  ProgressCallback progress;  // may be empty
  absl::Duration progress_interval = absl::Milliseconds(100);
  // Uploads: part size, parts in flight, checksum, retries (total_bytes is
  // set from the file's size). Downloads take theirs from the manager.
  MultipartUploaderOptions upload;
};

// Downloads object `key` to `local_path` (created or replaced; mode 0644
// minus umask). NotFound for a missing object, the store's error for a
// failed request, the errno status (with the path) for a local failure.
absl::StatusOr<TransferStats> DownloadToFile(MultipartDownloadManager& downloads,
                                             std::string_view key, const std::string& local_path,
                                             TransferOptions options = {});

// Uploads `local_path` as object `key` (created or replaced).
absl::StatusOr<TransferStats> UploadFromFile(ObjectStore& store, Runtime& runtime,
                                             const std::string& local_path, std::string_view key,
                                             TransferOptions options = {});

}  // namespace ferry

#endif  // FERRY_TRANSFER_FILE_TRANSFER_H_
