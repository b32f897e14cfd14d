// NfsFileSystem: the fs::FileSystem calls as NFSv3 procedures. The writer
// is the atomic upload (a temporary beside the target, COMMIT with a
// write-verifier check, RENAME over the target; removed on any failure);
// the copy engine drives its chunks, so this file holds no copy loop.
#include "ferry/nfs/nfs_file_system.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ferry/base/atomic_max.h"
#include "ferry/base/directory_errors.h"
#include "ferry/base/mutex.h"
#include "ferry/base/random.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/temp_file.h"
#include "ferry/nfs/nfs_error.h"
#include "ferry/nfs/nfs_file.h"
#include "ferry/nfs/tree_walker.h"
#include "ferry/rpc/rpc_metrics.h"

namespace ferry::nfs {
namespace {

// Default chunk cap: servers advertise up to 64 MiB rtmax/wtmax (ganesha),
// but 1 MiB calls already amortise the per-call cost, and smaller chunks
// keep many calls in flight and memory low.
constexpr int64_t kMaxDefaultChunk = int64_t{1} << 20;
constexpr int kDefaultParallelism = 16;
// A server this close (round trips up to kNearRoundTrip) gets
// kNearParallelism chunks in flight: 4 x 1 MiB keep a local link busy
// (a 1 MiB READ outlasts the round trip), and 16 buffers in flight cost a
// fifth more CPU as their bytes fall out of the CPU cache between the
// socket and the file (measured on a 512 MiB get: 0.26-0.29 s against
// 0.33-0.36 s, at no loss of speed). At +1 ms each way 16 stay faster.
constexpr absl::Duration kNearRoundTrip = absl::Microseconds(512);
constexpr int kNearParallelism = 4;
// How long CreateDir takes a cached directory handle for the directory's
// existence without asking (see CreateDir).
constexpr absl::Duration kCreateDirTrust = absl::Seconds(1);

// Longest file name we expect a server to take: NAME_MAX is 255 bytes on
// every server we know (NFSv3 has no way to ask short of PATHCONF).
constexpr size_t kMaxNameBytes = 255;

fs::EntryKind KindOf(FileType type) {
  switch (type) {
    case FileType::kRegular: return fs::EntryKind::kFile;
    case FileType::kDirectory: return fs::EntryKind::kDirectory;
    case FileType::kSymlink: return fs::EntryKind::kSymlink;
    default: return fs::EntryKind::kOther;
  }
}

// nfstime3 holds unsigned seconds: times before 1970 or after 2106 are
// clamped.
NfsTime NfsTimeOf(absl::Time t) {
  const int64_t ns = std::clamp<int64_t>(absl::ToUnixNanos(t), 0, int64_t{0xFFFFFFFF} * 1000000000);
  return {static_cast<uint32_t>(ns / 1000000000), static_cast<uint32_t>(ns % 1000000000)};
}

// `handle`: the object's, kept for a file (fs::Entry::handle); "" for
// List's entries, which are compared far more often than opened.
fs::Entry EntryOf(std::string path, const Fattr3& a, std::string_view handle) {
  fs::Entry e;
  e.path = std::move(path);
  e.kind = KindOf(a.type);
  e.size = static_cast<int64_t>(a.size);  // fattr3's, for every kind (as lstat)
  e.mtime = ToAbslTime(a.mtime);
  e.mode = a.mode;
  e.uid = a.uid;
  e.gid = a.gid;
  e.id = a.fileid;
  if (a.type == FileType::kRegular) e.handle = std::string(handle);
  return e;
}

// `failure`, noting a failed clean-up after it: the failure stays what the
// caller sees (code, payloads, message first).
absl::Status WithCleanupNote(absl::Status failure, const absl::Status& cleanup) {
  if (cleanup.ok()) return failure;
  return AppendToMessage(
      failure, absl::StrCat("; then removing the temporary file failed too (it may be left "
                            "on the server): ",
                            cleanup.message()));
}

// `o`'s attributes: those its LOOKUP brought, else a GETATTR's (a server
// may leave them out of a reply).
absl::StatusOr<Fattr3> AttributesOf(NfsClient& client, const NfsObject& o, std::string_view path) {
  if (o.attributes) return *o.attributes;
  return client.GetAttr(o.handle, path);
}

// The temporary's name for target `name`: the local temporaries' rules
// (io_internal::TempSlotFor if `slot`, the same name in every run, else
// TempNameFor), with `name` cut (at a UTF-8 character boundary) so that
// the whole fits in kMaxNameBytes; ".ferry-<hex>" alone if `bare`.
std::string UploadTempName(std::string_view name, bool bare, bool slot) {
  if (bare) return io_internal::TempNameFor("");
  if (name.size() + io_internal::kTempNameExtraBytes > kMaxNameBytes) {
    size_t keep = kMaxNameBytes - io_internal::kTempNameExtraBytes;
    // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is cut.
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    name = name.substr(0, keep);
  }
  return slot ? io_internal::TempSlotFor(name) : io_internal::TempNameFor(name);
}

// Where a written file goes: the directory (LOOKUPed once) and the name.
struct UploadTarget {
  FileHandle dir;
  std::string dir_path;  // relative to the client's root; "" = the root
  std::string name;
  std::string path;     // dir_path/name
  std::string context;  // "write <DisplayPath(path)>", for messages
  // The permission bits of the file being replaced; nullopt: a new file.
  std::optional<uint32_t> existing_mode;
};

// LOOKUPs the target's directory (its handle may come from the client's
// directory cache) and the target, unless the caller saw what is there
// (`seen`, with the permission bits of a file). NotFound for a missing
// directory; FailedPrecondition if the directory is not one, or the target
// exists and is not a regular file (a directory above all: replacing it is
// never what a copy means).
absl::StatusOr<UploadTarget> ResolveUploadTarget(NfsClient& client, std::string_view path,
                                                 const fs::PathSeen& seen) {
  auto [dir_path, name] = SplitNfsPath(path);
  UploadTarget t;
  t.path = fs::JoinPath(dir_path, name);
  t.context = absl::StrCat("write ", client.DisplayPath(t.path));
  if (name.empty() || name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat(t.context, ": the path names no file"));
  }
  t.dir_path = std::string(dir_path);
  t.name = std::string(name);
  // The directory's handle, from the directory cache where it is there.
  auto find_dir = [&]() -> absl::StatusOr<NfsObject> {
    FERRY_ASSIGN_OR_RETURN(NfsObject dir, client.LookupDirectory(t.dir_path));
    if (dir.attributes && dir.attributes->type != FileType::kDirectory) {
      return absl::FailedPreconditionError(absl::StrCat(
          t.context, ": ", client.DisplayPath(t.dir_path), " is not a directory (",
          FileTypeName(dir.attributes->type), ")"));
    }
    return dir;
  };
  FERRY_ASSIGN_OR_RETURN(NfsObject dir, find_dir());
  const bool seen_file = seen.state == fs::PathSeen::State::kFound &&
                         seen.entry.kind == fs::EntryKind::kFile && seen.entry.mode != 0;
  if (seen.state == fs::PathSeen::State::kMissing || seen_file) {
    t.dir = std::move(dir.handle);
    if (seen_file) t.existing_mode = seen.entry.mode & 0777;  // rwx bits only, as below
    return t;
  }
  absl::StatusOr<NfsObject> existing = client.Lookup(dir.handle, t.name, t.path);
  if (!dir.attributes && GetNfs3Status(existing.status()) == Nfs3Status::kStale) {
    // The cached handle went stale (another client removed the directory,
    // and may have made a new one there): forgotten, it is looked up.
    client.ForgetDirectory(t.dir_path);
    FERRY_ASSIGN_OR_RETURN(dir, find_dir());
    existing = client.Lookup(dir.handle, t.name, t.path);
  }
  t.dir = std::move(dir.handle);
  if (existing.status().code() == absl::StatusCode::kNotFound) return t;
  FERRY_RETURN_IF_ERROR(existing.status());
  FERRY_ASSIGN_OR_RETURN(const Fattr3 attrs, AttributesOf(client, *existing, t.path));
  if (attrs.type == FileType::kDirectory) {
    return absl::FailedPreconditionError(absl::StrCat(t.context, ": the target is a directory"));
  }
  if (attrs.type != FileType::kRegular) {
    return absl::FailedPreconditionError(absl::StrCat(
        t.context, ": the target is not a regular file (", FileTypeName(attrs.type), ")"));
  }
  // rwx bits only: set-id bits would survive onto new content (a write
  // clears them), and the sticky bit means nothing on a file.
  t.existing_mode = attrs.mode & 0777;
  return t;
}

struct UploadTemp {
  std::string name;
  std::string path;  // relative, as the target's
  NfsObject object;
};

// REMOVEs the temporary (best effort: OK if it is already gone). A REMOVE
// lost to a dropped connection is sent once more on a new one (the pool
// reconnects); NotFound then means the first one did its work.
absl::Status RemoveUploadTemp(NfsClient& client, const UploadTarget& target,
                              const UploadTemp& temp) {
  absl::Status s = client.Remove(target.dir, temp.name, temp.path);
  if (s.code() == absl::StatusCode::kUnavailable ||
      s.code() == absl::StatusCode::kDeadlineExceeded) {
    s = client.Remove(target.dir, temp.name, temp.path);
  }
  if (s.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  return s;
}

// Removes the slot temporary `temp` if a killed writer left it: a regular
// file last changed before `reclaim_before` (a live writer keeps changing
// its own). True if it is gone.
bool ReclaimStaleSlot(NfsClient& client, const UploadTarget& target, const UploadTemp& temp,
                      absl::Time reclaim_before) {
  if (reclaim_before == absl::InfinitePast()) return false;
  absl::StatusOr<NfsObject> found = client.Lookup(target.dir, temp.name, temp.path);
  if (!found.ok() || !found->attributes || found->attributes->type != FileType::kRegular ||
      ToAbslTime(found->attributes->mtime) >= reclaim_before) {
    return false;
  }
  return RemoveUploadTemp(client, target, temp).ok();
}

// CREATE GUARDED of a fresh temporary with permission bits `mode`. GUARDED
// rather than EXCLUSIVE: it sets the mode in the same call (EXCLUSIVE needs
// a SETATTR after), and the pool never resends a CREATE, so an EXIST reply
// always means another file of that name. The first name tried is the
// target's slot (the same in every run), so a rerun finds what a killed
// run left and, if it is older than `reclaim_before`, replaces it; a slot
// in use falls back to random names. A name too long for the server falls
// back to the bare ".ferry-<hex>".
absl::StatusOr<UploadTemp> CreateUploadTemp(NfsClient& client, const UploadTarget& target,
                                            uint32_t mode, absl::Time reclaim_before) {
  bool bare = false;
  bool slot = true;
  bool reclaimed = false;
  absl::Status last;
  for (int attempt = 0; attempt < io_internal::kTempCreateAttempts; ++attempt) {
    UploadTemp temp;
    temp.name = UploadTempName(target.name, bare, slot);
    temp.path = fs::JoinPath(target.dir_path, temp.name);
    absl::StatusOr<NfsObject> created =
        client.Create(target.dir, temp.name, mode, /*exclusive=*/true, /*truncate=*/false,
                      temp.path);
    if (created.ok()) {
      temp.object = *std::move(created);
      return temp;
    }
    last = created.status();
    const std::optional<Nfs3Status> nfs = GetNfs3Status(last);
    if (nfs == Nfs3Status::kExist && slot && !reclaimed &&
        ReclaimStaleSlot(client, target, temp, reclaim_before)) {
      reclaimed = true;  // the slot once more, now free
      continue;
    }
    slot = false;
    if (nfs == Nfs3Status::kExist) continue;
    if (nfs == Nfs3Status::kNameTooLong && !bare) {
      bare = true;
      continue;
    }
    if (!nfs) {
      // No reply (connection lost, timeout): the server may have created it.
      last = WithCleanupNote(std::move(last), RemoveUploadTemp(client, target, temp));
    }
    break;
  }
  std::string why =
      absl::StrCat(target.context, ": cannot create its temporary file in the same directory");
  if (last.code() == absl::StatusCode::kPermissionDenied) {
    // The one surprise of atomic writes: a writable file in a read-only
    // directory could be overwritten in place, but not replaced.
    absl::StrAppend(&why, " (a write goes to a temporary file renamed over the target, "
                          "so the directory must be writable)");
  }
  return Annotate(last, why);
}

// The RENAME of the temporary over the target ended `renamed`. RENAME is
// never resent, so when its reply is lost the target is LOOKUPed: holding
// the temporary's handle, the rename was done.
absl::Status ConfirmRename(NfsClient& client, const UploadTarget& target, const UploadTemp& temp,
                           absl::Status renamed) {
  if (renamed.ok() || GetNfs3Status(renamed)) return renamed;
  absl::StatusOr<NfsObject> now = client.Lookup(target.dir, target.name, target.path);
  if (now.ok() && now->handle == temp.object.handle) return absl::OkStatus();
  return renamed;
}

// RENAMEs the temporary over the target (atomic on the server: readers see
// the old file or the new one).
absl::Status RenameOverTarget(NfsClient& client, const UploadTarget& target,
                              const UploadTemp& temp) {
  return ConfirmRename(
      client, target, temp,
      client.Rename(target.dir, temp.name, target.dir, target.name, temp.path, target.path));
}

// Sets the temporary's mtime and RENAMEs it over the target in one round
// trip (RENAME keeps the time, so their order does not matter). When only
// the SETATTR failed, the file is in place with the server's time: the
// SETATTR is tried once more on its handle (on the target's, looked up, if
// the server made the handle stale by the rename), and failing again is
// an error saying the bytes were published. `published` tells whether they
// were.
absl::Status SetTimeAndRenameOverTarget(NfsClient& client, const UploadTarget& target,
                                        const UploadTemp& temp, const Sattr3& time,
                                        bool* published) {
  NfsClient::SetAttrAndRenameResult r = client.SetAttrAndRename(
      temp.object.handle, time, temp.path, target.dir, temp.name, target.dir, target.name,
      target.path);
  FERRY_RETURN_IF_ERROR(ConfirmRename(client, target, temp, std::move(r.rename)));
  *published = true;
  if (r.set_attr.ok()) return absl::OkStatus();
  FileHandle handle = temp.object.handle;
  if (GetNfs3Status(r.set_attr) == Nfs3Status::kStale) {
    absl::StatusOr<NfsObject> now = client.Lookup(target.dir, target.name, target.path);
    if (now.ok()) handle = now->handle;
  }
  absl::Status again = client.SetAttr(handle, time, target.path);
  if (again.ok()) return again;
  return absl::Status(again.code(),
                      absl::StrCat(target.context,
                                   ": its bytes are in place, but its modification time is the "
                                   "server's (a sync will copy it again): ",
                                   again.message()));
}

class NfsReadFile final : public fs::File {
 public:
  explicit NfsReadFile(std::shared_ptr<NfsFile> file) : file_(std::move(file)) {}
  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
    return file_->ReadAt(offset, buf);
  }
  absl::StatusOr<size_t> ReadIntoDescriptor(int64_t offset, size_t n, int fd, int64_t fd_offset,
                                            Mutex* write_lock) override {
    return file_->ReadIntoDescriptor(offset, n, fd, fd_offset, write_lock);
  }
  absl::StatusOr<int64_t> Size() override {
    return static_cast<int64_t>(file_->size_at_open());
  }
  // A file opened as listed that no READ reply vouched for (empty, or a
  // server without READ attributes) is checked here: the engine closes
  // the reader before it publishes the copy.
  absl::Status Close() override { return file_->ConfirmStillAsListed(); }

 private:
  std::shared_ptr<NfsFile> file_;
};

// The atomic writer: a temporary published by Close, removed otherwise.
class NfsWriteFile final : public fs::File {
 public:
  // `size`: the final size, -1 if not known.
  NfsWriteFile(NfsClient& client, UploadTarget target, UploadTemp temp, absl::Time mtime,
               int64_t size)
      : client_(client),
        target_(std::move(target)),
        temp_(std::move(temp)),
        mtime_(mtime),
        size_(size) {
    file_ = NewTempFile();
  }
  ~NfsWriteFile() override { (void)Discard(); }

  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) override {
    return Wrote(offset, CurrentFile()->WriteAt(offset, data));
  }

  absl::StatusOr<size_t> WriteFromDescriptor(int64_t offset, int fd, int64_t fd_offset,
                                             size_t n) override {
    return Wrote(offset, CurrentFile()->WriteFromDescriptor(offset, fd, fd_offset, n));
  }

  absl::StatusOr<int64_t> Size() override { return high_water_.load(); }

  absl::Status Close() override {
    MutexLock lock(&mu_);
    if (published_) return close_status_;
    absl::Status s = file_->Commit();
    if (s.code() == absl::StatusCode::kDataLoss) {
      // The server lost unstable writes: the same temporary takes every
      // byte again (each is rewritten, so nothing needs truncating).
      file_ = NewTempFile();
      return absl::AbortedError(absl::StrCat(target_.context, ": ", s.message()));
    }
    FERRY_RETURN_IF_ERROR(s);
    if (mtime_ != absl::InfinitePast()) {
      // After the last write (a WRITE sets the time again).
      bool published = false;
      absl::Status set = SetTimeAndRenameOverTarget(client_, target_, temp_,
                                                    {.mtime = NfsTimeOf(mtime_)}, &published);
      published_ = published;
      if (published) close_status_ = set;  // a later Close says it again
      return set;
    }
    FERRY_RETURN_IF_ERROR(RenameOverTarget(client_, target_, temp_));
    published_ = true;
    return absl::OkStatus();
  }

  absl::Status Discard() override {
    MutexLock lock(&mu_);
    if (published_ || discarded_) return absl::OkStatus();
    discarded_ = true;
    absl::Status s = RemoveUploadTemp(client_, target_, temp_);
    if (s.ok()) return s;
    return absl::Status(s.code(),
                        absl::StrCat("removing the temporary file failed too (it may be left "
                                     "on the server): ",
                                     s.message()));
  }

 private:
  // The temporary's handle writes go to (Close may replace it).
  std::shared_ptr<NfsFile> CurrentFile() {
    MutexLock lock(&mu_);
    return file_;
  }
  // A write's result, its end counted in the size.
  absl::StatusOr<size_t> Wrote(int64_t offset, absl::StatusOr<size_t> n) {
    if (n.ok()) AtomicMax(high_water_, offset + static_cast<int64_t>(*n));
    return n;
  }

  std::shared_ptr<NfsFile> NewTempFile() {
    auto file = std::make_shared<NfsFile>(client_, temp_.object.handle, temp_.path, 0);
    if (size_ >= 0) file->set_final_size(static_cast<uint64_t>(size_));
    return file;
  }

  NfsClient& client_;
  const UploadTarget target_;
  const UploadTemp temp_;
  const absl::Time mtime_;
  const int64_t size_;
  std::atomic<int64_t> high_water_{0};
  Mutex mu_;
  std::shared_ptr<NfsFile> file_ ABSL_GUARDED_BY(mu_);
  bool published_ ABSL_GUARDED_BY(mu_) = false;
  // What publishing came to: not OK when the bytes are in place but their
  // time is not.
  absl::Status close_status_ ABSL_GUARDED_BY(mu_);
  bool discarded_ ABSL_GUARDED_BY(mu_) = false;
};

// A path split into the parent's handle and the name in it.
struct ParentAndName {
  FileHandle dir;
  std::string name;
};

absl::StatusOr<ParentAndName> ParentOf(NfsClient& client, std::string_view path) {
  auto [dir_path, name] = SplitNfsPath(path);
  if (name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(client.DisplayPath(path), ": the path names the root"));
  }
  FERRY_ASSIGN_OR_RETURN(NfsObject dir, client.LookupPath(dir_path));
  return ParentAndName{std::move(dir.handle), std::string(name)};
}

// The filesystem over one client: what the header's NfsFileSystem promises,
// call by call.
class ClientFileSystem final : public NfsFileSystem {
 public:
  // `owned` is null when the caller owns `client`.
  ClientFileSystem(std::unique_ptr<NfsClient> owned, NfsClient& client,
                   const NfsFileSystemOptions& options)
      : owned_(std::move(owned)),
        client_(client),
        parallelism_(options.parallelism),
        handle_tag_(TagOfThisInstance()) {}

  NfsClient& client() override { return client_; }

  std::string_view scheme() const override { return "nfs"; }
  std::string Url(std::string_view path) const override { return client_.DisplayPath(path); }

  absl::StatusOr<fs::Entry> Stat(std::string_view path) override {
    const std::string p = fs::NormalizePath(path);
    FERRY_ASSIGN_OR_RETURN(NfsObject o, client_.LookupPath(p));
    FERRY_ASSIGN_OR_RETURN(const Fattr3 a, AttributesOf(client_, o, p));
    return EntryOf(p, a, Tagged(o.handle));
  }

  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<fs::Entry>&)> on_batch) override {
    const std::string d = fs::NormalizePath(dir);
    FERRY_ASSIGN_OR_RETURN(NfsObject o, client_.LookupPath(d));
    if (o.attributes && o.attributes->type != FileType::kDirectory) {
      return NotADirectoryStatus(absl::StrCat("list ", Url(d), ": not a directory"));
    }
    uint64_t cookie = 0;
    uint64_t cookieverf = 0;
    for (;;) {
      FERRY_ASSIGN_OR_RETURN(ReaddirplusPage page,
                             client_.Readdirplus(o.handle, cookie, cookieverf, d));
      std::vector<fs::Entry> batch;
      batch.reserve(page.result.entries.size());
      for (const DirEntryPlus& e : page.result.entries) {
        cookie = e.cookie;
        if (e.name == "." || e.name == "..") continue;
        if (e.attributes) {
          batch.push_back(EntryOf(std::string(e.name), *e.attributes, ""));
        } else {
          // A server may leave attributes out: ask for them.
          const std::string child_path = fs::JoinPath(d, e.name);
          FERRY_ASSIGN_OR_RETURN(NfsObject child, client_.Lookup(o.handle, e.name, child_path));
          FERRY_ASSIGN_OR_RETURN(const Fattr3 a, AttributesOf(client_, child, child_path));
          batch.push_back(EntryOf(std::string(e.name), a, ""));
        }
      }
      cookieverf = page.result.cookieverf;
      if (!batch.empty() && !on_batch(batch)) return absl::OkStatus();
      if (page.result.eof) return absl::OkStatus();
    }
  }

  absl::StatusOr<fs::WalkStats> Walk(
      std::string_view root, const fs::WalkOptions& options,
      absl::FunctionRef<bool(fs::WalkBatch&)> on_batch) override {
    const WalkOptions o{.walk = options};
    fs::WalkBatch out;
    FERRY_ASSIGN_OR_RETURN(
        fs::WalkStats stats, WalkTree(client_, fs::NormalizePath(root), o, [&](WalkBatch& batch) {
          out.entries.clear();
          out.entries.reserve(batch.entries.size());
          for (WalkEntry& e : batch.entries) {
            fs::Entry f;
            f.path = std::move(e.path);
            f.kind = KindOf(e.type);
            f.size = static_cast<int64_t>(e.size);
            f.mtime = ToAbslTime(e.mtime);
            f.mode = e.mode;
            f.uid = e.uid;
            f.gid = e.gid;
            f.id = e.fileid;
            f.handle = Tagged(e.handle);
            out.entries.push_back(std::move(f));
          }
          out.errors = std::move(batch.errors);
          return on_batch(out);
        }));
    return stats;
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenRead(std::string_view path) override {
    FERRY_ASSIGN_OR_RETURN(std::shared_ptr<NfsFile> file,
                           NfsFile::Open(client_, fs::NormalizePath(path)));
    return std::unique_ptr<fs::File>(new NfsReadFile(std::move(file)));
  }

  // By the listed handle: the file that was listed, no LOOKUP (a tree's
  // files are each a LOOKUP per path component otherwise). One removed
  // since fails its first READ with STALE, which reads as NotFound, as
  // the LOOKUP would have; one whose size or mtime changed since fails its
  // read FailedPrecondition (as S3's listed ETag does), never a copy of
  // the listed size from newer bytes.
  absl::StatusOr<std::unique_ptr<fs::File>> OpenReadListed(std::string_view path,
                                                           const fs::Entry& listed) override {
    // Only this filesystem's handles: another's (another export, root or
    // user, another server) would read a file this one does not name.
    const std::string_view handle = std::string_view(listed.handle).substr(
        std::min(listed.handle.size(), handle_tag_.size()));
    if (listed.kind != fs::EntryKind::kFile || listed.size < 0 ||
        !listed.handle.starts_with(handle_tag_) || handle.empty() ||
        handle.size() > kMaxFileHandleSize) {
      return OpenRead(path);
    }
    std::optional<absl::Time> mtime;
    if (listed.mtime != absl::InfinitePast()) mtime = listed.mtime;
    return std::unique_ptr<fs::File>(new NfsReadFile(
        NfsFile::OpenListed(client_, FileHandle(handle), fs::NormalizePath(path),
                            static_cast<uint64_t>(listed.size), mtime)));
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenWrite(
      std::string_view path, const fs::WriteOptions& options) override {
    const std::string p = fs::NormalizePath(path);
    auto create_temp = [&](const UploadTarget& target) {
      return CreateUploadTemp(client_, target, target.existing_mode.value_or(options.mode),
                              options.reclaim_before);
    };
    FERRY_ASSIGN_OR_RETURN(UploadTarget target, ResolveUploadTarget(client_, p, options.target));
    absl::StatusOr<UploadTemp> temp = create_temp(target);
    if (GetNfs3Status(temp.status()) == Nfs3Status::kStale) {
      // The directory's cached handle went stale (removed, perhaps made
      // again, since it was cached; unchecked where `options.target` saved
      // the LOOKUP): asked for afresh.
      client_.ForgetDirectory(target.dir_path);
      FERRY_ASSIGN_OR_RETURN(target, ResolveUploadTarget(client_, p, {}));
      temp = create_temp(target);
    }
    FERRY_RETURN_IF_ERROR(temp.status());
    return std::unique_ptr<fs::File>(
        new NfsWriteFile(client_, std::move(target), *std::move(temp), options.mtime, options.size));
  }

  absl::Status CreateDir(std::string_view path, bool parents) override {
    const std::string p = fs::NormalizePath(path);
    if (p.empty()) return absl::OkStatus();  // the root exists
    // A directory this client passed through (or mounted) within the last
    // second is taken as there: a copy into one (its Stat walked through
    // it) asks nothing more. Were it removed since by another client, a
    // write in it fails NotFound where a MKDIR would have made it again;
    // the second bounds that, whatever directory_handle_time is.
    if (client_.HasCachedDirectory(p, kCreateDirTrust)) return absl::OkStatus();
    auto [dir_path, name] = SplitNfsPath(p);
    absl::StatusOr<NfsObject> dir = client_.LookupPath(dir_path);
    if (absl::IsNotFound(dir.status()) && parents) {
      FERRY_RETURN_IF_ERROR(CreateDir(dir_path, true));
      dir = client_.LookupPath(dir_path);
    }
    FERRY_RETURN_IF_ERROR(dir.status());
    absl::StatusOr<NfsObject> made = client_.Mkdir(dir->handle, name, 0755, p);
    if (made.ok()) return absl::OkStatus();
    if (GetNfs3Status(made.status()) == Nfs3Status::kExist) {
      // Looked up as a directory: cached for the writes in it.
      FERRY_ASSIGN_OR_RETURN(const NfsObject there, client_.LookupDirectory(p));
      FERRY_ASSIGN_OR_RETURN(const Fattr3 a, AttributesOf(client_, there, p));
      if (a.type == FileType::kDirectory) return absl::OkStatus();
    }
    return made.status();
  }

  absl::Status Remove(std::string_view path) override {
    const std::string p = fs::NormalizePath(path);
    FERRY_ASSIGN_OR_RETURN(ParentAndName at, ParentOf(client_, p));
    return client_.Remove(at.dir, at.name, p);
  }

  absl::Status SetModTime(std::string_view path, absl::Time mtime) override {
    const std::string p = fs::NormalizePath(path);
    FERRY_ASSIGN_OR_RETURN(NfsObject file, client_.LookupPath(p));
    return client_.SetAttr(file.handle, {.mtime = NfsTimeOf(mtime)}, p);
  }

  absl::Status RemoveDir(std::string_view path) override {
    const std::string p = fs::NormalizePath(path);
    FERRY_ASSIGN_OR_RETURN(ParentAndName at, ParentOf(client_, p));
    absl::Status s = client_.Rmdir(at.dir, at.name, p);
    client_.ForgetDirectory(p);  // whatever the answer: it may have gone
    return s;
  }

  absl::Status Rename(std::string_view from, std::string_view to) override {
    const std::string a = fs::NormalizePath(from);
    const std::string b = fs::NormalizePath(to);
    FERRY_ASSIGN_OR_RETURN(ParentAndName src, ParentOf(client_, a));
    FERRY_ASSIGN_OR_RETURN(ParentAndName dst, ParentOf(client_, b));
    absl::Status s = client_.Rename(src.dir, src.name, dst.dir, dst.name, a, b);
    // A directory moved (or one moved over): paths through either name
    // now lead elsewhere.
    client_.ForgetDirectory(a);
    client_.ForgetDirectory(b);
    return s;
  }

  int64_t preferred_chunk_bytes() const override {
    const FsInfo& info = client_.fsinfo();
    return std::min<int64_t>({info.rtmax, info.wtmax, kMaxDefaultChunk});
  }

  int preferred_parallelism() const override {
    if (parallelism_ > 0) return parallelism_;
    // The calls made so far (mount, lookups) tell how far the server is.
    const RpcHistogram rtt = client_.metrics().round_trip;
    return rtt.count > 0 && rtt.p50() <= kNearRoundTrip ? kNearParallelism : kDefaultParallelism;
  }

 private:
  // 8 random bytes, so each instance knows its own entries' handles.
  static std::string TagOfThisInstance() {
    const uint64_t r = RandomUint64();
    return std::string(reinterpret_cast<const char*>(&r), sizeof(r));
  }
  // fs::Entry::handle: the file handle after this instance's tag.
  std::string Tagged(std::string_view handle) const {
    return handle.empty() ? std::string() : absl::StrCat(handle_tag_, ToAbsl(handle));
  }

  std::unique_ptr<NfsClient> owned_;  // null when borrowed
  NfsClient& client_;
  const int parallelism_;  // 0: by the round trip
  const std::string handle_tag_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<NfsFileSystem>> NfsFileSystem::Connect(
    Runtime& runtime, const NfsUrl& url, const NfsFileSystemOptions& options) {
  NfsClientOptions client_options = options.client;
  client_options.root_at_export = true;
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<NfsClient> client,
                         NfsClient::Connect(runtime, url, client_options));
  return Over(std::move(client), options);
}

std::unique_ptr<NfsFileSystem> NfsFileSystem::Over(std::unique_ptr<NfsClient> client,
                                                   const NfsFileSystemOptions& options) {
  NfsClient& owned = *client;
  return std::make_unique<ClientFileSystem>(std::move(client), owned, options);
}

std::unique_ptr<NfsFileSystem> NfsFileSystem::Over(NfsClient& client,
                                                   const NfsFileSystemOptions& options) {
  return std::make_unique<ClientFileSystem>(nullptr, client, options);
}

namespace {

// nfs:// URLs: one filesystem per server identity and export, reused.
class NfsProvider final : public fs::FileSystemProvider {
 public:
  explicit NfsProvider(const NfsFileSystemOptions& options) : options_(options) {}

  absl::StatusOr<fs::Location> Resolve(Runtime& runtime, std::string_view url) override {
    FERRY_ASSIGN_OR_RETURN(NfsUrl parsed, ParseNfsUrl(url));
    const std::string key = absl::StrCat(parsed.host, "|", parsed.nfs_port.value_or(0), "|",
                                         parsed.mount_port.value_or(0), "|",
                                         parsed.uid.value_or(~0u), "|", parsed.gid.value_or(~0u));
    std::shared_ptr<NfsFileSystem> fs = Find(key, parsed.path);
    if (fs == nullptr) {
      // One mount at a time, outside mu_ (mounting takes round trips): URLs
      // resolved at once (1,000 transfers starting together) wait for the
      // first mount and share it, instead of each mounting and opening its
      // own connections, which ganesha shed.
      MutexLock connecting(&connect_mu_);
      fs = Find(key, parsed.path);
      if (fs == nullptr) {
        FERRY_ASSIGN_OR_RETURN(fs, NfsFileSystem::Connect(runtime, parsed, options_));
        MutexLock lock(&mu_);
        mounted_[key].emplace(fs->client().export_path(), fs);
      }
    }
    const std::string& export_path = fs->client().export_path();
    std::string path = fs::NormalizePath(NfsPathBelow(parsed.path, export_path));
    const std::string_view raw = url.substr(0, url.find('?'));
    const bool names_directory = path.empty() || raw.back() == '/';
    return fs::Location{std::move(fs), std::move(path), names_directory, std::string(url)};
  }

 private:
  // The mounted export of server `key` deepest above `path`, if any.
  std::shared_ptr<NfsFileSystem> Find(const std::string& key, std::string_view path) {
    MutexLock lock(&mu_);
    std::shared_ptr<NfsFileSystem> fs;
    size_t best = 0;
    for (const auto& [export_path, candidate] : mounted_[key]) {
      if (NfsPathIsUnder(path, export_path) && export_path.size() >= best) {
        best = export_path.size();
        fs = candidate;
      }
    }
    return fs;
  }

  const NfsFileSystemOptions options_;
  Mutex connect_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Mutex mu_;
  // server identity -> export -> its filesystem
  std::map<std::string, std::map<std::string, std::shared_ptr<NfsFileSystem>>> mounted_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<fs::FileSystemProvider> NewNfsProvider(const NfsFileSystemOptions& options) {
  return std::make_unique<NfsProvider>(options);
}

}  // namespace ferry::nfs
