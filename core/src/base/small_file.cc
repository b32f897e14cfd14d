#include "ferry/base/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"

namespace ferry {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not wait for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, "open", path);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "stat", path);
  // A character device is allowed: /dev/null is the usual "no such file"
  // (AWS_SHARED_CREDENTIALS_FILE=/dev/null), and the bound below stops one
  // that never ends (/dev/zero). A FIFO or socket could block or never end.
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  }
  std::string bytes;
  char buf[16 << 10];
  // One byte past the bound tells "too large" from "exactly max_bytes", and a
  // file that grows while read still stops there.
  while (bytes.size() <= max_bytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // a device with nothing to read yet (O_NONBLOCK)
        return absl::FailedPreconditionError(absl::StrCat(path, ": nothing to read (a device?)"));
      }
      return ErrnoStatus(errno, "read", path);
    }
    if (n == 0) return bytes;
    bytes.append(buf, static_cast<size_t>(n));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": larger than ", max_bytes, " bytes; not a settings file"));
}

}  // namespace ferry
