// Helpers for the NFS integration tests: fresh folders inside the
// peer_ganesha export, URLs for them, and what the local filesystem says
// about a tree (the `find` the walker is compared with).
#ifndef FERRY_TESTS_INTEGRATION_NFS_NFS_TEST_UTIL_H_
#define FERRY_TESTS_INTEGRATION_NFS_NFS_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/nfs/nfs_client.h"
#include "ferry/runtime/runtime.h"
#include "gtest/gtest.h"

namespace ferry::nfs_test {

// The export folder of the peer_ganesha fixture.
inline constexpr char kExportDir[] = FERRY_PEER_EXPORT_DIR;

// Creates a fresh, uniquely named folder directly under the export (ganesha
// caches directories it has listed, so every test gets a new one) and
// returns its name.
std::string MakeFreshDir(std::string_view prefix);

// nfs://127.0.0.1/export/<relative>?nfsport=2049&mountport=20048[&extra]
std::string UrlFor(std::string_view relative, std::string_view extra_options = "");

// The local path of `relative` in the fresh folder `fresh` ("" for the
// folder itself).
std::string LocalPath(std::string_view fresh, std::string_view relative = "");

// A client rooted at the fresh folder `fresh` (UrlFor's URL), or null
// after a test failure saying why it could not connect.
std::unique_ptr<nfs::NfsClient> ConnectTo(Runtime& runtime, std::string_view fresh,
                                          std::string_view extra_options = "");

// A test with a client rooted at a fresh folder (MakeFreshDir(prefix)),
// connected by SetUp, which fails the test if it cannot connect. Base:
// ::testing::Test, or ::testing::TestWithParam<T> for a parameterized test.
template <typename Base = ::testing::Test>
class FreshDirTest : public Base {
 protected:
  explicit FreshDirTest(std::string prefix, const RuntimeOptions& options = {})
      : runtime_(options), prefix_(std::move(prefix)) {}

  void SetUp() override {
    fresh_ = MakeFreshDir(prefix_);
    client_ = ConnectTo(runtime_, fresh_);
    ASSERT_NE(client_, nullptr);
  }

  // The local path of `relative` in the fresh folder.
  std::string Exported(std::string_view relative) const { return LocalPath(fresh_, relative); }

  Runtime runtime_;  // first: outlives the client
  std::string fresh_;
  std::unique_ptr<nfs::NfsClient> client_;

 private:
  const std::string prefix_;
};

// What lstat says about one object, as the walker reports it.
struct LocalEntry {
  char type = '?';  // f, d, l, or ? for anything else
  uint64_t size = 0;
  uint32_t mode = 0;  // permission bits
  uint64_t inode = 0;
  friend bool operator==(const LocalEntry&, const LocalEntry&) = default;
};

// Every object below `root` (not `root` itself), keyed by its path relative
// to `root`, like `find root -mindepth 1 -printf '%P %y %s %m %i'`. Does not
// follow symlinks; descends into every directory (it runs as root).
std::map<std::string, LocalEntry> FindLocal(const std::string& root);

// Creates `path` with `size` bytes of content.
void WriteFile(const std::string& path, size_t size);

}  // namespace ferry::nfs_test

#endif  // FERRY_TESTS_INTEGRATION_NFS_NFS_TEST_UTIL_H_
