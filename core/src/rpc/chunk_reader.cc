#include "rpc/chunk_reader.h"

#include <cstring>
#include <utility>

#include "ferry/rpc/xdr.h"

namespace ferry::internal {

absl::Status ChunkReader::Consume(std::string_view data, std::vector<std::string>* records) {
  if (!error_.ok()) return error_;
  while (true) {
    if (header_have_ < kChunkHeaderSize) {
      if (data.empty()) return absl::OkStatus();
      const size_t n = std::min(kChunkHeaderSize - header_have_, data.size());
      std::memcpy(header_ + header_have_, data.data(), n);
      header_have_ += n;
      buffered_ += n;
      data.remove_prefix(n);
      if (header_have_ < kChunkHeaderSize) return absl::OkStatus();
      absl::StatusOr<size_t> chunk = StartChunk(xdr_internal::LoadBigEndian32(header_));
      if (!chunk.ok()) return Fail(chunk.status());
      chunk_left_ = *chunk;
    }
    const size_t n = std::min(chunk_left_, data.size());
    record_.append(data.data(), n);
    chunk_left_ -= n;
    buffered_ += n;
    data.remove_prefix(n);
    if (chunk_left_ > 0) return absl::OkStatus();  // `data` is used up
    // The chunk is complete.
    header_have_ = 0;
    absl::StatusOr<bool> record_done = EndChunk();
    if (!record_done.ok()) return Fail(record_done.status());
    if (*record_done) {
      records->push_back(std::move(record_));
      record_ = std::string();
      buffered_ = 0;
    }
  }
}

}  // namespace ferry::internal
