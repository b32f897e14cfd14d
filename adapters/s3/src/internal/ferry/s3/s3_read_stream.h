// S3ReadStream: one open GET of an object from an offset to its end, read
// in pieces by one sequential reader (issue #33: a lone reader in pieces
// at the speed of the bytes, not a ranged GET waited for per piece).
//
// curl's write callback copies each piece of the body straight into the
// buffer of the Read waiting for it; a piece larger than what that Read
// still wants leaves its tail in a spill buffer (at most one piece, curl's
// receive buffer), which the next Read takes first. While no Read waits,
// the transfer is paused (CURL_WRITEFUNC_PAUSE) and resumed by the next
// Read, so a reader slower than the network holds no more than curl's and
// the kernel's buffers. The GET carries If-Match: an object replaced
// meanwhile fails with FailedPrecondition. A stream from an offset under
// 64 KiB asks from byte 0 and drops what precedes the offset (a GET from
// the start is a server's fast path).
//
//   S3ReadStream stream(store, "bucket/key", etag, /*offset=*/1, size);
//   FERRY_ASSIGN_OR_RETURN(size_t n, stream.Read(absl::MakeSpan(buf)));
//
// Errors: the transfer's (a 4xx/5xx, a reset, a stall past the store's
// stall timeout), annotated with the object and offset; a body that ends
// before the object's end is DataLoss. Every Read after an error returns
// that error. Destruction cancels the transfer (its connection is closed).
//
// Thread-safety: one reader: Read and position() are not called
// concurrently with each other (the owner serialises them); the write
// callback and the completion run on I/O threads and share the state
// under its own mutex. Blocking: REQUIRES not called on an I/O thread.
// REQUIRES: `store` outlives the stream.
#ifndef FERRY_S3_S3_READ_STREAM_H_
#define FERRY_S3_S3_READ_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ferry::s3 {

class S3ObjectStore;

class S3ReadStream {
 public:
  // Starts the GET of bytes [offset, size) of "bucket/key" `key`, pinned
  // to `etag` unless it is empty. REQUIRES: 0 <= offset < size.
  S3ReadStream(S3ObjectStore& store, std::string key, std::string etag, int64_t offset,
               int64_t size);
  ~S3ReadStream();
  S3ReadStream(const S3ReadStream&) = delete;
  S3ReadStream& operator=(const S3ReadStream&) = delete;

  // The next buf.size() bytes (fewer only at the object's end, 0 past it),
  // blocking until they came.
  absl::StatusOr<size_t> Read(absl::Span<char> buf);
  // The offset the next Read reads at.
  int64_t position() const { return position_; }

  struct State;

 private:
  S3ObjectStore& store_;
  const std::shared_ptr<State> state_;  // shared with the callbacks
  uint64_t id_ = 0;
  int64_t position_;
};

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_READ_STREAM_H_
