// The ObjectStore defaults: operations a store may implement better, built
// from the ones every store has.
#include "ferry/transfer/object_store.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ferry {

void ObjectStore::GetRangeInto(std::string_view key, int64_t offset, std::span<char> dst,
                               std::string_view if_match, Callback<size_t> done) {
  GetRange(key, offset, static_cast<int64_t>(dst.size()), if_match,
           [dst, offset, done = std::move(done)](absl::StatusOr<std::string> r) mutable {
             if (!r.ok()) return done(std::move(r).status());
             if (r->size() > dst.size()) {
               return done(absl::DataLossError(absl::StrCat(
                   "GetRange of ", dst.size(), " bytes at offset ", offset, " returned ",
                   r->size())));
             }
             std::memcpy(dst.data(), r->data(), r->size());
             done(r->size());
           });
}

}  // namespace ferry
