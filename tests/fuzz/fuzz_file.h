// A file whose contents a fuzz target sets per input, for decoders that
// read a path (the AWS shared files, the iRODS environment file): an
// in-memory file (memfd) named by /proc/self/fd/N, so no disk is touched
// and every open reads from the start.
#ifndef FERRY_TESTS_FUZZ_FUZZ_FILE_H_
#define FERRY_TESTS_FUZZ_FUZZ_FILE_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace ferry::fuzz {

class FuzzFile {
 public:
  explicit FuzzFile(const char* name) : fd_(memfd_create(name, 0)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~FuzzFile() { close(fd_); }
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;

  void Set(std::string_view contents) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < contents.size()) {
      const ssize_t n = pwrite(fd_, contents.data() + done, contents.size() - done,
                               static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace ferry::fuzz

#endif  // FERRY_TESTS_FUZZ_FUZZ_FILE_H_
