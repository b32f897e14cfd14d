// Framing's default gather framing: copy the framed record into the
// framing bytes (for framings whose records carry no separate body).
#include "ferry/rpc/framing.h"

#include "absl/strings/str_cat.h"
#include "ferry/io/internal/positional_io.h"

namespace ferry {

absl::Status WriteIntoRange(const FileRange& to, size_t at, std::span<const char> data) {
  OptionalLock lock(to.write_lock);
  return io_internal::PwriteAll(to.fd, data, to.offset + static_cast<int64_t>(at),
                                absl::StrCat("descriptor ", to.fd));
}

void Framing::AppendPieces(absl::Span<const std::string_view> parts, std::string* framing_bytes,
                           std::vector<WirePiece>* pieces) const {
  const size_t offset = framing_bytes->size();
  if (parts.size() == 1) {
    Append(parts[0], framing_bytes);
  } else {
    std::string record;
    for (std::string_view part : parts) record.append(part);
    Append(record, framing_bytes);
  }
  pieces->push_back(WirePiece{.offset = offset, .size = framing_bytes->size() - offset});
}

bool Framing::PrefixFor(size_t /*record_size*/, std::string* /*prefix*/) const { return false; }

}  // namespace ferry
