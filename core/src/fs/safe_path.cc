#include "ferry/fs/safe_path.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ferry/base/strings.h"

namespace ferry::fs {

std::string EscapeForMessage(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (u < 0x20 || u == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", u);
    } else {
      out += c;
    }
  }
  return out;
}

absl::StatusOr<std::string> SafeRelativePath(std::string_view name) {
  auto refuse = [name](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("unsafe remote name \"",
                                                   EscapeForMessage(name), "\": ", ToAbsl(why)));
  };
  if (name.empty()) return refuse("empty");
  if (name.find('\0') != std::string_view::npos) return refuse("holds a NUL byte");
  if (name.front() == '/') return refuse("absolute");
  if (name.back() == '/') return refuse("ends in '/'");
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part.empty()) return refuse("has an empty component ('//')");
    if (part == "..") return refuse("has a '..' component (it would leave the destination)");
    if (part == ".") return refuse("has a '.' component");
    start = end + 1;
  }
  return std::string(name);
}

}  // namespace ferry::fs
