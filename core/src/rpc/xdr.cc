// XDR encoder and decoder, the out-of-line parts.
//
// The fixed-size reads and writes are inline in xdr.h: they are the hot path
// of every RPC and reduce to a bounds check and a byte swap. What lives here
// is the variable-length data (opaque/string with its padding arithmetic)
// and every error constructor, so the message formatting (the only thing
// that allocates) stays off the success path. All bounds arithmetic is done
// against remaining() rather than by adding to pos_, so a declared length
// near 2^32 cannot wrap around a size_t on any platform.
#include "ferry/rpc/xdr.h"

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"

namespace ferry {

using xdr_internal::kUnit;
using xdr_internal::PaddingFor;

namespace {

constexpr char kZeros[kUnit] = {0, 0, 0, 0};

}  // namespace

void XdrEncoder::WriteFixedOpaque(std::string_view data) {
  out_->append(data);
  out_->append(kZeros, PaddingFor(data.size()));
}

void XdrEncoder::WriteOpaque(std::string_view data) {
  WriteUint32(static_cast<uint32_t>(data.size()));
  WriteFixedOpaque(data);
}

absl::StatusOr<bool> XdrDecoder::ReadBool(std::string_view what) {
  absl::StatusOr<uint32_t> v = ReadUint32(what);
  if (ABSL_PREDICT_FALSE(!v.ok())) return v.status();
  if (ABSL_PREDICT_FALSE(*v > 1)) {
    pos_ -= kUnit;  // report the offset of the bad value, and leave it unread
    return Error(what, absl::StrCat("is not a bool: ", *v, " (only 0 and 1 are)"));
  }
  return *v == 1;
}

absl::StatusOr<std::string_view> XdrDecoder::ReadFixedOpaque(size_t size, std::string_view what) {
  const size_t padding = PaddingFor(size);
  if (ABSL_PREDICT_FALSE(size > remaining() || padding > remaining() - size)) {
    return Truncated(what, size + padding);
  }
  std::string_view v = data_.substr(pos_, size);
  pos_ += size + padding;
  return v;
}

absl::StatusOr<uint32_t> XdrDecoder::ReadBoundedUint32(std::string_view what,
                                                       const char* noun, uint32_t max) {
  const size_t start = pos_;
  absl::StatusOr<uint32_t> n = ReadUint32(what);
  if (ABSL_PREDICT_FALSE(!n.ok())) return n.status();
  if (ABSL_PREDICT_FALSE(*n > max)) {
    pos_ = start;
    return Error(what, absl::StrCat(noun, " ", *n, " exceeds its maximum of ", max));
  }
  return n;
}

absl::StatusOr<std::string_view> XdrDecoder::ReadOpaque(std::string_view what, uint32_t max_size) {
  const size_t start = pos_;
  absl::StatusOr<uint32_t> size = ReadBoundedUint32(what, "length", max_size);
  if (ABSL_PREDICT_FALSE(!size.ok())) return size.status();
  absl::StatusOr<std::string_view> v = ReadFixedOpaque(*size, what);
  if (ABSL_PREDICT_FALSE(!v.ok())) pos_ = start;
  return v;
}

absl::Status XdrDecoder::ReadOpaque(std::string_view what, uint32_t max_size, std::string* out) {
  absl::StatusOr<std::string_view> v = ReadOpaque(what, max_size);
  if (ABSL_PREDICT_FALSE(!v.ok())) return v.status();
  out->assign(v->data(), v->size());
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> XdrDecoder::ReadArrayCount(std::string_view what, uint32_t max_count,
                                                    size_t min_element_size) {
  const size_t start = pos_;
  absl::StatusOr<uint32_t> count = ReadBoundedUint32(what, "count", max_count);
  if (ABSL_PREDICT_FALSE(!count.ok())) return count.status();
  if (min_element_size > 0 && ABSL_PREDICT_FALSE(*count > remaining() / min_element_size)) {
    const size_t left = remaining();
    pos_ = start;
    return Error(what, absl::StrCat("count ", *count, " needs at least ",
                                    uint64_t{*count} * min_element_size, " bytes but only ", left,
                                    " are left"));
  }
  return count;
}

absl::Status XdrDecoder::Skip(size_t size, std::string_view what) {
  return ReadFixedOpaque(size, what).status();
}

absl::Status XdrDecoder::SkipPaddingOf(size_t size, std::string_view what) {
  const size_t padding = PaddingFor(size);
  if (ABSL_PREDICT_FALSE(padding > remaining())) return Truncated(what, padding);
  pos_ += padding;
  return absl::OkStatus();
}

absl::Status XdrDecoder::ExpectEnd() const {
  if (ABSL_PREDICT_TRUE(done())) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("XDR decode of ", ToAbsl(context_), ": ", remaining(),
                                          " unexpected trailing bytes at offset ", pos_));
}

absl::Status XdrDecoder::BadDiscriminant(std::string_view what, int64_t value) const {
  return ErrorAt(pos_ >= kUnit ? pos_ - kUnit : 0, what,
                 absl::StrCat("has unknown discriminant ", value));
}

absl::Status XdrDecoder::ErrorAt(size_t offset, std::string_view what,
                                 std::string_view problem) const {
  return absl::DataLossError(absl::StrCat("XDR decode of ", ToAbsl(context_), ": ", ToAbsl(what),
                                          " ", ToAbsl(problem), " at offset ", offset));
}

absl::Status XdrDecoder::Truncated(std::string_view what, size_t needed) const {
  return absl::DataLossError(absl::StrCat("XDR decode of ", ToAbsl(context_),
                                          ": truncated reading ", ToAbsl(what), " at offset ", pos_,
                                          " (need ", needed, " bytes, ", remaining(), " left)"));
}

absl::Status XdrDecoder::TooManyItems(std::string_view what, size_t max_items) const {
  return Error(what, absl::StrCat("has more than its maximum of ", max_items, " items"));
}

}  // namespace ferry
