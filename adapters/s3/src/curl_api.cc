// libcurl through dlopen/dlsym (see curl_api.h for why).
#include "ferry/s3/curl_api.h"

#include <dlfcn.h>

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/shared_library.h"

namespace ferry::s3 {
namespace {

// Fills every pointer of `api` from `handle`; `library` names it in errors.
absl::Status Resolve(void* handle, std::string_view library, CurlApi& api) {
  SymbolResolver r(handle, library, "s3", "not a libcurl 4?");
  r.Find(api.global_init, "curl_global_init");
  r.Find(api.easy_init, "curl_easy_init");
  r.Find(api.easy_setopt, "curl_easy_setopt");
  r.Find(api.easy_getinfo, "curl_easy_getinfo");
  r.Find(api.easy_perform, "curl_easy_perform");
  r.Find(api.easy_reset, "curl_easy_reset");
  r.Find(api.easy_cleanup, "curl_easy_cleanup");
  r.Find(api.easy_strerror, "curl_easy_strerror");
  r.Find(api.easy_pause, "curl_easy_pause");
  r.Find(api.multi_init, "curl_multi_init");
  r.Find(api.multi_setopt, "curl_multi_setopt");
  r.Find(api.multi_add_handle, "curl_multi_add_handle");
  r.Find(api.multi_remove_handle, "curl_multi_remove_handle");
  r.Find(api.multi_socket_action, "curl_multi_socket_action");
  r.Find(api.multi_info_read, "curl_multi_info_read");
  r.Find(api.multi_cleanup, "curl_multi_cleanup");
  r.Find(api.multi_strerror, "curl_multi_strerror");
  r.Find(api.slist_append, "curl_slist_append");
  r.Find(api.slist_free_all, "curl_slist_free_all");
  return r.status();
}

absl::StatusOr<CurlApi> LoadProcessCurl() {
  // An embedding program's own libcurl, else the one a package ships beside
  // ferry (the Python wheel's), else the system's (shared_library.h).
  CurlApi api;
  if (absl::Status s = FindSharedLibrary(
          {.defining = "curl_multi_socket_action", .beside_ferry = kCurlBesideFerry,
           .soname = kCurlSoname, .who = "s3", .package = "libcurl4"},
          [&](void* handle, std::string_view name) { return Resolve(handle, name, api); });
      !s.ok()) {
    return s;
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
  absl::StatusOr<void*> handle = OpenSharedLibrary(soname, "s3", "libcurl4");
  if (!handle.ok()) return handle.status();
  CurlApi api;
  absl::Status status = Resolve(*handle, soname, api);
  if (!status.ok()) {
    dlclose(*handle);
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
