// What every walk does with a hostile or corrupt listing (walk_guard.h):
// it ends, refuses each bad name once, and never reinterprets a name. The
// generic walk (FileSystem::Walk over List) is driven here through the
// in-memory filesystem with listings edited by the test.
#include "ferry/fs/walk_guard.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/fs/file_system.h"
#include "ferry/base/strings.h"
#include "ferry/fs/safe_path.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/mem_file_system.h"

namespace ferry::fs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using testing::MemFileSystem;

Entry Listed(std::string name, EntryKind kind, uint64_t id = 0) {
  Entry e;
  e.path = std::move(name);
  e.kind = kind;
  e.id = id;
  return e;
}

// A walk's whole result, gathered.
struct Walked {
  std::vector<std::string> paths;
  std::vector<WalkError> errors;
  WalkStats stats;
};

Walked WalkAll(FileSystem& fs, std::string_view root, WalkOptions options = {}) {
  Walked w;
  absl::StatusOr<WalkStats> stats = fs.Walk(root, options, [&](WalkBatch& b) {
    for (Entry& e : b.entries) w.paths.push_back(e.path);
    for (WalkError& e : b.errors) w.errors.push_back(std::move(e));
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status();
  if (stats.ok()) w.stats = *stats;
  return w;
}

std::vector<std::string> RefusedNames(const Walked& w) {
  std::vector<std::string> names;
  for (const WalkError& e : w.errors) {
    EXPECT_TRUE(e.refused) << e.status;
    names.push_back(e.name);
  }
  return names;
}

TEST(CheckListedNameTest, AcceptsOrdinaryNamesOfAnyBytesButSlashAndNul) {
  for (const char* name : {"a", "a b", "...", ".hidden", "x..y", "\xc3\xa9t\xc3\xa9", "'q\"", "\x01"}) {
    EXPECT_TRUE(CheckListedName(name).ok()) << name;
  }
}

TEST(CheckListedNameTest, RefusesEmptyDotDotDotSlashAndNul) {
  for (std::string_view name : {std::string_view(""), std::string_view("."), std::string_view(".."),
                                std::string_view("a/b"), std::string_view("/tmp/x"),
                                std::string_view("a\0b", 3)}) {
    EXPECT_TRUE(absl::IsInvalidArgument(CheckListedName(name))) << EscapeForMessage(name);
  }
}

TEST(CheckListedPathTest, RefusesAnyBadComponentOfAFlatKey) {
  EXPECT_TRUE(CheckListedPath("a/b/c").ok());
  for (const char* rel : {"", "/a", "a//b", "a/", "../x", "a/./b", "a/.."}) {
    EXPECT_FALSE(CheckListedPath(rel).ok()) << rel;
  }
}

TEST(RefusedEntryTest, NamesTheParentAndTheRawNameEscaped) {
  WalkError e = RefusedEntry("t2", std::string("a\nb", 3), absl::InvalidArgumentError("why"));
  EXPECT_TRUE(e.refused);
  EXPECT_EQ(e.path, "t2");
  EXPECT_EQ(e.name, "a\nb");
  EXPECT_THAT(e.status.message(), HasSubstr("\"a\\x0ab\""));
  EXPECT_THAT(e.status.message(), HasSubstr("\"t2\""));
}

TEST(SplitRefusedNamesTest, MovesBadNamesOutAndKeepsTheRestInOrder) {
  std::vector<Entry> entries = {Listed("a", EntryKind::kFile), Listed("", EntryKind::kDirectory),
                                Listed("b", EntryKind::kFile), Listed("..", EntryKind::kDirectory)};
  std::vector<WalkError> refused;
  EXPECT_EQ(SplitRefusedNames("d", entries, refused), 2u);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].path, "a");
  EXPECT_EQ(entries[1].path, "b");
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[1].name, "..");
}

class GenericWalkTest : public ::testing::Test {
 protected:
  MemFileSystem mem_{"hostile"};
};

TEST_F(GenericWalkTest, ADirectoryWithAnEmptyNameIsRefusedAndTheWalkEnds) {
  mem_.PutFile("t2/good", "g");
  mem_.AddListedEntry("t2", Listed("", EntryKind::kDirectory));
  Walked w = WalkAll(mem_, "t2");
  EXPECT_THAT(w.paths, ElementsAre("good"));
  EXPECT_THAT(RefusedNames(w), ElementsAre(""));
  EXPECT_EQ(w.stats.entries_refused, 1u);
}

TEST_F(GenericWalkTest, AFileWithAnEmptyNameIsRefusedNotDropped) {
  mem_.PutFile("t/good", "g");
  mem_.AddListedEntry("t", Listed("", EntryKind::kFile));
  Walked w = WalkAll(mem_, "t");
  EXPECT_THAT(w.paths, ElementsAre("good"));
  EXPECT_THAT(RefusedNames(w), ElementsAre(""));
}

TEST_F(GenericWalkTest, AnAbsoluteNameIsRefusedNotReinterpreted) {
  mem_.PutFile("t/tmp/x", "the real t/tmp/x");
  mem_.AddListedEntry("t", Listed("/tmp/y", EntryKind::kFile));
  Walked w = WalkAll(mem_, "t");
  EXPECT_THAT(w.paths, UnorderedElementsAre("tmp", "tmp/x"));
  EXPECT_THAT(RefusedNames(w), ElementsAre("/tmp/y"));
  EXPECT_THAT(w.errors[0].status.message(), HasSubstr("absolute"));
}

TEST_F(GenericWalkTest, DotDotAndNamesWithSlashesAreRefusedAndNotDescended) {
  mem_.PutFile("t/ok", "o");
  mem_.AddListedEntry("t", Listed("..", EntryKind::kDirectory));
  mem_.AddListedEntry("t", Listed(".", EntryKind::kDirectory));
  mem_.AddListedEntry("t", Listed("../../x", EntryKind::kDirectory));
  mem_.AddListedEntry("t", Listed(std::string("a\0b", 3), EntryKind::kFile));
  Walked w = WalkAll(mem_, "t");
  EXPECT_THAT(w.paths, ElementsAre("ok"));
  EXPECT_THAT(RefusedNames(w),
              UnorderedElementsAre("..", ".", "../../x", std::string("a\0b", 3)));
}

// Listings given whole by the test: directory path -> its entries; the
// root's id from Stat. `endless`: every directory lists one new
// subdirectory "d" (a server-side loop without ids).
class ScriptedFileSystem final : public FileSystem {
 public:
  std::string_view scheme() const override { return "scripted"; }
  std::string Url(std::string_view p) const override { return absl::StrCat("scripted:/", ToAbsl(p)); }
  absl::StatusOr<Entry> Stat(std::string_view) override {
    return Listed("", EntryKind::kDirectory, root_id);
  }
  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<Entry>&)> on_batch) override {
    ++lists;
    if (endless) {
      std::vector<Entry> one = {Listed("d", EntryKind::kDirectory)};
      on_batch(one);
      return absl::OkStatus();
    }
    auto it = listings.find(std::string(dir));
    if (it == listings.end()) return absl::NotFoundError(absl::StrCat("no ", ToAbsl(dir)));
    std::vector<Entry> copy = it->second;
    if (!copy.empty()) on_batch(copy);
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<File>> OpenRead(std::string_view) override {
    return absl::UnimplementedError("scripted");
  }
  absl::StatusOr<std::unique_ptr<File>> OpenWrite(std::string_view, const WriteOptions&) override {
    return absl::UnimplementedError("scripted");
  }
  uint64_t root_id = 0;
  std::map<std::string, std::vector<Entry>> listings;
  bool endless = false;
  int lists = 0;
};

TEST_F(GenericWalkTest, ADirectoryThatListsItselfByIdIsRefused) {
  ScriptedFileSystem s;
  s.root_id = 7;
  s.listings[""] = {Listed("f", EntryKind::kFile, 1), Listed("me", EntryKind::kDirectory, 7)};
  Walked w = WalkAll(s, "");
  EXPECT_THAT(w.paths, ElementsAre("f"));
  EXPECT_THAT(RefusedNames(w), ElementsAre("me"));
  EXPECT_THAT(w.errors[0].status.message(), HasSubstr("already walked"));
  EXPECT_EQ(s.lists, 1);
}

TEST_F(GenericWalkTest, ADirectoryThatListsAnAncestorByIdIsRefused) {
  ScriptedFileSystem s;
  s.root_id = 1;
  s.listings[""] = {Listed("a", EntryKind::kDirectory, 2)};
  s.listings["a"] = {Listed("b", EntryKind::kDirectory, 3)};
  s.listings["a/b"] = {Listed("up", EntryKind::kDirectory, 1), Listed("x", EntryKind::kFile, 4)};
  Walked w = WalkAll(s, "");
  EXPECT_THAT(w.paths, ElementsAre("a", "a/b", "a/b/x"));
  EXPECT_THAT(RefusedNames(w), ElementsAre("up"));
  EXPECT_EQ(w.errors[0].path, "a/b");
  EXPECT_EQ(s.lists, 3);
}

TEST_F(GenericWalkTest, ADirectoryListedTwiceInOneListingIsWalkedOnce) {
  mem_.PutFile("t/d/f", "f");
  mem_.AddListedEntry("t", Listed("d", EntryKind::kDirectory));
  Walked w = WalkAll(mem_, "t");
  EXPECT_THAT(w.paths, ElementsAre("d", "d/f"));
  EXPECT_THAT(RefusedNames(w), ElementsAre("d"));
}

TEST_F(GenericWalkTest, AnEndlessChainOfNewDirectoriesStopsAtMaxDepth) {
  // Every directory lists a subdirectory "d" (no ids): a server-side loop
  // that only depth can end.
  ScriptedFileSystem endless;
  endless.endless = true;
  WalkOptions o;
  o.max_depth = 50;
  Walked w = WalkAll(endless, "", o);
  // The root and 50 levels below it are listed; the 51st level is refused.
  EXPECT_EQ(endless.lists, 51);
  EXPECT_EQ(w.paths.size(), 50u);
  ASSERT_EQ(w.errors.size(), 1u);
  EXPECT_TRUE(w.errors[0].refused);
  EXPECT_THAT(w.errors[0].status.message(), HasSubstr("max_depth"));
}

TEST_F(GenericWalkTest, EveryListedEntryIsReportedOrRefusedExactlyOnce) {
  mem_.PutFile("t/a", "a");
  mem_.PutFile("t/s/b", "b");
  mem_.AddListedEntry("t/s", Listed("", EntryKind::kFile));
  mem_.AddListedEntry("t/s", Listed("c/d", EntryKind::kFile));
  Walked w = WalkAll(mem_, "t");
  std::multiset<std::string> seen(w.paths.begin(), w.paths.end());
  EXPECT_EQ(seen.size(), 3u);  // a, s, s/b
  EXPECT_EQ(w.errors.size(), 2u);
  EXPECT_EQ(w.stats.entries, 3u);
  EXPECT_EQ(w.stats.entries_refused, 2u);
  EXPECT_EQ(w.stats.errors, 2u);
}

TEST_F(GenericWalkTest, AnOrdinaryTreeHasNoRefusals) {
  mem_.PutFile("t/a b/c", "x");
  mem_.PutFile("t/.hidden", "y");
  Walked w = WalkAll(mem_, "t");
  EXPECT_THAT(w.paths, UnorderedElementsAre("a b", "a b/c", ".hidden"));
  EXPECT_THAT(w.errors, IsEmpty());
}

}  // namespace
}  // namespace ferry::fs
