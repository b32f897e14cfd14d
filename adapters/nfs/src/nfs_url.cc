// A small, strict parser: ferry's callers paste URLs from libnfs tools, so
// the same option names work, but a misspelt option is an error rather than
// silently ignored (a walk of the wrong export as the wrong uid is worse
// than a clear refusal).
#include "ferry/nfs/nfs_url.h"

#include <charconv>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ferry/base/strings.h"

namespace ferry::nfs {
namespace {

constexpr std::string_view kScheme = "nfs://";

absl::Status Bad(std::string_view url, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad NFS URL '", ToAbsl(url), "': ", ToAbsl(why)));
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> PercentDecode(std::string_view url, std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return Bad(url, "truncated %-escape");
    const int hi = HexValue(s[i + 1]);
    const int lo = HexValue(s[i + 2]);
    if (hi < 0 || lo < 0) return Bad(url, "bad %-escape");
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

template <typename T>
absl::StatusOr<T> ParseNumber(std::string_view url, std::string_view name, std::string_view value,
                              uint64_t min, uint64_t max) {
  uint64_t v = 0;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || p != end || v < min || v > max) {
    return Bad(url, absl::StrCat("option ", ToAbsl(name), "=", ToAbsl(value), " is not a number in ",
                                 min, "..", max));
  }
  return static_cast<T>(v);
}

}  // namespace

std::string NfsUrl::ToString() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return absl::StrCat("nfs://", ipv6 ? "[" : "", host, ipv6 ? "]" : "", path == "/" ? "" : path);
}

std::string JoinNfsPath(std::string_view base, std::string_view relative) {
  if (relative.empty()) return std::string(base);
  if (base == "/") return absl::StrCat("/", ToAbsl(relative));
  return absl::StrCat(ToAbsl(base), "/", ToAbsl(relative));
}

absl::StatusOr<NfsUrl> ParseNfsUrl(std::string_view url) {
  if (url.size() < kScheme.size() || url.substr(0, kScheme.size()) != kScheme) {
    return Bad(url, "it does not start with nfs://");
  }
  std::string_view rest = url.substr(kScheme.size());
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view authority = rest;
  std::string_view path;
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    path = rest.substr(slash);
  }

  NfsUrl out;
  // Host, optionally [IPv6], optionally :port (libnfs: the NFS port).
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return Bad(url, "unterminated [IPv6] host");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Bad(url, "junk after [IPv6] host");
      port = after.substr(1);
      if (port.empty()) return Bad(url, "empty port");
    }
  } else {
    size_t colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return Bad(url, "empty port");
    }
  }
  if (out.host.empty()) return Bad(url, "no host");
  if (out.host.find_first_of("@/ \t\n") != std::string::npos) return Bad(url, "bad host");
  if (!port.empty()) {
    uint16_t nfs_port;
    if (auto p = ParseNumber<uint16_t>(url, "port", port, 1, 65535); p.ok()) {
      nfs_port = *p;
    } else {
      return p.status();
    }
    out.nfs_port = nfs_port;
  }

  // Path: decode, then normalise component by component.
  absl::StatusOr<std::string> decoded = PercentDecode(url, path);
  if (!decoded.ok()) return decoded.status();
  std::string normal;
  for (absl::string_view c : absl::StrSplit(*decoded, '/')) {
    if (c.empty() || c == ".") continue;
    if (c == "..") return Bad(url, "'..' in the path");
    if (c.find('\0') != absl::string_view::npos) return Bad(url, "NUL in the path");
    absl::StrAppend(&normal, "/", c);
  }
  out.path = normal.empty() ? "/" : normal;

  // Options.
  if (!query.empty()) {
    for (absl::string_view kv : absl::StrSplit(ToAbsl(query), '&')) {
      if (kv.empty()) continue;
      size_t eq = kv.find('=');
      if (eq == absl::string_view::npos) {
        return Bad(url, absl::StrCat("option '", kv, "' has no value"));
      }
      const std::string_view name = ToStd(kv.substr(0, eq));
      const std::string_view value = ToStd(kv.substr(eq + 1));
      if (name == "nfsport") {
        auto p = ParseNumber<uint16_t>(url, name, value, 1, 65535);
        if (!p.ok()) return p.status();
        out.nfs_port = *p;
      } else if (name == "mountport") {
        auto p = ParseNumber<uint16_t>(url, name, value, 1, 65535);
        if (!p.ok()) return p.status();
        out.mount_port = *p;
      } else if (name == "uid") {
        auto p = ParseNumber<uint32_t>(url, name, value, 0, UINT32_MAX);
        if (!p.ok()) return p.status();
        out.uid = *p;
      } else if (name == "gid") {
        auto p = ParseNumber<uint32_t>(url, name, value, 0, UINT32_MAX);
        if (!p.ok()) return p.status();
        out.gid = *p;
      } else if (name == "version") {
        if (value != "3") {
          return Bad(url, absl::StrCat("version=", ToAbsl(value), " is not supported (only 3)"));
        }
      } else if (name == "auto-traverse-mounts") {
        // Accepted for libnfs compatibility; ferry never crosses mounts.
      } else {
        return Bad(url, absl::StrCat("unknown option '", ToAbsl(name), "'"));
      }
    }
  }
  return out;
}

bool NfsPathIsUnder(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return true;
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::string_view NfsPathBelow(std::string_view path, std::string_view prefix) {
  path.remove_prefix(prefix == "/" ? 0 : prefix.size());
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return path;
}

std::pair<std::string_view, std::string_view> SplitNfsPath(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace ferry::nfs
