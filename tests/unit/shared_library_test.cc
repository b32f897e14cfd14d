// OpenSharedLibrary / SymbolResolver / SharedLibraryDefining /
// FindSharedLibrary, against the C library every process has.
#include "ferry/base/shared_library.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(SharedLibraryTest, AMissingLibraryIsAnErrorNamingItAndItsPackage) {
  absl::StatusOr<void*> h = OpenSharedLibrary("libferry-no-such.so.1", "tool", "ferry-nothing");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(h.status().message()), StartsWith("tool: cannot load libferry-no-such.so.1: "));
  EXPECT_THAT(std::string(h.status().message()), EndsWith("(the ferry-nothing package)"));
}

TEST(SharedLibraryTest, FindFillsTypedPointersThatWork) {
  absl::StatusOr<void*> h = OpenSharedLibrary("libc.so.6", "tool", "libc6");
  ASSERT_TRUE(h.ok()) << h.status();
  size_t (*length)(const char*) = nullptr;
  SymbolResolver r(*h, "libc.so.6", "tool", "not a C library?");
  r.Find(length, "strlen");
  ASSERT_TRUE(r.status().ok()) << r.status();
  ASSERT_NE(length, nullptr);
  EXPECT_EQ(length("ferry"), 5u);
  dlclose(*h);
}

TEST(SharedLibraryTest, TheFirstMissingSymbolIsTheErrorAndLaterOnesAreNotLookedUp) {
  absl::StatusOr<void*> h = OpenSharedLibrary("libc.so.6", "tool", "libc6");
  ASSERT_TRUE(h.ok()) << h.status();
  int (*missing)() = nullptr;
  size_t (*length)(const char*) = nullptr;
  SymbolResolver r(*h, "libc.so.6", "tool", "not a C library?");
  r.Find(missing, "ferry_no_such_function");
  r.Find(length, "strlen");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "tool: libc.so.6 lacks ferry_no_such_function (not a C library?)");
  EXPECT_EQ(missing, nullptr);
  EXPECT_EQ(length, nullptr);
  dlclose(*h);
}

TEST(SharedLibraryTest, TheLibraryDefiningASymbolInScopeIsFound) {
  // A symbol of glibc's own that no sanitizer intercepts (strlen, say,
  // resolves to the sanitizer's copy in the test binary under ASan).
  void* h = SharedLibraryDefining("gnu_get_libc_version");
  ASSERT_NE(h, nullptr);
  EXPECT_NE(dlsym(h, "gnu_get_libc_version"), nullptr);
  dlclose(h);
  EXPECT_EQ(SharedLibraryDefining("ferry_no_such_function"), nullptr);
}

std::string LibcPath() {
  Dl_info info;
  dladdr(dlsym(RTLD_DEFAULT, "gnu_get_libc_version"), &info);
  return info.dli_fname;
}

// A directory of this test's, with `mode`, removed at the end.
class StandInDir {
 public:
  explicit StandInDir(mode_t mode) {
    char name[] = "/tmp/ferry-stand-in-XXXXXX";
    dir_ = std::string(mkdtemp(name)) + "/";
    chmod(dir_.c_str(), mode);
  }
  ~StandInDir() {
    for (const char* f : {"libc-stand-in.so", "broken.so"}) unlink((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

absl::Status ResolveGlibcVersion(void* handle, std::string_view) {
  return dlsym(handle, "gnu_get_libc_version") != nullptr ? absl::OkStatus()
                                                          : absl::NotFoundError("no gnu_get_libc_version");
}

TEST(SharedLibraryTest, AStandInInAGuardedDirectoryLoads) {
  StandInDir d(0755);
  ASSERT_EQ(symlink(LibcPath().c_str(), (d.dir() + "libc-stand-in.so").c_str()), 0);
  absl::StatusOr<void*> h = OpenStandIn(d.dir(), "libc-stand-in.so", "tool", "libc6");
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_NE(*h, nullptr);
  EXPECT_NE(dlsym(*h, "gnu_get_libc_version"), nullptr);
}

TEST(SharedLibraryTest, AStandInInADirectoryOthersMayWriteToIsIgnored) {
  StandInDir d(0777);  // /tmp's kind of directory: whoever wrote the file is unknown
  ASSERT_EQ(symlink(LibcPath().c_str(), (d.dir() + "libc-stand-in.so").c_str()), 0);
  absl::StatusOr<void*> h = OpenStandIn(d.dir(), "libc-stand-in.so", "tool", "libc6");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, nullptr);
}

TEST(SharedLibraryTest, AStandInThatDoesNotLoadIsAnErrorNotASilentFallBack) {
  StandInDir d(0755);
  std::ofstream(d.dir() + "broken.so") << "not a shared object\n";
  absl::StatusOr<void*> h = OpenStandIn(d.dir(), "broken.so", "tool", "ferry-test");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(h.status().message()), StartsWith("tool: cannot load " + d.dir() + "broken.so: "));
}

TEST(SharedLibraryTest, NoStandInIsLookedForBesideAProgramsOwnCode) {
  // ferry is linked into this test program: its name came from whoever
  // started it, so nothing beside it is trusted.
  absl::StatusOr<void*> h = OpenBesideFerry("libc.so.6", "tool", "libc6");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, nullptr);
}

TEST(SharedLibraryTest, ACopyInScopeIsUsedFirst) {
  std::string used;
  absl::Status s = FindSharedLibrary(
      {.defining = "gnu_get_libc_version", .beside_ferry = "libferry-no-such-stand-in.so",
       .soname = "libferry-no-such.so.1", .who = "tool", .package = "libc6"},
      [&](void* handle, std::string_view name) {
        used = name;
        return ResolveGlibcVersion(handle, name);
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(used, "the process");
}

TEST(SharedLibraryTest, ACopyInScopeThatDoesNotResolveIsPassedOverForTheSystemsLibrary) {
  std::vector<std::string> tried;
  absl::Status s = FindSharedLibrary(
      {.defining = "gnu_get_libc_version", .beside_ferry = "libferry-no-such-stand-in.so",
       .soname = "libc.so.6", .who = "tool", .package = "libc6"},
      [&](void*, std::string_view name) {
        tried.emplace_back(name);
        return tried.size() == 1 ? absl::NotFoundError("an older version") : absl::OkStatus();
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(tried, ::testing::ElementsAre("the process", "libc.so.6"));
}

TEST(SharedLibraryTest, WithoutAnyCopyTheSystemsLoadErrorIsTheResult) {
  absl::Status s = FindSharedLibrary(
      {.defining = "ferry_no_such_function", .beside_ferry = "libferry-no-such-stand-in.so",
       .soname = "libferry-no-such.so.1", .who = "tool", .package = "ferry-nothing"},
      [](void* handle, std::string_view name) { return ResolveGlibcVersion(handle, name); });
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), StartsWith("tool: cannot load libferry-no-such.so.1: "));
}

}  // namespace
}  // namespace ferry
