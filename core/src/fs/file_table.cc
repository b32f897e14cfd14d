#include "ferry/fs/file_table.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"

namespace ferry::fs {

absl::StatusOr<int> FileTable::Open(FileSystem& fs, std::string_view path, OpenMode mode,
                                    const WriteOptions& options) {
  std::unique_ptr<File> file;
  switch (mode) {
    case OpenMode::kRead: {
      FERRY_ASSIGN_OR_RETURN(file, fs.OpenRead(path));
      break;
    }
    case OpenMode::kWrite: {
      FERRY_ASSIGN_OR_RETURN(file, fs.OpenWrite(path, options));
      break;
    }
    case OpenMode::kReadWrite:
      return absl::InvalidArgumentError(absl::StrCat(
          "open ", fs.Url(path), ": read-write opens are not offered (open to read or to write)"));
  }
  FERRY_ASSIGN_OR_RETURN(auto opened,
                         table_.Open(fs.Url(path), std::shared_ptr<File>(std::move(file)), mode));
  return opened.fd;
}

absl::StatusOr<int64_t> FileTable::Size(int fd) {
  // SEEK_END answers the size without moving this descriptor's offset if
  // done positionally: read the offset, seek, restore.
  FERRY_ASSIGN_OR_RETURN(int64_t here, table_.Lseek(fd, 0, SEEK_CUR));
  FERRY_ASSIGN_OR_RETURN(int64_t end, table_.Lseek(fd, 0, SEEK_END));
  FERRY_RETURN_IF_ERROR(table_.Lseek(fd, here, SEEK_SET).status());
  return end;
}

absl::Status FileTable::Close(int fd) {
  FERRY_ASSIGN_OR_RETURN(auto closed, table_.Close(fd));
  // Each open has its own File: its Close publishes (or ends) that open.
  return closed.handle->Close();
}

absl::Status FileTable::Discard(int fd) {
  FERRY_ASSIGN_OR_RETURN(auto closed, table_.Close(fd));
  return closed.handle->Discard();
}

}  // namespace ferry::fs
