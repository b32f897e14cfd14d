# ferry._core, the pybind11 extension: included by this project (pip's
# build) and by the repository's own build when FERRY_BUILD_PYTHON_MODULE
# is on (scripts/build release, so scripts/test-python packs that module
# instead of compiling the core a second time). REQUIRES: the core's
# targets exist.
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
find_package(pybind11 CONFIG REQUIRED)

set(FERRY_PYTHON_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR})
file(GLOB FERRY_PYTHON_SOURCES CONFIGURE_DEPENDS ${FERRY_PYTHON_SOURCE_DIR}/src/*.cc)
pybind11_add_module(_core ${FERRY_PYTHON_SOURCES})
# ferry::records: walk batches and transfer stats as records.proto bytes
# (it needs protobuf, like records_pb2). ferry::s3 needs OpenSSL (libcurl:
# below); ferry::adapters registers every scheme; ferry::bindings_common is
# what Python shares with Java.
if(NOT TARGET ferry::records)
  message(FATAL_ERROR "ferry's Python bindings need protobuf (libprotobuf-dev, protoc): run scripts/install-deps")
endif()
target_link_libraries(_core PRIVATE ferry::core ferry::nfs ferry::s3 ferry::adapters
                                    ferry::bindings_common ferry::records
                                    ferry_compile_options)
# libcurl, which ferry::s3 does not link (it loads it on the first S3 use,
# see adapters/s3/CMakeLists.txt): linked here all the same so that
# scripts/wheel's auditwheel copies it (and its closure) into the wheel, a
# user's machine needing no libcurl4 of its own; ferry::s3 finds it already
# in the process. The module takes no symbol from it, and gcc here links
# --as-needed by default (gcc -dumpspecs), so it is kept explicitly (and
# that default restored after it).
find_package(CURL REQUIRED)
target_link_libraries(_core PRIVATE -Wl,--no-as-needed CURL::libcurl -Wl,--as-needed)
target_include_directories(_core PRIVATE ${FERRY_PYTHON_SOURCE_DIR}/src)
