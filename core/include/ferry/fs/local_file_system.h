// LocalFileSystem: the local disk as a ferry::fs::FileSystem (scheme
// "file"; bare paths resolve to it too). Paths are absolute paths without
// their leading '/': Url("tmp/a") is "/tmp/a".
//
// A written file lands in a temporary ".<name>.ferry-<hex>" beside the
// target (io/internal/temp_file.h) and is renamed over it by Close(), so a
// reader never sees a partial file and a failed copy leaves the old file
// as it was. Reads and writes are pread/pwrite: many at once on one file.
//
// Thread-safety: thread-safe. Calls block on the disk.
#ifndef FERRY_FS_LOCAL_FILE_SYSTEM_H_
#define FERRY_FS_LOCAL_FILE_SYSTEM_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/fs/file_system.h"

namespace ferry::fs {

class LocalFileSystem final : public FileSystem {
 public:
  std::string_view scheme() const override { return "file"; }
  std::string Url(std::string_view path) const override;
  absl::StatusOr<Entry> Stat(std::string_view path) override;
  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<Entry>&)> on_batch) override;
  absl::StatusOr<std::unique_ptr<File>> OpenRead(std::string_view path) override;
  absl::StatusOr<std::unique_ptr<File>> OpenWrite(std::string_view path,
                                                  const WriteOptions& options) override;
  absl::Status CreateDir(std::string_view path, bool parents) override;
  absl::Status Remove(std::string_view path) override;
  absl::Status RemoveDir(std::string_view path) override;
  absl::Status Rename(std::string_view from, std::string_view to) override;
  absl::Status SetModTime(std::string_view path, absl::Time mtime) override;
  // Always hashes: reading the local disk is what a stored hash costs elsewhere.
  absl::StatusOr<std::string> Md5(std::string_view path, const Entry& listed,
                                  bool read_if_needed) override;
  absl::StatusOr<std::string> ContentHash(std::string_view path, const Entry& listed,
                                          HashKind kind, bool read_if_needed) override;
};

// The LocalFileSystem path of a local path as a user wrote it: made
// absolute against the working directory, then normalised ("./a" ->
// "<cwd>/a" without the leading '/').
std::string LocalPathToFsPath(std::string_view local_path);

}  // namespace ferry::fs

#endif  // FERRY_FS_LOCAL_FILE_SYSTEM_H_
