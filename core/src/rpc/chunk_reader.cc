#include "rpc/chunk_reader.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
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
    Take(data.substr(0, n));
    chunk_left_ -= n;
    buffered_ += n;
    data.remove_prefix(n);
    if (chunk_left_ > 0) return absl::OkStatus();  // `data` is used up
    FERRY_RETURN_IF_ERROR(EndOfChunk(records));
  }
}

void ChunkReader::Take(std::string_view data) {
  if (placed_ < place_.size()) {
    // Record bytes before the range, then the range's.
    const size_t before = std::min(data.size(), place_at_ - std::min(place_at_, record_.size()));
    record_.append(data.data(), before);
    data.remove_prefix(before);
    const size_t n = std::min(data.size(), place_.size() - placed_);
    std::memcpy(place_.data() + placed_, data.data(), n);
    placed_ += n;
    data.remove_prefix(n);
  }
  record_.append(data.data(), data.size());
}

absl::Status ChunkReader::EndOfChunk(std::vector<std::string>* records) {
  header_have_ = 0;
  absl::StatusOr<bool> record_done = EndChunk();
  if (!record_done.ok()) return Fail(record_done.status());
  if (!*record_done) return absl::OkStatus();
  if (placed_ < place_.size()) {
    return Fail(absl::DataLossError(absl::StrCat(
        "a record of ", record_size(), " bytes ended ", placed_, " bytes into the ", place_.size(),
        "-byte range its own header announced at offset ", place_at_)));
  }
  records->push_back(std::move(record_));
  record_ = std::string();
  buffered_ = 0;
  place_ = {};
  place_at_ = 0;
  placed_ = 0;
  return absl::OkStatus();
}

bool ChunkReader::Place(size_t offset, absl::Span<char> dest) {
  if (!error_.ok() || buffered_ == 0 || !place_.empty() || dest.empty()) return false;
  place_ = dest;
  place_at_ = offset;
  if (record_.size() > offset) {
    // Bytes of the range already here move to `dest`; any after it stay.
    const size_t n = std::min(record_.size() - offset, dest.size());
    std::memcpy(dest.data(), record_.data() + offset, n);
    record_.erase(offset, n);
    placed_ = n;
  }
  return true;
}

absl::Span<char> ChunkReader::DirectTarget() {
  if (!error_.ok() || header_have_ < kChunkHeaderSize || chunk_left_ == 0 ||
      placed_ == place_.size() || record_.size() < place_at_) {
    return {};
  }
  return place_.subspan(placed_, std::min(chunk_left_, place_.size() - placed_));
}

absl::Status ChunkReader::CommitDirect(size_t n, std::vector<std::string>* records) {
  if (!error_.ok()) return error_;
  if (n > DirectTarget().size()) {
    return Fail(absl::InternalError(absl::StrCat("CommitDirect of ", n, " bytes where ",
                                                 DirectTarget().size(), " were offered")));
  }
  placed_ += n;
  chunk_left_ -= n;
  buffered_ += n;
  if (chunk_left_ > 0) return absl::OkStatus();
  return EndOfChunk(records);
}

}  // namespace ferry::internal
