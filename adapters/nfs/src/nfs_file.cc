// NfsFile: blocking positional I/O over NfsClient's READ/WRITE/COMMIT.
// Parallelism comes from the callers (an FdTable's PRead/PWrite on many
// threads, as the copier does), not from here: each ReadAt/WriteAt is a
// short sequence of calls of at most rtmax/wtmax bytes.
#include "ferry/nfs/nfs_file.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry::nfs {
namespace {

// Splits "a/b/c" into ("a/b", "c"); ("", "c") for "c".
std::pair<std::string_view, std::string_view> SplitParent(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

absl::StatusOr<std::shared_ptr<NfsFile>> NfsFile::Open(NfsClient& client,
                                                       std::string_view relative_path) {
  FERRY_ASSIGN_OR_RETURN(NfsObject o, client.LookupPath(relative_path));
  Fattr3 attrs;
  if (o.attributes) {
    attrs = *o.attributes;
  } else {
    FERRY_ASSIGN_OR_RETURN(attrs, client.GetAttr(o.handle, relative_path));
  }
  if (attrs.type != FileType::kRegular) {
    return absl::FailedPreconditionError(absl::StrCat("open ", client.DisplayPath(relative_path),
                                                      ": not a regular file (",
                                                      FileTypeName(attrs.type), ")"));
  }
  return std::make_shared<NfsFile>(client, std::move(o.handle), std::string(relative_path),
                                   attrs.size);
}

absl::StatusOr<std::shared_ptr<NfsFile>> NfsFile::Create(NfsClient& client,
                                                         std::string_view relative_path,
                                                         uint32_t mode) {
  auto [parent, name] = SplitParent(relative_path);
  if (name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("create ", client.DisplayPath(relative_path), ": no file name"));
  }
  FERRY_ASSIGN_OR_RETURN(NfsObject dir, client.LookupPath(parent));
  FERRY_ASSIGN_OR_RETURN(NfsObject f, client.Create(dir.handle, name, mode, /*exclusive=*/false,
                                                    /*truncate=*/true, relative_path));
  return std::make_shared<NfsFile>(client, std::move(f.handle), std::string(relative_path), 0);
}

NfsFile::NfsFile(NfsClient& client, FileHandle handle, std::string path, uint64_t size)
    : client_(client), handle_(std::move(handle)), path_(std::move(path)), size_at_open_(size) {}

absl::StatusOr<size_t> NfsFile::ReadAt(int64_t offset, absl::Span<char> buf) {
  if (offset < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("read ", client_.DisplayPath(path_), ": negative offset ", offset));
  }
  const size_t max_call = client_.fsinfo().rtmax;
  size_t done = 0;
  while (done < buf.size()) {
    const uint32_t want = static_cast<uint32_t>(std::min(max_call, buf.size() - done));
    FERRY_ASSIGN_OR_RETURN(ReadReply r, client_.Read(handle_, offset + done, want, path_));
    if (r.data.size() > want) {
      return absl::DataLossError(absl::StrCat("NFS3 READ ", client_.DisplayPath(path_), ": asked ",
                                              want, " bytes, got ", r.data.size()));
    }
    std::memcpy(buf.data() + done, r.data.data(), r.data.size());
    done += r.data.size();
    if (r.eof || r.data.empty()) break;
  }
  return done;
}

absl::StatusOr<size_t> NfsFile::WriteAt(int64_t offset, absl::Span<const char> data) {
  if (offset < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("write ", client_.DisplayPath(path_), ": negative offset ", offset));
  }
  const size_t max_call = client_.fsinfo().wtmax;
  size_t done = 0;
  while (done < data.size()) {
    const size_t want = std::min(max_call, data.size() - done);
    FERRY_ASSIGN_OR_RETURN(
        WriteReply w, client_.Write(handle_, offset + done,
                                    std::string_view(data.data() + done, want),
                                    StableHow::kUnstable, path_));
    if (w.count == 0) {
      return absl::DataLossError(absl::StrCat("NFS3 WRITE ", client_.DisplayPath(path_),
                                              ": the server took 0 of ", want, " bytes"));
    }
    {
      MutexLock l(&mu_);
      if (w.committed == StableHow::kUnstable) dirty_ = true;
      if (write_verifier_ && *write_verifier_ != w.verifier) verifier_changed_ = true;
      write_verifier_ = w.verifier;
    }
    done += std::min<size_t>(w.count, want);
  }
  return done;
}

absl::StatusOr<int64_t> NfsFile::Size() {
  FERRY_ASSIGN_OR_RETURN(Fattr3 a, client_.GetAttr(handle_, path_));
  return static_cast<int64_t>(a.size);
}

absl::Status NfsFile::Commit() {
  std::optional<uint64_t> expected;
  {
    MutexLock l(&mu_);
    if (verifier_changed_) {
      return absl::DataLossError(absl::StrCat(
          "NFS3 WRITE ", client_.DisplayPath(path_),
          ": the server's write verifier changed between writes (it restarted); "
          "unstable data may be lost and must be written again"));
    }
    if (!dirty_) return absl::OkStatus();
    expected = write_verifier_;
  }
  FERRY_ASSIGN_OR_RETURN(uint64_t verifier, client_.Commit(handle_, 0, 0, path_));
  if (expected && verifier != *expected) {
    MutexLock l(&mu_);
    verifier_changed_ = true;
    return absl::DataLossError(absl::StrCat(
        "NFS3 COMMIT ", client_.DisplayPath(path_),
        ": the server's write verifier changed since the writes (it restarted); "
        "unstable data may be lost and must be written again"));
  }
  MutexLock l(&mu_);
  dirty_ = false;
  return absl::OkStatus();
}

}  // namespace ferry::nfs
