#include "ferry/io/internal/positional_io.h"

#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"

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

}  // namespace ferry::io_internal
