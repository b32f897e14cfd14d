#include "ferry/io/internal/positional_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry::io_internal {

absl::Status PwriteAll(int fd, std::span<const char> data, int64_t offset, std::string_view path) {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoStatus(n < 0 ? errno : EIO, absl::StrCat("write at ", offset, " of"), path);
    data = data.subspan(static_cast<size_t>(n));
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status LocalFileWriteFailed(const absl::Status& why, std::string_view what) {
  const absl::StatusCode code =
      why.code() == absl::StatusCode::kUnavailable ? absl::StatusCode::kDataLoss : why.code();
  return absl::Status(code, absl::StrCat(ToAbsl(what), " into a local file: ", why.message()));
}

absl::Status CheckFillDescriptor(int fd, int64_t fd_offset, std::string_view what) {
  const int flags = fd < 0 ? -1 : ::fcntl(fd, F_GETFL);
  if (fd_offset >= 0 && flags >= 0 && (flags & O_APPEND) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      ToAbsl(what), " into descriptor ", fd, " at offset ", fd_offset,
      ": a negative offset, or not an open descriptor, or one in append mode"));
}

absl::StatusOr<size_t> PreadAll(int fd, std::span<char> buf, int64_t offset,
                                std::string_view path) {
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::pread(fd, buf.data() + done, buf.size() - done,
                              static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("read at offset ", offset), path);
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace ferry::io_internal
