// TempFile: the temporary a download lands in. Where the filesystem can,
// it has no name until Commit (O_TMPFILE, see temp_file.h). Otherwise the
// name starts with '.'
// (hidden from ls and globs, so a half-done file is never mistaken for a
// result) and carries the destination's name (a stale one left by a crash
// says what it was for) and 64 bits: first a hash of the name (the
// destination's slot, reclaimed by the next run after a crash), else
// random ones (concurrent downloads to one destination never share a
// temporary; see temp_file.h). It lives in the destination's
// directory so the final rename is atomic: readers see the old file or the
// complete new one, never a mix.
#include "ferry/io/internal/temp_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ferry/base/random.h"
#include "ferry/base/small_file.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/positional_io.h"
#include "ferry/transfer/checksum.h"

namespace ferry::io_internal {

std::string TempNameFor(std::string_view name) {
  constexpr std::string_view kTag = ".ferry-";
  const std::string random = absl::StrFormat("%016x", RandomUint64());
  if (name.empty()) return absl::StrCat(ToAbsl(kTag), random);
  return absl::StrCat(".", ToAbsl(name), ToAbsl(kTag), random);
}

std::string TempSlotFor(std::string_view name) {
  // FNV-1a: stable across runs and builds (absl::Hash is seeded per process).
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return absl::StrCat(".", ToAbsl(name), ".ferry-", absl::StrFormat("%016x", h));
}

namespace {

// The attribute a resumable temporary's record lives in: "1 <tag> <done>".
constexpr char kResumeAttribute[] = "user.ferry.resume";

// This boot of the machine (the kernel's random boot_id), or "" if unknown.
// A record names the boot it was made in: the bytes it counts were written
// to the page cache, not flushed, so they outlive a killed writer but not
// a crash of the machine, after which the record is not trusted.
std::string BootId() {
  absl::StatusOr<std::string> id = ReadSmallFile("/proc/sys/kernel/random/boot_id", 64);
  if (!id.ok()) return "";
  std::string out(absl::StripAsciiWhitespace(*id));
  return out.find(' ') == std::string::npos ? out : "";
}

// Opens the slot `path` if no live writer holds it: returns its descriptor,
// locked (truncated if it was a leftover, unless `truncate` is false), or
// -1 (held by a live writer, or not usable: the caller takes another name).
int ClaimSlot(const std::string& path, uint32_t mode, bool truncate = true) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return -1;
  struct stat opened{}, named{};
  // Locked, and still the file under that name: a writer that renamed it
  // away (committed) between our open and our lock left us a destination.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd, &opened) != 0 ||
      ::lstat(path.c_str(), &named) != 0 || opened.st_ino != named.st_ino ||
      opened.st_dev != named.st_dev || !S_ISREG(opened.st_mode) ||
      (truncate && ::ftruncate(fd, 0) != 0)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A destination's directory (with its trailing '/'; empty for a bare
// name) and its name in it.
struct DirAndBase {
  std::string dir;
  std::string base;
};
DirAndBase SplitDestination(const std::string& destination) {
  const size_t slash = destination.rfind('/');
  if (slash == std::string::npos) return {"", destination};
  return {destination.substr(0, slash + 1), destination.substr(slash + 1)};
}

// The name the open descriptor `fd` has in /proc: the only name an
// unnamed temporary has until it is linked in.
std::string SelfFdPath(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

// Opens an unnamed temporary in `dir` (O_TMPFILE), or returns -1: the
// filesystem cannot (EOPNOTSUPP, EISDIR on old kernels), or Commit could
// not link it in (no /proc/self/fd to name it by), or any other failure,
// which the named path then reports with the temporary's name.
int OpenUnnamed(const std::string& dir, uint32_t mode) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC,
                        static_cast<mode_t>(mode));
  if (fd < 0) return -1;
  if (::access(SelfFdPath(fd).c_str(), F_OK) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What a non-regular, non-directory file is, for messages.
const char* SpecialFileKind(mode_t mode) {
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

// Whether a temporary may be made for `destination` (its name split off):
// InvalidArgument for a directory's path; FailedPrecondition where a
// device, FIFO or socket would be replaced by the rename (/dev/null once
// was).
absl::Status CheckDestination(const std::string& destination, const DirAndBase& where) {
  if (where.base.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("temporary file for ", destination, ": the path names a directory"));
  }
  struct stat st;
  if (::lstat(destination.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode) &&
      !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        destination, " is a ", SpecialFileKind(st.st_mode),
        ", not a regular file: a file is written beside it and renamed over it, which would "
        "replace it; not written"));
  }
  return absl::OkStatus();
}

// The prefix a resumable temporary `fd` records for `tag`: 0 if it has no
// record, another tag's, or one longer than the file.
int64_t RecordedPrefix(int fd, std::string_view tag) {
  char value[160];
  const ssize_t n = ::fgetxattr(fd, kResumeAttribute, value, sizeof(value));
  if (n <= 0) return 0;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(value, static_cast<size_t>(n)), ' ');
  int64_t done = 0;
  struct stat st;
  if (fields.size() != 3 || fields[0] != "1" || fields[1] != ToAbsl(tag) ||
      !absl::SimpleAtoi(fields[2], &done) || done < 0 || ::fstat(fd, &st) != 0 ||
      done > st.st_size) {
    return 0;
  }
  return done;
}

}  // namespace

absl::StatusOr<TempFile> TempFile::CreateResumable(const std::string& destination,
                                                   std::string_view identity, uint32_t mode) {
  const DirAndBase where = SplitDestination(destination);
  FERRY_RETURN_IF_ERROR(CheckDestination(destination, where));
  const std::string path = where.dir + TempSlotFor(where.base);
  const std::string boot = BootId();
  if (boot.empty()) return CreateBeside(destination, mode);
  // The tag is a SHA-256: without libcrypto the copy is not resumable (and
  // without a boot id libcrypto is not loaded for nothing).
  absl::StatusOr<ContentHasher> hasher = ContentHasher::Create(HashKind::kSha256);
  const int fd = hasher.ok() ? ClaimSlot(path, mode, /*truncate=*/false) : -1;
  if (fd < 0) return CreateBeside(destination, mode);
  hasher->Update(std::span<const char>(identity.data(), identity.size()));
  // The tag names the boot too: a record of another boot is another tag's.
  std::string tag = absl::StrCat(absl::BytesToHexString(hasher->Finish()), "/", boot);
  const int64_t kept = RecordedPrefix(fd, tag);
  const int lock_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (lock_fd < 0 || (kept == 0 && ::ftruncate(fd, 0) != 0)) {
    const int e = errno;
    ::close(fd);
    if (lock_fd >= 0) ::close(lock_fd);
    ::unlink(path.c_str());
    return ErrnoStatus(e, "claim temporary file", path);
  }
  TempFile temp(path, fd, lock_fd, false);
  temp.tag_ = std::move(tag);
  temp.resumed_ = kept;
  // Tagged at once: a kill before the first record leaves a leftover the
  // next write of the same content knows for its own (with nothing kept).
  if (const int e = temp.WriteRecord(kept); e != 0) {
    // No user attributes here (some network and FUSE filesystems): an
    // ordinary temporary, truncated like any leftover.
    if (e != ENOTSUP && e != EOPNOTSUPP) return ErrnoStatus(e, "tag temporary file", path);
    temp.tag_.clear();
    temp.resumed_ = 0;
    if (::ftruncate(fd, 0) != 0) return ErrnoStatus(errno, "truncate temporary file", path);
  }
  return temp;
}

absl::StatusOr<TempFile> TempFile::CreateBeside(const std::string& destination, uint32_t mode,
                                                Naming naming) {
  const DirAndBase where = SplitDestination(destination);
  FERRY_RETURN_IF_ERROR(CheckDestination(destination, where));
  const std::string& dir = where.dir;
  const std::string& base = where.base;
  if (naming == Naming::kUnnamedWhereSupported) {
    if (const int fd = OpenUnnamed(dir, mode); fd >= 0) {
      return TempFile(absl::StrCat("unnamed temporary for ", destination), fd, -1, true);
    }
  }
  std::string path = dir + TempSlotFor(base);
  int fd = ClaimSlot(path, mode);
  for (int attempt = 0; fd < 0 && attempt < kTempCreateAttempts; ++attempt) {
    path = dir + TempNameFor(base);
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, static_cast<mode_t>(mode));
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // fresh: cannot be held
      const int e = errno;
      ::close(fd);
      ::unlink(path.c_str());
      return ErrnoStatus(e, "lock temporary file", path);
    }
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return ErrnoStatus(errno, "create temporary file", path);
  const int lock_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (lock_fd < 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return ErrnoStatus(e, "dup temporary file", path);
  }
  return TempFile(std::move(path), fd, lock_fd, false);
}

TempFile::TempFile(TempFile&& other) noexcept
    : path_(std::exchange(other.path_, std::string())),
      fd_(std::exchange(other.fd_, -1)),
      lock_fd_(std::exchange(other.lock_fd_, -1)),
      unnamed_(std::exchange(other.unnamed_, false)),
      tag_(std::exchange(other.tag_, std::string())),
      resumed_(std::exchange(other.resumed_, 0)) {}

TempFile& TempFile::operator=(TempFile&& other) noexcept {
  if (this != &other) {
    Discard();
    path_ = std::exchange(other.path_, std::string());
    fd_ = std::exchange(other.fd_, -1);
    lock_fd_ = std::exchange(other.lock_fd_, -1);
    unnamed_ = std::exchange(other.unnamed_, false);
    tag_ = std::exchange(other.tag_, std::string());
    resumed_ = std::exchange(other.resumed_, 0);
  }
  return *this;
}

TempFile::~TempFile() { Discard(); }

absl::Status TempFile::Resize(int64_t size) {
  // Reserve the blocks first where the filesystem can (ext4, xfs, btrfs):
  // ext4 takes writes into reserved extents at about twice the speed of a
  // sparse file's (delayed allocation per page; measured 0.105 s against
  // 0.215 s for 256 MiB), and a full disk fails here, before any byte has
  // moved, not mid-transfer. Not on tmpfs: it would allocate and zero every
  // page once more before the writes land (about 5 % slower there).
  // Small files skip it: their few blocks are allocated at write-back
  // anyway, and the two calls are a measurable share of a small file's
  // cost when a tree of them is copied.
  struct statfs where;
  if (size >= kReserveMinBytes && !(::fstatfs(fd_, &where) == 0 && where.f_type == TMPFS_MAGIC)) {
    int rc;
    do {
      rc = ::fallocate(fd_, 0, 0, size);
    } while (rc != 0 && errno == EINTR);
    // Filesystems without fallocate (some FUSE and network ones) get the
    // sparse file below.
    if (rc != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
      return ErrnoStatus(errno, absl::StrCat("reserve ", size, " bytes for"), path_);
    }
  }
  if (::ftruncate(fd_, size) != 0) {
    return ErrnoStatus(errno, absl::StrCat("ftruncate to ", size, " bytes"), path_);
  }
  return absl::OkStatus();
}

absl::Status TempFile::WriteAt(std::span<const char> data, int64_t offset) const {
  return PwriteAll(fd_, data, offset, path_);
}

absl::Status TempFile::Commit(const std::string& destination) {
  // The record is the temporary's, not the published file's.
  if (resumable() && ::fremovexattr(fd_, kResumeAttribute) != 0 && errno != ENODATA) {
    absl::Status s = ErrnoStatus(errno, "untag temporary file", path_);
    Discard();
    return s;
  }
  if (!unnamed_) return CloseAndRename(destination);
  // A new destination: linked in whole, in one step (linkat never replaces).
  int err = LinkAs(destination);
  if (err == 0) {
    unnamed_ = false;
    if (::close(std::exchange(fd_, -1)) != 0) {
      absl::Status s = ErrnoStatus(errno, "close", path_);
      ::unlink(destination.c_str());
      path_.clear();
      return s;
    }
    path_.clear();
    return absl::OkStatus();
  }
  if (err != EEXIST) {
    absl::Status s = ErrnoStatus(err, absl::StrCat("link ", path_, " as"), destination);
    Discard();
    return s;
  }
  // The destination exists: a hidden name beside it, then the rename that
  // replaces it atomically. (A crash between the two leaves that hidden
  // file; the window is two system calls.)
  const auto [dir, base] = SplitDestination(destination);
  for (int attempt = 0; attempt < kTempCreateAttempts; ++attempt) {
    const std::string name = dir + TempNameFor(base);
    err = LinkAs(name);
    if (err == 0) {
      unnamed_ = false;
      path_ = name;
      return CloseAndRename(destination);
    }
    if (err != EEXIST) {
      absl::Status s = ErrnoStatus(err, absl::StrCat("link ", path_, " as"), name);
      Discard();
      return s;
    }
  }
  absl::Status s = ErrnoStatus(EEXIST, absl::StrCat("link ", path_, " beside"), destination);
  Discard();
  return s;
}

int TempFile::WriteRecord(int64_t done) const {
  const std::string value = absl::StrCat("1 ", tag_, " ", done);
  return ::fsetxattr(fd_, kResumeAttribute, value.data(), value.size(), 0) == 0 ? 0 : errno;
}

absl::Status TempFile::RecordPrefix(int64_t done) {
  if (!resumable()) return absl::OkStatus();
  if (const int e = WriteRecord(done); e != 0) return ErrnoStatus(e, "record progress in", path_);
  return absl::OkStatus();
}

absl::Status TempFile::ForgetResumed() {
  resumed_ = 0;
  if (!resumable()) return absl::OkStatus();
  if (const int e = WriteRecord(0); e != 0) return ErrnoStatus(e, "record progress in", path_);
  return absl::OkStatus();
}

int TempFile::LinkAs(const std::string& name) const {
  const int rc = ::linkat(AT_FDCWD, SelfFdPath(fd_).c_str(), AT_FDCWD, name.c_str(),
                          AT_SYMLINK_FOLLOW);
  return rc == 0 ? 0 : errno;
}

absl::Status TempFile::CloseAndRename(const std::string& destination) {
  // close() reports delayed write errors (ENOSPC, EIO on network
  // filesystems): a file that failed them must not replace the destination.
  if (::close(std::exchange(fd_, -1)) != 0) {
    absl::Status s = ErrnoStatus(errno, "close", path_);
    Discard();
    return s;
  }
  // lock_fd_ still holds the flock: no other writer can claim the slot
  // between the close and the rename.
  if (::rename(path_.c_str(), destination.c_str()) != 0) {
    absl::Status s = ErrnoStatus(errno, absl::StrCat("rename ", path_, " to"), destination);
    Discard();
    return s;
  }
  path_.clear();
  Unlock();
  return absl::OkStatus();
}

void TempFile::Discard() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  // Before unlocking: never a claimable leftover. An unnamed one is gone
  // with its descriptor.
  if (!path_.empty() && !unnamed_) ::unlink(path_.c_str());
  path_.clear();
  unnamed_ = false;
  tag_.clear();
  resumed_ = 0;
  Unlock();
}

void TempFile::Unlock() {
  if (lock_fd_ >= 0) ::close(std::exchange(lock_fd_, -1));
}

}  // namespace ferry::io_internal
