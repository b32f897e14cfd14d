// ferry._core: the compiled half of the `ferry` package (ferry/__init__.py
// re-exports it). One registration function per bound concept; the
// exceptions come first because every other binding raises them.
#include <pybind11/pybind11.h>

#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "ferry's C++ core, bound with pybind11. Import `ferry`, not this module.";
  ferry::python::RegisterExceptions(m);
  ferry::python::RegisterManualClock(m);
  ferry::python::RegisterRuntime(m);
  ferry::python::RegisterTtlCache(m);
  ferry::python::RegisterOpenFile(m);
  ferry::python::RegisterNfsFiles(m);
  ferry::python::RegisterS3Client(m);
  ferry::python::RegisterFileSystems(m);
}
