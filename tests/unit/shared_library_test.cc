// OpenSharedLibrary / SymbolResolver / SharedLibraryDefining, against the
// C library every process has.
#include "ferry/base/shared_library.h"

#include <dlfcn.h>

#include <cstddef>
#include <string>

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

}  // namespace
}  // namespace ferry
