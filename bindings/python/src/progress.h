// PythonProgress: a Python callable as a ferry::ProgressCallback.
//
// ferry's transfer functions call their progress callback on the thread
// that called them (file_transfer.h). The bindings release the GIL for the
// whole transfer, so the callback takes it again only for the Python call.
// A Python exception there stops the transfer (the callback returns
// Cancelled) and is kept, to be raised unchanged -- same object, same
// traceback -- once the transfer function has returned.
//
//   PythonProgress progress(py_callable);           // GIL held
//   absl::StatusOr<TransferStats> r;
//   {
//     py::gil_scoped_release nogil;
//     r = s3.Download(key, path, {.progress = progress.Callback()});
//   }
//   progress.RethrowIfRaised();                     // the callback's exception first
//   ThrowIfError(r.status());
//
// The callable gets (bytes_done: int, bytes_total: int | None).
//
// Thread-compatible: one transfer, one caller thread.
#ifndef FERRY_BINDINGS_PYTHON_PROGRESS_H_
#define FERRY_BINDINGS_PYTHON_PROGRESS_H_

#include <optional>

#include <pybind11/pybind11.h>

#include "ferry/transfer/file_transfer.h"

namespace ferry::python {

class PythonProgress {
 public:
  // `fn` may be None (no progress wanted). REQUIRES: GIL held.
  explicit PythonProgress(pybind11::object fn);
  PythonProgress(const PythonProgress&) = delete;
  PythonProgress& operator=(const PythonProgress&) = delete;
  ~PythonProgress();

  // A callback calling `fn` with the GIL taken; empty if `fn` is None.
  // REQUIRES: *this outlives the transfer it is given to.
  ProgressCallback Callback();

  // Raises the exception the callable raised, if it did. REQUIRES: GIL held.
  void RethrowIfRaised();

 private:
  absl::Status Call(const TransferProgress& p);

  pybind11::object fn_;
  std::optional<pybind11::error_already_set> raised_;
};

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_PROGRESS_H_
