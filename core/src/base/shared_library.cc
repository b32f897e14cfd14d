#include "ferry/base/shared_library.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/stat.h>
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

namespace {

// True if `path` belongs to root or this user and only its owner may write
// to it.
bool OwnedAndGuarded(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  return (st.st_uid == 0 || st.st_uid == ::geteuid()) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace

absl::StatusOr<void*> OpenBesideFerry(const char* file_name, std::string_view who,
                                      std::string_view package) {
  if (::getauxval(AT_SECURE) != 0) return nullptr;
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&OpenBesideFerry), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) == 0 ||
      map == nullptr || map->l_name == nullptr) {
    return nullptr;
  }
  // The name the object was loaded by; "" for the program itself.
  const std::string_view holder = map->l_name;
  if (holder.empty() || holder.front() != '/') return nullptr;
  return OpenStandIn(std::string(holder.substr(0, holder.rfind('/') + 1)), file_name, who, package);
}

absl::StatusOr<void*> OpenStandIn(const std::string& dir, const char* file_name, std::string_view who,
                                  std::string_view package) {
  const std::string path = dir + file_name;
  if (::access(path.c_str(), F_OK) != 0) return nullptr;
  if (!OwnedAndGuarded(dir) || !OwnedAndGuarded(path)) return nullptr;
  return OpenSharedLibrary(path.c_str(), who, package);
}

absl::Status FindSharedLibrary(const SharedLibrarySources& sources,
                               absl::FunctionRef<absl::Status(void* handle, std::string_view name)> resolve) {
  if (void* handle = SharedLibraryDefining(sources.defining);
      handle != nullptr && resolve(handle, "the process").ok()) {
    return absl::OkStatus();
  }
  absl::StatusOr<void*> beside = OpenBesideFerry(sources.beside_ferry, sources.who, sources.package);
  if (!beside.ok()) return beside.status();
  if (*beside != nullptr) return resolve(*beside, sources.beside_ferry);
  absl::StatusOr<void*> system = OpenSharedLibrary(sources.soname, sources.who, sources.package);
  if (!system.ok()) return system.status();
  return resolve(*system, sources.soname);
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
