// Positional writes that finish: pwrite again after EINTR or a short write,
// for the local files ferry writes (download temporaries, devices written
// in place). Users must not touch anything here.
//
// Thread-safety: thread-safe (pwrite on one descriptor from many threads,
// each at its own offset).
#ifndef FERRY_IO_INTERNAL_POSITIONAL_IO_H_
#define FERRY_IO_INTERNAL_POSITIONAL_IO_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"

namespace ferry::io_internal {

// Writes all of `data` at `offset` of `fd`. An error is the errno status
// naming the offset and `path` (a write that makes no progress is EIO).
absl::Status PwriteAll(int fd, std::span<const char> data, int64_t offset, std::string_view path);

}  // namespace ferry::io_internal

#endif  // FERRY_IO_INTERNAL_POSITIONAL_IO_H_
