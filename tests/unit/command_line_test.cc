// The tools' command-line parser (examples/command_line.h): what a user
// may type, and the one-line error each mistake gets.
#include "command_line.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry_tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using What = CommandLine::Outcome::What;

// A command line shaped like ferry-cp's, small.
struct Tool {
  CommandLine cl{"tool", "Copies things."};
  bool recursive = false, quiet = false, progress = false;
  int jobs = 16;
  int64_t chunk = 0;
  std::string range, clean_up, older_than, src, dst;
  std::vector<std::string> include;

  Tool() {
    cl.SetVersion("tool 1.2.3");
    cl.Flag("-r,-R,--recursive", &recursive, "copy a tree");
    cl.Option("--jobs", &jobs, "files at once").TypeName("N").Range(1, std::numeric_limits<int>::max());
    cl.Option("--chunk-mib", &chunk, "chunk size").TypeName("N").Range(1, 1024);
    cl.Option("--range", &range, "a byte range").Check([](const std::string& v) {
      return v.find(':') == std::string::npos ? std::string("wants OFF:LEN") : std::string();
    });
    CommandLine::Arg& progress_flag = cl.Flag("--progress", &progress, "a bar");
    cl.Flag("-q,--quiet", &quiet, "no bar").Excludes(progress_flag);
    CommandLine::Arg& clean_up_option = cl.Option("--clean-up", &clean_up, "remove leftovers");
    cl.Option("--older-than", &older_than, "age").Needs(clean_up_option);
    cl.Option("--include", &include, "a pattern; repeatable").TypeName("PATTERN");
    cl.Positional("SRC", &src, "from");
    cl.Positional("DST", &dst, "to");
  }

  CommandLine::Outcome Parse(std::vector<const char*> args) { return cl.Parse(args); }
};

TEST(CommandLineTest, OptionValueFollowsAsTheNextArgumentOrAfterAnEqualsSign) {
  Tool a, b;
  EXPECT_EQ(a.Parse({"--jobs", "4", "x", "y"}).what, What::kGoOn);
  EXPECT_EQ(b.Parse({"--jobs=4", "x", "y"}).what, What::kGoOn);
  EXPECT_EQ(a.jobs, 4);
  EXPECT_EQ(b.jobs, 4);
}

TEST(CommandLineTest, PositionalsTakeTheOtherArgumentsInOrder) {
  Tool t;
  EXPECT_EQ(t.Parse({"x", "--jobs", "2", "y"}).what, What::kGoOn);
  EXPECT_EQ(t.src, "x");
  EXPECT_EQ(t.dst, "y");
}

TEST(CommandLineTest, ALoneDashIsAPositional) {
  Tool t;
  EXPECT_EQ(t.Parse({"-", "y"}).what, What::kGoOn);
  EXPECT_EQ(t.src, "-");
}

TEST(CommandLineTest, EverythingAfterDoubleDashIsAPositional) {
  Tool t;
  EXPECT_EQ(t.Parse({"--", "--jobs", "-r"}).what, What::kGoOn);
  EXPECT_EQ(t.src, "--jobs");
  EXPECT_EQ(t.dst, "-r");
  EXPECT_FALSE(t.recursive);
}

TEST(CommandLineTest, EachNameOfAFlagSetsIt) {
  for (const char* name : {"-r", "-R", "--recursive"}) {
    Tool t;
    EXPECT_EQ(t.Parse({name, "x", "y"}).what, What::kGoOn) << name;
    EXPECT_TRUE(t.recursive) << name;
  }
}

TEST(CommandLineTest, ShortFlagsCombine) {
  Tool t;
  EXPECT_EQ(t.Parse({"-rq", "x", "y"}).what, What::kGoOn);
  EXPECT_TRUE(t.recursive);
  EXPECT_TRUE(t.quiet);
}

TEST(CommandLineTest, ARepeatableOptionKeepsEveryValueInOrder) {
  Tool t;
  EXPECT_EQ(t.Parse({"--include", "*.a", "--include=*.b", "x", "y"}).what, What::kGoOn);
  EXPECT_THAT(t.include, ElementsAre("*.a", "*.b"));
}

TEST(CommandLineTest, HelpWinsOverEveryErrorAndListsEveryArgument) {
  Tool t;
  EXPECT_EQ(t.Parse({"--jobs=0", "--frobnicate", "-h"}).what, What::kHelp);
  const std::string help = t.cl.Help();
  for (const char* expected : {"Copies things.", "Usage: tool [OPTIONS] SRC DST", "-r,-R,--recursive",
                               "--jobs N", "--include PATTERN", "--version", "-h,--help"}) {
    EXPECT_THAT(help, HasSubstr(expected));
  }
}

TEST(CommandLineTest, VersionIsAskedForByItsFlag) {
  Tool t;
  EXPECT_EQ(t.Parse({"--version"}).what, What::kVersion);
}

TEST(CommandLineTest, HelpWrapsLongTextUnderItsColumn) {
  CommandLine cl("tool", "d");
  bool f = false;
  cl.Flag("--long", &f, std::string(30, 'a') + " " + std::string(30, 'b') + " " + std::string(30, 'c'));
  const std::string help = cl.Help();
  EXPECT_THAT(help, HasSubstr("  --long" + std::string(22, ' ') + std::string(30, 'a') + " " +
                              std::string(30, 'b') + "\n" + std::string(30, ' ') + std::string(30, 'c')));
}

// Usage errors: one line naming what was typed.
std::string ErrorOf(std::vector<const char*> args) {
  Tool t;
  CommandLine::Outcome o = t.Parse(std::move(args));
  EXPECT_EQ(o.what, What::kError);
  EXPECT_EQ(o.error.find('\n'), std::string::npos);
  return o.error;
}

TEST(CommandLineTest, AnUnknownOptionIsAnErrorNamingIt) {
  EXPECT_EQ(ErrorOf({"--frobnicate", "x", "y"}), "unknown option --frobnicate");
  EXPECT_EQ(ErrorOf({"-rz", "x", "y"}), "unknown option -z");
}

TEST(CommandLineTest, ANumberOutOfItsRangeIsAnError) {
  EXPECT_EQ(ErrorOf({"--jobs=0", "x", "y"}), "--jobs: 0 is less than 1");
  EXPECT_EQ(ErrorOf({"--chunk-mib", "2048", "x", "y"}), "--chunk-mib: 2048 is more than 1024");
  EXPECT_EQ(ErrorOf({"--jobs=99999999999", "x", "y"}), "--jobs: 99999999999 is more than 2147483647");
}

TEST(CommandLineTest, ANonNumberForANumberIsAnError) {
  EXPECT_EQ(ErrorOf({"--jobs", "four", "x", "y"}), "--jobs: 'four' is not a whole number");
}

TEST(CommandLineTest, AnOptionWithoutItsValueIsAnError) {
  EXPECT_EQ(ErrorOf({"x", "y", "--jobs"}), "--jobs needs a value (N)");
}

TEST(CommandLineTest, AFlagGivenAValueIsAnError) {
  EXPECT_EQ(ErrorOf({"--recursive=yes", "x", "y"}), "--recursive takes no value");
}

TEST(CommandLineTest, AFailedCheckIsAnErrorWithItsReason) {
  EXPECT_EQ(ErrorOf({"--range", "12", "x", "y"}), "--range: wants OFF:LEN");
}

TEST(CommandLineTest, OptionsThatExcludeEachOtherAreAnErrorEitherWayRound) {
  EXPECT_EQ(ErrorOf({"-q", "--progress", "x", "y"}), "--quiet and --progress exclude each other");
  EXPECT_EQ(ErrorOf({"--progress", "-q", "x", "y"}), "--quiet and --progress exclude each other");
}

TEST(CommandLineTest, AnOptionWithoutTheOneItNeedsIsAnError) {
  EXPECT_EQ(ErrorOf({"--older-than", "1h", "x", "y"}), "--older-than needs --clean-up");
  Tool t;
  EXPECT_EQ(t.Parse({"--older-than", "1h", "--clean-up", "u"}).what, What::kGoOn);
}

TEST(CommandLineTest, AnArgumentBeyondThePositionalsIsAnError) {
  EXPECT_EQ(ErrorOf({"x", "y", "z"}), "unexpected argument 'z'");
}

TEST(CommandLineTest, AMissingRequiredPositionalIsAnError) {
  CommandLine cl("walk", "d");
  std::string url;
  cl.Positional("URL", &url, "where").Required();
  const CommandLine::Outcome o = cl.Parse(std::vector<const char*>{});
  EXPECT_EQ(o.what, What::kError);
  EXPECT_EQ(o.error, "URL is required");
}

}  // namespace
}  // namespace ferry_tools
