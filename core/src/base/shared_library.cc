#include "ferry/base/shared_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"

namespace ferry {

absl::StatusOr<void*> OpenSharedLibrary(const char* soname, std::string_view who,
                                        std::string_view package) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(ToAbsl(who), ": cannot load ", soname, ": ",
                                                      why != nullptr ? why : "unknown error",
                                                      " (the ", ToAbsl(package), " package)"));
  }
  return handle;
}

void* SharedLibraryDefining(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return nullptr;
  return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

void* SymbolResolver::Address(const char* symbol) {
  if (!status_.ok()) return nullptr;
  void* address = dlsym(handle_, symbol);
  if (address == nullptr) {
    status_ = absl::FailedPreconditionError(
        absl::StrCat(who_, ": ", library_, " lacks ", symbol, " (", hint_, ")"));
  }
  return address;
}

}  // namespace ferry
