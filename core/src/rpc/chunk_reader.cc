#include "rpc/chunk_reader.h"

#include <cstring>
#include <span>
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
  if (placed_ < place_size_) {
    // Record bytes before the range, then the range's.
    const size_t before = std::min(data.size(), place_at_ - std::min(place_at_, record_.size()));
    record_.append(data.data(), before);
    data.remove_prefix(before);
    const size_t n = std::min(data.size(), place_size_ - placed_);
    PutPlaced(data.substr(0, n));
    data.remove_prefix(n);
  }
  record_.append(data.data(), data.size());
}

void ChunkReader::PutPlaced(std::string_view data) {
  if (place_file_.fd < 0) {
    std::memcpy(place_mem_ + placed_, data.data(), data.size());
  } else if (place_status_.ok()) {
    place_status_ = WriteIntoRange(place_file_, placed_, std::span<const char>(data.data(), data.size()));
  }
  placed_ += data.size();
}

absl::Status ChunkReader::EndOfChunk(std::vector<std::string>* records) {
  header_have_ = 0;
  absl::StatusOr<bool> record_done = EndChunk();
  if (!record_done.ok()) return Fail(record_done.status());
  if (!*record_done) return absl::OkStatus();
  if (placed_ < place_size_) {
    return Fail(absl::DataLossError(absl::StrCat(
        "a record of ", record_size(), " bytes ended ", placed_, " bytes into the ", place_size_,
        "-byte range its own header announced at offset ", place_at_)));
  }
  records->push_back(std::move(record_));
  record_ = std::string();
  buffered_ = 0;
  place_mem_ = nullptr;
  place_file_ = {};
  place_size_ = 0;
  place_at_ = 0;
  placed_ = 0;
  return absl::OkStatus();
}

bool ChunkReader::StartPlacement(size_t offset, size_t size) {
  if (!error_.ok() || buffered_ == 0 || place_size_ > 0 || size == 0) return false;
  place_size_ = size;
  place_at_ = offset;
  place_status_ = absl::OkStatus();
  return true;
}

bool ChunkReader::Place(size_t offset, absl::Span<char> dest) {
  if (!StartPlacement(offset, dest.size())) return false;
  place_mem_ = dest.data();
  place_file_ = {};
  if (record_.size() > offset) {
    // Bytes of the range already here move to `dest`; any after it stay.
    const size_t n = std::min(record_.size() - offset, dest.size());
    PutPlaced(std::string_view(record_).substr(offset, n));
    record_.erase(offset, n);
  }
  return true;
}

bool ChunkReader::PlaceInFile(size_t offset, FileRange file) {
  if (file.fd < 0 || file.offset < 0 || !StartPlacement(offset, file.size)) return false;
  place_mem_ = nullptr;
  place_file_ = file;
  if (record_.size() > offset) {
    const size_t n = std::min(record_.size() - offset, file.size);
    PutPlaced(std::string_view(record_).substr(offset, n));
    record_.erase(offset, n);
  }
  return true;
}

size_t ChunkReader::DirectLeft() const {
  if (!error_.ok() || header_have_ < kChunkHeaderSize || chunk_left_ == 0 ||
      placed_ == place_size_ || record_.size() < place_at_) {
    return 0;
  }
  return std::min(chunk_left_, place_size_ - placed_);
}

absl::Span<char> ChunkReader::DirectTarget() {
  if (place_file_.fd >= 0) return {};
  const size_t n = DirectLeft();
  return n == 0 ? absl::Span<char>() : absl::Span<char>(place_mem_ + placed_, n);
}

FileRange ChunkReader::DirectFile() {
  const size_t n = DirectLeft();
  if (place_file_.fd < 0 || !place_status_.ok() || n == 0) return {};
  return {.fd = place_file_.fd,
          .offset = place_file_.offset + static_cast<int64_t>(placed_),
          .size = n,
          .write_lock = place_file_.write_lock};
}

void ChunkReader::FailPlacement(absl::Status error) {
  if (place_file_.fd >= 0 && place_status_.ok()) place_status_ = std::move(error);
}

absl::Status ChunkReader::CommitDirect(size_t n, std::vector<std::string>* records) {
  if (!error_.ok()) return error_;
  if (n > DirectLeft()) {
    return Fail(absl::InternalError(
        absl::StrCat("CommitDirect of ", n, " bytes where ", DirectLeft(), " were offered")));
  }
  placed_ += n;
  chunk_left_ -= n;
  buffered_ += n;
  if (chunk_left_ > 0) return absl::OkStatus();
  return EndOfChunk(records);
}

}  // namespace ferry::internal
