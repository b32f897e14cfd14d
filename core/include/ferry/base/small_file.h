// ReadSmallFile: the whole of a configuration or credentials file, with a
// bound. Such paths come from users and environment variables; one that
// names /dev/zero, a FIFO or a huge log must fail at once with a clear
// error, not hang or take all memory (as a bare getline loop would).
#ifndef FERRY_BASE_SMALL_FILE_H_
#define FERRY_BASE_SMALL_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace ferry {

// Settings and secrets files are a few KiB; 1 MiB is far above any real one.
inline constexpr size_t kMaxSmallFileBytes = size_t{1} << 20;

// The file's bytes. NotFound if it does not exist, PermissionDenied if it
// cannot be read, FailedPrecondition if it is neither a regular file nor a
// character device (/dev/null reads as empty) or holds more than
// `max_bytes` (/dev/zero stops there); every message names the path.
// Thread-safe.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          size_t max_bytes = kMaxSmallFileBytes);

}  // namespace ferry

#endif  // FERRY_BASE_SMALL_FILE_H_
