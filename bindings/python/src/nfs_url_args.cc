#include "nfs_url_args.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "status_exceptions.h"

namespace ferry::python {

std::optional<uint32_t> IdFromPython(std::optional<int64_t> id, const char* what,
                                     std::string_view api) {
  if (!id.has_value()) return std::nullopt;
  if (*id < 0 || *id > int64_t{UINT32_MAX}) {
    ThrowStatus(absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(api), ": ", what, " must be in [0, 2^32), got ", *id)));
  }
  return static_cast<uint32_t>(*id);
}

absl::StatusOr<nfs::NfsUrl> ParseNfsUrlWithIds(std::string_view text, std::optional<uint32_t> uid,
                                               std::optional<uint32_t> gid) {
  absl::StatusOr<nfs::NfsUrl> url = nfs::ParseNfsUrl(text);
  if (!url.ok()) return url;
  if (uid.has_value()) url->uid = uid;
  if (gid.has_value()) url->gid = gid;
  return url;
}

}  // namespace ferry::python
