#include "rpc/splice_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <span>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/io/internal/positional_io.h"

namespace ferry::internal {

SplicePipe::Outcome::Socket SplicePipe::Outcome::socket() const {
  switch (socket_error) {
    case 0:
      return Socket::kEnded;
    case EAGAIN:
    case EINTR:
      return Socket::kNotReady;
    case EINVAL:
    case ENOSYS:
      return Socket::kRefusesSplice;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return Socket::kNoPipe;
    default:
      return Socket::kFailed;
  }
}
namespace {

// Larger pipes are refused to users (fs.pipe-max-size); 1 MiB holds one
// NFS READ's data.
constexpr int kPipeBytes = 1 << 20;

absl::Status FileWriteError(int err, const FileRange& to, int64_t at) {
  return ErrnoStatus(err, absl::StrCat("write at ", at, " of"), absl::StrCat("descriptor ", to.fd));
}

}  // namespace

int SplicePipe::Open() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return errno;
  read_end_ = fds[0];
  write_end_ = fds[1];
  // Best effort: a pipe of the default 64 KiB works, in more calls.
  (void)::fcntl(write_end_, F_SETPIPE_SZ, kPipeBytes);
  const int size = ::fcntl(write_end_, F_GETPIPE_SZ);
  capacity_ = size > 0 ? static_cast<size_t>(size) : 4096;
  return 0;
}

void SplicePipe::Close() {
  if (read_end_ >= 0) ::close(read_end_);
  if (write_end_ >= 0) ::close(write_end_);
  read_end_ = write_end_ = -1;
}

SplicePipe::Outcome SplicePipe::Move(int socket_fd, const FileRange& to, absl::Span<char> scratch) {
  if (read_end_ < 0) {
    if (const int err = Open(); err != 0) return {.socket_error = err};
  }
  ssize_t got;
  do {
    got = ::splice(socket_fd, nullptr, write_end_, nullptr, std::min(to.size, capacity_),
                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return {.socket_error = errno};
  if (got == 0) return {};
  Outcome out{.moved = static_cast<size_t>(got)};
  OptionalLock lock(to.write_lock);
  loff_t at = to.offset;
  size_t left = out.moved;
  while (left > 0) {
    const ssize_t put = ::splice(read_end_, nullptr, to.fd, &at, left, SPLICE_F_MOVE);
    if (put > 0) {
      left -= static_cast<size_t>(put);
      continue;
    }
    if (put < 0 && errno == EINTR) continue;
    // EINVAL: the file's filesystem takes no spliced bytes (or the file is
    // in append mode): written from memory instead, this time and after.
    if (put < 0 && errno == EINVAL) {
      out.file_refused_splice = true;
      out.file_status = WriteOut(to.fd, at, left, scratch);
    } else {
      out.file_status = FileWriteError(put < 0 ? errno : EIO, to, at);
      Close();  // drops the bytes left in it
    }
    break;
  }
  return out;
}

absl::Status SplicePipe::WriteOut(int fd, int64_t offset, size_t left, absl::Span<char> scratch) {
  while (left > 0) {
    const ssize_t n = ::read(read_end_, scratch.data(), std::min(left, scratch.size()));
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      if (err == EINTR) continue;
      Close();
      return ErrnoStatus(err, "read back spliced bytes from", "the connection's pipe");
    }
    absl::Status s = io_internal::PwriteAll(fd, std::span<const char>(scratch.data(), n), offset,
                                            absl::StrCat("descriptor ", fd));
    if (!s.ok()) {
      Close();
      return s;
    }
    offset += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace ferry::internal
