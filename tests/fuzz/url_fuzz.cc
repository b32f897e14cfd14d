// Fuzzes URL parsing: the core registry's scheme dispatch and file:// /
// local paths, and each adapter's parser (ParseNfsUrl, S3UrlToKey,
// ParseIrodsUrl), with the name checks every copied path goes through
// (SafeRelativePath, NormalizePath).
//
// The registry resolves through providers that run the adapter's real
// parser and stop before connecting (the real providers parse, then
// connect). Whatever the URL: a location or InvalidArgument; an NFS path
// is absolute and normalised with no ".." component; a normalised path
// has no empty component and is stable; a name SafeRelativePath accepts
// has no "..", "." or empty component.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/str_split.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"
#include "ferry/fs/safe_path.h"
#include "ferry/irods/irods_file_system.h"
#include "ferry/nfs/nfs_url.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_client.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;

// Runs `parse` (an adapter's URL parser) and answers what it found as a
// location on no filesystem.
template <typename Parse>
class ParsingProvider final : public ferry::fs::FileSystemProvider {
 public:
  explicit ParsingProvider(Parse parse) : parse_(parse) {}
  absl::StatusOr<ferry::fs::Location> Resolve(ferry::Runtime&, std::string_view url) override {
    absl::Status s = parse_(url);
    if (!s.ok()) return s;
    return ferry::fs::Location{nullptr, ferry::fs::NormalizePath(url), false, std::string(url)};
  }

 private:
  Parse parse_;
};

template <typename Parse>
std::unique_ptr<ferry::fs::FileSystemProvider> Provider(Parse parse) {
  return std::make_unique<ParsingProvider<Parse>>(parse);
}

absl::Status CheckNfs(std::string_view url) {
  absl::StatusOr<ferry::nfs::NfsUrl> u = ferry::nfs::ParseNfsUrl(url);
  if (!u.ok()) return u.status();
  Check(!u->host.empty());
  Check(!u->path.empty() && u->path[0] == '/');
  if (u->path != "/") {
    for (absl::string_view c : absl::StrSplit(absl::string_view(u->path).substr(1), '/')) {
      Check(!c.empty() && c != "." && c != "..");
    }
  }
  if (u->nfs_port.has_value()) Check(*u->nfs_port != 0);
  if (u->mount_port.has_value()) Check(*u->mount_port != 0);
  (void)u->ToString();
  return absl::OkStatus();
}

absl::Status CheckS3(std::string_view url) {
  absl::StatusOr<std::string> key = ferry::s3::S3UrlToKey(url);
  if (!key.ok()) return key.status();
  Check(!key->empty() && (*key)[0] != '/');
  return absl::OkStatus();
}

absl::Status CheckIrods(std::string_view url) {
  absl::StatusOr<ferry::irods::IrodsUrl> u = ferry::irods::ParseIrodsUrl(url);
  if (!u.ok()) return u.status();
  Check(!u->account.host.empty() && !u->account.zone.empty());
  Check(u->path == ferry::fs::NormalizePath(u->path));
  return absl::OkStatus();
}

ferry::fs::FileSystemRegistry* NewRegistry() {
  static ferry::Runtime* runtime = new ferry::Runtime({.io_threads = 1, .blocking_threads = 1});
  auto* r = new ferry::fs::FileSystemRegistry(*runtime);
  Check(r->Register("nfs", Provider(CheckNfs)).ok());
  Check(r->Register("s3", Provider(CheckS3)).ok());
  Check(r->Register("irods", Provider(CheckIrods)).ok());
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // ParseIrodsUrl reads the iRODS environment: make it empty.
  setenv("IRODS_ENVIRONMENT_FILE", "/nonexistent-ferry-fuzz", 1);
  for (const char* v : {"IRODS_HOST", "IRODS_PORT", "IRODS_USER_NAME", "IRODS_ZONE_NAME"}) unsetenv(v);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ferry::fs::FileSystemRegistry* registry = NewRegistry();
  const std::string url(reinterpret_cast<const char*>(data), size);  // exact size for ASan

  absl::StatusOr<ferry::fs::Location> at = registry->Resolve(url);
  if (!at.ok()) {
    Check(at.status().code() == absl::StatusCode::kInvalidArgument);
    Check(!at.status().message().empty());
  }
  // Each parser sees every input, not only its own scheme's.
  (void)CheckNfs(url);
  (void)CheckS3(url);
  (void)CheckIrods(url);

  const std::string normal = ferry::fs::NormalizePath(url);
  Check(ferry::fs::NormalizePath(normal) == normal);
  Check(normal.empty() || (normal.front() != '/' && normal.back() != '/'));
  Check(normal.find("//") == std::string::npos);

  absl::StatusOr<std::string> safe = ferry::fs::SafeRelativePath(url);
  if (safe.ok()) {
    Check(!safe->empty() && (*safe)[0] != '/' && safe->find('\0') == std::string::npos);
    for (absl::string_view c : absl::StrSplit(*safe, '/')) Check(!c.empty() && c != "." && c != "..");
  } else {
    Check(safe.status().code() == absl::StatusCode::kInvalidArgument);
  }
  return 0;
}
