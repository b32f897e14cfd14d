// FileTable: POSIX descriptors over any filesystem's files, for the
// bindings (Python's io.RawIOBase objects, Java's SeekableByteChannel) and
// for front ends that speak open/read/write/lseek/close.
//
//   ferry::fs::FileTable files;
//   FERRY_ASSIGN_OR_RETURN(int fd, files.Open(*where.fs, where.path, ferry::OpenMode::kRead));
//   FERRY_ASSIGN_OR_RETURN(size_t n, files.Read(fd, absl::MakeSpan(buf)));  // moves the offset
//   FERRY_RETURN_IF_ERROR(files.Close(fd));
//
// Every Open gets its own descriptor and offset (FdTable): reads and
// writes follow POSIX (short reads only at the end; Lseek SEEK_SET, CUR,
// END, past the end allowed). A written file is published by its Close
// (atomically where the protocol allows, see file_system.h), and Close's
// status says whether it was. kReadWrite is refused: most protocols cannot
// update a file in place.
//
// Thread-safety: thread-safe; calls on different descriptors run in
// parallel. REQUIRES: the filesystems outlive the table; descriptors still
// open when it is destroyed are dropped (written ones discarded).
#ifndef FERRY_FS_FILE_TABLE_H_
#define FERRY_FS_FILE_TABLE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ferry/fs/file_system.h"
#include "ferry/io/fd_table.h"

namespace ferry::fs {

class FileTable {
 public:
  FileTable() = default;
  FileTable(const FileTable&) = delete;
  FileTable& operator=(const FileTable&) = delete;

  // Opens `path` of `fs` (OpenRead for kRead, OpenWrite for kWrite) and
  // returns a new descriptor (>= 3). InvalidArgument for kReadWrite.
  absl::StatusOr<int> Open(FileSystem& fs, std::string_view path, OpenMode mode,
                           const WriteOptions& options = {});

  absl::StatusOr<size_t> Read(int fd, absl::Span<char> buf) { return table_.Read(fd, buf); }
  absl::StatusOr<size_t> Write(int fd, absl::Span<const char> data) {
    return table_.Write(fd, data);
  }
  absl::StatusOr<size_t> PRead(int fd, int64_t offset, absl::Span<char> buf) {
    return table_.PRead(fd, offset, buf);
  }
  absl::StatusOr<size_t> PWrite(int fd, int64_t offset, absl::Span<const char> data) {
    return table_.PWrite(fd, offset, data);
  }
  absl::StatusOr<int64_t> Lseek(int fd, int64_t offset, int whence) {
    return table_.Lseek(fd, offset, whence);
  }
  // The file's size (as opened for reads; bytes written so far for writes).
  absl::StatusOr<int64_t> Size(int fd);

  // Closes `fd` and its file: for a written file, publishes it; an error
  // means it was not published (and the target is as it was).
  absl::Status Close(int fd);

  // Closes `fd` without publishing a written file (File::Discard: the
  // target stays as it was); for a binding whose user dropped a file
  // unclosed. Its status says whether the clean-up worked.
  absl::Status Discard(int fd);

  int open_descriptors() const { return table_.size(); }

 private:
  FdTable<File> table_;
};

}  // namespace ferry::fs

#endif  // FERRY_FS_FILE_TABLE_H_
