#include "ferry/fs/registry.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ferry/base/strings.h"
#include "ferry/fs/local_file_system.h"

namespace ferry::fs {
namespace {

// file:// URLs and bare paths: one LocalFileSystem for the registry.
class LocalProvider final : public FileSystemProvider {
 public:
  absl::StatusOr<Location> Resolve(Runtime& /*runtime*/, std::string_view url) override {
    std::string_view path = url;
    if (UrlScheme(url) == "file") {
      path.remove_prefix(7);  // "file://"
      if (!path.empty() && path.front() != '/') {
        return absl::InvalidArgumentError(absl::StrCat(
            "file URL ", ToAbsl(url), ": want file:///absolute/path (no host)"));
      }
    }
    if (path.empty()) return absl::InvalidArgumentError("empty local path");
    Location out;
    out.fs = fs_;
    out.path = LocalPathToFsPath(path);
    out.names_directory = path.back() == '/' || out.path.empty();
    out.url = std::string(url);
    return out;
  }

 private:
  const std::shared_ptr<LocalFileSystem> fs_ = std::make_shared<LocalFileSystem>();
};

}  // namespace

std::string_view UrlScheme(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) return {};
  const std::string_view scheme = url.substr(0, sep);
  // RFC 3986 scheme characters; anything else is part of a local path.
  for (const char c : scheme) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) {
      return {};
    }
  }
  return scheme;
}

FileSystemRegistry::FileSystemRegistry(Runtime& runtime) : runtime_(runtime) {
  providers_["file"] = std::make_shared<LocalProvider>();
}

FileSystemRegistry::~FileSystemRegistry() = default;

absl::Status FileSystemRegistry::Register(std::string scheme,
                                          std::unique_ptr<FileSystemProvider> provider) {
  if (scheme.empty() || provider == nullptr) {
    return absl::InvalidArgumentError("Register: wants a scheme and a provider");
  }
  MutexLock lock(&mu_);
  auto [it, inserted] = providers_.try_emplace(scheme, std::move(provider));
  if (!inserted) {
    return absl::AlreadyExistsError(absl::StrCat("scheme ", scheme, ":// is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Location> FileSystemRegistry::Resolve(std::string_view url) {
  if (url.empty()) return absl::InvalidArgumentError("empty URL");
  std::string scheme(UrlScheme(url));
  if (scheme.empty()) {
    if (url.find("://") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed URL scheme in '", ToAbsl(url), "'"));
    }
    scheme = "file";
  }
  std::shared_ptr<FileSystemProvider> provider;
  {
    MutexLock lock(&mu_);
    auto it = providers_.find(scheme);
    if (it != providers_.end()) provider = it->second;
  }
  if (provider == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown URL scheme ", scheme, ":// in '",
                                                   ToAbsl(url), "' (known: ",
                                                   absl::StrJoin(schemes(), "://, "), "://)"));
  }
  // Outside the lock: a provider may connect (seconds) and must not hold up
  // other resolutions.
  return provider->Resolve(runtime_, url);
}

std::vector<std::string> FileSystemRegistry::schemes() const {
  std::vector<std::string> out;
  {
    MutexLock lock(&mu_);
    for (const auto& [scheme, provider] : providers_) out.push_back(scheme);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ferry::fs
