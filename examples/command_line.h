// The tools' command-line parser (ferry-cp, ferry-sync, ferry-walk): long
// options (--jobs 4, --jobs=4), short flags (-r, combined as -rq), values
// checked against a range or a function, repeatable options, options that
// exclude or need each other, positionals, and --help / --version.
//
//   ferry_tools::CommandLine cl("ferry-walk", "Walks a tree ...");
//   cl.SetVersion("ferry-walk 0.1.0");
//   cl.Option("--in-flight", &in_flight, "listing calls in flight").TypeName("N").Range(1, kMax);
//   cl.Positional("URL", &url, "where to walk").Required();
//   if (std::optional<int> exit = cl.ParseOrExit(argc, argv)) return *exit;
//
// Why not CLI11 (which the tools used before): building its App of ~35
// options and parsing took ~0.15 ms of a ferry-cp process's ~1 ms start
// (#33: a 1-byte NFS get by ferry-cp against nfs-cp's whole run); this
// one takes a few microseconds, and its messages are the tools' own.
//
// Thread-safety: none; one thread builds, parses and reads.
#ifndef FERRY_EXAMPLES_COMMAND_LINE_H_
#define FERRY_EXAMPLES_COMMAND_LINE_H_

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "ferry/base/strings.h"

namespace ferry_tools {

class CommandLine {
 public:
  // One option, flag or positional, as declared; its setters chain.
  class Arg {
   public:
    // The placeholder help shows after the names (--jobs N).
    Arg& TypeName(std::string_view name) {
      type_name_ = std::string(name);
      return *this;
    }
    // A number outside [lo, hi] is a usage error.
    Arg& Range(int64_t lo, int64_t hi) {
      lo_ = lo;
      hi_ = hi;
      return *this;
    }
    // `check` returns "" for a good value, else what is wrong with it.
    Arg& Check(std::function<std::string(const std::string&)> check) {
      check_ = std::move(check);
      return *this;
    }
    // Giving both is a usage error (either way round).
    Arg& Excludes(Arg& other) {
      excludes_.push_back(&other);
      return *this;
    }
    // Giving this one without `other` is a usage error.
    Arg& Needs(Arg& other) {
      needs_.push_back(&other);
      return *this;
    }
    // A positional that must be given.
    Arg& Required() {
      required_ = true;
      return *this;
    }
    bool given() const { return count_ > 0; }
    // How errors and help name it: its longest name (--recursive, SRC).
    const std::string& display() const { return display_; }

   private:
    friend class CommandLine;
    enum class Kind { kFlag, kInt, kInt64, kString, kList, kPositional };

    Kind kind_ = Kind::kFlag;
    std::vector<std::string> long_names_;  // without "--"
    std::string short_names_;               // one letter each
    std::string names_;                     // as declared: "-r,-R,--recursive"
    std::string display_;
    std::string help_;
    std::string type_name_;
    int64_t lo_ = std::numeric_limits<int64_t>::min();
    int64_t hi_ = std::numeric_limits<int64_t>::max();
    std::function<std::string(const std::string&)> check_;
    std::vector<Arg*> excludes_;
    std::vector<Arg*> needs_;
    bool required_ = false;
    int count_ = 0;
    bool* flag_ = nullptr;
    int* int_ = nullptr;
    int64_t* int64_ = nullptr;
    std::string* string_ = nullptr;
    std::vector<std::string>* list_ = nullptr;
  };

  // What Parse found: go on, print help or the version, or a usage error.
  struct Outcome {
    enum class What { kGoOn, kHelp, kVersion, kError };
    What what = What::kGoOn;
    std::string error;  // kError: one line, naming the argument
  };

  CommandLine(std::string_view name, std::string_view description)
      : name_(name), description_(description) {}

  void SetVersion(std::string text) { version_ = std::move(text); }

  // `names`: comma-separated, "-x" letters and "--long" words.
  Arg& Flag(std::string_view names, bool* out, std::string_view help) {
    Arg& a = Add(names, help, Arg::Kind::kFlag);
    a.flag_ = out;
    return a;
  }
  Arg& Option(std::string_view names, int* out, std::string_view help) {
    Arg& a = Add(names, help, Arg::Kind::kInt);
    a.int_ = out;
    a.lo_ = std::numeric_limits<int>::min();
    a.hi_ = std::numeric_limits<int>::max();
    return a;
  }
  Arg& Option(std::string_view names, int64_t* out, std::string_view help) {
    Arg& a = Add(names, help, Arg::Kind::kInt64);
    a.int64_ = out;
    return a;
  }
  Arg& Option(std::string_view names, std::string* out, std::string_view help) {
    Arg& a = Add(names, help, Arg::Kind::kString);
    a.string_ = out;
    return a;
  }
  // Repeatable: each occurrence appends its value.
  Arg& Option(std::string_view names, std::vector<std::string>* out, std::string_view help) {
    Arg& a = Add(names, help, Arg::Kind::kList);
    a.list_ = out;
    return a;
  }
  // Positionals take the non-option arguments in the order declared.
  Arg& Positional(std::string_view name, std::string* out, std::string_view help) {
    Arg& a = args_.emplace_back();
    a.kind_ = Arg::Kind::kPositional;
    a.names_ = a.display_ = std::string(name);
    a.help_ = std::string(help);
    a.string_ = out;
    positionals_.push_back(&a);
    return a;
  }

  // `args`: the arguments after the program's name. -h/--help anywhere
  // (before a "--") wins over every error, as the user asked for help.
  Outcome Parse(std::span<const char* const> args) {
    for (const char* arg : args) {
      const std::string_view a(arg);
      if (a == "--") break;
      if (a == "-h" || a == "--help") return {Outcome::What::kHelp, ""};
    }
    size_t next_positional = 0;
    bool options_over = false;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string_view a(args[i]);
      if (options_over || a == "-" || a.empty() || a[0] != '-') {
        if (next_positional >= positionals_.size()) {
          return Error(ferry::Cat("unexpected argument '", a, "'"));
        }
        if (std::string e = Take(*positionals_[next_positional++], a); !e.empty()) {
          return Error(std::move(e));
        }
        continue;
      }
      if (a == "--") {
        options_over = true;
        continue;
      }
      if (a.substr(0, 2) == "--") {
        const std::string_view body = a.substr(2);
        const size_t eq = body.find('=');
        const std::string_view word = body.substr(0, eq);
        if (word == "version" && !version_.empty()) return {Outcome::What::kVersion, ""};
        Arg* arg = FindLong(word);
        if (arg == nullptr) return Error(ferry::Cat("unknown option --", word));
        std::optional<std::string_view> value;
        if (eq != std::string_view::npos) value = body.substr(eq + 1);
        if (arg->kind_ == Arg::Kind::kFlag) {
          if (value) return Error(ferry::Cat("--", word, " takes no value"));
          if (std::string e = Take(*arg, ""); !e.empty()) return Error(std::move(e));
          continue;
        }
        if (!value) {
          if (i + 1 >= args.size()) return Error(NeedsValue(*arg, ferry::Cat("--", word)));
          value = args[++i];
        }
        if (std::string e = Take(*arg, *value); !e.empty()) return Error(std::move(e));
        continue;
      }
      // -x, -xyz (flags together), -xVALUE or -x VALUE.
      for (size_t k = 1; k < a.size(); ++k) {
        Arg* arg = FindShort(a[k]);
        if (arg == nullptr) return Error(ferry::Cat("unknown option -", a.substr(k, 1)));
        if (arg->kind_ == Arg::Kind::kFlag) {
          if (std::string e = Take(*arg, ""); !e.empty()) return Error(std::move(e));
          continue;
        }
        std::string_view value = a.substr(k + 1);
        if (value.empty()) {
          if (i + 1 >= args.size()) {
            return Error(NeedsValue(*arg, ferry::Cat("-", a.substr(k, 1))));
          }
          value = args[++i];
        }
        if (std::string e = Take(*arg, value); !e.empty()) return Error(std::move(e));
        break;
      }
    }
    for (const Arg& a : args_) {
      if (a.required_ && a.count_ == 0) return Error(ferry::Cat(a.display_, " is required"));
      if (a.count_ == 0) continue;
      for (const Arg* other : a.excludes_) {
        if (other->count_ > 0) {
          return Error(ferry::Cat(a.display_, " and ", other->display_, " exclude each other"));
        }
      }
      for (const Arg* other : a.needs_) {
        if (other->count_ == 0) return Error(ferry::Cat(a.display_, " needs ", other->display_));
      }
    }
    return {};
  }

  // Parses argv; nullopt to go on, else the exit status: 0 after help or
  // the version (on stdout), 2 after a usage error (one line on stderr).
  std::optional<int> ParseOrExit(int argc, char** argv) {
    const Outcome o = Parse(std::span<const char* const>(argv + 1, argc > 0 ? argc - 1 : 0));
    switch (o.what) {
      case Outcome::What::kGoOn:
        return std::nullopt;
      case Outcome::What::kHelp:
        std::fputs(Help().c_str(), stdout);
        return 0;
      case Outcome::What::kVersion:
        std::printf("%s\n", version_.c_str());
        return 0;
      case Outcome::What::kError:
        return UsageError(o.error);
    }
    return 2;
  }

  // Prints `message` as a usage error; returns the exit status (2).
  int UsageError(std::string_view message) const {
    std::fprintf(stderr, "%s: %.*s (%s --help lists the options)\n", name_.c_str(),
                 static_cast<int>(message.size()), message.data(), name_.c_str());
    return 2;
  }

  std::string Help() const {
    std::string out = ferry::Cat(description_, "\n\nUsage: ", name_, " [OPTIONS]");
    for (const Arg* p : positionals_) ferry::CatAppend(&out, " ", p->display_);
    ferry::CatAppend(&out, "\n");
    if (!positionals_.empty()) {
      ferry::CatAppend(&out, "\nPositionals:\n");
      for (const Arg* p : positionals_) AppendHelpLine(p->display_, p->help_, &out);
    }
    ferry::CatAppend(&out, "\nOptions:\n");
    AppendHelpLine("-h,--help", "print this help and exit", &out);
    if (!version_.empty()) AppendHelpLine("--version", "print the version and exit", &out);
    for (const Arg& a : args_) {
      if (a.kind_ == Arg::Kind::kPositional) continue;
      AppendHelpLine(a.type_name_.empty() ? a.names_ : ferry::Cat(a.names_, " ", a.type_name_),
                     a.help_, &out);
    }
    return out;
  }

  const std::string& name() const { return name_; }

 private:
  static constexpr size_t kHelpColumn = 30;
  static constexpr size_t kHelpWidth = 100;

  Arg& Add(std::string_view names, std::string_view help, Arg::Kind kind) {
    Arg& a = args_.emplace_back();
    a.kind_ = kind;
    a.names_ = std::string(names);
    a.help_ = std::string(help);
    for (absl::string_view piece : absl::StrSplit(ferry::ToAbsl(names), ',')) {
      const std::string_view n = ferry::ToStd(piece);
      if (n.substr(0, 2) == "--") {
        a.long_names_.emplace_back(n.substr(2));
        if (n.size() > a.display_.size()) a.display_ = std::string(n);
      } else if (n.size() == 2 && n[0] == '-') {
        a.short_names_.push_back(n[1]);
        if (a.display_.empty()) a.display_ = std::string(n);
      }
    }
    return a;
  }

  Arg* FindLong(std::string_view word) {
    for (Arg& a : args_) {
      for (const std::string& n : a.long_names_) {
        if (n == word) return &a;
      }
    }
    return nullptr;
  }

  Arg* FindShort(char letter) {
    for (Arg& a : args_) {
      if (a.short_names_.find(letter) != std::string::npos) return &a;
    }
    return nullptr;
  }

  static std::string NeedsValue(const Arg& a, std::string_view as_given) {
    return a.type_name_.empty() ? ferry::Cat(as_given, " needs a value")
                                : ferry::Cat(as_given, " needs a value (", a.type_name_, ")");
  }

  // Stores `value` in `a`; returns what is wrong with it, or "".
  static std::string Take(Arg& a, std::string_view value) {
    ++a.count_;
    if (a.check_) {
      if (std::string why = a.check_(std::string(value)); !why.empty()) {
        return ferry::Cat(a.display_, ": ", why);
      }
    }
    switch (a.kind_) {
      case Arg::Kind::kFlag:
        *a.flag_ = true;
        return "";
      case Arg::Kind::kInt:
      case Arg::Kind::kInt64: {
        int64_t n = 0;
        if (!absl::SimpleAtoi(ferry::ToAbsl(value), &n)) {
          return ferry::Cat(a.display_, ": '", value, "' is not a whole number");
        }
        if (n < a.lo_) return ferry::Cat(a.display_, ": ", n, " is less than ", a.lo_);
        if (n > a.hi_) return ferry::Cat(a.display_, ": ", n, " is more than ", a.hi_);
        if (a.kind_ == Arg::Kind::kInt) {
          *a.int_ = static_cast<int>(n);
        } else {
          *a.int64_ = n;
        }
        return "";
      }
      case Arg::Kind::kString:
      case Arg::Kind::kPositional:
        *a.string_ = std::string(value);
        return "";
      case Arg::Kind::kList:
        a.list_->emplace_back(value);
        return "";
    }
    return "";
  }

  // "  NAMES  help", the help wrapped at kHelpWidth and its later lines
  // indented to kHelpColumn (names too long for the column get a line of
  // their own).
  static void AppendHelpLine(std::string_view left, std::string_view help, std::string* out) {
    ferry::CatAppend(out, "  ", left);
    size_t column = 2 + left.size();
    auto new_line = [&] {
      out->push_back('\n');
      out->append(kHelpColumn, ' ');
      column = kHelpColumn;
    };
    if (column + 2 > kHelpColumn) {
      new_line();
    } else {
      out->append(kHelpColumn - column, ' ');
      column = kHelpColumn;
    }
    bool first = true;
    for (absl::string_view piece : absl::StrSplit(ferry::ToAbsl(help), ' ', absl::SkipEmpty())) {
      const std::string_view word = ferry::ToStd(piece);
      if (!first && column + 1 + word.size() > kHelpWidth) {
        new_line();
      } else if (!first) {
        out->push_back(' ');
        ++column;
      }
      ferry::CatAppend(out, word);
      column += word.size();
      first = false;
    }
    out->push_back('\n');
  }

  Outcome Error(std::string message) const { return {Outcome::What::kError, std::move(message)}; }

  const std::string name_;
  const std::string description_;
  std::string version_;
  std::deque<Arg> args_;  // a deque: Arg& handed out stay valid
  std::vector<Arg*> positionals_;
};

}  // namespace ferry_tools

#endif  // FERRY_EXAMPLES_COMMAND_LINE_H_
