// A shared library loaded with dlopen on first use, and its functions
// resolved into typed pointers (libcurl for S3, libcrypto for hashes: see
// s3/curl_api.h and base/crypto.h for why each is loaded, not linked).
//
//   FERRY_ASSIGN_OR_RETURN(ferry::FoundLibrary zlib, ferry::FindSharedLibrary({
//       .defining = "deflate", .beside_ferry = "libferry_zlib.so",
//       .soname = "libz.so.1", .who = "gzip", .package = "zlib1g"}));
//   ferry::SymbolResolver r(zlib.handle, zlib.name, "gzip", "not a zlib 1?");
//   r.Find(api.deflate, "deflate");
//   r.Find(api.inflate, "inflate");
//   if (!r.status().ok()) { dlclose(handle); return r.status(); }
//
// Thread-safety: the functions are thread-safe; a SymbolResolver is one
// thread's.
#ifndef FERRY_BASE_SHARED_LIBRARY_H_
#define FERRY_BASE_SHARED_LIBRARY_H_

#include <string>
#include <string_view>
#include <type_traits>

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
// Null if there is no such file there, or ferry's code is not in an object
// named by an absolute path (a program started by a relative name);
// OpenSharedLibrary's error if the file is there but does not load.
absl::StatusOr<void*> OpenBesideFerry(const char* file_name, std::string_view who,
                                      std::string_view package);

// Where a library loaded on first use comes from, first found wins:
struct SharedLibrarySources {
  const char* defining;      // 1. a copy the process already has in scope, defining this symbol
  const char* beside_ferry;  // 2. a package's stand-in (OpenBesideFerry)
  const char* soname;        // 3. the system's
  std::string_view who;      // the component, for errors ("s3")
  std::string_view package;  // the Debian package of `soname`, for errors
};

struct FoundLibrary {
  void* handle;      // for dlsym; never closed (the libraries keep process-wide state)
  std::string name;  // for errors: "the process", the stand-in's file name or the soname
};

// The library, from the first of `sources` that has it; the soname's
// FailedPrecondition when none does.
absl::StatusOr<FoundLibrary> FindSharedLibrary(const SharedLibrarySources& sources);

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
