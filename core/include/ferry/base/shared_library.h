// A shared library loaded with dlopen on first use, and its functions
// resolved into typed pointers (libcurl for S3, libcrypto for hashes: see
// s3/curl_api.h and base/crypto.h for why each is loaded, not linked).
//
//   ZlibApi api;
//   FERRY_RETURN_IF_ERROR(ferry::FindSharedLibrary(
//       {.defining = "deflate", .beside_ferry = "libferry_zlib.so", .soname = "libz.so.1",
//        .who = "gzip", .package = "zlib1g"},
//       [&](void* handle, std::string_view name) {
//         ferry::SymbolResolver r(handle, name, "gzip", "not a zlib 1?");
//         r.Find(api.deflate, "deflate");
//         r.Find(api.inflate, "inflate");
//         return r.status();
//       }));
//
// Thread-safety: the functions are thread-safe; a SymbolResolver is one
// thread's.
#ifndef FERRY_BASE_SHARED_LIBRARY_H_
#define FERRY_BASE_SHARED_LIBRARY_H_

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ferry {

// dlopen(soname, RTLD_NOW | RTLD_LOCAL): its symbols stay out of the global
// scope, where they could interpose on another copy the program loads
// later. FailedPrecondition "<who>: cannot load <soname>: <why> (the
// <package> package)" if it cannot be loaded.
absl::StatusOr<void*> OpenSharedLibrary(const char* soname, std::string_view who,
                                        std::string_view package);

// The library that defines `symbol` in the caller's scope (one the process
// already loaded, a Python wheel's say), opened again so that every symbol
// comes from that one copy; null if none does.
void* SharedLibraryDefining(const char* symbol);

// A package's stand-in for a library loaded on first use: the file
// `file_name` in the directory of the shared object that holds ferry's
// code. The Python wheel ships libferry_curl.so and libferry_crypto.so
// beside ferry/_core*.so, each linking the wheel's own copy (auditwheel
// bundles it), so that importing ferry loads neither; dlsym on the
// stand-in's handle finds its dependency's symbols. Opened RTLD_LOCAL.
// Null, and nothing loaded, unless all of these hold: ferry's code is in a
// shared object loaded by an absolute path (a program's own code is not:
// its name comes from whoever started it); the process is not running
// with raised privileges (AT_SECURE); the directory and the file belong to
// root or to this user and no one else may write to them (a library copied
// to /tmp, as the JNI one is, must not load whatever sits beside it).
// OpenSharedLibrary's error if the file passes and does not load.
absl::StatusOr<void*> OpenBesideFerry(const char* file_name, std::string_view who,
                                      std::string_view package);

// OpenBesideFerry's second half, given the directory (ending in '/'): the
// ownership checks and the load. Exposed for tests.
absl::StatusOr<void*> OpenStandIn(const std::string& dir, const char* file_name, std::string_view who,
                                  std::string_view package);

// Where a library loaded on first use comes from, tried in order:
struct SharedLibrarySources {
  const char* defining;      // 1. a copy the process already has in scope, defining this symbol
  const char* beside_ferry;  // 2. a package's stand-in (OpenBesideFerry)
  const char* soname;        // 3. the system's
  std::string_view who;      // the component, for errors ("s3")
  std::string_view package;  // the Debian package of `soname`, for errors
};

// Finds the library and calls `resolve(handle, name)` to fill the caller's
// table from it (`name`: "the process", the stand-in's file name or the
// soname, for its errors). A copy in scope that does not resolve (an older
// version) is passed over for the next source; the stand-in's or the
// system's failure to load or resolve is the result. Handles are never
// closed: these libraries keep process-wide state.
absl::Status FindSharedLibrary(const SharedLibrarySources& sources,
                               absl::FunctionRef<absl::Status(void* handle, std::string_view name)> resolve);

// Resolves symbols of one library (a dlopen handle, or RTLD_DEFAULT) into
// typed function pointers; after the first one missing it resolves no more
// and status() says which: FailedPrecondition "<who>: <library> lacks
// <symbol> (<hint>)".
class SymbolResolver {
 public:
  SymbolResolver(void* handle, std::string_view library, std::string_view who,
                 std::string_view hint)
      : handle_(handle), library_(library), who_(who), hint_(hint) {}

  template <typename F>
  void Find(F& slot, const char* symbol) {
    static_assert(std::is_pointer_v<F>, "a function pointer");
    if (void* address = Address(symbol)) slot = reinterpret_cast<F>(address);
  }

  const absl::Status& status() const { return status_; }

 private:
  void* Address(const char* symbol);

  void* const handle_;
  const std::string library_;
  const std::string who_;
  const std::string hint_;
  absl::Status status_;
};

}  // namespace ferry

#endif  // FERRY_BASE_SHARED_LIBRARY_H_
