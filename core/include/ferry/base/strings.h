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

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ferry {

inline absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view ToStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// Appends Unicode code point `cp` (at most 0x10FFFF) as UTF-8: what XML's
// numeric character references decode to.
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

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
