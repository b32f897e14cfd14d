// The nfs:// URL arguments that ferry.nfs.walk and ferry.nfs.NfsClient
// share: an optional AUTH_SYS uid and gid from Python that override the
// URL's own.
//
//   std::optional<uint32_t> uid = IdFromPython(py_uid, "uid", "nfs.walk");  // GIL held
//   absl::StatusOr<nfs::NfsUrl> url = ParseNfsUrlWithIds(text, uid, gid);
//
// Thread-safety: pure functions.
#ifndef FERRY_BINDINGS_PYTHON_NFS_URL_ARGS_H_
#define FERRY_BINDINGS_PYTHON_NFS_URL_ARGS_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/nfs/nfs_url.h"

namespace ferry::python {

// An AUTH_SYS uid or gid: 32 bits; else raises ValueError ("<api>: <what>
// must be in [0, 2^32), got N"). REQUIRES: GIL held.
std::optional<uint32_t> IdFromPython(std::optional<int64_t> id, const char* what,
                                     std::string_view api);

// ParseNfsUrl(text), with `uid` and `gid`, when given, in place of the URL's.
absl::StatusOr<nfs::NfsUrl> ParseNfsUrlWithIds(std::string_view text, std::optional<uint32_t> uid,
                                               std::optional<uint32_t> gid);

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_NFS_URL_ARGS_H_
