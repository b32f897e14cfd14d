// PathFilter: which files of a tree a copy or sync takes, by rclone's
// filter rules, so the flags rclone users know mean the same here.
//
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::PathFilter filter,
//       ferry::fs::PathFilter::Create({.exclude = {"*.tmp", "/cache/**"}}));
//   filter.Includes("dir/a.txt");   // true
//   filter.Includes("dir/b.tmp");   // false
//
// A pattern is a glob on the path relative to the tree's root:
//   *        any run of characters but '/'      ?    one character but '/'
//   **       any run of characters, '/' too     [a-z] [!a-z] [^a-z]  a class
//   {a,b}    either alternative (nested allowed) \c   the character c
// A pattern starting with '/' is anchored at the root ("/a.txt" is only the
// top-level a.txt); otherwise it matches the end of the path at a
// component boundary ("a.txt" is a.txt in any directory, never xa.txt).
// A pattern ending in '/' names directories: it matches every file below a
// directory it matches ("- cache/" leaves out every cache directory's
// files).
//
// Rules are tried in order and the first that matches decides; a path no
// rule matches is included, unless an include rule was given (then an
// exclude of everything ends the list), as rclone does. The order is
// rclone's: the includes, then the excludes, then the filter rules
// ("+ pattern", "- pattern", "!" clears the rules so far).
//
// Thread-safety: immutable after Create; Includes may run on many threads.
#ifndef FERRY_FS_PATH_FILTER_H_
#define FERRY_FS_PATH_FILTER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ferry::fs {

struct FilterRules {
  std::vector<std::string> include;  // --include PATTERN
  std::vector<std::string> exclude;  // --exclude PATTERN
  // --filter RULE and the lines of --filter-from FILE: "+ PATTERN",
  // "- PATTERN" or "!"; blank lines and lines starting '#' or ';' are
  // ignored (ParseFilterLines).
  std::vector<std::string> filter;
};

// The rules of a --filter-from file's text, one per line.
std::vector<std::string> ParseFilterLines(std::string_view text);

class PathFilter {
 public:
  // Includes everything.
  PathFilter();
  ~PathFilter();
  PathFilter(PathFilter&&) noexcept;
  PathFilter& operator=(PathFilter&&) noexcept;

  // InvalidArgument naming the rule for a malformed one (an unclosed '[' or
  // '{', a filter rule without "+ " or "- ").
  static absl::StatusOr<PathFilter> Create(const FilterRules& rules);

  // True if the file at `path` ('/'-separated, relative to the root) is
  // taken.
  bool Includes(std::string_view path) const;

  // True if no rule was given (everything is included).
  bool empty() const;

  struct Rule;

 private:
  std::vector<Rule> rules_;
};

}  // namespace ferry::fs

#endif  // FERRY_FS_PATH_FILTER_H_
