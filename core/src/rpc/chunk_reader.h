// ChunkReader: the reader shared by the framings whose stream is a sequence
// of [4-byte big-endian header][chunk of bytes the header counts]: length
// prefix (one chunk per record) and ONC RPC record marking (a record is
// one or more fragments). Private to the core's framings.
//
// The reader is a small state machine fed arbitrary slices of the stream:
// it collects a header (possibly across several Consume calls), lets the
// framing check it (before any of the chunk is buffered) and size the
// record, then copies chunk bytes straight into the record being
// assembled. Every input byte is copied once, into that record, which is
// then moved into the output vector, so feeding a stream one byte at a time
// costs the same copying as feeding it whole (no quadratic re-buffering).
// A placed range (RecordReader::Place, PlaceInFile) is copied into its
// destination instead, or read there directly (DirectTarget, DirectFile,
// CommitDirect).
// Errors are sticky: the stream is unusable after one.
#ifndef FERRY_SRC_RPC_CHUNK_READER_H_
#define FERRY_SRC_RPC_CHUNK_READER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ferry/rpc/framing.h"

namespace ferry::internal {

inline constexpr size_t kChunkHeaderSize = 4;

// Makes room for `size` bytes in `*s`, at least doubling its capacity when it
// grows, so appending many records to one buffer stays linear whatever the
// standard library's reserve() does.
inline void ReserveGeometric(std::string* s, size_t size) {
  if (size > s->capacity()) s->reserve(std::max(size, 2 * s->capacity()));
}

class ChunkReader : public RecordReader {
 public:
  absl::Status Consume(std::string_view data, std::vector<std::string>* records) final;
  size_t buffered_bytes() const final { return buffered_; }
  std::string_view partial_record() const final {
    return buffered_ == 0 ? std::string_view() : std::string_view(record_);
  }
  bool Place(size_t offset, absl::Span<char> dest) final;
  absl::Span<char> DirectTarget() final;
  absl::Status CommitDirect(size_t n, std::vector<std::string>* records) final;
  bool PlaceInFile(size_t offset, FileRange file) final;
  FileRange DirectFile() final;
  void FailPlacement(absl::Status error) final;
  absl::Status placement_status() const final { return place_status_; }

 protected:
  // A chunk's header has arrived: the chunk's length, or why the stream is
  // malformed (DataLoss). May reserve room in record() for what is coming.
  virtual absl::StatusOr<size_t> StartChunk(uint32_t header) = 0;
  // The chunk is all in record(): whether the record is complete, or why
  // the stream is malformed (DataLoss).
  virtual absl::StatusOr<bool> EndChunk() = 0;
  // The record assembled so far (placed bytes excepted).
  std::string& record() { return record_; }
  // Its size counting the placed bytes received.
  size_t record_size() const { return record_.size() + placed_; }
  // Placed bytes still to come: a framing reserves record() room for the
  // rest of a chunk less these.
  size_t placed_left() const { return place_size_ - placed_; }

 private:
  absl::Status Fail(absl::Status error) {
    error_ = std::move(error);
    return error_;
  }
  // Takes `data`, bytes of the current chunk, into the record or the
  // placed range.
  void Take(std::string_view data);
  // The current chunk is complete: ends it, and the record if it was the
  // last chunk.
  absl::Status EndOfChunk(std::vector<std::string>* records);
  // Starts a placement of `size` bytes at record offset `offset`: false if
  // none can start.
  bool StartPlacement(size_t offset, size_t size);
  // Bytes of the placed range that arrived through Consume (or were in
  // the record already): into its memory or its file.
  void PutPlaced(std::string_view data);
  // The placed bytes the next bytes of the stream may be, 0 if none.
  size_t DirectLeft() const;

  char header_[kChunkHeaderSize] = {};
  size_t header_have_ = 0;  // bytes of the current chunk header seen
  size_t chunk_left_ = 0;   // bytes of the current chunk still to come
  std::string record_;      // the record assembled so far
  size_t buffered_ = 0;     // stream bytes since the last complete record
  // The placed range of the current record (Place, PlaceInFile): its
  // place_size_ bytes from record offset place_at_ go to place_mem_ or,
  // when place_file_.fd >= 0, to that file; placed_ of them have arrived.
  char* place_mem_ = nullptr;
  FileRange place_file_;
  size_t place_size_ = 0;
  size_t place_at_ = 0;
  size_t placed_ = 0;
  absl::Status place_status_;  // of the latest file placement
  absl::Status error_;      // sticky
};

}  // namespace ferry::internal

#endif  // FERRY_SRC_RPC_CHUNK_READER_H_
