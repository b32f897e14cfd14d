// ONC RPC record marking (RFC 5531 section 11).
//
// The reader is a small state machine fed arbitrary slices of the stream:
// it collects a 4-byte fragment header (possibly across several Consume
// calls), then copies fragment bytes straight into the record being
// assembled. Every input byte is copied once, into that record, which is
// then moved into the output vector, so feeding a stream one byte at a time
// costs the same copying as feeding it whole (no quadratic re-buffering).
// The record's capacity grows geometrically, and is reserved ahead by at
// most kReserveAhead bytes beyond what has arrived, so a header that
// announces a large fragment cannot make us allocate much before its bytes
// come. The size limit is checked when a header arrives, before its bytes
// are buffered. Errors are sticky: the stream is unusable after one.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/xdr.h"

namespace ferry {

namespace {

constexpr size_t kHeaderSize = 4;
// Top bit of a fragment header: this is the record's last fragment.
constexpr uint32_t kLastFragmentBit = 0x80000000u;
// The low 31 bits hold the fragment length.
constexpr uint32_t kFragmentLengthMask = 0x7fffffffu;
// How far beyond the bytes received a record's buffer is reserved: one NFS
// READ reply of 1 MiB of data plus its RPC and NFS headers (~130 bytes;
// 4 KiB leaves room for a verifier) lands in a single allocation. Exactly
// 1 MiB made every such reply grow to 2 MiB and be copied twice.
constexpr size_t kReserveAhead = (size_t{1} << 20) + 4096;

// Makes room for `size` bytes in `*s`, at least doubling its capacity when it
// grows, so appending many records to one buffer stays linear whatever the
// standard library's reserve() does.
void ReserveGeometric(std::string* s, size_t size) {
  if (size > s->capacity()) s->reserve(std::max(size, 2 * s->capacity()));
}

class RecordMarkingReader final : public RecordReader {
 public:
  explicit RecordMarkingReader(size_t max_record_size) : max_record_size_(max_record_size) {}

  absl::Status Consume(std::string_view data, std::vector<std::string>* records) override {
    if (!error_.ok()) return error_;
    while (true) {
      if (header_have_ < kHeaderSize) {
        if (data.empty()) return absl::OkStatus();
        const size_t n = std::min(kHeaderSize - header_have_, data.size());
        std::memcpy(header_ + header_have_, data.data(), n);
        header_have_ += n;
        buffered_ += n;
        data.remove_prefix(n);
        if (header_have_ < kHeaderSize) return absl::OkStatus();
        if (absl::Status s = StartFragment(); !s.ok()) {
          error_ = s;
          return s;
        }
      }
      const size_t n = std::min(fragment_left_, data.size());
      record_.append(data.data(), n);
      fragment_left_ -= n;
      buffered_ += n;
      data.remove_prefix(n);
      if (fragment_left_ > 0) return absl::OkStatus();  // `data` is used up
      // The fragment is complete.
      header_have_ = 0;
      if (last_fragment_) {
        if (record_.empty()) {
          error_ = absl::DataLossError(
              "ONC RPC record marking: empty record (a last fragment of 0 bytes with no data "
              "before it)");
          return error_;
        }
        records->push_back(std::move(record_));
        record_ = std::string();
        buffered_ = 0;
      }
    }
  }

  size_t buffered_bytes() const override { return buffered_; }

 private:
  // Parses the complete header in header_ and prepares for its bytes.
  absl::Status StartFragment() {
    const uint32_t header = xdr_internal::LoadBigEndian32(header_);
    last_fragment_ = (header & kLastFragmentBit) != 0;
    fragment_left_ = header & kFragmentLengthMask;
    if (fragment_left_ > max_record_size_ - record_.size()) {
      return absl::DataLossError(absl::StrCat(
          "ONC RPC record marking: record of at least ", record_.size() + fragment_left_,
          " bytes (a fragment of ", fragment_left_, " bytes after ", record_.size(),
          ") exceeds the maximum record size of ", max_record_size_, " bytes"));
    }
    const size_t wanted = record_.size() + std::min(fragment_left_, kReserveAhead);
    ReserveGeometric(&record_, wanted);
    return absl::OkStatus();
  }

  const size_t max_record_size_;
  char header_[kHeaderSize] = {};
  size_t header_have_ = 0;     // bytes of the current fragment header seen
  bool last_fragment_ = false;  // of the fragment being read
  size_t fragment_left_ = 0;   // bytes of the current fragment still to come
  std::string record_;         // the record assembled so far
  size_t buffered_ = 0;        // stream bytes since the last complete record
  absl::Status error_;         // sticky
};

class RecordMarkingFraming final : public Framing {
 public:
  explicit RecordMarkingFraming(const RecordMarkingOptions& options)
      : max_record_size_(options.max_record_size),
        max_fragment_size_(std::clamp<size_t>(options.max_fragment_size, 1, kFragmentLengthMask)) {}

  void Append(std::string_view record, std::string* out) const override {
    const size_t fragments =
        std::max<size_t>(1, (record.size() + max_fragment_size_ - 1) / max_fragment_size_);
    ReserveGeometric(out, out->size() + record.size() + fragments * kHeaderSize);
    do {
      const size_t n = std::min(record.size(), max_fragment_size_);
      const bool last = n == record.size();
      char header[kHeaderSize];
      xdr_internal::StoreBigEndian32(static_cast<uint32_t>(n) | (last ? kLastFragmentBit : 0),
                                     header);
      out->append(header, kHeaderSize);
      out->append(record.data(), n);
      record.remove_prefix(n);
    } while (!record.empty());
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
