// ONC RPC record marking (RFC 5531 section 11).
//
// The reader is rpc/chunk_reader.h's state machine with fragments for
// chunks; a record ends with its last fragment. The record's capacity grows
// geometrically, and is reserved ahead by at most kReserveAhead bytes
// beyond what has arrived, so a header that announces a large fragment
// cannot make us allocate much before its bytes come. The size limit is
// checked when a header arrives, before its bytes are buffered.
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

// Top bit of a fragment header: this is the record's last fragment.
constexpr uint32_t kLastFragmentBit = 0x80000000u;
// The low 31 bits hold the fragment length.
constexpr uint32_t kFragmentLengthMask = 0x7fffffffu;
// How far beyond the bytes received a record's buffer is reserved: one NFS
// READ reply of 1 MiB of data plus its RPC and NFS headers (~130 bytes;
// 4 KiB leaves room for a verifier) lands in a single allocation. Exactly
// 1 MiB made every such reply grow to 2 MiB and be copied twice.
constexpr size_t kReserveAhead = (size_t{1} << 20) + 4096;

class RecordMarkingReader final : public internal::ChunkReader {
 public:
  explicit RecordMarkingReader(size_t max_record_size) : max_record_size_(max_record_size) {}

 private:
  // Parses a fragment header and prepares for its bytes.
  absl::StatusOr<size_t> StartChunk(uint32_t header) override {
    last_fragment_ = (header & kLastFragmentBit) != 0;
    const size_t fragment = header & kFragmentLengthMask;
    const size_t size = record_size();
    if (fragment > max_record_size_ - size) {
      return absl::DataLossError(absl::StrCat(
          "ONC RPC record marking: record of at least ", size + fragment,
          " bytes (a fragment of ", fragment, " bytes after ", size,
          ") exceeds the maximum record size of ", max_record_size_, " bytes"));
    }
    // Placed bytes need no room in the record.
    const size_t kept = fragment - std::min(fragment, placed_left());
    ReserveGeometric(&record(), record().size() + std::min(kept, kReserveAhead));
    return fragment;
  }

  absl::StatusOr<bool> EndChunk() override {
    if (!last_fragment_) return false;
    if (record_size() == 0) {
      return absl::DataLossError(
          "ONC RPC record marking: empty record (a last fragment of 0 bytes with no data "
          "before it)");
    }
    return true;
  }

  const size_t max_record_size_;
  bool last_fragment_ = false;  // of the fragment being read
};

class RecordMarkingFraming final : public Framing {
 public:
  explicit RecordMarkingFraming(const RecordMarkingOptions& options)
      : max_record_size_(options.max_record_size),
        max_fragment_size_(std::clamp<size_t>(options.max_fragment_size, 1, kFragmentLengthMask)) {}

  void Append(std::string_view record, std::string* out) const override {
    const size_t fragments =
        std::max<size_t>(1, (record.size() + max_fragment_size_ - 1) / max_fragment_size_);
    ReserveGeometric(out, out->size() + record.size() + fragments * kChunkHeaderSize);
    do {
      const size_t n = std::min(record.size(), max_fragment_size_);
      const bool last = n == record.size();
      char header[kChunkHeaderSize];
      xdr_internal::StoreBigEndian32(static_cast<uint32_t>(n) | (last ? kLastFragmentBit : 0),
                                     header);
      out->append(header, kChunkHeaderSize);
      out->append(record.data(), n);
      record.remove_prefix(n);
    } while (!record.empty());
  }

  using Framing::AppendPieces;
  void AppendPieces(absl::Span<const std::string_view> parts, std::string* framing_bytes,
                    std::vector<WirePiece>* pieces) const override {
    size_t left = 0;
    for (std::string_view part : parts) left += part.size();
    size_t i = 0;                 // the part being sent
    std::string_view rest = parts.empty() ? std::string_view() : parts[0];
    do {
      const size_t n = std::min(left, max_fragment_size_);
      const bool last = n == left;
      char header[kChunkHeaderSize];
      xdr_internal::StoreBigEndian32(static_cast<uint32_t>(n) | (last ? kLastFragmentBit : 0),
                                     header);
      pieces->push_back(WirePiece{.offset = framing_bytes->size(), .size = kChunkHeaderSize});
      framing_bytes->append(header, kChunkHeaderSize);
      // The fragment's bytes, from as many parts as they span.
      for (size_t want = n; want > 0;) {
        while (rest.empty()) rest = parts[++i];
        const size_t k = std::min(want, rest.size());
        if (pieces->back().body.empty()) {
          pieces->back().body = rest.substr(0, k);
        } else {
          pieces->push_back(WirePiece{.offset = framing_bytes->size(), .body = rest.substr(0, k)});
        }
        rest.remove_prefix(k);
        want -= k;
      }
      left -= n;
    } while (left > 0);
  }

  bool PrefixFor(size_t record_size, std::string* prefix) const override {
    if (record_size == 0 || record_size > max_fragment_size_) return false;
    char header[kChunkHeaderSize];
    xdr_internal::StoreBigEndian32(static_cast<uint32_t>(record_size) | kLastFragmentBit, header);
    prefix->append(header, kChunkHeaderSize);
    return true;
  }

  std::unique_ptr<RecordReader> NewReader() const override {
    return std::make_unique<RecordMarkingReader>(max_record_size_);
  }

  std::string_view name() const override { return "record-marking"; }

 private:
  const size_t max_record_size_;
  const size_t max_fragment_size_;
};

}  // namespace

std::unique_ptr<Framing> NewRecordMarkingFraming(const RecordMarkingOptions& options) {
  return std::make_unique<RecordMarkingFraming>(options);
}

}  // namespace ferry
