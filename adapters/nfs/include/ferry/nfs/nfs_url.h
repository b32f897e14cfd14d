// nfs:// URLs, with libnfs's option names:
//
//   nfs://HOST[:NFSPORT]/EXPORT/PATH?nfsport=2049&mountport=20048&uid=1000&gid=1000
//
//   FERRY_ASSIGN_OR_RETURN(ferry::nfs::NfsUrl url,
//       ferry::nfs::ParseNfsUrl("nfs://127.0.0.1/export/sub?nfsport=2049&mountport=20048"));
//   url.host == "127.0.0.1"; url.path == "/export/sub"; *url.nfs_port == 2049;
//
// HOST is a name, an IPv4 address or a bracketed IPv6 address. The path is
// percent-decoded ("%20" is a space) and normalised: one leading '/', no
// empty, "." or trailing components; ".." is refused. Options: nfsport,
// mountport (1..65535), uid, gid (32-bit), version (only 3), and libnfs's
// auto-traverse-mounts (accepted, ignored: ferry never crosses mounts).
// Without nfsport/mountport the client asks the portmapper. Anything else
// is InvalidArgument naming the URL and what is wrong with it.
//
// Thread-safety: pure functions and plain value types.
#ifndef FERRY_NFS_NFS_URL_H_
#define FERRY_NFS_NFS_URL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace ferry::nfs {

struct NfsUrl {
  std::string host;            // without brackets for IPv6
  std::string path = "/";      // decoded, normalised, starts with '/'
  std::optional<uint16_t> nfs_port;
  std::optional<uint16_t> mount_port;
  std::optional<uint32_t> uid;  // AUTH_SYS identity; nullopt: the process's
  std::optional<uint32_t> gid;

  // "nfs://host/path" (no options, path not re-encoded), for messages.
  std::string ToString() const;
};

// Parses `url`. InvalidArgument naming the URL when it is not an nfs:// URL,
// has no host, a bad port, a bad or unknown option, or a ".." component.
absl::StatusOr<NfsUrl> ParseNfsUrl(std::string_view url);

// Joins a normalised absolute path and a relative one ("" = `base`):
// JoinNfsPath("/export", "a/b") == "/export/a/b".
std::string JoinNfsPath(std::string_view base, std::string_view relative);

// Whether `path` is `prefix` or below it, component-wise (normalised
// absolute paths; "/" holds every path): NfsPathIsUnder("/a/b", "/a").
bool NfsPathIsUnder(std::string_view path, std::string_view prefix);

// The part of `path` below `prefix`, without a leading '/' ("" for the
// prefix itself): NfsPathBelow("/export/a/b", "/export") == "a/b".
// REQUIRES: NfsPathIsUnder(path, prefix).
std::string_view NfsPathBelow(std::string_view path, std::string_view prefix);

// Splits a path into its directory and last name, trailing '/'s ignored:
// SplitNfsPath("a/b/c") == {"a/b", "c"}; SplitNfsPath("c") == {"", "c"}.
std::pair<std::string_view, std::string_view> SplitNfsPath(std::string_view path);

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS_URL_H_
