// TempFile: the temporary a download lands in. The name starts with '.'
// (hidden from ls and globs, so a half-done file is never mistaken for a
// result) and carries the destination's name (a stale one left by a crash
// says what it was for) and 64 random bits (concurrent downloads to the
// same destination never share a temporary). It lives in the destination's
// directory so the final rename is atomic: readers see the old file or the
// complete new one, never a mix.
#include "ferry/io/internal/temp_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ferry/base/random.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry::io_internal {

std::string TempNameFor(std::string_view name) {
  constexpr std::string_view kTag = ".ferry-";
  const std::string random = absl::StrFormat("%016x", RandomUint64());
  if (name.empty()) return absl::StrCat(ToAbsl(kTag), random);
  return absl::StrCat(".", ToAbsl(name), ToAbsl(kTag), random);
}

absl::StatusOr<TempFile> TempFile::CreateBeside(const std::string& destination, uint32_t mode) {
  const size_t slash = destination.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : destination.substr(0, slash + 1);
  const std::string base =
      slash == std::string::npos ? destination : destination.substr(slash + 1);
  if (base.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("temporary file for ", destination, ": the path names a directory"));
  }
  std::string path;
  for (int attempt = 0; attempt < kTempCreateAttempts; ++attempt) {
    path = dir + TempNameFor(base);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                          static_cast<mode_t>(mode));
    if (fd >= 0) return TempFile(std::move(path), fd);
    if (errno != EEXIST) break;
  }
  return ErrnoStatus(errno, "create temporary file", path);
}

TempFile::TempFile(TempFile&& other) noexcept
    : path_(std::exchange(other.path_, std::string())), fd_(std::exchange(other.fd_, -1)) {}

TempFile& TempFile::operator=(TempFile&& other) noexcept {
  if (this != &other) {
    Discard();
    path_ = std::exchange(other.path_, std::string());
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

TempFile::~TempFile() { Discard(); }

absl::Status TempFile::Resize(int64_t size) {
  if (::ftruncate(fd_, size) != 0) {
    return ErrnoStatus(errno, absl::StrCat("ftruncate to ", size, " bytes"), path_);
  }
  return absl::OkStatus();
}

absl::Status TempFile::WriteAt(std::span<const char> data, int64_t offset) const {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd_, data.data(), data.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("write at ", offset, " of"), path_);
    data = data.subspan(static_cast<size_t>(n));
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status TempFile::Commit(const std::string& destination) {
  // close() reports delayed write errors (ENOSPC, EIO on network
  // filesystems): a file that failed them must not replace the destination.
  if (::close(std::exchange(fd_, -1)) != 0) {
    absl::Status s = ErrnoStatus(errno, "close", path_);
    Discard();
    return s;
  }
  if (::rename(path_.c_str(), destination.c_str()) != 0) {
    absl::Status s = ErrnoStatus(errno, absl::StrCat("rename ", path_, " to"), destination);
    Discard();
    return s;
  }
  path_.clear();
  return absl::OkStatus();
}

void TempFile::Discard() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

}  // namespace ferry::io_internal
