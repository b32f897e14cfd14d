#include "nfs_test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace ferry::nfs_test {
namespace {

char TypeOf(mode_t m) {
  if (S_ISREG(m)) return 'f';
  if (S_ISDIR(m)) return 'd';
  if (S_ISLNK(m)) return 'l';
  return '?';
}

void FindInto(const std::string& root, const std::string& rel,
              std::map<std::string, LocalEntry>* out) {
  const std::string dir = rel.empty() ? root : absl::StrCat(root, "/", rel);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) throw std::runtime_error("opendir " + dir);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string child_rel = rel.empty() ? name : absl::StrCat(rel, "/", name);
    struct stat st;
    if (lstat(absl::StrCat(root, "/", child_rel).c_str(), &st) != 0) {
      throw std::runtime_error("lstat " + child_rel);
    }
    (*out)[child_rel] = LocalEntry{TypeOf(st.st_mode), static_cast<uint64_t>(st.st_size),
                                   static_cast<uint32_t>(st.st_mode & 07777),
                                   static_cast<uint64_t>(st.st_ino)};
    if (S_ISDIR(st.st_mode)) FindInto(root, child_rel, out);
  }
  closedir(d);
}

}  // namespace

std::string MakeFreshDir(std::string_view prefix) {
  absl::BitGen gen;
  std::string name = absl::StrCat(absl::string_view(prefix.data(), prefix.size()), "_", getpid(),
                                  "_", absl::ToUnixNanos(absl::Now()), "_",
                                  absl::Uniform<uint32_t>(gen));
  std::string path = absl::StrCat(kExportDir, "/", name);
  if (mkdir(path.c_str(), 0755) != 0) throw std::runtime_error("mkdir " + path);
  return name;
}

std::string UrlFor(std::string_view relative, std::string_view extra_options) {
  return absl::StrCat("nfs://127.0.0.1/export/", absl::string_view(relative.data(), relative.size()),
                      "?nfsport=2049&mountport=20048",
                      extra_options.empty() ? "" : "&",
                      absl::string_view(extra_options.data(), extra_options.size()));
}

std::string LocalPath(std::string_view fresh, std::string_view relative) {
  const absl::string_view f(fresh.data(), fresh.size());
  if (relative.empty()) return absl::StrCat(kExportDir, "/", f);
  return absl::StrCat(kExportDir, "/", f, "/", absl::string_view(relative.data(), relative.size()));
}

std::unique_ptr<nfs::NfsClient> ConnectTo(Runtime& runtime, std::string_view fresh,
                                          std::string_view extra_options) {
  absl::StatusOr<std::unique_ptr<nfs::NfsClient>> c =
      nfs::NfsClient::Connect(runtime, UrlFor(fresh, extra_options));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

std::map<std::string, LocalEntry> FindLocal(const std::string& root) {
  std::map<std::string, LocalEntry> out;
  FindInto(root, "", &out);
  return out;
}

void WriteFile(const std::string& path, size_t size) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path);
  std::string data(size, 'x');
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>('a' + (i * 7 + i / 13) % 26);
  if (size > 0 && write(fd, data.data(), size) != static_cast<ssize_t>(size)) {
    close(fd);
    throw std::runtime_error("write " + path);
  }
  close(fd);
}

}  // namespace ferry::nfs_test
