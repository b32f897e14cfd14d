// ScratchDir: a fresh local directory for one test's files, removed with
// the files in it when the ScratchDir dies; ReadFile / WriteFile for whole
// files. Header-only, so tests need no CMake edit.
//
//   ferry::testing::ScratchDir dir("ferry_file_transfer_");
//   ASSERT_TRUE(dir.ok());
//   ferry::testing::WriteFile(dir.Path("in.bin"), data);
//   EXPECT_THAT(dir.Files(), ElementsAre("in.bin"));
//
// Thread-compatible.
#ifndef FERRY_TESTS_TESTING_SCRATCH_DIR_H_
#define FERRY_TESTS_TESTING_SCRATCH_DIR_H_

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace ferry::testing {

class ScratchDir {
 public:
  // Creates <gtest TempDir><prefix>XXXXXX; check ok().
  explicit ScratchDir(std::string_view prefix) {
    std::string tmpl = ::testing::TempDir() + std::string(prefix) + "XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  // Removes the files in the directory (not subdirectories), then the
  // directory.
  ~ScratchDir() {
    if (!ok()) return;
    for (const std::string& name : Files()) ::unlink(Path(name).c_str());
    ::rmdir(path_.c_str());
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // True if the directory was created.
  bool ok() const { return !path_.empty(); }
  // The path of `name` in the directory.
  std::string Path(std::string_view name) const { return path_ + "/" + std::string(name); }

  // Names in the directory, in readdir order, without "." and "..".
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    DIR* d = ::opendir(path_.c_str());
    if (d == nullptr) return names;
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    return names;
  }

 private:
  std::string path_;  // empty if mkdtemp failed
};

// The bytes of the file at `path` ("" if it cannot be read).
// A temporary file holding `bytes`, open for reading: a local source for
// the writes that take a descriptor (sendfile). Removed when destroyed.
class OpenTempFile {
 public:
  explicit OpenTempFile(const std::string& bytes) {
    char name[] = "/tmp/ferry-test-source-XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
    EXPECT_EQ(::write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  ~OpenTempFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  OpenTempFile(const OpenTempFile&) = delete;
  OpenTempFile& operator=(const OpenTempFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Makes the file at `path` hold exactly `data`.
inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_TESTING_SCRATCH_DIR_H_
