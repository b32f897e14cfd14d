// Positional reads and writes that finish: pread/pwrite again after EINTR
// or a short transfer, for the local files ferry reads and writes (download
// temporaries, devices written in place). Users must not touch anything here.
//
// Thread-safety: thread-safe (pwrite on one descriptor from many threads,
// each at its own offset).
#ifndef FERRY_IO_INTERNAL_POSITIONAL_IO_H_
#define FERRY_IO_INTERNAL_POSITIONAL_IO_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ferry::io_internal {

// Writes all of `data` at `offset` of `fd`. An error is the errno status
// naming the offset and `path` (a write that makes no progress is EIO).
absl::Status PwriteAll(int fd, std::span<const char> data, int64_t offset, std::string_view path);

// A failed write of a local file that received a remote reply's bytes, as
// the caller of the remote call sees it: "`what` into a local file:
// <why>", never Unavailable (DataLoss instead), since that code would have
// the remote call sent again for a failure that is the file's.
absl::Status LocalFileWriteFailed(const absl::Status& why, std::string_view what);

// Whether a remote read of `what` may be written into `fd` at `fd_offset`
// by offset: InvalidArgument (naming them) for a negative offset, a
// descriptor that is not open, or one in append mode (which would put
// every byte at the end: splice refuses such a file, and pwrite ignores
// the offset given for it).
absl::Status CheckFillDescriptor(int fd, int64_t fd_offset, std::string_view what);

// Reads `buf.size()` bytes at `offset` of `fd`, fewer only at the end of
// the file; returns how many. An error is the errno status naming the
// offset and `path`.
absl::StatusOr<size_t> PreadAll(int fd, std::span<char> buf, int64_t offset,
                                std::string_view path);

}  // namespace ferry::io_internal

#endif  // FERRY_IO_INTERNAL_POSITIONAL_IO_H_
