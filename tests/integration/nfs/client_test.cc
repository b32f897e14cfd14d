// NfsClient against nfs-ganesha: connecting with and without explicit ports
// (portmapper), MOUNT EXPORT/UMNT, every NFSv3 procedure the client offers,
// and the errors the server's NFS3ERR_* codes become.
#include <sys/stat.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_error.h"
#include "ferry/nfs/nfs_file_system.h"
#include "ferry/runtime/runtime.h"
#include "nfs_test_util.h"

namespace ferry::nfs {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class NfsClientTest : public nfs_test::FreshDirTest<> {
 protected:
  NfsClientTest() : FreshDirTest("client") {}
};

TEST_F(NfsClientTest, ConnectsThroughThePortmapperWithoutPorts) {
  absl::StatusOr<std::unique_ptr<NfsClient>> c =
      NfsClient::Connect(runtime_, absl::StrCat("nfs://127.0.0.1/export/", fresh_));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->export_path(), "/export");
  EXPECT_EQ((*c)->root_attributes().type, FileType::kDirectory);
  EXPECT_TRUE((*c)->Null().ok());
}

TEST_F(NfsClientTest, ReadsFsInfoAndSizesReaddirFromIt) {
  const FsInfo& f = client_->fsinfo();
  EXPECT_GT(f.rtmax, 0u);
  EXPECT_GT(f.wtmax, 0u);
  EXPECT_GT(f.dtpref, 0u);
  EXPECT_GE(client_->readdir_dircount(), f.dtpref);
  EXPECT_GE(client_->readdir_maxcount(), client_->readdir_dircount());
}

TEST_F(NfsClientTest, ExportListsTheExport) {
  absl::StatusOr<std::vector<ExportEntry>> exports = client_->Exports();
  ASSERT_TRUE(exports.ok()) << exports.status();
  bool found = false;
  for (const ExportEntry& e : *exports) found |= e.path == "/export";
  EXPECT_TRUE(found);
  EXPECT_TRUE(client_->Unmount().ok());
}

TEST_F(NfsClientTest, BadUrlIsInvalidArgumentNamingIt) {
  absl::StatusOr<std::unique_ptr<NfsClient>> c =
      NfsClient::Connect(runtime_, "nfs://127.0.0.1/export?nfsport=abc");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("nfs://127.0.0.1/export?nfsport=abc"));
}

TEST_F(NfsClientTest, UnexportedPathIsAnErrorNamingIt) {
  absl::StatusOr<std::unique_ptr<NfsClient>> c =
      NfsClient::Connect(runtime_, "nfs://127.0.0.1/not-exported?nfsport=2049&mountport=20048");
  EXPECT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("/not-exported"));
}

TEST_F(NfsClientTest, LookupOfMissingNameIsNotFoundNamingThePath) {
  absl::StatusOr<NfsObject> o = client_->LookupPath("nope/deeper");
  EXPECT_EQ(o.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(o.status().message(),
              AllOf(HasSubstr("LOOKUP"), HasSubstr(absl::StrCat("/export/", fresh_, "/nope")),
                    HasSubstr("NFS3ERR_NOENT")));
  EXPECT_EQ(GetNfs3Status(o.status()), Nfs3Status::kNoEnt);
}

TEST_F(NfsClientTest, CreateWriteCommitReadRoundTrip) {
  absl::StatusOr<NfsObject> f =
      client_->Create(client_->root_handle(), "data.bin", 0644, /*exclusive=*/true,
                      /*truncate=*/false, "data.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string payload = "hello, unstable world";
  absl::StatusOr<WriteReply> w =
      client_->Write(f->handle, 0, payload, StableHow::kUnstable, "data.bin");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->count, payload.size());
  absl::StatusOr<uint64_t> verf = client_->Commit(f->handle, 0, 0, "data.bin");
  ASSERT_TRUE(verf.ok()) << verf.status();
  EXPECT_EQ(*verf, w->verifier);
  absl::StatusOr<ReadReply> r = client_->Read(f->handle, 0, 1000, "data.bin");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data, payload);
  EXPECT_TRUE(r->eof);
  absl::StatusOr<Fattr3> a = client_->GetAttr(f->handle, "data.bin");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size, payload.size());
  EXPECT_EQ(a->mode, 0644u);
}

TEST_F(NfsClientTest, ReadIntoPlacesEachMebibyteFromTheSocketIntoTheBuffer) {
  absl::StatusOr<NfsObject> f =
      client_->Create(client_->root_handle(), "big.bin", 0644, /*exclusive=*/true,
                      /*truncate=*/false, "big.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  constexpr size_t kMiB = size_t{1} << 20;
  std::string content(4 * kMiB, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + i / 4096);
  for (size_t off = 0; off < content.size(); off += kMiB) {
    absl::StatusOr<WriteReply> w = client_->Write(f->handle, off, std::string_view(content).substr(off, kMiB),
                                                  StableHow::kFileSync, "big.bin");
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_EQ(w->count, kMiB);
  }
  const uint64_t placed_before = client_->metrics().replies_placed;
  std::string got(content.size(), '?');
  for (size_t off = 0; off < content.size(); off += kMiB) {
    absl::StatusOr<ReadIntoReply> r =
        client_->ReadInto(f->handle, off, absl::MakeSpan(got).subspan(off, kMiB), "big.bin");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->count, kMiB);
  }
  EXPECT_TRUE(got == content);
  // A reply that arrived whole in one socket read is copied instead; the
  // rest were read into the buffer from the socket.
  EXPECT_GE(client_->metrics().replies_placed - placed_before, 1u);
}

TEST_F(NfsClientTest, GuardedCreateOfExistingFileIsAlreadyExists) {
  nfs_test::WriteFile(Exported("exists"), 1);
  absl::StatusOr<NfsObject> f =
      client_->Create(client_->root_handle(), "exists", 0644, true, false, "exists");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kAlreadyExists) << f.status();
}

TEST_F(NfsClientTest, MkdirRenameRemoveRmdir) {
  absl::StatusOr<NfsObject> d = client_->Mkdir(client_->root_handle(), "dir", 0755, "dir");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(client_->Mkdir(client_->root_handle(), "dir", 0755, "dir").status().code(),
            absl::StatusCode::kAlreadyExists);
  absl::StatusOr<NfsObject> f = client_->Create(d->handle, "a", 0600, false, true, "dir/a");
  ASSERT_TRUE(f.ok()) << f.status();
  // A non-empty directory cannot go.
  absl::Status rm = client_->Rmdir(client_->root_handle(), "dir", "dir");
  EXPECT_EQ(rm.code(), absl::StatusCode::kFailedPrecondition) << rm;
  EXPECT_THAT(rm.message(), HasSubstr("NFS3ERR_NOTEMPTY"));
  ASSERT_TRUE(client_->Rename(d->handle, "a", client_->root_handle(), "b", "dir/a", "b").ok());
  struct stat st;
  EXPECT_EQ(stat(Exported("b").c_str(), &st), 0);
  EXPECT_NE(stat(Exported("dir/a").c_str(), &st), 0);
  EXPECT_TRUE(client_->Remove(client_->root_handle(), "b", "b").ok());
  EXPECT_TRUE(client_->Rmdir(client_->root_handle(), "dir", "dir").ok());
  EXPECT_EQ(client_->Remove(client_->root_handle(), "b", "b").code(), absl::StatusCode::kNotFound);
}

TEST_F(NfsClientTest, RenameOfMissingNameNamesBothPaths) {
  absl::Status s =
      client_->Rename(client_->root_handle(), "x", client_->root_handle(), "y", "x", "y");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("RENAME"), HasSubstr("/x"), HasSubstr("/y")));
}

TEST_F(NfsClientTest, FsStatReportsSpace) {
  absl::StatusOr<FsStat> s = client_->FsStatOf(client_->root_handle(), "");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->total_bytes, 0u);
  EXPECT_LE(s->free_bytes, s->total_bytes);
}

TEST_F(NfsClientTest, AccessGrantsRootEverythingAskedOnItsDirectory) {
  const uint32_t mask = kAccessRead | kAccessLookup | kAccessModify;
  absl::StatusOr<uint32_t> granted = client_->Access(client_->root_handle(), mask, "");
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_EQ(*granted & mask, mask);
}

TEST_F(NfsClientTest, ReaddirplusListsAPageWithAttributes) {
  nfs_test::WriteFile(Exported("one"), 7);
  absl::StatusOr<ReaddirplusPage> page = client_->Readdirplus(client_->root_handle(), 0, 0, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_TRUE(page->result.eof);
  bool found = false;
  for (const DirEntryPlus& e : page->result.entries) {
    if (e.name != "one") continue;
    found = true;
    ASSERT_TRUE(e.attributes.has_value());
    EXPECT_EQ(e.attributes->size, 7u);
    EXPECT_TRUE(e.handle.has_value());
  }
  EXPECT_TRUE(found);
}

TEST_F(NfsClientTest, ReadOfDirectoryIsAnErrorNamingThePath) {
  ASSERT_EQ(mkdir(Exported("adir").c_str(), 0755), 0);
  absl::StatusOr<NfsObject> d = client_->LookupPath("adir");
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<ReadReply> r = client_->Read(d->handle, 0, 10, "adir");
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("READ"), HasSubstr("/adir")));
}

// URLs on one export resolved at once (a thousand transfers starting
// together) share one mount: the first resolver mounts, the rest wait for
// it, so the server sees one client's connections, not one set per URL.
TEST_F(NfsClientTest, ConcurrentResolvesOfOneExportShareOneFilesystem) {
  std::unique_ptr<fs::FileSystemProvider> provider = NewNfsProvider();
  constexpr int kThreads = 16;
  std::vector<std::shared_ptr<fs::FileSystem>> made(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<fs::Location> at =
          provider->Resolve(runtime_, nfs_test::UrlFor(absl::StrCat(fresh_, "/f", i)));
      if (at.ok()) made[i] = at->fs;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_NE(made[i], nullptr) << i;
    EXPECT_EQ(made[i], made[0]) << i;
  }
}

}  // namespace
}  // namespace ferry::nfs
