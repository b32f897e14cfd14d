// The callback holds only a pointer to its PythonProgress; the Python
// objects it touches (the callable, the exception kept) are used with the
// GIL held. The exception is kept as pybind11's error_already_set, which
// holds the exception object itself, so raising it again later gives the
// caller the very object (and traceback) the callable raised.
#include "progress.h"

#include <utility>

#include "absl/status/status.h"

namespace py = pybind11;

namespace ferry::python {

PythonProgress::PythonProgress(py::object fn) : fn_(std::move(fn)) {
  if (!fn_.is_none() && !PyCallable_Check(fn_.ptr())) {
    throw py::type_error("progress must be callable (bytes_done, bytes_total) or None");
  }
}

// Defined here so that dropping the callable and any kept exception happens
// where the GIL is held (the owner's scope).
PythonProgress::~PythonProgress() = default;

// Installed even without a callable: each report is also where a pending
// Ctrl-C (a signal Python's handler has recorded while the GIL was
// released) is noticed, so a copy stops within one progress interval.
ProgressCallback PythonProgress::Callback() {
  return [this](const TransferProgress& p) { return Call(p); };
}

absl::Status PythonProgress::Call(const TransferProgress& p) {
  py::gil_scoped_acquire gil;
  // Runs Python's signal handlers (main thread only; a no-op elsewhere):
  // KeyboardInterrupt, or whatever a handler raises, stops the transfer.
  if (PyErr_CheckSignals() != 0) {
    raised_.emplace();
    return absl::CancelledError("transfer stopped: interrupted by a signal (KeyboardInterrupt)");
  }
  if (fn_.is_none()) return absl::OkStatus();
  try {
    py::object total = py::none();
    if (p.bytes_total >= 0) total = py::int_(p.bytes_total);
    fn_(p.bytes_done, total);
  } catch (py::error_already_set& e) {
    raised_.emplace(std::move(e));
    return absl::CancelledError("transfer stopped: the progress callback raised an exception");
  }
  return absl::OkStatus();
}

void PythonProgress::RethrowIfRaised() {
  if (!raised_.has_value()) return;
  py::error_already_set e = std::move(*raised_);
  raised_.reset();
  throw e;
}

}  // namespace ferry::python
