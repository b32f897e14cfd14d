// Framing's default gather framing: copy the framed record into the
// framing bytes (for framings whose records carry no separate body).
#include "ferry/rpc/framing.h"

namespace ferry {

void Framing::AppendPieces(std::string_view record, std::string* framing_bytes,
                           std::vector<WirePiece>* pieces) const {
  const size_t offset = framing_bytes->size();
  Append(record, framing_bytes);
  pieces->push_back(WirePiece{.offset = offset, .size = framing_bytes->size() - offset});
}

}  // namespace ferry
