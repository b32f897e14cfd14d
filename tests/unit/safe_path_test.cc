#include "ferry/fs/safe_path.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry::fs {
namespace {

using ::testing::HasSubstr;

TEST(SafeRelativePathTest, AcceptsPlainNestedNames) {
  EXPECT_EQ(*SafeRelativePath("a/b/c.txt"), "a/b/c.txt");
  EXPECT_EQ(*SafeRelativePath("..hidden/x..y/...") , "..hidden/x..y/...");
}

TEST(SafeRelativePathTest, RefusesDotDotComponents) {
  for (const char* name : {"..", "../x", "a/../../x", "a/..", "t/../../x"}) {
    absl::StatusOr<std::string> p = SafeRelativePath(name);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(p.status().message(), HasSubstr("'..'")) << name;
  }
}

TEST(SafeRelativePathTest, RefusesAbsoluteNames) {
  EXPECT_THAT(SafeRelativePath("/etc/passwd").status().message(), HasSubstr("absolute"));
}

TEST(SafeRelativePathTest, RefusesNulBytesAndQuotesThemEscaped) {
  absl::StatusOr<std::string> p = SafeRelativePath(std::string("a\0b", 3));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("a\\x00b"));
}

TEST(SafeRelativePathTest, RefusesEmptyAndDotComponentsAndTrailingSlash) {
  EXPECT_FALSE(SafeRelativePath("").ok());
  EXPECT_FALSE(SafeRelativePath("a//b").ok());
  EXPECT_FALSE(SafeRelativePath("./a").ok());
  EXPECT_FALSE(SafeRelativePath("a/").ok());
}

TEST(EscapeForMessageTest, EscapesControlBytesAndBackslash) {
  EXPECT_EQ(EscapeForMessage("a\nb\\c\x7f"), "a\\x0ab\\\\c\\x7f");
}

}  // namespace
}  // namespace ferry::fs
