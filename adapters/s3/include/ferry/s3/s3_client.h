// S3Client: one S3 endpoint with everything a front end needs in one
// object: the store, the download manager every reader shares, the table
// of open objects (POSIX open/read/write/lseek/close) and whole-file
// transfers. ferry-cp, the Python `ferry.s3` module and the Java bindings
// all go through it.
//
//   FERRY_ASSIGN_OR_RETURN(auto config, ferry::s3::S3Config::FromEnvironment(
//                                           ferry::s3::S3Config::ProcessEnvironment()));
//   FERRY_ASSIGN_OR_RETURN(auto s3, ferry::s3::S3Client::Create(runtime, config));
//   FERRY_ASSIGN_OR_RETURN(ferry::TransferStats stats,
//                          s3->Download("bucket/big.bin", "/tmp/big.bin"));
//   FERRY_ASSIGN_OR_RETURN(int fd, s3->files().Open("bucket/big.bin", ferry::OpenMode::kRead));
//
// Chunk size, requests in flight and retries come from the S3Config
// (S3_MPU_CHUNK, S3_MPU_THREADS, S3_RETRY_COUNT, S3_WAIT_TIME_SEC).
//
// Thread-safety: thread-safe. REQUIRES: destroyed before its Runtime;
// blocking calls not made on the Runtime's I/O threads.
#ifndef FERRY_S3_S3_CLIENT_H_
#define FERRY_S3_S3_CLIENT_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/s3/s3_config.h"
#include "ferry/s3/s3_object_store.h"
#include "ferry/transfer/file_transfer.h"
#include "ferry/transfer/multipart_downloader.h"
#include "ferry/transfer/object_file_table.h"

namespace ferry::s3 {

// "s3://bucket/a/b.bin" -> "bucket/a/b.bin" (the store's key form).
// InvalidArgument naming the URL if it is not s3:// or has no bucket.
absl::StatusOr<std::string> S3UrlToKey(std::string_view url);

class S3Client {
 public:
  // InvalidArgument for an unusable config (see S3ObjectStore::Create).
  static absl::StatusOr<std::unique_ptr<S3Client>> Create(Runtime& runtime,
                                                          const S3Config& config);
  ~S3Client();

  S3ObjectStore& store();
  MultipartDownloadManager& downloads();
  ObjectFileTable& files();
  Runtime& runtime();

  // DownloadToFile / UploadFromFile (ferry/transfer/file_transfer.h) with
  // this client's store and options: Upload replaces options.upload's
  // part_bytes, concurrency and retry with the client's, keeping the
  // caller's checksum (none by default) and scratch settings.
  absl::StatusOr<TransferStats> Download(std::string_view key, const std::string& local_path,
                                         TransferOptions options = {});
  absl::StatusOr<TransferStats> Upload(const std::string& local_path, std::string_view key,
                                       TransferOptions options = {});

 private:
  struct Impl;
  explicit S3Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_CLIENT_H_
