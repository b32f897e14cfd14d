// OpenSharedLibrary / SymbolResolver / SharedLibraryDefining /
// FindSharedLibrary, against the C library every process has.
#include "ferry/base/shared_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>
#include <string>
#include <utility>

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

// The directory of the object holding ferry's code (this test program),
// as OpenBesideFerry finds it; empty if it is not an absolute path.
std::string FerrysDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&OpenBesideFerry), &info) == 0 || info.dli_fname == nullptr ||
      info.dli_fname[0] != '/') {
    return "";
  }
  std::string holder = info.dli_fname;
  return holder.substr(0, holder.rfind('/') + 1);
}

// A file placed beside ferry's code for one test, removed after it.
class BesideFerry {
 public:
  explicit BesideFerry(std::string name) : name_(std::move(name)), path_(FerrysDirectory() + name_) {}
  ~BesideFerry() { unlink(path_.c_str()); }
  const char* name() const { return name_.c_str(); }
  const std::string& path() const { return path_; }

 private:
  const std::string name_;
  const std::string path_;
};

std::string LibcPath() {
  Dl_info info;
  dladdr(dlsym(RTLD_DEFAULT, "gnu_get_libc_version"), &info);
  return info.dli_fname;
}

TEST(SharedLibraryTest, ACopyInScopeIsFoundFirst) {
  absl::StatusOr<FoundLibrary> found = FindSharedLibrary(
      {.defining = "gnu_get_libc_version", .beside_ferry = "libferry-no-such-stand-in.so",
       .soname = "libferry-no-such.so.1", .who = "tool", .package = "libc6"});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->name, "the process");
  EXPECT_NE(dlsym(found->handle, "gnu_get_libc_version"), nullptr);
}

TEST(SharedLibraryTest, AStandInBesideFerryComesBeforeTheSystemsLibrary) {
  if (FerrysDirectory().empty()) GTEST_SKIP() << "started by a relative name";
  BesideFerry stand_in("libferry-test-stand-in-" + std::to_string(getpid()) + ".so");
  ASSERT_EQ(symlink(LibcPath().c_str(), stand_in.path().c_str()), 0) << stand_in.path();
  absl::StatusOr<FoundLibrary> found = FindSharedLibrary(
      {.defining = "ferry_no_such_function", .beside_ferry = stand_in.name(),
       .soname = "libferry-no-such.so.1", .who = "tool", .package = "libc6"});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->name, stand_in.name());
  EXPECT_NE(dlsym(found->handle, "gnu_get_libc_version"), nullptr);
}

TEST(SharedLibraryTest, AStandInThatDoesNotLoadIsTheErrorNotASilentFallBack) {
  if (FerrysDirectory().empty()) GTEST_SKIP() << "started by a relative name";
  BesideFerry stand_in("libferry-test-broken-" + std::to_string(getpid()) + ".so");
  std::ofstream(stand_in.path()) << "not a shared object\n";
  absl::StatusOr<FoundLibrary> found = FindSharedLibrary(
      {.defining = "ferry_no_such_function", .beside_ferry = stand_in.name(), .soname = "libc.so.6",
       .who = "tool", .package = "ferry-test"});
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(found.status().message()),
              StartsWith("tool: cannot load " + stand_in.path() + ": "));
}

TEST(SharedLibraryTest, WithoutACopyOrAStandInTheSystemsLibraryIsLoaded) {
  absl::StatusOr<FoundLibrary> found = FindSharedLibrary(
      {.defining = "ferry_no_such_function", .beside_ferry = "libferry-no-such-stand-in.so",
       .soname = "libc.so.6", .who = "tool", .package = "libc6"});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->name, "libc.so.6");
  absl::StatusOr<FoundLibrary> missing = FindSharedLibrary(
      {.defining = "ferry_no_such_function", .beside_ferry = "libferry-no-such-stand-in.so",
       .soname = "libferry-no-such.so.1", .who = "tool", .package = "ferry-nothing"});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              StartsWith("tool: cannot load libferry-no-such.so.1: "));
}

}  // namespace
}  // namespace ferry
