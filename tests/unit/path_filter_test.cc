// PathFilter against the examples of rclone's filtering documentation
// (rclone.org/filtering), so `--include`/`--exclude`/`--filter-from` mean
// what rclone users expect.
#include "ferry/fs/path_filter.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ferry::fs {
namespace {

PathFilter Excluding(std::string pattern) {
  absl::StatusOr<PathFilter> f = PathFilter::Create({.exclude = {std::move(pattern)}});
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : PathFilter();
}

// True if `pattern` as an exclude rule matches `path`.
bool Matches(const std::string& pattern, const std::string& path) {
  return !Excluding(pattern).Includes(path);
}

TEST(PathFilterTest, NoRulesIncludeEverything) {
  PathFilter f;
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(f.Includes("any/thing.txt"));
}

TEST(PathFilterTest, AnUnanchoredNameMatchesInAnyDirectoryButOnlyAWholeComponent) {
  EXPECT_TRUE(Matches("file.jpg", "file.jpg"));
  EXPECT_TRUE(Matches("file.jpg", "directory/file.jpg"));
  EXPECT_FALSE(Matches("file.jpg", "afile.jpg"));
  EXPECT_FALSE(Matches("file.jpg", "directory/afile.jpg"));
}

TEST(PathFilterTest, ALeadingSlashAnchorsAtTheRoot) {
  EXPECT_TRUE(Matches("/file.jpg", "file.jpg"));
  EXPECT_FALSE(Matches("/file.jpg", "afile.jpg"));
  EXPECT_FALSE(Matches("/file.jpg", "directory/file.jpg"));
}

TEST(PathFilterTest, AStarStaysWithinOneComponent) {
  EXPECT_TRUE(Matches("*.jpg", "file.jpg"));
  EXPECT_TRUE(Matches("*.jpg", "directory/file.jpg"));
  EXPECT_FALSE(Matches("*.jpg", "file.jpg/anotherfile.png"));
  EXPECT_TRUE(Matches("/*.jpg", "file.jpg"));
  EXPECT_FALSE(Matches("/*.jpg", "directory/file.jpg"));
  EXPECT_FALSE(Matches("dir/*", "dir/sub/file"));
}

TEST(PathFilterTest, ADoubleStarCrossesDirectories) {
  EXPECT_TRUE(Matches("dir/**", "dir/file"));
  EXPECT_TRUE(Matches("dir/**", "dir/sub/file"));
  EXPECT_TRUE(Matches("dir/**", "top/dir/sub/file"));
  EXPECT_FALSE(Matches("/dir/**", "top/dir/sub/file"));
  EXPECT_TRUE(Matches("/**/*.log", "a/b/c.log"));
}

TEST(PathFilterTest, AQuestionMarkIsOneCharacterButSlash) {
  EXPECT_TRUE(Matches("l?ss", "less"));
  EXPECT_TRUE(Matches("l?ss", "lass"));
  EXPECT_FALSE(Matches("l?ss", "floss"));
  EXPECT_FALSE(Matches("a?b", "a/b"));
}

TEST(PathFilterTest, BracketsAreCharacterClasses) {
  EXPECT_TRUE(Matches("h[ae]llo", "hello"));
  EXPECT_TRUE(Matches("h[ae]llo", "hallo"));
  EXPECT_FALSE(Matches("h[ae]llo", "hullo"));
  EXPECT_TRUE(Matches("file[0-9].txt", "file7.txt"));
  EXPECT_FALSE(Matches("file[!0-9].txt", "file7.txt"));
  EXPECT_TRUE(Matches("file[^0-9].txt", "fileX.txt"));
  EXPECT_TRUE(Matches("[]]x", "]x"));
}

TEST(PathFilterTest, BracesAreAlternatives) {
  EXPECT_TRUE(Matches("{one,two}_potato", "one_potato"));
  EXPECT_TRUE(Matches("{one,two}_potato", "two_potato"));
  EXPECT_FALSE(Matches("{one,two}_potato", "three_potato"));
  EXPECT_FALSE(Matches("{one,two}_potato", "_potato"));
  EXPECT_TRUE(Matches("*.{jpg,png}", "a/b.png"));
  EXPECT_TRUE(Matches("{a,b{c,d}}x", "bdx"));
}

TEST(PathFilterTest, ABackslashEscapes) {
  EXPECT_TRUE(Matches("\\*.jpg", "*.jpg"));
  EXPECT_FALSE(Matches("\\*.jpg", "file.jpg"));
}

TEST(PathFilterTest, ATrailingSlashMatchesEveryFileBelowThatDirectory) {
  EXPECT_TRUE(Matches("cache/", "cache/a"));
  EXPECT_TRUE(Matches("cache/", "x/cache/deep/a"));
  EXPECT_FALSE(Matches("cache/", "cache"));  // a file named cache
  EXPECT_FALSE(Matches("/cache/", "x/cache/a"));
}

TEST(PathFilterTest, AnIncludeExcludesWhatNoRuleIncludes) {
  absl::StatusOr<PathFilter> f = PathFilter::Create({.include = {"*.jpg"}});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->Includes("a/b.jpg"));
  EXPECT_FALSE(f->Includes("a/b.png"));
}

TEST(PathFilterTest, TheFirstMatchingRuleDecides) {
  absl::StatusOr<PathFilter> f = PathFilter::Create(
      {.filter = ParseFilterLines("# keep the secret's key\n+ secret/key.txt\n- secret/**\n")});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->Includes("secret/key.txt"));
  EXPECT_FALSE(f->Includes("secret/other.txt"));
  EXPECT_TRUE(f->Includes("public.txt"));
}

TEST(PathFilterTest, IncludesComeBeforeExcludesAsInRclone) {
  absl::StatusOr<PathFilter> f =
      PathFilter::Create({.include = {"*.txt"}, .exclude = {"secret/**"}});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->Includes("secret/a.txt"));
  EXPECT_FALSE(f->Includes("secret/a.bin"));
}

TEST(PathFilterTest, AnExclamationMarkClearsTheRulesBeforeIt) {
  absl::StatusOr<PathFilter> f = PathFilter::Create({.filter = {"- *.txt", "!", "- *.bin"}});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->Includes("a.txt"));
  EXPECT_FALSE(f->Includes("a.bin"));
}

TEST(PathFilterTest, FilterFileLinesSkipCommentsAndBlanks) {
  EXPECT_EQ(ParseFilterLines("# c\n; c\n\n  + a\r\n- b"),
            (std::vector<std::string>{"+ a", "- b"}));
}

TEST(PathFilterTest, MalformedRulesAreRefusedByName) {
  for (const FilterRules& r : {FilterRules{.exclude = {"a[bc"}}, FilterRules{.exclude = {"{a,b"}},
                               FilterRules{.exclude = {"a}"}}, FilterRules{.filter = {"* x"}},
                               FilterRules{.exclude = {"{{re.*}}"}}, FilterRules{.exclude = {"/"}}}) {
    absl::StatusOr<PathFilter> f = PathFilter::Create(r);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_NE(PathFilter::Create({.exclude = {"a[bc"}}).status().message().find("a[bc"),
            std::string::npos);
}

}  // namespace
}  // namespace ferry::fs
