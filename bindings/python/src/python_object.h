// Small helpers every binding shares: Python objects C++ may hold and drop
// on any thread, and durations given in seconds or as timedelta.
#ifndef FERRY_BINDINGS_PYTHON_PYTHON_OBJECT_H_
#define FERRY_BINDINGS_PYTHON_PYTHON_OBJECT_H_

#include <memory>
#include <utility>

#include <pybind11/pybind11.h>

#include "absl/time/time.h"

namespace ferry::python {

// True while the interpreter is shutting down: a thread that is not holding
// the GIL must not try to take it then (CPython ends such threads).
inline bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Deletes `p` with the GIL held, taking it if this thread does not hold it
// (ferry's own threads, or a caller that released it). During interpreter
// shutdown an object dropped off the GIL is leaked rather than risk the
// thread being ended mid-delete.
template <typename T>
void DeleteWithGil(T* p) {
  if (PyGILState_Check() != 0) {
    delete p;
    return;
  }
  if (InterpreterFinalizing()) return;
  pybind11::gil_scoped_acquire gil;
  delete p;
}

// A Python object that C++ can copy and drop on any thread without the GIL:
// copies share one reference; the last one takes the GIL to drop it.
using SharedObject = std::shared_ptr<const pybind11::object>;

// REQUIRES: the GIL is held.
inline SharedObject Share(pybind11::object o) {
  return SharedObject(new pybind11::object(std::move(o)), &DeleteWithGil<const pybind11::object>);
}

// A duration given from Python as seconds (int or float), a
// datetime.timedelta, or None / math.inf for "never". Raises ValueError (via
// ferry.InvalidArgumentError) for NaN or another type. REQUIRES: GIL held.
absl::Duration DurationFromPython(pybind11::handle value, const char* what);

// Seconds as a float; math.inf for InfiniteDuration.
double DurationToSeconds(absl::Duration d);

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_PYTHON_OBJECT_H_
