// XDR (RFC 4506): the External Data Representation used by ONC RPC, NFS,
// MOUNT and the portmapper.
//
// XdrEncoder appends big-endian, 4-byte-aligned items to a caller-owned
// std::string (reuse one buffer across calls: encoding allocates nothing
// once the buffer has grown). XdrDecoder reads items from a
// std::string_view without copying: variable-length opaque data and strings
// come back as views into the input unless a copy is asked for. Every read
// is bounds-checked; truncated or malformed input is a DataLoss status
// naming the decoder's context, the field and the byte offset, e.g.
//
//   XDR decode of ONC RPC reply: truncated reading verf body at offset 16
//   (need 8 bytes, 3 left)
//
// Worked example, a struct { unsigned hyper id; string name<255>;
// int list<> } round trip:
//
//   std::string buf;
//   ferry::XdrEncoder enc(&buf);
//   enc.WriteUint64(id);
//   enc.WriteString(name);
//   enc.WriteArray(list, [](ferry::XdrEncoder& e, int32_t v) { e.WriteInt32(v); });
//
//   ferry::XdrDecoder dec(buf, "entry");
//   FERRY_ASSIGN_OR_RETURN(uint64_t id, dec.ReadUint64("id"));
//   FERRY_ASSIGN_OR_RETURN(std::string_view name, dec.ReadString("name", 255));
//   std::vector<int32_t> list;
//   FERRY_RETURN_IF_ERROR(dec.ReadArray("list", 1024, &list,
//       [](ferry::XdrDecoder& d, int32_t* v) -> absl::Status {
//         FERRY_ASSIGN_OR_RETURN(*v, d.ReadInt32("list[]"));
//         return absl::OkStatus();
//       }));
//   FERRY_RETURN_IF_ERROR(dec.ExpectEnd());
//
// Padding: the encoder always writes zero padding bytes, as RFC 4506
// requires. The decoder checks that padding is present (missing padding at
// the end of the buffer is truncation) but does not insist that it is zero:
// that is what the common implementations (glibc, the Linux kernel, libtirpc)
// do, and rejecting it would only break interoperability with sloppy peers.
//
// XDR enums and discriminants are signed 32-bit integers on the wire; the
// decoder returns them as read, and checking that a value is one the caller
// knows is the caller's job (XdrDecoder::BadDiscriminant builds the error).
#ifndef FERRY_RPC_XDR_H_
#define FERRY_RPC_XDR_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ferry {

namespace xdr_internal {

// Unit of XDR alignment: every item occupies a multiple of 4 bytes.
inline constexpr size_t kUnit = 4;

// Bytes of zero padding that follow `n` bytes of opaque data.
constexpr size_t PaddingFor(size_t n) { return (kUnit - (n % kUnit)) % kUnit; }

inline uint32_t LoadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

inline void StoreBigEndian32(uint32_t v, char* p) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

}  // namespace xdr_internal

// Largest length a variable-length XDR item can declare (its length is an
// unsigned int). Used as the "no limit" value of max_size / max_count.
inline constexpr uint32_t kXdrNoLimit = std::numeric_limits<uint32_t>::max();

// XdrEncoder
//
// Appends XDR items to a std::string it does not own. Encoding cannot fail:
// the only input the encoder could reject is an opaque or array longer than
// 2^32-1, which the REQUIRES lines exclude; protocol-specific limits (a
// machinename<255>) are the caller's to check before encoding.
//
// Thread-safety: an encoder is used by one thread at a time.
class XdrEncoder {
 public:
  // Appends to `*out` (existing contents are kept). REQUIRES: `out` outlives
  // the encoder.
  explicit XdrEncoder(std::string* out) : out_(out) {}

  void WriteUint32(uint32_t v) {
    char b[xdr_internal::kUnit];
    xdr_internal::StoreBigEndian32(v, b);
    out_->append(b, sizeof b);
  }
  void WriteInt32(int32_t v) { WriteUint32(static_cast<uint32_t>(v)); }
  // "unsigned hyper" / "hyper": 8 bytes, most significant word first.
  void WriteUint64(uint64_t v) {
    char b[2 * xdr_internal::kUnit];
    xdr_internal::StoreBigEndian32(static_cast<uint32_t>(v >> 32), b);
    xdr_internal::StoreBigEndian32(static_cast<uint32_t>(v), b + xdr_internal::kUnit);
    out_->append(b, sizeof b);
  }
  void WriteInt64(int64_t v) { WriteUint64(static_cast<uint64_t>(v)); }
  // TRUE = 1, FALSE = 0.
  void WriteBool(bool v) { WriteUint32(v ? 1 : 0); }
  // Any enum (or integer) type, as a 32-bit signed int.
  template <typename E>
  void WriteEnum(E v) {
    WriteInt32(static_cast<int32_t>(v));
  }
  // A union's discriminant (an int, unsigned int or enum).
  template <typename E>
  void WriteDiscriminant(E v) {
    WriteInt32(static_cast<int32_t>(v));
  }

  // Fixed-length opaque: the bytes and zero padding to a multiple of 4, no
  // length (the reader knows it).
  void WriteFixedOpaque(std::string_view data);
  // Variable-length opaque: length, bytes, zero padding.
  // REQUIRES: data.size() <= kXdrNoLimit.
  void WriteOpaque(std::string_view data);
  // A string is encoded exactly as variable-length opaque.
  void WriteString(std::string_view s) { WriteOpaque(s); }

  // Variable-length array: the element count, then each element written by
  // `write_one(XdrEncoder&, const Element&)`.
  template <typename Range, typename WriteOne>
  void WriteArray(const Range& items, WriteOne&& write_one) {
    WriteUint32(static_cast<uint32_t>(std::size(items)));
    WriteFixedArray(items, write_one);
  }
  // Fixed-length array: each element, no count.
  template <typename Range, typename WriteOne>
  void WriteFixedArray(const Range& items, WriteOne&& write_one) {
    for (const auto& item : items) write_one(*this, item);
  }

  // Optional data ("type *name"): FALSE, or TRUE and the value.
  template <typename T, typename WriteValue>
  void WriteOptional(const T* value, WriteValue&& write_value) {
    WriteBool(value != nullptr);
    if (value != nullptr) write_value(*this, *value);
  }
  // An optional-data linked list ("struct list { T item; list *next; }",
  // e.g. portmapper DUMP, NFS READDIR): TRUE + item for each element, then
  // FALSE.
  template <typename Range, typename WriteOne>
  void WriteOptionalList(const Range& items, WriteOne&& write_one) {
    for (const auto& item : items) {
      WriteBool(true);
      write_one(*this, item);
    }
    WriteBool(false);
  }

  // Bytes already in the output buffer (including what was there before
  // this encoder was made). Use with ReserveUint32/PatchUint32.
  size_t size() const { return out_->size(); }
  // Writes a placeholder unsigned int and returns its position, so a length
  // or count known only later can be patched in.
  size_t ReserveUint32() {
    const size_t pos = out_->size();
    WriteUint32(0);
    return pos;
  }
  // REQUIRES: `pos` came from ReserveUint32 on this buffer.
  void PatchUint32(size_t pos, uint32_t v) { xdr_internal::StoreBigEndian32(v, out_->data() + pos); }
  // Appends bytes that are already XDR (e.g. pre-encoded arguments).
  // REQUIRES: data.size() is a multiple of 4 if more items follow.
  void WriteRaw(std::string_view data) { out_->append(data); }

  std::string* buffer() const { return out_; }

 private:
  std::string* const out_;
};

// XdrDecoder
//
// Reads XDR items from a view of the input, front to back. A scalar or
// opaque read (ReadUint32 ... ReadString, ReadArrayCount, Skip) either
// returns the item and advances, or returns DataLoss and leaves the position
// unchanged. A compound read (ReadArray, ReadOptional, ReadOptionalList) may
// have consumed part of its input when it fails; the message is bad either
// way. Views returned (ReadOpaque, ReadString,
// ReadFixedOpaque, rest()) point into the input: REQUIRES the input
// outlives them.
//
// `what` arguments name the field being read ("verf body", "entry3.name")
// and appear only in error messages, so passing a string literal costs
// nothing on the success path.
//
// Thread-safety: a decoder is used by one thread at a time.
class XdrDecoder {
 public:
  // `context` names the whole message ("ONC RPC reply", "READDIRPLUS3res")
  // in error messages. REQUIRES: `data` and `context` outlive the decoder.
  explicit XdrDecoder(std::string_view data, std::string_view context = "XDR data")
      : data_(data), context_(context) {}

  absl::StatusOr<uint32_t> ReadUint32(std::string_view what) {
    if (ABSL_PREDICT_FALSE(remaining() < xdr_internal::kUnit)) {
      return Truncated(what, xdr_internal::kUnit);
    }
    const uint32_t v = xdr_internal::LoadBigEndian32(data_.data() + pos_);
    pos_ += xdr_internal::kUnit;
    return v;
  }
  absl::StatusOr<int32_t> ReadInt32(std::string_view what) {
    absl::StatusOr<uint32_t> v = ReadUint32(what);
    if (ABSL_PREDICT_FALSE(!v.ok())) return v.status();
    return static_cast<int32_t>(*v);
  }
  absl::StatusOr<uint64_t> ReadUint64(std::string_view what) {
    if (ABSL_PREDICT_FALSE(remaining() < 2 * xdr_internal::kUnit)) {
      return Truncated(what, 2 * xdr_internal::kUnit);
    }
    const uint64_t hi = xdr_internal::LoadBigEndian32(data_.data() + pos_);
    const uint64_t lo = xdr_internal::LoadBigEndian32(data_.data() + pos_ + xdr_internal::kUnit);
    pos_ += 2 * xdr_internal::kUnit;
    return (hi << 32) | lo;
  }
  absl::StatusOr<int64_t> ReadInt64(std::string_view what) {
    absl::StatusOr<uint64_t> v = ReadUint64(what);
    if (ABSL_PREDICT_FALSE(!v.ok())) return v.status();
    return static_cast<int64_t>(*v);
  }
  // Only 0 and 1 are booleans; anything else is DataLoss.
  absl::StatusOr<bool> ReadBool(std::string_view what);
  // An enum as its 32-bit value, cast to E (which may be an enum class or
  // an integer type). The value is not checked against E's enumerators.
  template <typename E>
  absl::StatusOr<E> ReadEnum(std::string_view what) {
    absl::StatusOr<uint32_t> v = ReadUint32(what);
    if (ABSL_PREDICT_FALSE(!v.ok())) return v.status();
    // Fixed-underlying-type enums take any value of that type (C++17).
    return static_cast<E>(*v);
  }
  // A union's discriminant, as ReadEnum. Follow with a switch; for values
  // the union does not list, return BadDiscriminant(what, value).
  template <typename E = int32_t>
  absl::StatusOr<E> ReadDiscriminant(std::string_view what) {
    return ReadEnum<E>(what);
  }

  // Fixed-length opaque of `size` bytes (plus padding), as a view.
  absl::StatusOr<std::string_view> ReadFixedOpaque(size_t size, std::string_view what);
  // Variable-length opaque<max_size>, as a view into the input (zero-copy).
  // A declared length over `max_size` or over the bytes left is DataLoss.
  absl::StatusOr<std::string_view> ReadOpaque(std::string_view what,
                                              uint32_t max_size = kXdrNoLimit);
  // As ReadOpaque, copying into `*out` (replacing its contents).
  absl::Status ReadOpaque(std::string_view what, uint32_t max_size, std::string* out);
  // string<max_size>: as ReadOpaque. XDR strings are ASCII by convention;
  // the bytes are returned as they are (no NUL or charset check).
  absl::StatusOr<std::string_view> ReadString(std::string_view what,
                                              uint32_t max_size = kXdrNoLimit) {
    return ReadOpaque(what, max_size);
  }
  absl::Status ReadString(std::string_view what, uint32_t max_size, std::string* out) {
    return ReadOpaque(what, max_size, out);
  }

  // The count of a variable-length array<max_count>. Besides the declared
  // maximum, a count that could not fit in the bytes left (each element is
  // at least `min_element_size` bytes; every XDR item is at least 4) is
  // DataLoss at once, so a hostile count never makes the caller reserve
  // memory for elements that are not there.
  absl::StatusOr<uint32_t> ReadArrayCount(std::string_view what, uint32_t max_count,
                                          size_t min_element_size = xdr_internal::kUnit);

  // A variable-length array<max_count> into `*out` (appended), each element
  // read by `read_one(XdrDecoder&, T*) -> absl::Status`.
  template <typename T, typename ReadOne>
  absl::Status ReadArray(std::string_view what, uint32_t max_count, std::vector<T>* out,
                         ReadOne&& read_one) {
    absl::StatusOr<uint32_t> count = ReadArrayCount(what, max_count);
    if (ABSL_PREDICT_FALSE(!count.ok())) return count.status();
    return ReadFixedArray(*count, out, read_one);
  }
  // A fixed-length array of `count` elements into `*out` (appended).
  template <typename T, typename ReadOne>
  absl::Status ReadFixedArray(size_t count, std::vector<T>* out, ReadOne&& read_one) {
    // Bounded by the bytes left, whatever `count` claims.
    out->reserve(out->size() + std::min(count, remaining() / xdr_internal::kUnit));
    for (size_t i = 0; i < count; ++i) {
      T& item = out->emplace_back();
      absl::Status s = read_one(*this, &item);
      if (ABSL_PREDICT_FALSE(!s.ok())) return s;
    }
    return absl::OkStatus();
  }

  // Optional data ("type *name"): resets `*out`, then if the TRUE/FALSE flag
  // is TRUE reads the value with `read_value(XdrDecoder&, T*)`.
  template <typename T, typename ReadValue>
  absl::Status ReadOptional(std::string_view what, std::optional<T>* out,
                            ReadValue&& read_value) {
    absl::StatusOr<bool> present = ReadBool(what);
    if (ABSL_PREDICT_FALSE(!present.ok())) return present.status();
    out->reset();
    if (!*present) return absl::OkStatus();
    return read_value(*this, &out->emplace());
  }
  // An optional-data linked list (see XdrEncoder::WriteOptionalList),
  // appending each item to `*out`. More than `max_items` items is DataLoss.
  template <typename T, typename ReadOne>
  absl::Status ReadOptionalList(std::string_view what, size_t max_items, std::vector<T>* out,
                                ReadOne&& read_one) {
    for (size_t n = 0;; ++n) {
      absl::StatusOr<bool> more = ReadBool(what);
      if (ABSL_PREDICT_FALSE(!more.ok())) return more.status();
      if (!*more) return absl::OkStatus();
      if (ABSL_PREDICT_FALSE(n == max_items)) return TooManyItems(what, max_items);
      T& item = out->emplace_back();
      absl::Status s = read_one(*this, &item);
      if (ABSL_PREDICT_FALSE(!s.ok())) return s;
    }
  }

  // Skips `size` bytes of opaque data and their padding.
  absl::Status Skip(size_t size, std::string_view what);
  // Skips only the padding that follows `size` bytes of opaque data, for
  // data that was taken out of the input (RpcReplyPlacer).
  absl::Status SkipPaddingOf(size_t size, std::string_view what);

  // OK when every byte has been read; otherwise DataLoss naming the count of
  // trailing bytes.
  absl::Status ExpectEnd() const;

  // DataLoss errors for checks only the caller can make, in the decoder's
  // format: "XDR decode of <context>: <what> <problem> at offset <n>".
  //
  // "<what> has unknown discriminant 7". Call it right after reading the
  // discriminant: the offset named is the discriminant's (offset() - 4).
  absl::Status BadDiscriminant(std::string_view what, int64_t value) const;
  // Any other problem, at the current offset.
  absl::Status Error(std::string_view what, std::string_view problem) const {
    return ErrorAt(pos_, what, problem);
  }
  // Any other problem, at `offset` (e.g. that of a value read earlier).
  absl::Status ErrorAt(size_t offset, std::string_view what, std::string_view problem) const;

  // Bytes read so far.
  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool done() const { return pos_ == data_.size(); }
  // The unread input.
  std::string_view rest() const { return data_.substr(pos_); }
  std::string_view context() const { return context_; }

 private:
  absl::Status Truncated(std::string_view what, size_t needed) const;
  absl::Status TooManyItems(std::string_view what, size_t max_items) const;
  // A length or count (`noun`) of at most `max`; past it, an error and
  // nothing read.
  absl::StatusOr<uint32_t> ReadBoundedUint32(std::string_view what, const char* noun,
                                             uint32_t max);

  std::string_view data_;
  std::string_view context_;
  size_t pos_ = 0;
};

}  // namespace ferry

#endif  // FERRY_RPC_XDR_H_
