#include "ferry/base/shared_library.h"

#include <dlfcn.h>
#include <unistd.h>

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

absl::StatusOr<void*> OpenBesideFerry(const char* file_name, std::string_view who,
                                      std::string_view package) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&OpenBesideFerry), &info) == 0 || info.dli_fname == nullptr) {
    return nullptr;
  }
  // A program's own name is argv[0], which may be relative or bare: a
  // directory taken from it could be anywhere, so only absolute paths.
  const std::string_view holder = info.dli_fname;
  if (holder.empty() || holder.front() != '/') return nullptr;
  const std::string path = std::string(holder.substr(0, holder.rfind('/') + 1)) + file_name;
  if (access(path.c_str(), F_OK) != 0) return nullptr;
  return OpenSharedLibrary(path.c_str(), who, package);
}

absl::StatusOr<FoundLibrary> FindSharedLibrary(const SharedLibrarySources& sources) {
  if (void* handle = SharedLibraryDefining(sources.defining)) return FoundLibrary{handle, "the process"};
  absl::StatusOr<void*> beside = OpenBesideFerry(sources.beside_ferry, sources.who, sources.package);
  if (!beside.ok()) return beside.status();
  if (*beside != nullptr) return FoundLibrary{*beside, sources.beside_ferry};
  absl::StatusOr<void*> system = OpenSharedLibrary(sources.soname, sources.who, sources.package);
  if (!system.ok()) return system.status();
  return FoundLibrary{*system, sources.soname};
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
