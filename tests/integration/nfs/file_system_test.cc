// NfsFileSystem against nfs-ganesha: what its entries carry and how a
// listed file is opened. A file's entry from Stat, or from a Walk that
// asks for handles, keeps the handle the server gave, and OpenReadListed
// reads by it, with no LOOKUP:
// so it reads the file that was listed even after its name moved, and a
// file removed since fails NotFound, as a LOOKUP of its name would; one
// written to or replaced since fails FailedPrecondition (an empty one at
// Close, having nothing to read). (Files
// change through the server: ganesha caches what it has looked up.)
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "ferry/fs/entry.h"
#include "ferry/fs/file_system.h"
#include "ferry/nfs/nfs_file_system.h"
#include "ferry/nfs/nfs_url.h"
#include "nfs_test_util.h"
#include "testing/scratch_dir.h"

namespace ferry {
namespace {

class NfsFileSystemTest : public nfs_test::FreshDirTest<> {
 protected:
  NfsFileSystemTest() : FreshDirTest("fs") {}

  void SetUp() override {
    FreshDirTest::SetUp();
    if (HasFatalFailure()) return;
    fs_ = nfs::NfsFileSystem::Over(*client_);
  }

  // Writes `bytes` to `relative` in the fresh folder, behind the server's
  // back (as another client would).
  void Put(const std::string& relative, const std::string& bytes) {
    std::ofstream(Exported(relative), std::ios::binary) << bytes;
  }

  // Every byte of `file`, read at once.
  static absl::StatusOr<std::string> ReadAll(fs::File& file, size_t size) {
    std::string out(size + 1, '\0');  // one more: a longer file shows
    absl::StatusOr<size_t> n = file.ReadAt(0, absl::MakeSpan(out));
    if (!n.ok()) return n.status();
    out.resize(*n);
    return out;
  }

  // Writes `bytes` to `path` through `fs` (a new file renamed over the
  // name, as ferry's writer does).
  static void Write(fs::FileSystem& fs, const std::string& path, const std::string& bytes,
                    const fs::WriteOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<fs::File>> f = fs.OpenWrite(path, options);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->WriteAt(0, absl::MakeConstSpan(bytes.data(), bytes.size())).ok());
    ASSERT_TRUE((*f)->Close().ok());
  }

  // How reading `size` bytes of `path`, opened as `listed`, ends. Opening
  // itself must succeed (by handle it asks the server nothing).
  absl::Status ListedReadStatus(const std::string& path, const fs::Entry& listed, size_t size) {
    absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenReadListed(path, listed);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? ReadAll(**f, size).status() : f.status();
  }

  // Appends `bytes` to `relative` in place, through the server, as
  // another client would.
  void AppendThroughTheServer(const std::string& relative, const std::string& bytes) {
    absl::StatusOr<nfs::NfsObject> o = client_->LookupPath(relative);
    ASSERT_TRUE(o.ok()) << o.status();
    ASSERT_TRUE(o->attributes.has_value());
    ASSERT_TRUE(client_->Write(o->handle, o->attributes->size, bytes, nfs::StableHow::kFileSync,
                               relative)
                    .ok());
  }

  std::unique_ptr<nfs::NfsFileSystem> fs_;
};

TEST_F(NfsFileSystemTest, StatOfAFileKeepsItsHandleAndOfADirectoryNone) {
  Put("f.bin", "abc");
  ASSERT_EQ(mkdir(Exported("d").c_str(), 0755), 0);
  absl::StatusOr<fs::Entry> file = fs_->Stat("f.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_FALSE(file->handle.empty());
  absl::StatusOr<fs::Entry> dir = fs_->Stat("d");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_TRUE(dir->handle.empty());
}

TEST_F(NfsFileSystemTest, WalkAskedForHandlesGivesEachFileItsOwn) {
  ASSERT_EQ(mkdir(Exported("d").c_str(), 0755), 0);
  Put("a.bin", "a");
  Put("d/b.bin", "b");
  std::map<std::string, std::string> walked;
  absl::StatusOr<fs::WalkStats> stats =
      fs_->Walk("", {.with_handles = true}, [&](fs::WalkBatch& batch) {
        for (const fs::Entry& e : batch.entries) walked[e.path] = e.handle;
        return true;
      });
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(walked.size(), 3u);
  EXPECT_TRUE(walked["d"].empty());
  EXPECT_FALSE(walked["a.bin"].empty());
  EXPECT_FALSE(walked["d/b.bin"].empty());
  EXPECT_NE(walked["a.bin"], walked["d/b.bin"]);
}

TEST_F(NfsFileSystemTest, WalkAndListNotAskedKeepNoHandles) {
  Put("a.bin", "a");
  ASSERT_TRUE(fs_->Walk("", {}, [&](fs::WalkBatch& batch) {
                   for (const fs::Entry& e : batch.entries) EXPECT_TRUE(e.handle.empty()) << e.path;
                   return true;
                 }).ok());
  ASSERT_TRUE(fs_->List("", [&](std::vector<fs::Entry>& batch) {
                   for (const fs::Entry& e : batch) EXPECT_TRUE(e.handle.empty()) << e.path;
                   return true;
                 }).ok());
}

TEST_F(NfsFileSystemTest, OpenReadListedReadsTheListedFileAfterItsNameMoved) {
  Put("a.bin", "listed bytes");
  absl::StatusOr<fs::Entry> e = fs_->Stat("a.bin");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(fs_->Rename("a.bin", "moved.bin").ok());

  // By name the file is gone; by the listing's handle it is still there.
  EXPECT_TRUE(absl::IsNotFound(fs_->OpenRead("a.bin").status()));
  absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenReadListed("a.bin", *e);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*(*f)->Size(), 12);
  EXPECT_EQ(*ReadAll(**f, 12), "listed bytes");
}

TEST_F(NfsFileSystemTest, OpenReadListedOfAFileRemovedSinceFailsNotFoundNamingIt) {
  Put("gone.bin", "bytes");
  absl::StatusOr<fs::Entry> e = fs_->Stat("gone.bin");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(fs_->Remove("gone.bin").ok());

  const absl::Status read = ListedReadStatus("gone.bin", *e, 5);
  EXPECT_TRUE(absl::IsNotFound(read)) << read;
  EXPECT_NE(read.message().find("gone.bin"), std::string::npos) << read;
}

TEST_F(NfsFileSystemTest, ReadOfAListedFileWrittenToSinceFailsFailedPrecondition) {
  Put("log.txt", "first");
  absl::StatusOr<fs::Entry> e = fs_->Stat("log.txt");
  ASSERT_TRUE(e.ok()) << e.status();
  AppendThroughTheServer("log.txt", " second");

  const absl::Status read = ListedReadStatus("log.txt", *e, 5);
  EXPECT_EQ(read.code(), absl::StatusCode::kFailedPrecondition) << read;
  EXPECT_NE(read.message().find("changed since it was listed"), std::string::npos) << read;
}

TEST_F(NfsFileSystemTest, ReadOfAListedFileReplacedSinceFailsFailedPreconditionSayingSo) {
  Put("a.bin", "listed");
  absl::StatusOr<fs::Entry> e = fs_->Stat("a.bin");
  ASSERT_TRUE(e.ok()) << e.status();
  Write(*fs_, "a.bin", "newer");  // replaced by rename, as editors do too
  const absl::Status read = ListedReadStatus("a.bin", *e, 6);
  EXPECT_EQ(read.code(), absl::StatusCode::kFailedPrecondition) << read;
  EXPECT_NE(read.message().find("replaced since it was listed"), std::string::npos) << read;
}

TEST_F(NfsFileSystemTest, ListedEmptyFileWrittenToSinceFailsFailedPreconditionAtClose) {
  Put("empty", "");
  absl::StatusOr<fs::Entry> e = fs_->Stat("empty");
  ASSERT_TRUE(e.ok()) << e.status();
  AppendThroughTheServer("empty", "grew");

  // Nothing to read, so no READ vouches for it: Close asks.
  absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenReadListed("empty", *e);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->Close().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(NfsFileSystemTest, ListedEmptyFileUnchangedClosesOk) {
  Put("empty", "");
  absl::StatusOr<fs::Entry> e = fs_->Stat("empty");
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenReadListed("empty", *e);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE((*f)->Close().ok());
}

TEST_F(NfsFileSystemTest, AnotherFileSystemsEntryIsOpenedByItsPathNotItsHandle) {
  Put("a.bin", "outer");
  ASSERT_EQ(mkdir(Exported("sub").c_str(), 0755), 0);
  Put("sub/a.bin", "inner!");
  std::unique_ptr<nfs::NfsClient> inner_client = nfs_test::ConnectTo(runtime_, fresh_ + "/sub");
  ASSERT_NE(inner_client, nullptr);
  std::unique_ptr<nfs::NfsFileSystem> inner = nfs::NfsFileSystem::Over(*inner_client);

  absl::StatusOr<fs::Entry> outer_entry = fs_->Stat("a.bin");
  ASSERT_TRUE(outer_entry.ok()) << outer_entry.status();
  absl::StatusOr<std::unique_ptr<fs::File>> f = inner->OpenReadListed("a.bin", *outer_entry);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*ReadAll(**f, 6), "inner!");
}

TEST_F(NfsFileSystemTest, OpenReadListedWithoutAHandleLooksThePathUp) {
  Put("a.bin", "a's");
  Put("b.bin", "b's bytes");
  absl::StatusOr<fs::Entry> a = fs_->Stat("a.bin");
  ASSERT_TRUE(a.ok()) << a.status();

  // a's entry with its handle opens a, whatever path it is given ...
  absl::StatusOr<std::unique_ptr<fs::File>> by_handle = fs_->OpenReadListed("b.bin", *a);
  ASSERT_TRUE(by_handle.ok()) << by_handle.status();
  EXPECT_EQ(*ReadAll(**by_handle, 3), "a's");
  // ... and without one (another adapter's entry, one made by hand), the
  // path is looked up.
  a->handle.clear();
  absl::StatusOr<std::unique_ptr<fs::File>> by_path = fs_->OpenReadListed("b.bin", *a);
  ASSERT_TRUE(by_path.ok()) << by_path.status();
  EXPECT_EQ(*(*by_path)->Size(), 9);
  EXPECT_EQ(*ReadAll(**by_path, 9), "b's bytes");
}

TEST_F(NfsFileSystemTest, AWriteFromADescriptorWritesThatRangeOfTheFile) {
  std::string bytes(3 << 20, '\0');  // three WRITEs of 1 MiB
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 13 + i / 7);
  testing::OpenTempFile source(bytes);
  absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenWrite("range.bin", {});
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<size_t> n = (*f)->WriteFromDescriptor(0, source.fd(), 12345, bytes.size() - 12345);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, bytes.size() - 12345);  // not a multiple of 4: the XDR padding follows
  ASSERT_TRUE((*f)->Close().ok());
  std::ifstream in(Exported("range.bin"), std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(written == bytes.substr(12345));
}

TEST_F(NfsFileSystemTest, AWriteFromADescriptorThatEndsEarlyFailsAndPublishesNothing) {
  testing::OpenTempFile source(std::string(1000, 's'));
  absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenWrite("short.bin", {});
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<size_t> n = (*f)->WriteFromDescriptor(0, source.fd(), 0, 5000);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(n.status().message()), ::testing::HasSubstr("ended after 1000 of 5000 bytes"));
  ASSERT_TRUE((*f)->Discard().ok());
  EXPECT_TRUE(absl::IsNotFound(fs_->Stat("short.bin").status()));
  // The client carries on.
  Write(*fs_, "after.bin", "ok");
  EXPECT_EQ(*ReadAll(**fs_->OpenRead("after.bin"), 2), "ok");
}

// What a write asks of the server. The engine tells OpenWrite what it
// found at the target (fs::WriteOptions::target) and the final size; a
// copy of a small file is then CREATE, WRITE and RENAME.
class NfsWriteCallsTest : public NfsFileSystemTest {
 protected:
  uint64_t Calls() const { return client_->metrics().calls_started; }

  // The calls OpenWrite(path, options) makes; the writer is discarded.
  uint64_t CallsToOpen(const std::string& path, const fs::WriteOptions& options) {
    const uint64_t before = Calls();
    absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenWrite(path, options);
    EXPECT_TRUE(f.ok()) << f.status();
    const uint64_t made = Calls() - before;
    if (f.ok()) {
      EXPECT_TRUE((*f)->Discard().ok());
    }
    return made;
  }

  // The calls Close makes after `bytes` went in `writes` equal WRITEs to
  // a writer opened with `size`; the file must then hold them.
  uint64_t CallsToClose(const std::string& path, int64_t size, const std::string& bytes,
                        int writes) {
    absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenWrite(path, {.size = size});
    EXPECT_TRUE(f.ok()) << f.status();
    if (!f.ok()) return 0;
    const size_t part = bytes.size() / writes;
    for (int i = 0; i < writes; ++i) {
      const size_t from = part * i;
      const size_t n = i + 1 == writes ? bytes.size() - from : part;
      EXPECT_TRUE((*f)->WriteAt(from, absl::MakeConstSpan(bytes.data() + from, n)).ok());
    }
    const uint64_t before = Calls();
    EXPECT_TRUE((*f)->Close().ok());
    const uint64_t made = Calls() - before;
    std::ifstream in(Exported(path), std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()),
              bytes);
    return made;
  }
};

TEST_F(NfsWriteCallsTest, AFileWrittenWholeInOneCallNeedsNoCommit) {
  EXPECT_EQ(CallsToClose("one.bin", 5, "hello", 1), 1u);  // RENAME
}

TEST_F(NfsWriteCallsTest, AFileWrittenInSeveralCallsIsCommittedAtClose) {
  EXPECT_EQ(CallsToClose("two.bin", 10, "helloworld", 2), 2u);  // COMMIT, RENAME
}

TEST_F(NfsWriteCallsTest, AFileOfUnknownSizeIsCommittedAtClose) {
  EXPECT_EQ(CallsToClose("unknown.bin", -1, "hello", 1), 2u);
}

TEST_F(NfsWriteCallsTest, AWriteToldItsTargetIsMissingDoesNotLookItUp) {
  EXPECT_EQ(CallsToOpen("new.bin", {}), 2u);  // LOOKUP, CREATE
  EXPECT_EQ(CallsToOpen("new.bin", {.target = fs::PathSeen::Missing()}), 1u);  // CREATE
}

TEST_F(NfsWriteCallsTest, AWriteToldOfTheFileItReplacesKeepsItsPermissionBitsWithoutALookup) {
  Put("kept.bin", "old");
  ASSERT_EQ(::chmod(Exported("kept.bin").c_str(), 0600), 0);
  absl::StatusOr<fs::Entry> there = fs_->Stat("kept.bin");
  ASSERT_TRUE(there.ok()) << there.status();
  const uint64_t before = Calls();
  absl::StatusOr<std::unique_ptr<fs::File>> f =
      fs_->OpenWrite("kept.bin", {.mode = 0644, .target = fs::PathSeen::Found(*there)});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(Calls() - before, 1u);  // CREATE
  ASSERT_TRUE((*f)->WriteAt(0, absl::MakeConstSpan("new", 3)).ok());
  ASSERT_TRUE((*f)->Close().ok());
  struct stat st{};
  ASSERT_EQ(::stat(Exported("kept.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(NfsWriteCallsTest, AWriteGivenAnMtimeSetsItAndRenamesAtCloseWithTheFileInPlace) {
  const absl::Time mtime = absl::FromUnixSeconds(1'600'000'000);
  absl::StatusOr<std::unique_ptr<fs::File>> f =
      fs_->OpenWrite("timed.bin", {.size = 5, .mtime = mtime, .target = fs::PathSeen::Missing()});
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->WriteAt(0, absl::MakeConstSpan("hello", 5)).ok());
  const uint64_t before = Calls();
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(Calls() - before, 2u);  // SETATTR, RENAME
  struct stat st{};
  ASSERT_EQ(::stat(Exported("timed.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtime, absl::ToUnixSeconds(mtime));
  EXPECT_EQ(st.st_size, 5);
}

TEST_F(NfsWriteCallsTest, CreateDirOfADirectoryAPathJustPassedThroughAsksNothing) {
  ASSERT_TRUE(fs_->CreateDir("d", false).ok());
  Put("d/f", "x");
  ASSERT_TRUE(fs_->Stat("d/f").ok());  // through "d"
  const uint64_t before = Calls();
  EXPECT_TRUE(fs_->CreateDir("d", true).ok());
  EXPECT_EQ(Calls() - before, 0u);
}

// NfsFileSystem::Connect for the URL of a file below the export: what
// the first Stat of that file finds, and how many calls it costs.
class NfsConnectedForAFileTest : public NfsWriteCallsTest {
 protected:
  std::shared_ptr<nfs::NfsFileSystem> ConnectFor(const std::string& relative) {
    absl::StatusOr<nfs::NfsUrl> url = nfs::ParseNfsUrl(nfs_test::UrlFor(fresh_ + "/" + relative));
    EXPECT_TRUE(url.ok()) << url.status();
    if (!url.ok()) return nullptr;
    absl::StatusOr<std::shared_ptr<nfs::NfsFileSystem>> fs =
        nfs::NfsFileSystem::Connect(runtime_, *url, {});
    EXPECT_TRUE(fs.ok()) << fs.status();
    return fs.ok() ? *std::move(fs) : nullptr;
  }
  static uint64_t CallsOf(nfs::NfsFileSystem& fs) {
    return fs.client().metrics().calls_started;
  }
};

TEST_F(NfsConnectedForAFileTest, TheFilesFirstStatTakesTheLookupSentWithTheConnect) {
  ASSERT_TRUE(fs_->CreateDir("a/b", true).ok());
  Put("a/b/f", "x");
  std::shared_ptr<nfs::NfsFileSystem> fs = ConnectFor("a/b/f");
  ASSERT_NE(fs, nullptr);
  // The root's GETATTR and FSINFO, and the LOOKUP of "f" in the directory
  // the deep MNT gave: one round trip.
  EXPECT_EQ(CallsOf(*fs), 3u);
  absl::StatusOr<fs::Entry> e = fs->Stat(fresh_ + "/a/b/f");  // rooted at the export
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->size, 1);
  EXPECT_EQ(CallsOf(*fs), 3u);
}

TEST_F(NfsConnectedForAFileTest, AMissingFilesFirstStatIsNotFoundWithoutAnotherCall) {
  std::shared_ptr<nfs::NfsFileSystem> fs = ConnectFor("missing");
  ASSERT_NE(fs, nullptr);
  const uint64_t before = CallsOf(*fs);
  const absl::Status first = fs->Stat(fresh_ + "/missing").status();
  EXPECT_TRUE(absl::IsNotFound(first)) << first;
  EXPECT_EQ(CallsOf(*fs) - before, 0u);
  // Said as a LOOKUP made then would have said it.
  const absl::Status asked = fs->Stat(fresh_ + "/missing").status();
  EXPECT_EQ(CallsOf(*fs) - before, 1u);
  EXPECT_EQ(first, asked);
}

TEST_F(NfsConnectedForAFileTest, AnyOtherFirstCallDropsTheLookupSentWithTheConnect) {
  std::shared_ptr<nfs::NfsFileSystem> fs = ConnectFor("made-here");
  ASSERT_NE(fs, nullptr);
  // A CREATE through this client (in the fresh folder, whose handle the
  // fixture's client has as its root) makes the connect's answer ("no such
  // file") one the client must not use any more.
  ASSERT_TRUE(fs->client()
                  .Create(client_->root_handle(), "made-here", 0644, /*exclusive=*/false,
                          /*truncate=*/true, "made-here")
                  .ok());
  absl::StatusOr<fs::Entry> e = fs->Stat(fresh_ + "/made-here");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->size, 0);
}

TEST_F(NfsConnectedForAFileTest, AStatOfAnotherPathFirstAsksTheServer) {
  Put("f", "x");
  Put("g", "xyz");
  std::shared_ptr<nfs::NfsFileSystem> fs = ConnectFor("f");
  ASSERT_NE(fs, nullptr);
  absl::StatusOr<fs::Entry> g = fs->Stat(fresh_ + "/g");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->size, 3);
  const uint64_t before = CallsOf(*fs);
  absl::StatusOr<fs::Entry> f = fs->Stat(fresh_ + "/f");  // the connect's answer is gone
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->size, 1);
  EXPECT_EQ(CallsOf(*fs) - before, 1u);
}

TEST_F(NfsConnectedForAFileTest, AnAnswerOlderThanASecondIsAskedForAgain) {
  Put("f", "x");
  std::shared_ptr<nfs::NfsFileSystem> fs = ConnectFor("f");
  ASSERT_NE(fs, nullptr);
  Write(*fs_, "f", "longer");  // another client's change, seen by a fresh LOOKUP
  absl::SleepFor(absl::Milliseconds(1100));
  const uint64_t before = CallsOf(*fs);
  absl::StatusOr<fs::Entry> e = fs->Stat(fresh_ + "/f");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->size, 6);
  EXPECT_GE(CallsOf(*fs) - before, 1u);  // (and the folder's, whose cached handle aged too)
}

TEST_F(NfsWriteCallsTest, CreateDirOfAnExistingDirectoryNotCachedSucceeds) {
  ASSERT_EQ(::mkdir(Exported("made-elsewhere").c_str(), 0755), 0);
  EXPECT_TRUE(fs_->CreateDir("made-elsewhere", true).ok());
  Put("not-a-dir", "x");
  EXPECT_FALSE(fs_->CreateDir("not-a-dir", true).ok());
}

// The client's directory handle cache (NfsClientOptions::
// directory_handle_time): what a path passes through is reused, and never
// leads somewhere else after this filesystem moved or removed it.
class NfsDirectoryCacheTest : public NfsFileSystemTest {
 protected:
  // A second client and filesystem on the same folder: "another client".
  std::unique_ptr<nfs::NfsFileSystem> Other(const nfs::NfsClientOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<nfs::NfsClient>> c =
        nfs::NfsClient::Connect(runtime_, nfs_test::UrlFor(fresh_), options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? nfs::NfsFileSystem::Over(*std::move(c)) : nullptr;
  }

  // `dir` (holding `file`) removed and made again by `other`, with `bytes`
  // in a new `file`: every handle of the old one is stale.
  static void Replace(fs::FileSystem& other, const std::string& dir, const std::string& file,
                      const std::string& bytes) {
    ASSERT_TRUE(other.Remove(dir + "/" + file).ok());
    ASSERT_TRUE(other.RemoveDir(dir).ok());
    ASSERT_TRUE(other.CreateDir(dir, false).ok());
    Write(other, dir + "/" + file, bytes);
  }

  // "d" (holding "f") written through fs_, so its handle is cached here,
  // then removed and made again by another client, which is returned.
  std::unique_ptr<nfs::NfsFileSystem> ReplaceCachedDirectory() {
    EXPECT_TRUE(fs_->CreateDir("d", false).ok());
    Write(*fs_, "d/f", "old");
    std::unique_ptr<nfs::NfsFileSystem> other = Other();
    if (other != nullptr) Replace(*other, "d", "f", "newer");
    return other;
  }
};

TEST_F(NfsDirectoryCacheTest, ADirectoryMovedHereIsNotReachedThroughItsOldPath) {
  ASSERT_TRUE(fs_->CreateDir("d/sub", true).ok());
  Write(*fs_, "d/sub/f", "x");
  ASSERT_TRUE(fs_->Stat("d/sub/f").ok());  // "d" and "d/sub" are cached now
  ASSERT_TRUE(fs_->Rename("d/sub", "d/moved").ok());
  EXPECT_TRUE(absl::IsNotFound(fs_->Stat("d/sub/f").status()));
  EXPECT_TRUE(fs_->Stat("d/moved/f").ok());
}

TEST_F(NfsDirectoryCacheTest, APathThroughADirectoryAnotherClientReplacedFindsTheNewOne) {
  ASSERT_TRUE(fs_->CreateDir("d/e", true).ok());
  Write(*fs_, "d/e/f", "old");
  ASSERT_TRUE(fs_->Stat("d/e/f").ok());  // "d/e" is cached
  std::unique_ptr<nfs::NfsFileSystem> other = Other();
  ASSERT_NE(other, nullptr);
  Replace(*other, "d/e", "f", "newer");

  absl::StatusOr<fs::Entry> e = fs_->Stat("d/e/f");  // the cached handle is stale
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->size, 5);
}

TEST_F(NfsDirectoryCacheTest, AWriteIntoADirectoryAnotherClientReplacedLandsInTheNewOne) {
  std::unique_ptr<nfs::NfsFileSystem> other = ReplaceCachedDirectory();
  ASSERT_NE(other, nullptr);
  Write(*fs_, "d/g", "mine");
  absl::StatusOr<fs::Entry> g = other->Stat("d/g");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->size, 4);
}

TEST_F(NfsDirectoryCacheTest, AWriteToldItsTargetIsMissingLandsInADirectoryAnotherClientReplaced) {
  std::unique_ptr<nfs::NfsFileSystem> other = ReplaceCachedDirectory();
  ASSERT_NE(other, nullptr);
  // No LOOKUP checks the cached handle: the CREATE finds it stale, and the
  // directory and the target are looked up before it is sent again.
  const uint64_t before = client_->metrics().calls_started;
  Write(*fs_, "d/g", "mine", {.size = 4, .target = fs::PathSeen::Missing()});
  EXPECT_EQ(client_->metrics().calls_started - before,
            4u + 2u);  // CREATE, LOOKUP d, LOOKUP g, CREATE; WRITE, RENAME
  absl::StatusOr<fs::Entry> g = other->Stat("d/g");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->size, 4);
}

TEST_F(NfsDirectoryCacheTest, CreateDirAsksTheServerOnceTheCachedHandleIsOverASecondOld) {
  nfs::NfsClientOptions long_cache;
  long_cache.directory_handle_time = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<nfs::NfsClient>> c =
      nfs::NfsClient::Connect(runtime_, nfs_test::UrlFor(fresh_), long_cache);
  ASSERT_TRUE(c.ok()) << c.status();
  nfs::NfsClient& client = **c;
  std::unique_ptr<nfs::NfsFileSystem> mine = nfs::NfsFileSystem::Over(*std::move(c));
  ASSERT_TRUE(mine->CreateDir("d", false).ok());
  Put("d/f", "x");
  ASSERT_TRUE(mine->Stat("d/f").ok());  // through "d"
  absl::SleepFor(absl::Milliseconds(1100));
  const uint64_t before = client.metrics().calls_started;
  EXPECT_TRUE(mine->CreateDir("d", true).ok());
  EXPECT_GT(client.metrics().calls_started - before, 0u);
}

TEST_F(NfsDirectoryCacheTest, WithNoDirectoryHandleTimeAnotherClientsRenameIsSeenAtOnce) {
  nfs::NfsClientOptions uncached;
  uncached.directory_handle_time = absl::ZeroDuration();
  std::unique_ptr<nfs::NfsFileSystem> mine = Other(uncached);
  std::unique_ptr<nfs::NfsFileSystem> other = Other();
  ASSERT_NE(mine, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->CreateDir("d/e", true).ok());
  Write(*other, "d/e/f", "old");
  ASSERT_TRUE(mine->Stat("d/e/f").ok());
  // Moved away (its handle stays good) and a new "d/e" made in its place.
  ASSERT_TRUE(other->Rename("d/e", "d/moved").ok());
  ASSERT_TRUE(other->CreateDir("d/e", false).ok());
  Write(*other, "d/e/f", "newer");

  absl::StatusOr<fs::Entry> e = mine->Stat("d/e/f");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->size, 5);
}

}  // namespace
}  // namespace ferry
