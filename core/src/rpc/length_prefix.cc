// Length-prefix framing: a 4-byte big-endian record length, then the record.
//
// The reader has the same shape as the record-marking one (see
// record_marking.cc): it collects the 4-byte prefix across Consume calls,
// checks the length against the maximum before buffering anything, then
// copies the body once into the record it moves out. Records may be empty
// (an empty protobuf message is valid). Errors are sticky.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/xdr.h"

namespace ferry {

namespace {

constexpr size_t kPrefixSize = 4;
// How far beyond the bytes received a record's buffer is reserved (see
// record_marking.cc).
constexpr size_t kReserveAhead = size_t{1} << 20;

// Makes room for `size` bytes in `*s`, at least doubling its capacity when it
// grows, so appending many records to one buffer stays linear whatever the
// standard library's reserve() does.
void ReserveGeometric(std::string* s, size_t size) {
  if (size > s->capacity()) s->reserve(std::max(size, 2 * s->capacity()));
}

class LengthPrefixReader final : public RecordReader {
 public:
  explicit LengthPrefixReader(size_t max_record_size) : max_record_size_(max_record_size) {}

  absl::Status Consume(std::string_view data, std::vector<std::string>* records) override {
    if (!error_.ok()) return error_;
    while (true) {
      if (prefix_have_ < kPrefixSize) {
        if (data.empty()) return absl::OkStatus();
        const size_t n = std::min(kPrefixSize - prefix_have_, data.size());
        std::memcpy(prefix_ + prefix_have_, data.data(), n);
        prefix_have_ += n;
        data.remove_prefix(n);
        if (prefix_have_ < kPrefixSize) return absl::OkStatus();
        record_left_ = xdr_internal::LoadBigEndian32(prefix_);
        if (record_left_ > max_record_size_) {
          error_ = absl::DataLossError(absl::StrCat("length-prefix framing: record of ",
                                                    record_left_,
                                                    " bytes exceeds the maximum record size of ",
                                                    max_record_size_, " bytes"));
          return error_;
        }
        record_.reserve(std::min(record_left_, kReserveAhead));
      }
      const size_t n = std::min(record_left_, data.size());
      record_.append(data.data(), n);
      record_left_ -= n;
      data.remove_prefix(n);
      if (record_left_ > 0) return absl::OkStatus();  // `data` is used up
      records->push_back(std::move(record_));
      record_ = std::string();
      prefix_have_ = 0;
    }
  }

  size_t buffered_bytes() const override { return prefix_have_ + record_.size(); }

 private:
  const size_t max_record_size_;
  char prefix_[kPrefixSize] = {};
  size_t prefix_have_ = 0;  // bytes of the current prefix seen
  size_t record_left_ = 0;  // bytes of the current record still to come
  std::string record_;      // the record assembled so far
  absl::Status error_;      // sticky
};

class LengthPrefixFraming final : public Framing {
 public:
  explicit LengthPrefixFraming(size_t max_record_size) : max_record_size_(max_record_size) {}

  void Append(std::string_view record, std::string* out) const override {
    ReserveGeometric(out, out->size() + kPrefixSize + record.size());
    char prefix[kPrefixSize];
    xdr_internal::StoreBigEndian32(static_cast<uint32_t>(record.size()), prefix);
    out->append(prefix, kPrefixSize);
    out->append(record);
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
