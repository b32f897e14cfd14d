// WalkTree against nfs-ganesha: the walker's view of a tree must equal what
// the local filesystem (lstat, like `find -printf '%P %y %s %m'`) says about
// the exported folder, entry for entry, for trees with odd names, empty and
// deep directories, a 10,000-entry directory, symlinks and an unreadable
// directory; and it must get there with READDIRPLUS alone.
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/tree_walker.h"
#include "ferry/runtime/runtime.h"
#include "nfs_test_util.h"

namespace ferry::nfs {
namespace {

using nfs_test::FindLocal;
using nfs_test::LocalEntry;
using ::testing::HasSubstr;

char TypeLetter(FileType t) {
  switch (t) {
    case FileType::kRegular: return 'f';
    case FileType::kDirectory: return 'd';
    case FileType::kSymlink: return 'l';
    default: return '?';
  }
}

struct WalkOutcome {
  std::map<std::string, LocalEntry> entries;
  std::vector<WalkError> errors;
  WalkStats stats;
  size_t duplicates = 0;
  size_t largest_batch = 0;
};

class WalkerTest : public ::testing::Test {
 protected:
  void SetUp() override { fresh_ = nfs_test::MakeFreshDir("walk"); }

  std::string Local(std::string_view rel = "") const { return nfs_test::LocalPath(fresh_, rel); }

  // Directories d0..d<dirs-1>, each with files f0..f<files-1> of
  // size_of(i) bytes.
  void MakeDirsOfFiles(int dirs, int files, absl::FunctionRef<size_t(int)> size_of) {
    for (int d = 0; d < dirs; ++d) {
      mkdir(Local(absl::StrCat("d", d)).c_str(), 0755);
      for (int f = 0; f < files; ++f) {
        nfs_test::WriteFile(Local(absl::StrCat("d", d, "/f", f)), size_of(f));
      }
    }
  }

  std::unique_ptr<NfsClient> Connect(std::string_view extra_options = "") {
    return nfs_test::ConnectTo(runtime_, fresh_, extra_options);
  }

  // 30 directories of 50 empty files (1,530 entries: many batches of 100),
  // and a client.
  std::unique_ptr<NfsClient> ConnectToManyEntries() {
    MakeDirsOfFiles(30, 50, [](int) { return 0; });
    return Connect();
  }

  WalkOutcome Walk(NfsClient& client, const WalkOptions& options = {}) {
    WalkOutcome out;
    absl::StatusOr<WalkStats> stats = WalkTree(client, "", options, [&](WalkBatch& b) {
      out.largest_batch = std::max(out.largest_batch, b.entries.size());
      for (const WalkEntry& e : b.entries) {
        LocalEntry le{TypeLetter(e.type), e.size, e.mode, e.fileid};
        if (!out.entries.emplace(e.path, le).second) ++out.duplicates;
      }
      for (WalkError& e : b.errors) out.errors.push_back(std::move(e));
      return true;
    });
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (stats.ok()) out.stats = *stats;
    return out;
  }

  // Walks the fresh folder and expects exactly what lstat sees.
  void ExpectWalkEqualsFind(const WalkOptions& options = {}) {
    std::unique_ptr<NfsClient> client = Connect();
    ASSERT_NE(client, nullptr);
    const std::map<std::string, LocalEntry> expected = FindLocal(Local());
    WalkOutcome got = Walk(*client, options);
    EXPECT_EQ(got.duplicates, 0u);
    EXPECT_TRUE(got.errors.empty());
    EXPECT_EQ(got.entries.size(), expected.size());
    for (const auto& [path, e] : expected) {
      auto it = got.entries.find(path);
      if (it == got.entries.end()) {
        ADD_FAILURE() << "walker missed '" << path << "'";
        continue;
      }
      EXPECT_EQ(it->second.type, e.type) << path;
      EXPECT_EQ(it->second.size, e.size) << path;
      EXPECT_EQ(it->second.mode, e.mode) << path;
      EXPECT_EQ(it->second.inode, e.inode) << path << " (fileid vs inode)";
    }
    for (const auto& [path, e] : got.entries) {
      EXPECT_TRUE(expected.count(path)) << "walker invented '" << path << "'";
    }
    EXPECT_EQ(got.stats.entries, expected.size());
  }

  Runtime runtime_;
  std::string fresh_;
};

TEST_F(WalkerTest, OddNamesEmptyDirsSymlinksAndDeepPathsMatchFind) {
  mkdir(Local("with space").c_str(), 0755);
  nfs_test::WriteFile(Local("with space/new\nline file"), 10);
  nfs_test::WriteFile(Local("ütf-8 名前 ✓"), 3);
  nfs_test::WriteFile(Local(std::string(255, 'n')), 1);
  nfs_test::WriteFile(Local("tab\there 'quote' \"dq\" \\back"), 0);
  mkdir(Local("empty").c_str(), 0755);
  mkdir(Local("empty2").c_str(), 0700);
  symlink("ütf-8 名前 ✓", Local("link-to-file").c_str());
  symlink("with space", Local("link-to-dir").c_str());
  symlink("/nowhere/at/all", Local("dangling").c_str());
  std::string deep = "deep";
  mkdir(Local(deep).c_str(), 0755);
  for (int i = 1; i < 50; ++i) {
    deep = absl::StrCat(deep, "/l", i);
    ASSERT_EQ(mkdir(Local(deep).c_str(), 0755), 0) << deep;
  }
  nfs_test::WriteFile(Local(deep + "/bottom.bin"), 12345);
  ExpectWalkEqualsFind();
}

TEST_F(WalkerTest, TenThousandEntryDirectoryMatchesFind) {
  mkdir(Local("big").c_str(), 0755);
  for (int i = 0; i < 10000; ++i) {
    nfs_test::WriteFile(Local(absl::StrCat("big/entry-", i)), i % 5);
  }
  ExpectWalkEqualsFind();
}

TEST_F(WalkerTest, SmallPagesAndOneCallInFlightStillMatchFind) {
  MakeDirsOfFiles(20, 30, [](int f) { return f; });
  WalkOptions o;
  o.walk.max_in_flight = 1;
  o.dircount = 512;  // a few entries a page: many continuations per directory
  o.maxcount = 2048;
  ExpectWalkEqualsFind(o);
}

TEST_F(WalkerTest, UnreadableDirectoryIsAnErrorInTheStreamAndTheWalkCarriesOn) {
  mkdir(Local("open").c_str(), 0755);
  nfs_test::WriteFile(Local("open/visible"), 5);
  mkdir(Local("locked").c_str(), 0755);
  nfs_test::WriteFile(Local("locked/secret"), 5);
  mkdir(Local("locked/inner").c_str(), 0755);
  ASSERT_EQ(chown(Local("locked").c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(Local("locked").c_str(), 0), 0);

  std::unique_ptr<NfsClient> client = Connect("uid=1000&gid=1000");
  ASSERT_NE(client, nullptr);
  WalkOutcome got = Walk(*client);
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].path, "locked");
  EXPECT_EQ(got.errors[0].status.code(), absl::StatusCode::kPermissionDenied)
      << got.errors[0].status;
  EXPECT_THAT(got.errors[0].status.message(),
              HasSubstr(absl::StrCat("/export/", fresh_, "/locked")));
  // Everything else, and the locked directory's own entry, is there.
  std::map<std::string, LocalEntry> expected = FindLocal(Local());
  expected.erase("locked/secret");
  expected.erase("locked/inner");
  EXPECT_EQ(got.entries.size(), expected.size());
  for (const auto& [path, e] : expected) EXPECT_TRUE(got.entries.count(path)) << path;
  EXPECT_EQ(got.stats.errors, 1u);
  chmod(Local("locked").c_str(), 0755);
}

TEST_F(WalkerTest, UsesOnlyReaddirplusOneCallPerPage) {
  MakeDirsOfFiles(10, 10, [](int) { return 1; });
  std::unique_ptr<NfsClient> client = Connect();
  ASSERT_NE(client, nullptr);
  const uint64_t calls_before = client->metrics().calls_started;
  WalkOutcome got = Walk(*client);
  EXPECT_EQ(got.entries.size(), 110u);
  // 11 directories, one page each: no GETATTR, ACCESS or LOOKUP per entry.
  EXPECT_EQ(got.stats.directories, 11u);
  EXPECT_EQ(got.stats.requests, 11u);
  EXPECT_EQ(client->metrics().calls_started - calls_before, 11u);
  EXPECT_EQ(got.stats.bytes, 100u);
}

TEST_F(WalkerTest, MinBatchEntriesHandsOverOnlyFullBatchesButTheLast) {
  std::unique_ptr<NfsClient> client = ConnectToManyEntries();
  ASSERT_NE(client, nullptr);
  const WalkOptions o{.walk = {.batch_entries = 100, .min_batch_entries = 100}};
  std::vector<size_t> sizes;
  absl::StatusOr<WalkStats> stats = WalkTree(*client, "", o, [&](WalkBatch& b) {
    sizes.push_back(b.entries.size());
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->entries, 30u * 51u);
  ASSERT_EQ(sizes.size(), 16u);  // 1,530 entries: 15 full batches and 30 left
  for (size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 100u) << "batch " << i;
  EXPECT_EQ(sizes.back(), 30u);
}

TEST_F(WalkerTest, BatchesAreBoundedAndTheCallerCanStopEarly) {
  std::unique_ptr<NfsClient> client = ConnectToManyEntries();
  ASSERT_NE(client, nullptr);
  const WalkOptions o{
      .walk = {.max_in_flight = 2, .batch_entries = 100, .max_queued_batches = 1}};
  int batches = 0;
  size_t largest = 0;
  uint64_t seen = 0;
  absl::StatusOr<WalkStats> stats = WalkTree(*client, "", o, [&](WalkBatch& b) {
    largest = std::max(largest, b.entries.size());
    seen += b.entries.size();
    return ++batches < 3;
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(batches, 3);
  EXPECT_TRUE(stats->stopped_early);
  EXPECT_LE(largest, 100u);
  EXPECT_EQ(stats->entries, seen);
  EXPECT_LT(stats->entries, 30u * 51u);
  // Reading paused while the caller was behind: far from every directory
  // was listed.
  EXPECT_LT(stats->directories, 31u);
}

TEST_F(WalkerTest, SubdirectoryRootGivesPathsRelativeToIt) {
  mkdir(Local("sub").c_str(), 0755);
  mkdir(Local("sub/a").c_str(), 0755);
  nfs_test::WriteFile(Local("sub/a/b"), 2);
  std::unique_ptr<NfsClient> client = Connect();
  ASSERT_NE(client, nullptr);
  std::vector<std::string> paths;
  absl::StatusOr<WalkStats> stats = WalkTree(*client, "sub", {}, [&](WalkBatch& b) {
    for (const WalkEntry& e : b.entries) paths.push_back(e.path);
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(paths, ::testing::UnorderedElementsAre("a", "a/b"));
}

TEST_F(WalkerTest, MissingRootIsNotFoundNamingThePath) {
  std::unique_ptr<NfsClient> client = Connect();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<WalkStats> stats =
      WalkTree(*client, "no/such", {}, [](WalkBatch&) { return true; });
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound) << stats.status();
  EXPECT_THAT(stats.status().message(), HasSubstr(absl::StrCat(fresh_, "/no")));
}

TEST_F(WalkerTest, FileRootIsFailedPrecondition) {
  nfs_test::WriteFile(Local("plain"), 1);
  std::unique_ptr<NfsClient> client = Connect();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<WalkStats> stats = WalkTree(*client, "plain", {}, [](WalkBatch&) { return true; });
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kFailedPrecondition) << stats.status();
}

}  // namespace
}  // namespace ferry::nfs
