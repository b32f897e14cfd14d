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
# (it needs protobuf, like records_pb2). ferry::adapters registers every
# scheme; ferry::bindings_common is what Python shares with Java.
if(NOT TARGET ferry::records)
  message(FATAL_ERROR "ferry's Python bindings need protobuf (libprotobuf-dev, protoc): run scripts/install-deps")
endif()
target_link_libraries(_core PRIVATE ferry::core ferry::nfs ferry::s3 ferry::adapters
                                    ferry::bindings_common ferry::records
                                    ferry_compile_options)
target_include_directories(_core PRIVATE ${FERRY_PYTHON_SOURCE_DIR}/src)
# abseil and protobuf stay shared objects here, unlike in the tools
# (examples/CMakeLists.txt): Debian's archives of both use local-exec TLS,
# which no shared object may contain.

# The stand-ins beside _core (OpenBesideFerry, ferry/base/shared_library.h):
# empty shared objects, one linking libcurl and one libcrypto, the libraries
# the core loads on first use. scripts/wheel's auditwheel copies what they
# link (and its closure) into the wheel, so a user's machine needs no
# libcurl4 or libssl3 of its own, and the core loads them from there; the
# module itself links neither, so `import ferry` maps neither (libcurl's
# closure was 7 ms of it, #33). gcc here links --as-needed by default (gcc
# -dumpspecs), hence --no-as-needed around what they link.
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
foreach(_ferry_dep curl crypto)
  add_library(ferry_${_ferry_dep} SHARED ${FERRY_PYTHON_SOURCE_DIR}/stand_in.cc)
  set_target_properties(ferry_${_ferry_dep} PROPERTIES
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  add_dependencies(_core ferry_${_ferry_dep})
endforeach()
target_link_libraries(ferry_curl PRIVATE -Wl,--no-as-needed CURL::libcurl -Wl,--as-needed)
target_link_libraries(ferry_crypto PRIVATE -Wl,--no-as-needed OpenSSL::Crypto -Wl,--as-needed)
