// libcurl through dlopen/dlsym (see curl_api.h for why).
#include "ferry/s3/curl_api.h"

#include <dlfcn.h>

#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ferry::s3 {
namespace {

// Fills every pointer of `api` from `handle` (a dlopen handle or
// RTLD_DEFAULT); `library` names it in errors.
absl::Status Resolve(void* handle, const char* library, CurlApi& api) {
  absl::Status status;
  auto find = [&](auto& slot, const char* symbol) {
    if (!status.ok()) return;
    void* address = dlsym(handle, symbol);
    if (address == nullptr) {
      status = absl::FailedPreconditionError(
          absl::StrCat("s3: ", library, " lacks ", symbol, " (not a libcurl 4?)"));
      return;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  find(api.global_init, "curl_global_init");
  find(api.easy_init, "curl_easy_init");
  find(api.easy_setopt, "curl_easy_setopt");
  find(api.easy_getinfo, "curl_easy_getinfo");
  find(api.easy_perform, "curl_easy_perform");
  find(api.easy_reset, "curl_easy_reset");
  find(api.easy_cleanup, "curl_easy_cleanup");
  find(api.easy_strerror, "curl_easy_strerror");
  find(api.easy_pause, "curl_easy_pause");
  find(api.multi_init, "curl_multi_init");
  find(api.multi_setopt, "curl_multi_setopt");
  find(api.multi_add_handle, "curl_multi_add_handle");
  find(api.multi_remove_handle, "curl_multi_remove_handle");
  find(api.multi_socket_action, "curl_multi_socket_action");
  find(api.multi_info_read, "curl_multi_info_read");
  find(api.multi_cleanup, "curl_multi_cleanup");
  find(api.multi_strerror, "curl_multi_strerror");
  find(api.slist_append, "curl_slist_append");
  find(api.slist_free_all, "curl_slist_free_all");
  return status;
}

absl::StatusOr<CurlApi> LoadProcessCurl() {
  CurlApi api;
  // A libcurl this process already links (the Python wheel's, whose soname
  // auditwheel renames) is found from our own scope; no second copy.
  if (dlsym(RTLD_DEFAULT, "curl_multi_socket_action") == nullptr ||
      !Resolve(RTLD_DEFAULT, "the process", api).ok()) {
    absl::StatusOr<CurlApi> loaded = LoadCurlApi(kCurlSoname);
    if (!loaded.ok()) return loaded.status();
    api = *loaded;
  }
  const CURLcode rc = api.global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) {
    return absl::FailedPreconditionError(absl::StrCat("s3: curl_global_init failed: ",
                                                      api.easy_strerror(rc)));
  }
  return api;
}

}  // namespace

absl::StatusOr<CurlApi> LoadCurlApi(const char* soname) {
  // RTLD_LOCAL: curl's symbols stay out of the global scope, where they
  // could interpose on another copy the program loads later.
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("s3: cannot load ", soname, ": ", why != nullptr ? why : "unknown error",
                     " (the libcurl4 package)"));
  }
  CurlApi api;
  absl::Status status = Resolve(handle, soname, api);
  if (!status.ok()) {
    dlclose(handle);
    return status;
  }
  return api;
}

absl::StatusOr<const CurlApi*> Curl() {
  // Initialised once, by the first caller, under the C++ runtime's guard
  // for function-local statics; never destroyed (no exit-time ordering).
  static const absl::StatusOr<CurlApi>* const loaded =
      new absl::StatusOr<CurlApi>(LoadProcessCurl());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

}  // namespace ferry::s3
