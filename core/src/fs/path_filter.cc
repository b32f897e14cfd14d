// PathFilter: rclone's glob rules, compiled once into token lists (braces
// expanded into alternatives) and matched by backtracking: paths are short
// and rules few, so no regular-expression engine is needed.
#include "ferry/fs/path_filter.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"

namespace ferry::fs {
namespace {

// More alternatives than this from one pattern's braces is a mistake, not
// a filter ({a,b}{c,d}... multiplies).
constexpr size_t kMaxAlternatives = 4096;

struct Token {
  enum class Kind { kLiteral, kOne, kStar, kDoubleStar, kClass };
  Kind kind = Kind::kLiteral;
  char literal = 0;
  bool negated = false;                          // kClass
  std::vector<std::pair<char, char>> ranges;     // kClass
};

using Glob = std::vector<Token>;

absl::Status Malformed(std::string_view pattern, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("filter pattern '", ToAbsl(pattern), "': ", ToAbsl(why)));
}

// The index of the '}' closing the '{' at `open`, or npos.
size_t ClosingBrace(std::string_view p, size_t open) {
  int depth = 0;
  for (size_t i = open; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (p[i] == '{') {
      ++depth;
    } else if (p[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

// `p` with its first brace group expanded, recursively: "a{b,c}d" ->
// {"abd", "acd"}.
absl::StatusOr<std::vector<std::string>> ExpandBraces(std::string_view p,
                                                      std::string_view whole) {
  size_t open = std::string_view::npos;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (in_class) {
      if (p[i] == ']') in_class = false;
    } else if (p[i] == '[') {
      in_class = true;
      if (i + 1 < p.size() && (p[i + 1] == '!' || p[i + 1] == '^')) ++i;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // "[]...]": ']' first is literal
    } else if (p[i] == '{') {
      open = i;
      break;
    } else if (p[i] == '}') {
      return Malformed(whole, "'}' without '{'");
    }
  }
  if (open == std::string_view::npos) return std::vector<std::string>{std::string(p)};
  if (open + 1 < p.size() && p[open + 1] == '{') {
    return Malformed(whole, "regular expressions ({{...}}) are not supported");
  }
  const size_t close = ClosingBrace(p, open);
  if (close == std::string_view::npos) return Malformed(whole, "'{' without '}'");
  // The alternatives: split the group's inside at depth-0 commas.
  std::vector<std::string_view> alternatives;
  const std::string_view inside = p.substr(open + 1, close - open - 1);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < inside.size(); ++i) {
    if (inside[i] == '\\') {
      ++i;
    } else if (inside[i] == '{') {
      ++depth;
    } else if (inside[i] == '}') {
      --depth;
    } else if (inside[i] == ',' && depth == 0) {
      alternatives.push_back(inside.substr(start, i - start));
      start = i + 1;
    }
  }
  alternatives.push_back(inside.substr(start));
  std::vector<std::string> out;
  for (std::string_view alt : alternatives) {
    std::string joined = absl::StrCat(ToAbsl(p.substr(0, open)), ToAbsl(alt),
                                      ToAbsl(p.substr(close + 1)));
    absl::StatusOr<std::vector<std::string>> more = ExpandBraces(joined, whole);
    if (!more.ok()) return more.status();
    for (std::string& m : *more) out.push_back(std::move(m));
    if (out.size() > kMaxAlternatives) return Malformed(whole, "too many {...} alternatives");
  }
  return out;
}

absl::StatusOr<Glob> Compile(std::string_view p, std::string_view whole) {
  Glob glob;
  for (size_t i = 0; i < p.size(); ++i) {
    Token t;
    const char c = p[i];
    if (c == '\\') {
      if (++i == p.size()) return Malformed(whole, "ends with '\\'");
      t.literal = p[i];
    } else if (c == '?') {
      t.kind = Token::Kind::kOne;
    } else if (c == '*') {
      t.kind = Token::Kind::kStar;
      if (i + 1 < p.size() && p[i + 1] == '*') {
        t.kind = Token::Kind::kDoubleStar;
        while (i + 1 < p.size() && p[i + 1] == '*') ++i;
      }
    } else if (c == '[') {
      t.kind = Token::Kind::kClass;
      size_t j = i + 1;
      if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
        t.negated = true;
        ++j;
      }
      bool first = true;
      for (; j < p.size() && (p[j] != ']' || first); ++j) {
        first = false;
        char lo = p[j];
        if (lo == '\\' && j + 1 < p.size()) lo = p[++j];
        char hi = lo;
        if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
          hi = p[j + 2];
          if (hi == '\\' && j + 3 < p.size()) hi = p[++j + 2];
          j += 2;
        }
        t.ranges.emplace_back(lo, hi);
      }
      if (j >= p.size()) return Malformed(whole, "'[' without ']'");
      i = j;
    } else {
      t.literal = c;
    }
    glob.push_back(std::move(t));
  }
  return glob;
}

bool ClassMatches(const Token& t, char c) {
  bool in = false;
  for (const auto& [lo, hi] : t.ranges) in = in || (c >= lo && c <= hi);
  return in != t.negated;
}

// Whether glob[ti..] matches all of s[si..].
bool Matches(const Glob& glob, size_t ti, std::string_view s, size_t si) {
  for (; ti < glob.size(); ++ti) {
    const Token& t = glob[ti];
    switch (t.kind) {
      case Token::Kind::kStar:
      case Token::Kind::kDoubleStar: {
        const bool cross = t.kind == Token::Kind::kDoubleStar;
        for (size_t end = si;; ++end) {
          if (Matches(glob, ti + 1, s, end)) return true;
          if (end == s.size() || (!cross && s[end] == '/')) return false;
        }
      }
      case Token::Kind::kOne:
        if (si == s.size() || s[si] == '/') return false;
        break;
      case Token::Kind::kClass:
        if (si == s.size() || s[si] == '/' || !ClassMatches(t, s[si])) return false;
        break;
      case Token::Kind::kLiteral:
        if (si == s.size() || s[si] != t.literal) return false;
        break;
    }
    ++si;
  }
  return si == s.size();
}

}  // namespace

struct PathFilter::Rule {
  bool include = false;
  bool anchored = false;  // a leading '/': matches from the root only
  bool dirs_only = false;  // a trailing '/': matches a file's directories
  std::vector<Glob> alternatives;

  // Whether the rule matches `s` (a file's path, or one of its
  // directories' for a directory rule): whole, or from a component start.
  bool MatchesPath(std::string_view s) const {
    for (const Glob& g : alternatives) {
      if (Matches(g, 0, s, 0)) return true;
      if (anchored) continue;
      for (size_t slash = s.find('/'); slash != std::string_view::npos;
           slash = s.find('/', slash + 1)) {
        if (Matches(g, 0, s, slash + 1)) return true;
      }
    }
    return false;
  }

  bool MatchesFile(std::string_view path) const {
    if (!dirs_only) return MatchesPath(path);
    for (size_t slash = path.find('/'); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
      if (MatchesPath(path.substr(0, slash))) return true;
    }
    return false;
  }
};

namespace {

absl::StatusOr<PathFilter::Rule> ParseRule(bool include, std::string_view pattern) {
  PathFilter::Rule rule;
  rule.include = include;
  std::string_view p = pattern;
  if (!p.empty() && p.front() == '/') {
    rule.anchored = true;
    p.remove_prefix(1);
  }
  if (!p.empty() && p.back() == '/' && !(p.size() >= 2 && p[p.size() - 2] == '\\')) {
    rule.dirs_only = true;
    p.remove_suffix(1);
  }
  if (p.empty()) return Malformed(pattern, "empty");
  absl::StatusOr<std::vector<std::string>> expanded = ExpandBraces(p, pattern);
  if (!expanded.ok()) return expanded.status();
  for (const std::string& alt : *expanded) {
    absl::StatusOr<Glob> glob = Compile(alt, pattern);
    if (!glob.ok()) return glob.status();
    rule.alternatives.push_back(*std::move(glob));
  }
  return rule;
}

}  // namespace

std::vector<std::string> ParseFilterLines(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (!line.empty() && line.front() != '#' && line.front() != ';') out.emplace_back(line);
    start = end + 1;
  }
  return out;
}

PathFilter::PathFilter() = default;
PathFilter::~PathFilter() = default;
PathFilter::PathFilter(PathFilter&&) noexcept = default;
PathFilter& PathFilter::operator=(PathFilter&&) noexcept = default;

absl::StatusOr<PathFilter> PathFilter::Create(const FilterRules& rules) {
  PathFilter f;
  auto add = [&](bool include, std::string_view pattern) -> absl::Status {
    absl::StatusOr<Rule> rule = ParseRule(include, pattern);
    if (!rule.ok()) return rule.status();
    f.rules_.push_back(*std::move(rule));
    return absl::OkStatus();
  };
  for (const std::string& p : rules.include) {
    if (absl::Status s = add(true, p); !s.ok()) return s;
  }
  for (const std::string& p : rules.exclude) {
    if (absl::Status s = add(false, p); !s.ok()) return s;
  }
  for (const std::string& line : rules.filter) {
    std::string_view r = line;
    if (r == "!") {
      f.rules_.clear();
      continue;
    }
    if (r.size() < 3 || (r[0] != '+' && r[0] != '-') || r[1] != ' ') {
      return absl::InvalidArgumentError(absl::StrCat(
          "filter rule '", ToAbsl(r), "': wants '+ PATTERN', '- PATTERN' or '!'"));
    }
    if (absl::Status s = add(r[0] == '+', r.substr(2)); !s.ok()) return s;
  }
  if (!rules.include.empty()) {
    if (absl::Status s = add(false, "/**"); !s.ok()) return s;
  }
  return f;
}

bool PathFilter::Includes(std::string_view path) const {
  for (const Rule& r : rules_) {
    if (r.MatchesFile(path)) return r.include;
  }
  return true;
}

bool PathFilter::empty() const { return rules_.empty(); }

}  // namespace ferry::fs
