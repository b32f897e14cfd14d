// CurlApi: the libcurl functions the S3 adapter calls, reached through
// pointers that the first S3 use fills (dlopen + dlsym), so that a tool or
// program that never touches an S3 URL neither loads libcurl nor pays, at
// start-up, for libcurl's closure (TLS, Kerberos, LDAP, SSH, ... libraries:
// about 30 shared objects, most of ferry-cp's start-up; issue #33).
//
// curl/curl.h is still included for the types and constants; only the
// calls go through the table. A process that already links a libcurl
// uses that one; otherwise the stand-in a package ships beside ferry's code
// (libferry_curl.so: the Python wheel's, linking the libcurl it carries),
// otherwise "libcurl.so.4", loaded with dlopen (FindSharedLibrary). A
// missing library or symbol is an absl::Status naming it, never a crash.
//
//   FERRY_ASSIGN_OR_RETURN(const CurlApi* curl, Curl());
//   CURL* easy = curl->easy_init();
//
// Thread-safety: Curl() is safe to call from any thread; the first call
// loads (a function-local static, initialised once under the C++ runtime's
// guard, which also runs curl_global_init exactly once) and every later
// call returns the same table or the same error. The table is immutable
// and lives until the process exits (the library is never dlclose'd:
// libcurl and its TLS library keep process-wide state).
#ifndef FERRY_S3_CURL_API_H_
#define FERRY_S3_CURL_API_H_

#include <curl/curl.h>

#include "absl/status/statusor.h"

namespace ferry::s3 {

struct CurlApi {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_easy_pause) easy_pause = nullptr;
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_setopt) multi_setopt = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_socket_action) multi_socket_action = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
  decltype(&::curl_multi_strerror) multi_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
};

// The soname Curl() loads when the process has no libcurl of its own and
// no package put kCurlBesideFerry beside ferry.
inline constexpr char kCurlSoname[] = "libcurl.so.4";
inline constexpr char kCurlBesideFerry[] = "libferry_curl.so";

// The process's libcurl, loaded and initialised (curl_global_init) on the
// first call. FailedPrecondition "s3: cannot load <library>: <dlerror>"
// (or "... lacks <symbol>"; <library>: libcurl.so.4, or the path of a
// package's stand-in) when it cannot be.
absl::StatusOr<const CurlApi*> Curl();

// Loads `soname` with dlopen and looks every function up in it, without
// initialising it: Curl()'s own step, exposed so tests can give it a
// library that is not there. The handle is never closed.
absl::StatusOr<CurlApi> LoadCurlApi(const char* soname);

}  // namespace ferry::s3

#endif  // FERRY_S3_CURL_API_H_
