// Length-prefix framing: a 4-byte big-endian record length, then the record.
//
// The reader is the record-marking one's (rpc/chunk_reader.h) with one
// chunk per record: it checks the length against the maximum before
// buffering anything, then copies the body once into the record it moves
// out. Records may be empty (an empty protobuf message is valid). Errors
// are sticky.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/xdr.h"
#include "rpc/chunk_reader.h"

namespace ferry {

namespace {

using internal::kChunkHeaderSize;
using internal::ReserveGeometric;

// How far beyond the bytes received a record's buffer is reserved (see
// record_marking.cc).
constexpr size_t kReserveAhead = size_t{1} << 20;

class LengthPrefixReader final : public internal::ChunkReader {
 public:
  explicit LengthPrefixReader(size_t max_record_size) : max_record_size_(max_record_size) {}

 private:
  absl::StatusOr<size_t> StartChunk(uint32_t length) override {
    if (length > max_record_size_) {
      return absl::DataLossError(absl::StrCat("length-prefix framing: record of ", length,
                                              " bytes exceeds the maximum record size of ",
                                              max_record_size_, " bytes"));
    }
    record().reserve(std::min<size_t>(length, kReserveAhead));
    return length;
  }

  absl::StatusOr<bool> EndChunk() override { return true; }

  const size_t max_record_size_;
};

class LengthPrefixFraming final : public Framing {
 public:
  explicit LengthPrefixFraming(size_t max_record_size) : max_record_size_(max_record_size) {}

  void Append(std::string_view record, std::string* out) const override {
    ReserveGeometric(out, out->size() + kChunkHeaderSize + record.size());
    char prefix[kChunkHeaderSize];
    xdr_internal::StoreBigEndian32(static_cast<uint32_t>(record.size()), prefix);
    out->append(prefix, kChunkHeaderSize);
    out->append(record);
  }

  bool PrefixFor(size_t record_size, std::string* prefix) const override {
    if (record_size > 0xffffffffu) return false;
    char header[kChunkHeaderSize];
    xdr_internal::StoreBigEndian32(static_cast<uint32_t>(record_size), header);
    prefix->append(header, kChunkHeaderSize);
    return true;
  }

  using Framing::AppendPieces;
  void AppendPieces(absl::Span<const std::string_view> parts, std::string* framing_bytes,
                    std::vector<WirePiece>* pieces) const override {
    size_t size = 0;
    for (std::string_view part : parts) size += part.size();
    const size_t offset = framing_bytes->size();
    char prefix[kChunkHeaderSize];
    xdr_internal::StoreBigEndian32(static_cast<uint32_t>(size), prefix);
    framing_bytes->append(prefix, kChunkHeaderSize);
    pieces->push_back(WirePiece{.offset = offset, .size = kChunkHeaderSize});
    for (std::string_view part : parts) {
      if (!part.empty()) pieces->push_back(WirePiece{.offset = framing_bytes->size(), .body = part});
    }
  }

  std::unique_ptr<RecordReader> NewReader() const override {
    return std::make_unique<LengthPrefixReader>(max_record_size_);
  }

  std::string_view name() const override { return "length-prefix"; }

 private:
  const size_t max_record_size_;
};

}  // namespace

std::unique_ptr<Framing> NewLengthPrefixFraming(size_t max_record_size) {
  return std::make_unique<LengthPrefixFraming>(max_record_size);
}

}  // namespace ferry
