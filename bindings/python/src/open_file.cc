// PyOpenFile: reads land directly in the Python object that is returned
// (a bytes object allocated at full size and shrunk to what was read) or in
// the caller's buffer (readinto), so a read costs one copy, the table's.
// The GIL is released for every table call; the buffer stays exported (and
// so cannot be resized or freed) while it is.
#include "open_file.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// readall() reads the rest of a file whose size it asked for; if the
// object grew since, it reads on in steps of this many bytes until EOF.
constexpr size_t kReadAllGrowth = size_t{1} << 20;

// A bytes object of `size` uninitialised bytes, to read into.
py::bytes NewBytes(size_t size) {
  PyObject* b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
  if (b == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::bytes>(b);
}

// Shrinks `b` (fresh, unshared) to `size` bytes.
void ShrinkBytes(py::bytes& b, size_t size) {
  PyObject* p = b.release().ptr();
  if (_PyBytes_Resize(&p, static_cast<Py_ssize_t>(size)) != 0) throw py::error_already_set();
  b = py::reinterpret_steal<py::bytes>(p);
}

char* BytesData(py::bytes& b) { return PyBytes_AS_STRING(b.ptr()); }

}  // namespace

PyOpenFile::PyOpenFile(std::shared_ptr<FileTable> table, int fd, std::string name, bool readable,
                       bool writable)
    : table_(std::move(table)), fd_(fd), name_(std::move(name)), readable_(readable),
      writable_(writable) {}

PyOpenFile::~PyOpenFile() {
  if (table_ == nullptr) return;
  std::shared_ptr<FileTable> table = std::move(table_);
  py::gil_scoped_release nogil;
  (void)table->Close(fd_);
  table.reset();  // may be the last reference to the client
}

std::shared_ptr<FileTable> PyOpenFile::Table(const char* op) const {
  if (table_ == nullptr) {
    ThrowStatus(absl::InvalidArgumentError(
        absl::StrCat(op, " ", name_, ": I/O operation on closed file")));
  }
  return table_;
}

py::bytes PyOpenFile::Read(int64_t size) {
  if (size < 0) return ReadAll();
  std::shared_ptr<FileTable> table = Table("read");
  py::bytes out = NewBytes(static_cast<size_t>(size));
  absl::StatusOr<size_t> n;
  {
    py::gil_scoped_release nogil;
    n = table->Read(fd_, absl::MakeSpan(BytesData(out), static_cast<size_t>(size)));
  }
  ThrowIfError(n.status());
  if (*n != static_cast<size_t>(size)) ShrinkBytes(out, *n);
  return out;
}

py::bytes PyOpenFile::ReadAll() {
  std::shared_ptr<FileTable> table = Table("readall");
  absl::StatusOr<size_t> total;
  py::bytes out;
  {
    py::gil_scoped_release nogil;
    total = [&]() -> absl::StatusOr<size_t> {
      absl::StatusOr<int64_t> here = table->Lseek(fd_, 0, SEEK_CUR);
      if (!here.ok()) return here.status();
      absl::StatusOr<int64_t> end = table->Lseek(fd_, 0, SEEK_END);
      if (!end.ok()) return end.status();
      absl::StatusOr<int64_t> back = table->Lseek(fd_, *here, SEEK_SET);
      if (!back.ok()) return back.status();
      return static_cast<size_t>(std::max<int64_t>(*end - *here, 0));
    }();
  }
  ThrowIfError(total.status());
  if (*total == 0) return py::bytes();
  // One read of the expected size, then on until a short read (EOF).
  size_t want = *total;
  size_t have = 0;
  out = NewBytes(want);
  for (;;) {
    absl::StatusOr<size_t> n;
    {
      py::gil_scoped_release nogil;
      n = table->Read(fd_, absl::MakeSpan(BytesData(out) + have, want));
    }
    ThrowIfError(n.status());
    have += *n;
    if (*n < want) break;
    want = kReadAllGrowth;
    ShrinkBytes(out, have + want);  // grows: `out` is ours alone, so resizable
  }
  if (have == 0) return py::bytes();
  if (static_cast<size_t>(PyBytes_GET_SIZE(out.ptr())) != have) ShrinkBytes(out, have);
  return out;
}

size_t PyOpenFile::ReadInto(const py::buffer& buffer) {
  std::shared_ptr<FileTable> table = Table("readinto");
  py::buffer_info info = buffer.request(/*writable=*/true);
  const size_t size = static_cast<size_t>(info.size * info.itemsize);
  absl::StatusOr<size_t> n;
  {
    py::gil_scoped_release nogil;
    n = table->Read(fd_, absl::MakeSpan(static_cast<char*>(info.ptr), size));
  }
  return ValueOrThrow(std::move(n));
}

size_t PyOpenFile::Write(const py::buffer& data) {
  std::shared_ptr<FileTable> table = Table("write");
  py::buffer_info info = data.request();
  const size_t size = static_cast<size_t>(info.size * info.itemsize);
  absl::StatusOr<size_t> n;
  {
    py::gil_scoped_release nogil;
    n = table->Write(fd_, absl::MakeConstSpan(static_cast<const char*>(info.ptr), size));
  }
  return ValueOrThrow(std::move(n));
}

int64_t PyOpenFile::Seek(int64_t offset, int whence) {
  std::shared_ptr<FileTable> table = Table("seek");
  absl::StatusOr<int64_t> pos;
  {
    py::gil_scoped_release nogil;
    pos = table->Lseek(fd_, offset, whence);
  }
  return ValueOrThrow(std::move(pos));
}

void PyOpenFile::Close() {
  if (table_ == nullptr) return;
  std::shared_ptr<FileTable> table = std::move(table_);
  absl::Status s;
  {
    py::gil_scoped_release nogil;
    s = table->Close(fd_);
    table.reset();  // may be the last reference to the client
  }
  ThrowIfError(s);
}

void RegisterOpenFile(py::module_& m) {
  py::class_<PyOpenFile>(m, "_OpenFile", R"doc(
One descriptor of a C++ fd table (S3 or NFS); the offset lives in C++.
Use the io.RawIOBase files ferry.s3.open / ferry.nfs.open return.)doc")
      .def("read", &PyOpenFile::Read, py::arg("size") = -1)
      .def("readall", &PyOpenFile::ReadAll)
      .def("readinto", &PyOpenFile::ReadInto, py::arg("buffer"))
      .def("write", &PyOpenFile::Write, py::arg("data"))
      .def("seek", &PyOpenFile::Seek, py::arg("offset"), py::arg("whence") = SEEK_SET)
      .def("close", &PyOpenFile::Close)
      .def_property_readonly("closed", &PyOpenFile::closed)
      .def_property_readonly("readable", &PyOpenFile::readable)
      .def_property_readonly("writable", &PyOpenFile::writable)
      .def_property_readonly("name", &PyOpenFile::name)
      .def_property_readonly("fd", &PyOpenFile::fd);
}

}  // namespace ferry::python
