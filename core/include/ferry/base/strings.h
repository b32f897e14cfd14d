// Bridges between std::string_view and absl::string_view.
//
// Debian's abseil is built with ABSL_OPTION_USE_STD_STRING_VIEW=0, so
// absl::string_view is its own type and a std::string_view does not convert
// to it implicitly. ferry's public APIs take std::string_view (what C++20
// users hold); code that hands one to abseil (StrCat, Status) wraps it:
//
//   absl::StrCat("lookup ", ferry::ToAbsl(path), ": ", status.message());
//   ferry::Cat("lookup ", path, ": ", status.message());   // the same
#ifndef FERRY_BASE_STRINGS_H_
#define FERRY_BASE_STRINGS_H_

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ferry {

inline absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view ToStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

namespace strings_internal {
inline absl::string_view CatArg(std::string_view s) { return ToAbsl(s); }
template <typename T>
const T& CatArg(const T& v) {
  return v;
}
}  // namespace strings_internal

// absl::StrCat / StrAppend that also take std::string_view arguments.
template <typename... Args>
std::string Cat(const Args&... args) {
  return absl::StrCat(strings_internal::CatArg(args)...);
}
template <typename... Args>
void CatAppend(std::string* out, const Args&... args) {
  absl::StrAppend(out, strings_internal::CatArg(args)...);
}

}  // namespace ferry

#endif  // FERRY_BASE_STRINGS_H_
