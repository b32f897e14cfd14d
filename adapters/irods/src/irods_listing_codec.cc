#include "irods_listing_codec.h"

#include <cstdint>

namespace ferry::irods {
namespace {

// records.proto field numbers and FileType values.
constexpr uint32_t kEntries = 1;
constexpr uint32_t kName = 1, kType = 2, kSize = 3, kId = 4, kModifyTime = 5;
constexpr uint64_t kFileTypeRegular = 1, kFileTypeDirectory = 2;
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, uint32_t field, uint32_t wire_type) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | wire_type);
}

// proto3: fields at their default are left out.
void PutInt(std::string* out, uint32_t field, uint64_t v) {
  if (v == 0) return;
  PutTag(out, field, kVarint);
  PutVarint(out, v);
}

void PutBytes(std::string* out, uint32_t field, std::string_view b) {
  PutTag(out, field, kLengthDelimited);
  PutVarint(out, b.size());
  out->append(b);
}

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool done() const { return pos_ == b_.size(); }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ == b_.size()) return false;
      const uint8_t c = static_cast<uint8_t>(b_[pos_++]);
      *v |= static_cast<uint64_t>(c & 0x7F) << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  }
  bool Bytes(std::string_view* out) {
    uint64_t n;
    if (!Varint(&n) || n > b_.size() - pos_) return false;
    *out = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Skip(uint32_t wire_type) {
    uint64_t v;
    std::string_view s;
    switch (wire_type) {
      case kVarint: return Varint(&v);
      case kLengthDelimited: return Bytes(&s);
      case kFixed64: return Advance(8);
      case kFixed32: return Advance(4);
      default: return false;
    }
  }

 private:
  bool Advance(size_t n) {
    if (n > b_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::string_view b_;
  size_t pos_ = 0;
};

absl::Status Malformed() { return absl::DataLossError("shared cache tier: malformed iRODS listing"); }

absl::StatusOr<IrodsEntry> DecodeEntry(std::string_view bytes) {
  IrodsEntry e;
  Reader r(bytes);
  while (!r.done()) {
    uint64_t tag, v = 0;
    std::string_view s;
    if (!r.Varint(&tag)) return Malformed();
    const uint32_t field = static_cast<uint32_t>(tag >> 3), wt = static_cast<uint32_t>(tag & 7);
    if (field == kName && wt == kLengthDelimited) {
      if (!r.Bytes(&s)) return Malformed();
      e.name.assign(s);
    } else if (field >= kType && field <= kModifyTime && wt == kVarint) {
      if (!r.Varint(&v)) return Malformed();
      if (field == kType) {
        e.type = v == kFileTypeRegular     ? IrodsObjectType::kDataObject
                 : v == kFileTypeDirectory ? IrodsObjectType::kCollection
                                           : IrodsObjectType::kNone;
      } else {
        (field == kSize ? e.size : field == kId ? e.id : e.modify_time) = static_cast<int64_t>(v);
      }
    } else if (!r.Skip(wt)) {
      return Malformed();
    }
  }
  return e;
}

}  // namespace

std::string EncodeIrodsListing(const std::vector<IrodsEntry>& listing) {
  std::string out, entry;
  out.reserve(listing.size() * 24);
  for (const IrodsEntry& e : listing) {
    entry.clear();
    if (!e.name.empty()) PutBytes(&entry, kName, e.name);
    PutInt(&entry, kType,
           e.type == IrodsObjectType::kDataObject   ? kFileTypeRegular
           : e.type == IrodsObjectType::kCollection ? kFileTypeDirectory
                                                    : 0);
    PutInt(&entry, kSize, static_cast<uint64_t>(e.size));
    PutInt(&entry, kId, static_cast<uint64_t>(e.id));
    PutInt(&entry, kModifyTime, static_cast<uint64_t>(e.modify_time));
    PutBytes(&out, kEntries, entry);
  }
  return out;
}

absl::StatusOr<std::vector<IrodsEntry>> DecodeIrodsListing(std::string_view bytes) {
  std::vector<IrodsEntry> out;
  Reader r(bytes);
  while (!r.done()) {
    uint64_t tag;
    std::string_view s;
    if (!r.Varint(&tag)) return Malformed();
    const uint32_t field = static_cast<uint32_t>(tag >> 3), wt = static_cast<uint32_t>(tag & 7);
    if (field == kEntries && wt == kLengthDelimited) {
      if (!r.Bytes(&s)) return Malformed();
      absl::StatusOr<IrodsEntry> e = DecodeEntry(s);
      if (!e.ok()) return e.status();
      out.push_back(*std::move(e));
    } else if (!r.Skip(wt)) {
      return Malformed();
    }
  }
  return out;
}

}  // namespace ferry::irods
