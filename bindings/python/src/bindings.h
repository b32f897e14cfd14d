// The registration functions module.cc calls, one per bound concept (one
// .cc file each).
#ifndef FERRY_BINDINGS_PYTHON_BINDINGS_H_
#define FERRY_BINDINGS_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace ferry::python {

void RegisterExceptions(pybind11::module_& m);  // status_exceptions.cc
void RegisterFileSystems(pybind11::module_& m);  // file_systems.cc
void RegisterManualClock(pybind11::module_& m);  // manual_clock.cc
void RegisterNfsFiles(pybind11::module_& m);     // nfs_files.cc
void RegisterOpenFile(pybind11::module_& m);     // open_file.cc
void RegisterRuntime(pybind11::module_& m);      // runtime.cc
void RegisterS3Client(pybind11::module_& m);     // s3_client.cc
void RegisterTtlCache(pybind11::module_& m);     // ttl_cache.cc

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_BINDINGS_H_
