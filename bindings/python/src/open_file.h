// ferry._core._OpenFile: one descriptor of an fs::FileTable (over an S3,
// NFS or any registered filesystem) as the Python object behind ferry's
// io.RawIOBase files (ferry/_files.py).
//
// The offset lives in the C++ table; this object holds only the descriptor
// and a reference to the table's owner (a FileTable), which keeps the
// client, and through its Runtime pin the Runtime, alive until the file is
// closed. Every call that may touch the network runs with the GIL released,
// straight into or out of the Python buffer.
//
//   std::shared_ptr<FileTable> table = ...;        // an S3 or NFS client's
//   int fd = ValueOrThrow(table->Open(...));
//   return PyOpenFile(table, fd, name, readable, writable);
#ifndef FERRY_BINDINGS_PYTHON_OPEN_FILE_H_
#define FERRY_BINDINGS_PYTHON_OPEN_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ferry/fs/file_table.h"
#include "runtime_handle.h"

namespace ferry::python {

// The descriptor table an open file reads and writes through (an
// fs::FileTable: POSIX semantics, a written file published by Close) and
// whatever must stay alive while the file is open (a client, a registry
// and its Runtime pin), held as `owner`. Thread-safe (fs::FileTable is).
class FileTable {
 public:
  FileTable(std::shared_ptr<const void> owner, fs::FileTable& files)
      : owner_(std::move(owner)), files_(files) {}
  absl::StatusOr<size_t> Read(int fd, absl::Span<char> buf) { return files_.Read(fd, buf); }
  absl::StatusOr<size_t> Write(int fd, absl::Span<const char> data) {
    return files_.Write(fd, data);
  }
  absl::StatusOr<int64_t> Lseek(int fd, int64_t offset, int whence) {
    return files_.Lseek(fd, offset, whence);
  }
  absl::Status Close(int fd) { return files_.Close(fd); }

 private:
  const std::shared_ptr<const void> owner_;
  fs::FileTable& files_;
};

// Deletes `p` with the GIL released if this thread holds it: a client's
// destructor may wait for its I/O threads.
template <typename T>
void DeleteWithoutGil(T* p) {
  if (PyGILState_Check() != 0) {
    pybind11::gil_scoped_release nogil;
    delete p;
  } else {
    delete p;
  }
}

// What a Python client object (NfsClient, S3Client) and the files it
// opened share: the Runtime pinned open, one filesystem, and the descriptor
// table of those files. Thread-safe (its parts are). Destroyed table,
// filesystem, then the pin, without the GIL (see Make).
template <typename FileSystemT>
class PinnedFileSystem {
 public:
  static std::shared_ptr<PinnedFileSystem> Make(RuntimeHandle::Pin pin,
                                                std::shared_ptr<FileSystemT> fs) {
    return std::shared_ptr<PinnedFileSystem>(new PinnedFileSystem(std::move(pin), std::move(fs)),
                                             &DeleteWithoutGil<PinnedFileSystem>);
  }

  Runtime& runtime() const { return pin_.runtime(); }
  FileSystemT& fs() const { return *fs_; }
  fs::FileTable& files() { return files_; }

 private:
  PinnedFileSystem(RuntimeHandle::Pin pin, std::shared_ptr<FileSystemT> fs)
      : pin_(std::move(pin)), fs_(std::move(fs)) {}

  RuntimeHandle::Pin pin_;
  std::shared_ptr<FileSystemT> fs_;
  fs::FileTable files_;
};

// Only Python uses it (GIL held on entry to every method).
class PyOpenFile {
 public:
  PyOpenFile(std::shared_ptr<FileTable> table, int fd, std::string name, bool readable,
             bool writable);
  PyOpenFile(const PyOpenFile&) = delete;
  PyOpenFile& operator=(const PyOpenFile&) = delete;
  // Closes the descriptor if close() was not called; errors are lost then
  // (as with a Python file dropped unclosed).
  ~PyOpenFile();

  pybind11::bytes Read(int64_t size);
  pybind11::bytes ReadAll();
  size_t ReadInto(const pybind11::buffer& buffer);
  size_t Write(const pybind11::buffer& data);
  int64_t Seek(int64_t offset, int whence);
  // Idempotent; raises what the table's Close reports (a failed upload).
  void Close();

  bool closed() const { return table_ == nullptr; }
  bool readable() const { return readable_; }
  bool writable() const { return writable_; }
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }

 private:
  // A reference for one call (so a close() on another thread, which takes
  // table_, cannot free the table under it); raises if closed.
  std::shared_ptr<FileTable> Table(const char* op) const;

  std::shared_ptr<FileTable> table_;  // null once closed
  const int fd_;
  const std::string name_;
  const bool readable_;
  const bool writable_;
};



}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_OPEN_FILE_H_
