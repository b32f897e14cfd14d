// ObjectFileTable: POSIX open/read/write/lseek/close on an object store,
// the way the iRODS S3 resource's cacheless mode offers them, built from
// FdTable, MultipartDownloader and MultipartUploader.
//
//  - Every Open gets its own descriptor with its own offset (FdTable).
//  - Read-opens of one key share one MultipartDownloader (one HEAD): a
//    lone reader moves only the bytes it reads; when a second descriptor
//    of the key is open for reading, the shared downloader starts its
//    parallel multipart download (OnReaderCountChanged) and wakes each
//    reader as its bytes land.
//  - Write-opens of one key share one MultipartUploader (iRODS parallel
//    put opens N descriptors, each writing its own stripe); parts stream as
//    they fill. The key's last Close finishes the upload and returns its
//    status: an error there means the object was NOT written (the
//    multipart upload has been aborted).
//  - kReadWrite is refused with InvalidArgument: an object store cannot
//    update an object in place.
//
//   ferry::ObjectFileTable files(store, runtime);
//   FERRY_ASSIGN_OR_RETURN(int fd, files.Open("bucket/big.bin", ferry::OpenMode::kRead));
//   FERRY_ASSIGN_OR_RETURN(size_t n, files.Read(fd, absl::MakeSpan(buf)));
//   FERRY_RETURN_IF_ERROR(files.Close(fd));
//
// Errors: descriptor misuse is InvalidArgument naming the call and fd (see
// fd_table.h); store errors keep their code, annotated with call, fd, key
// and offset.
//
// Thread-safety: thread-safe; calls on different descriptors run in
// parallel. Blocking: REQUIRES not called on an I/O thread of the Runtime.
// REQUIRES: `store` and `runtime` outlive the table; destroy the table
// before them (descriptors still open are closed: their uploads aborted).
#ifndef FERRY_TRANSFER_OBJECT_FILE_TABLE_H_
#define FERRY_TRANSFER_OBJECT_FILE_TABLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ferry/io/fd_table.h"
#include "ferry/transfer/multipart_downloader.h"
#include "ferry/transfer/multipart_uploader.h"
#include "ferry/transfer/object_store.h"

namespace ferry {

class Runtime;

struct ObjectFileTableOptions {
  MultipartDownloaderOptions download;
  // Per written object (total_bytes comes from ObjectOpenOptions).
  MultipartUploaderOptions upload;
};

struct ObjectOpenOptions {
  // Writes: the object's final size if the caller knows it (iRODS does),
  // else -1. Ignored for reads. Every write-open of a key must agree.
  int64_t total_bytes = -1;
  // Reads: the object as a listing reported it (size and a non-empty
  // ETag): opened without a HEAD, reads pinned to that ETag. Ignored when
  // a descriptor of the key is already open (its downloader is shared).
  std::optional<ObjectInfo> listed;
  // Writes: stored with the object (the first write-open's counts).
  ObjectMetadata metadata;
  // Writes: an interrupted upload of this key to continue (the first
  // write-open's counts; see MultipartUploaderOptions::resume).
  ResumableUpload resume;
};

class ObjectFileTable {
 public:
  ObjectFileTable(ObjectStore& store, Runtime& runtime,
                  const ObjectFileTableOptions& options = {});
  ~ObjectFileTable();
  ObjectFileTable(const ObjectFileTable&) = delete;
  ObjectFileTable& operator=(const ObjectFileTable&) = delete;

  // Opens `key` ("bucket/object") and returns a new descriptor (>= 3).
  // kRead: NotFound if the object does not exist. kWrite: creates or
  // replaces the object at the key's last Close.
  absl::StatusOr<int> Open(std::string_view key, OpenMode mode,
                           const ObjectOpenOptions& options = {});

  // POSIX semantics as in FdTable (short reads only at end of object).
  absl::StatusOr<size_t> Read(int fd, absl::Span<char> buf);
  absl::StatusOr<size_t> Write(int fd, absl::Span<const char> data);
  absl::StatusOr<size_t> PRead(int fd, int64_t offset, absl::Span<char> buf);
  absl::StatusOr<size_t> PWrite(int fd, int64_t offset, absl::Span<const char> data);
  absl::StatusOr<int64_t> Lseek(int fd, int64_t offset, int whence);

  // Closes `fd`. The last close of a written key finishes its upload and
  // returns the upload's status (the object exists only if OK); its
  // statistics go to `*upload` if given (left as they are otherwise).
  absl::Status Close(int fd, UploadStats* upload = nullptr);

  // Closes write descriptor `fd` WITHOUT publishing: the key's multipart
  // upload is aborted (no orphan parts; an object already there stays as
  // it was), so later writes through other descriptors of the key fail
  // and their Close reports the abort. Returns the abort's status.
  // InvalidArgument for a read descriptor or an fd not open.
  absl::Status Abort(int fd);

  // Size and ETag of the object behind a read descriptor (as opened).
  absl::StatusOr<ObjectInfo> Stat(int fd);

  // True if `fd` is open for reading and no other descriptor reads its
  // key: its reads do not share the key's downloader with anyone, so a
  // caller may serve them another way (S3's streamed reads) without
  // undoing the shared download. False otherwise.
  bool SoleReader(int fd) const;

  // Descriptors open now.
  int open_descriptors() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry

#endif  // FERRY_TRANSFER_OBJECT_FILE_TABLE_H_
