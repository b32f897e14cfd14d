// LocalFileSystem: POSIX calls. Reads are pread on one descriptor shared
// by every caller; writes go through io_internal::TempFile (pwrite into a
// hidden temporary beside the target, renamed over it by Close).
#include "ferry/fs/local_file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <optional>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ferry/base/atomic_max.h"
#include "ferry/base/directory_errors.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/positional_io.h"
#include "ferry/io/internal/temp_file.h"
#include "transfer/interval_set.h"

namespace ferry::fs {
namespace {

std::string Abs(std::string_view path) { return absl::StrCat("/", ToAbsl(path)); }

Entry EntryFromStat(std::string path, const struct stat& st) {
  Entry e;
  e.path = std::move(path);
  if (S_ISREG(st.st_mode)) {
    e.kind = EntryKind::kFile;
    e.size = st.st_size;
  } else if (S_ISDIR(st.st_mode)) {
    e.kind = EntryKind::kDirectory;
  } else if (S_ISLNK(st.st_mode)) {
    e.kind = EntryKind::kSymlink;
  } else {
    e.kind = EntryKind::kOther;
  }
  e.mtime = absl::TimeFromTimespec(st.st_mtim);
  e.mode = st.st_mode & 07777;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.id = st.st_ino;
  return e;
}

// Whether `fd`'s filesystem is one whose writes may wait on another
// machine or process (f_type of statfs(2)); unknown ones count as local.
bool OnNetworkOrFuse(int fd) {
  struct statfs st;
  if (::fstatfs(fd, &st) != 0) return false;
  switch (static_cast<uint64_t>(st.f_type)) {
    case 0x6969:      // NFS
    case 0x517b:      // SMB
    case 0xff534d42:  // CIFS
    case 0xfe534d42:  // SMB2
    case 0x65735546:  // FUSE
    case 0x00c36400:  // Ceph
    case 0x01021997:  // 9p
    case 0x5346414f:  // AFS
    case 0x6b414653:  // kAFS
    case 0x0bd00bd0:  // Lustre
    case 0x47504653:  // GPFS
    case 0x01161970:  // GFS2
    case 0x7461636f:  // OCFS2
      return true;
    default:
      return false;
  }
}

// An open local file for reading: one descriptor, pread from any thread.
class LocalReadFile final : public File {
 public:
  LocalReadFile(int fd, std::string path, int64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  ~LocalReadFile() override { ::close(fd_); }

  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
    return io_internal::PreadAll(fd_, std::span<char>(buf.data(), buf.size()), offset, path_);
  }

  int descriptor() const override { return fd_; }

  absl::StatusOr<int64_t> Size() override { return size_; }

 private:
  const int fd_;
  const std::string path_;
  const int64_t size_;
};

// A file being written: a TempFile beside the target, renamed over it by
// Close; destroyed unclosed, the temporary is removed. A resumable one
// (WriteOptions::resume_source) records, about once per kRecordInterval,
// how far it is written without a gap, so a killed copy's successor
// continues there.
class LocalWriteFile final : public File {
 public:
  LocalWriteFile(io_internal::TempFile temp, std::string target, absl::Time mtime)
      : temp_(std::move(temp)),
        target_(std::move(target)),
        mtime_(mtime),
        high_water_(temp_.resumed_bytes()) {
    if (temp_.resumed_bytes() > 0) written_.Add(0, temp_.resumed_bytes());
  }

  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
    return io_internal::PreadAll(temp_.fd(), std::span<char>(buf.data(), buf.size()), offset,
                                 temp_.path());
  }

  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) override {
    {
      // One write at a time: the kernel serializes a file's buffered
      // writes anyway (each holds the inode's lock), and writers waiting
      // there spin on it. 16 copy workers writing one file spent a fifth
      // of a 512 MiB NFS get's CPU spinning (rwsem_spin_on_owner); here a
      // waiter sleeps.
      MutexLock lock(&write_mu_);
      FERRY_RETURN_IF_ERROR(temp_.WriteAt(std::span<const char>(data.data(), data.size()), offset));
    }
    return Wrote(offset, data.size());
  }

  absl::StatusOr<size_t> WriteThroughDescriptor(int64_t offset, size_t /*n*/,
                                                DescriptorFill fill) override {
    // The filler writes from an I/O thread that serves other calls too: a
    // file whose writes may wait on another machine or process (NFS, SMB,
    // FUSE...) is written by the copy's workers instead.
    if (remote_) return absl::UnimplementedError("write through a descriptor: not into a remote or FUSE file");
    // write_mu_ is held by the filler around each write, not across the
    // fill: its bytes arrive over time (READ replies), and other chunks'
    // fills must be under way meanwhile.
    absl::StatusOr<size_t> wrote = fill(temp_.fd(), offset, &write_mu_);
    if (!wrote.ok()) {
      if (absl::IsUnimplemented(wrote.status())) return wrote.status();
      return Annotate(wrote.status(), absl::StrCat("copy into ", temp_.path()));
    }
    return Wrote(offset, *wrote);
  }

  absl::StatusOr<int64_t> Size() override { return high_water_.load(); }

  int64_t resumed_bytes() const override { return temp_.resumed_bytes(); }

  absl::Status ForgetResumed() override {
    MutexLock lock(&mu_);
    written_ = internal::IntervalSet();
    recorded_prefix_ = 0;
    return temp_.ForgetResumed();
  }

  absl::Status Close() override {
    MutexLock lock(&mu_);
    if (committed_) return absl::OkStatus();
    if (mtime_ != absl::InfinitePast()) {
      // Last, after every write: a write would set the time again.
      const timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT}, absl::ToTimespec(mtime_)};
      if (::futimens(temp_.fd(), times) != 0) {
        return ErrnoStatus(errno, "set the modification time of", target_);
      }
    }
    FERRY_RETURN_IF_ERROR(temp_.Commit(target_));
    committed_ = true;
    return absl::OkStatus();
  }

  absl::Status Discard() override {
    MutexLock lock(&mu_);
    if (!committed_) temp_.Discard();
    return absl::OkStatus();
  }

 private:
  // A kill loses at most this long's bytes.
  static constexpr absl::Duration kRecordInterval = absl::Seconds(1);

  // Counts [offset, offset + n) as written.
  absl::StatusOr<size_t> Wrote(int64_t offset, size_t n) {
    AtomicMax(high_water_, offset + static_cast<int64_t>(n));
    if (temp_.resumable()) FERRY_RETURN_IF_ERROR(NoteWritten(offset, n));
    return n;
  }

  // Notes [offset, offset + n) written; passes the gap-free prefix to the
  // record (TempFile::RecordPrefix) if the last time is kRecordInterval
  // ago. One writer records at a time, outside the lock; the others go on
  // writing.
  absl::Status NoteWritten(int64_t offset, size_t n) {
    int64_t prefix;
    {
      MutexLock lock(&mu_);
      written_.Add(offset, offset + static_cast<int64_t>(n));
      prefix = written_.PrefixEnd();
      const absl::Time now = absl::Now();
      // A record only when the gap-free prefix has grown: writes past a
      // gap change nothing a rerun could keep.
      if (recording_ || prefix == recorded_prefix_ || now - last_record_ < kRecordInterval) {
        return absl::OkStatus();
      }
      recording_ = true;
      last_record_ = now;
    }
    absl::Status s = temp_.RecordPrefix(prefix);
    MutexLock lock(&mu_);
    recording_ = false;
    if (s.ok()) recorded_prefix_ = prefix;
    return s;
  }

  io_internal::TempFile temp_;
  const bool remote_ = OnNetworkOrFuse(temp_.fd());
  const std::string target_;
  const absl::Time mtime_;
  std::atomic<int64_t> high_water_{0};
  Mutex write_mu_;  // held across each write of temp_ (WriteAt's, a filler's)
  Mutex mu_;
  bool committed_ ABSL_GUARDED_BY(mu_) = false;
  internal::IntervalSet written_ ABSL_GUARDED_BY(mu_);
  bool recording_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_record_ ABSL_GUARDED_BY(mu_) = absl::Now();
  int64_t recorded_prefix_ ABSL_GUARDED_BY(mu_) = 0;  // in the temporary's tag
};

// A character device written in place (`ferry-cp s3://b/k /dev/null`, the
// way to time a download without a disk): there is nothing to publish, and
// a temporary renamed over it would replace the device with a file.
class DeviceWriteFile final : public File {
 public:
  DeviceWriteFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~DeviceWriteFile() override { ::close(fd_); }

  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) override {
    FERRY_RETURN_IF_ERROR(
        io_internal::PwriteAll(fd_, std::span<const char>(data.data(), data.size()), offset, path_));
    AtomicMax(high_water_, offset + static_cast<int64_t>(data.size()));
    return data.size();
  }

  absl::StatusOr<int64_t> Size() override { return high_water_.load(); }

 private:
  const int fd_;
  const std::string path_;
  std::atomic<int64_t> high_water_{0};
};

}  // namespace

std::string LocalPathToFsPath(std::string_view local_path) {
  if (!local_path.empty() && local_path.front() == '/') return NormalizePath(local_path);
  char cwd[PATH_MAX];
  const std::string base = ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "/";
  // Fold "." and ".." lexically, as a shell's `cd` would; a user's own
  // local path may use them (remote names may not: see safe_path.h).
  std::vector<std::string_view> parts;
  const std::string joined = absl::StrCat(base, "/", ToAbsl(local_path));
  std::string_view rest = joined;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (std::string_view p : parts) out = JoinPath(out, p);
  return out;
}

std::string LocalFileSystem::Url(std::string_view path) const { return Abs(path); }

absl::StatusOr<Entry> LocalFileSystem::Stat(std::string_view path) {
  const std::string abs = Abs(path);
  struct stat st;
  if (::lstat(abs.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", abs);
  return EntryFromStat(std::string(path), st);
}

absl::Status LocalFileSystem::List(std::string_view dir,
                                   absl::FunctionRef<bool(std::vector<Entry>&)> on_batch) {
  const std::string abs = Abs(dir);
  const int dfd = ::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    if (errno == ENOTDIR) {
      return NotADirectoryStatus(absl::StrCat("list ", abs, ": not a directory"));
    }
    return ErrnoStatus(errno, "list", abs);
  }
  DIR* d = ::fdopendir(dfd);
  if (d == nullptr) {
    const int err = errno;
    ::close(dfd);
    return ErrnoStatus(err, "list", abs);
  }
  // 1,024 entries a batch: a directory of millions stays bounded in memory.
  constexpr size_t kBatch = 1024;
  std::vector<Entry> batch;
  absl::Status status;
  for (;;) {
    errno = 0;
    const dirent* de = ::readdir(d);
    if (de == nullptr) {
      if (errno != 0) status = ErrnoStatus(errno, "list", abs);
      break;
    }
    const std::string_view name = de->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed since readdir saw it
      status = ErrnoStatus(errno, "stat", JoinPath(abs, name));
      break;
    }
    batch.push_back(EntryFromStat(std::string(name), st));
    if (batch.size() == kBatch) {
      if (!on_batch(batch)) break;
      batch.clear();
    }
  }
  ::closedir(d);
  if (status.ok() && !batch.empty()) on_batch(batch);
  return status;
}

absl::StatusOr<std::unique_ptr<File>> LocalFileSystem::OpenRead(std::string_view path) {
  const std::string abs = Abs(path);
  const int fd = ::open(abs.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", abs);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "stat", abs);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat("open ", abs, ": not a regular file"));
  }
  return std::unique_ptr<File>(new LocalReadFile(fd, abs, st.st_size));
}

absl::StatusOr<std::unique_ptr<File>> LocalFileSystem::OpenWrite(std::string_view path,
                                                                 const WriteOptions& options) {
  const std::string abs = Abs(path);
  if (path.empty()) {
    return IsADirectoryStatus(absl::StrCat("open ", abs, " for writing: a directory"));
  }
  struct stat st;
  const bool exists = ::stat(abs.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    return IsADirectoryStatus(absl::StrCat("open ", abs, " for writing: it is a directory"));
  }
  if (exists && S_ISCHR(st.st_mode)) {
    const int fd = ::open(abs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "open", abs);
    return std::unique_ptr<File>(new DeviceWriteFile(fd, abs));
  }
  FERRY_ASSIGN_OR_RETURN(
      io_internal::TempFile temp,
      options.resume_source.empty()
          ? io_internal::TempFile::CreateBeside(abs, options.mode)
          : io_internal::TempFile::CreateResumable(abs, options.resume_source, options.mode));
  if (options.size > 0) FERRY_RETURN_IF_ERROR(temp.Resize(options.size));
  return std::unique_ptr<File>(new LocalWriteFile(std::move(temp), abs, options.mtime));
}

absl::Status LocalFileSystem::CreateDir(std::string_view path, bool parents) {
  const std::string abs = Abs(path);
  if (parents && !path.empty()) {
    const std::string_view parent = DirName(path);
    if (!parent.empty()) {
      struct stat st;
      if (::stat(Abs(parent).c_str(), &st) != 0) FERRY_RETURN_IF_ERROR(CreateDir(parent, true));
    }
  }
  if (::mkdir(abs.c_str(), 0777) == 0) return absl::OkStatus();
  const int err = errno;
  struct stat st;
  if (err == EEXIST && ::stat(abs.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::OkStatus();
  }
  return ErrnoStatus(err, "mkdir", abs);
}

absl::Status LocalFileSystem::Remove(std::string_view path) {
  const std::string abs = Abs(path);
  if (::unlink(abs.c_str()) != 0) return ErrnoStatus(errno, "remove", abs);
  return absl::OkStatus();
}

absl::Status LocalFileSystem::RemoveDir(std::string_view path) {
  const std::string abs = Abs(path);
  if (::rmdir(abs.c_str()) != 0) return ErrnoStatus(errno, "rmdir", abs);
  return absl::OkStatus();
}

absl::Status LocalFileSystem::Rename(std::string_view from, std::string_view to) {
  const std::string a = Abs(from);
  const std::string b = Abs(to);
  if (::rename(a.c_str(), b.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("rename to ", b), a);
  }
  return absl::OkStatus();
}

absl::Status LocalFileSystem::SetModTime(std::string_view path, absl::Time mtime) {
  const std::string abs = Abs(path);
  const timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT}, absl::ToTimespec(mtime)};
  if (::utimensat(AT_FDCWD, abs.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoStatus(errno, "set the modification time of", abs);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> LocalFileSystem::Md5(std::string_view path, const Entry& listed,
                                                 bool /*read_if_needed*/) {
  return FileSystem::Md5(path, listed, /*read_if_needed=*/true);
}

absl::StatusOr<std::string> LocalFileSystem::ContentHash(std::string_view path,
                                                         const Entry& listed, HashKind kind,
                                                         bool /*read_if_needed*/) {
  return FileSystem::ContentHash(path, listed, kind, /*read_if_needed=*/true);
}

}  // namespace ferry::fs
