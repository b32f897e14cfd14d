// Remote names are untrusted: a server may list an S3 key "t/../../x", an
// iRODS or NFS entry named "..", or a name with a NUL. Every copy of a tree
// maps each remote name to a destination path through SafeRelativePath, so
// no listed name can write outside the destination.
//
//   absl::StatusOr<std::string> rel = ferry::fs::SafeRelativePath(entry.path);
//   if (!rel.ok()) { Warn(rel.status()); continue; }   // skipped, named
//   std::string target = ferry::fs::JoinPath(dst_dir, *rel);
//
// Thread-safety: pure functions.
#ifndef FERRY_FS_SAFE_PATH_H_
#define FERRY_FS_SAFE_PATH_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ferry::fs {

// `name` (a '/'-separated path relative to a listed root) if it stays
// below that root whatever filesystem it is written to; otherwise
// InvalidArgument saying why and quoting the name with unprintable bytes
// escaped. Refused: an empty name, an absolute one ('/' first), a ".." or
// "." component, an empty component ("a//b", which two keys could map to
// alike), a trailing '/', and any NUL byte.
absl::StatusOr<std::string> SafeRelativePath(std::string_view name);

// `text` with bytes below 0x20, 0x7f and '\\' escaped as C escapes, for
// messages that quote a remote name.
std::string EscapeForMessage(std::string_view text);

}  // namespace ferry::fs

#endif  // FERRY_FS_SAFE_PATH_H_
