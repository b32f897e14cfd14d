// FileSystemRegistry and the path helpers every filesystem shares.
#include "ferry/fs/registry.h"

#include <unistd.h>

#include "ferry/fs/local_file_system.h"
#include "ferry/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/mem_file_system.h"

namespace ferry::fs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RegistryTest : public ::testing::Test {
 protected:
  Runtime runtime_{{.blocking_threads = 1}};
  FileSystemRegistry registry_{runtime_};
};

TEST_F(RegistryTest, BarePathsAndFileUrlsAreLocal) {
  absl::StatusOr<Location> a = registry_.Resolve("/tmp/x/");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->fs->scheme(), "file");
  EXPECT_EQ(a->path, "tmp/x");
  EXPECT_TRUE(a->names_directory);
  absl::StatusOr<Location> b = registry_.Resolve("file:///tmp/y");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->path, "tmp/y");
  EXPECT_FALSE(b->names_directory);
  EXPECT_EQ(a->fs, b->fs);  // one LocalFileSystem per registry
}

TEST_F(RegistryTest, RelativeLocalPathsResolveAgainstTheWorkingDirectory) {
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  absl::StatusOr<Location> a = registry_.Resolve("sub/../f.txt");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->fs->Url(a->path), JoinPath(cwd, "f.txt"));
}

TEST_F(RegistryTest, FileUrlWithAHostIsInvalid) {
  EXPECT_EQ(registry_.Resolve("file://host/x").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RegistryTest, UnknownSchemeNamesTheKnownOnes) {
  absl::Status s = registry_.Resolve("ftp://h/x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ftp://"));
  EXPECT_THAT(s.message(), HasSubstr("file://"));
}

TEST_F(RegistryTest, RegisteredSchemeResolvesThroughItsProvider) {
  ASSERT_TRUE(registry_.Register("mem", std::make_unique<testing::MemProvider>()).ok());
  absl::StatusOr<Location> a = registry_.Resolve("mem://one/a/b");
  absl::StatusOr<Location> b = registry_.Resolve("mem://one/");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->fs, b->fs);  // same name: the same filesystem
  EXPECT_EQ(a->path, "a/b");
  EXPECT_TRUE(b->names_directory);
  EXPECT_THAT(registry_.schemes(), ElementsAre("file", "mem"));
}

TEST_F(RegistryTest, RegisteringASchemeTwiceIsAlreadyExists) {
  ASSERT_TRUE(registry_.Register("mem", std::make_unique<testing::MemProvider>()).ok());
  EXPECT_EQ(registry_.Register("mem", std::make_unique<testing::MemProvider>()).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(PathTest, JoinBaseAndDirName) {
  EXPECT_EQ(JoinPath("a/b", "c"), "a/b/c");
  EXPECT_EQ(JoinPath("", "c"), "c");
  EXPECT_EQ(JoinPath("a/", "c"), "a/c");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(DirName("a/b/c"), "a/b");
  EXPECT_EQ(DirName("c"), "");
  EXPECT_EQ(NormalizePath("//a//b/"), "a/b");
}

TEST(UrlSchemeTest, OnlyRfc3986SchemeCharacters) {
  EXPECT_EQ(UrlScheme("s3://b/k"), "s3");
  EXPECT_EQ(UrlScheme("/tmp/a://b"), "");
  EXPECT_EQ(UrlScheme("noscheme"), "");
}

}  // namespace
}  // namespace ferry::fs
