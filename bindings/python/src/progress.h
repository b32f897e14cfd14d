// PythonProgress: a Python callable as a ferry::ProgressCallback.
//
// ferry's transfer functions call their progress callback on the thread
// that called them (file_transfer.h). The bindings release the GIL for the
// whole transfer, so the callback takes it again only for the Python call.
// A Python exception there stops the transfer (the callback returns
// Cancelled) and is kept, to be raised unchanged -- same object, same
// traceback -- once the transfer function has returned.
//
//   TransferStats stats = RunWithProgress(py_callable, [&](ProgressCallback cb) {
//     return s3.Download(key, path, {.progress = std::move(cb)});  // GIL released
//   });  // raises the callback's exception first, else the error
//
// The callable gets (bytes_done: int, bytes_total: int | None). With or
// without one, a signal that reaches Python during the transfer (Ctrl-C)
// stops it at the next report and is raised the same way.
//
// Thread-compatible: one transfer, one caller thread.
#ifndef FERRY_BINDINGS_PYTHON_PROGRESS_H_
#define FERRY_BINDINGS_PYTHON_PROGRESS_H_

#include <optional>

#include <pybind11/pybind11.h>

#include "ferry/transfer/file_transfer.h"
#include "status_exceptions.h"

namespace ferry::python {

class PythonProgress {
 public:
  // `fn` may be None (no progress wanted). REQUIRES: GIL held.
  explicit PythonProgress(pybind11::object fn);
  PythonProgress(const PythonProgress&) = delete;
  PythonProgress& operator=(const PythonProgress&) = delete;
  ~PythonProgress();

  // A callback that, with the GIL taken, runs Python's pending signal
  // handlers and then calls `fn` (if not None).
  // REQUIRES: *this outlives the transfer it is given to.
  ProgressCallback Callback();

  // Raises the exception the callable raised, if it did. REQUIRES: GIL held.
  void RethrowIfRaised();

 private:
  absl::Status Call(const TransferProgress& p);

  pybind11::object fn_;
  std::optional<pybind11::error_already_set> raised_;
};

// Runs `run(callback)`, a transfer returning absl::StatusOr<T>, with the
// GIL released and `progress` (a callable or None) as its progress
// callback; then raises the callable's exception if it raised one, else
// the transfer's error; returns the T. REQUIRES: GIL held.
template <typename Run>
auto RunWithProgress(const pybind11::object& progress, Run run) {
  PythonProgress py_progress(progress);
  decltype(run(ProgressCallback())) result;
  {
    pybind11::gil_scoped_release nogil;
    result = run(py_progress.Callback());
  }
  py_progress.RethrowIfRaised();
  ThrowIfError(result.status());
  return *std::move(result);
}

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_PROGRESS_H_
