// NfsClient::Connect's choice of the export to MNT, against an in-process
// fake MOUNT/NFS server (no real peer): export lists a test peer cannot be
// made to answer on demand (nested exports, none at all).
//
// The fake answers EXPORT with its list, every MNT with the root handle
// "d:<path>" (recording the path; NOENT for the paths it is told to
// refuse, nothing at all for those it is told to ignore), LOOKUP of a name in "d:<path>" with "d:<path>/<name>" (a
// directory; recording the name), and GETATTR and FSINFO (recording the
// handle).
#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/base/mutex.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/xdr.h"
#include "ferry/runtime/runtime.h"
#include "fake_nfs_answers.h"
#include "testing/test_tcp_server.h"

namespace ferry::nfs {
namespace {

using ::testing::ElementsAre;
using ferry::testing::TestTcpServer;

// Thread-safety: the handler runs on the TestTcpServer's thread; the
// records are read by the test under mu_.
class FakeMountServer {
 public:
  // `exports`: EXPORT's list, in order (empty: the server lists none).
  // `refused`: paths whose MNT answers NOENT (a server that mounts only
  // its exports).
  // `ignored`: paths whose MNT is never answered.
  explicit FakeMountServer(std::vector<std::string> exports,
                           std::vector<std::string> refused = {},
                           std::vector<std::string> ignored = {})
      : exports_(std::move(exports)),
        refused_(std::move(refused)),
        ignored_(std::move(ignored)),
        server_(NewRecordMarkingFraming({}),
                [this](const TestTcpServer::ConnPtr& conn, std::string record) {
                  std::string answer = Answer(record);
                  if (!answer.empty()) conn->Send(answer);
                }) {}

  std::string Url(const std::string& path) const {
    return absl::StrCat("nfs://127.0.0.1", path, "?nfsport=", server_.port(),
                        "&mountport=", server_.port());
  }
  std::vector<std::string> mounted() const {
    MutexLock l(&mu_);
    return mounted_;
  }
  std::vector<std::string> root_handles() const {
    MutexLock l(&mu_);
    return root_handles_;
  }
  std::vector<std::string> looked_up() const {
    MutexLock l(&mu_);
    return looked_up_;
  }

 private:
  std::string Answer(std::string_view record) {
    absl::StatusOr<RpcCall> call = DecodeCall(record);
    if (!call.ok()) return "";
    std::string out = fake_nfs::SuccessHeader(call->xid);
    XdrEncoder e(&out);
    XdrDecoder args(call->args, "args");
    if (call->prog == kMountProgram) {
      if (call->proc == static_cast<uint32_t>(Mount3Proc::kExport)) {
        for (const std::string& path : exports_) {
          e.WriteBool(true);
          e.WriteString(path);
          e.WriteBool(false);  // no groups
        }
        e.WriteBool(false);
        return out;
      }
      const std::string path(args.ReadString("dirpath").value_or(""));
      {
        MutexLock l(&mu_);
        mounted_.push_back(path);
      }
      if (std::find(ignored_.begin(), ignored_.end(), path) != ignored_.end()) return "";
      if (std::find(refused_.begin(), refused_.end(), path) != refused_.end()) {
        e.WriteUint32(static_cast<uint32_t>(Mount3Status::kNoEnt));
        return out;
      }
      e.WriteUint32(static_cast<uint32_t>(Mount3Status::kOk));
      e.WriteOpaque("d:" + path);
      e.WriteUint32(1);
      e.WriteUint32(static_cast<uint32_t>(AuthFlavor::kSys));
      return out;
    }
    const std::string handle(args.ReadOpaque("fh").value_or(""));
    if (call->proc == static_cast<uint32_t>(Nfs3Proc::kLookup)) {
      const std::string name(args.ReadString("name").value_or(""));
      {
        MutexLock l(&mu_);
        looked_up_.push_back(name);
      }
      e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
      e.WriteOpaque(absl::StrCat(handle, "/", name));
      e.WriteBool(true);  // the object's attributes: a directory
      Fattr3 a;
      a.type = FileType::kDirectory;
      a.mode = 0755;
      EncodeFattr3(a, &out);
      e.WriteBool(false);  // none of the directory's
      return out;
    }
    {
      MutexLock l(&mu_);
      root_handles_.push_back(handle);
    }
    if (call->proc == static_cast<uint32_t>(Nfs3Proc::kFsInfo)) {
      fake_nfs::AppendFsInfoResults(&out);
    } else {
      fake_nfs::AppendDirectoryGetAttrResults(1, &out);
    }
    return out;
  }

  const std::vector<std::string> exports_;
  const std::vector<std::string> refused_;
  const std::vector<std::string> ignored_;
  mutable Mutex mu_;
  std::vector<std::string> mounted_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> root_handles_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> looked_up_ ABSL_GUARDED_BY(mu_);
  TestTcpServer server_;  // last: its thread stops before the records go
};

std::vector<std::string> Connects(FakeMountServer& server, const std::string& path) {
  Runtime runtime;
  absl::StatusOr<std::unique_ptr<NfsClient>> client = NfsClient::Connect(runtime, server.Url(path));
  EXPECT_TRUE(client.ok()) << client.status();
  return server.mounted();
}

// A client of `path` on `server` rooted at the export (`options` with
// root_at_export set); null after a failure.
std::unique_ptr<NfsClient> ConnectAtExport(Runtime& runtime, FakeMountServer& server,
                                           const std::string& path,
                                           NfsClientOptions options = {}) {
  options.root_at_export = true;
  absl::StatusOr<std::unique_ptr<NfsClient>> client =
      NfsClient::Connect(runtime, server.Url(path), options);
  EXPECT_TRUE(client.ok()) << path << ": " << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(NfsMountTest, AnExportOneLevelDeepIsMountedOnce) {
  FakeMountServer server({"/other", "/export"});
  EXPECT_THAT(Connects(server, "/export"), ElementsAre("/export"));
  EXPECT_THAT(server.root_handles(), ::testing::Each("d:/export"));
}

TEST(NfsMountTest, ANestedExportIsMountedWithTheFirstComponentsGuess) {
  FakeMountServer server({"/a", "/a/b"});
  EXPECT_THAT(Connects(server, "/a/b"), ElementsAre("/a", "/a/b"));
  // The client works below the longest export, not the guess.
  EXPECT_THAT(server.root_handles(), ::testing::Each("d:/a/b"));
}

TEST(NfsMountTest, WithoutAnExportListTheWholePathIsMounted) {
  FakeMountServer server({});
  EXPECT_THAT(Connects(server, "/x/y"), ElementsAre("/x", "/x/y"));
  EXPECT_THAT(server.root_handles(), ::testing::Each("d:/x/y"));
}

TEST(NfsMountTest, TheRootExportIsMountedOnce) {
  FakeMountServer server({"/"});
  EXPECT_THAT(Connects(server, "/"), ElementsAre("/"));
}

TEST(NfsMountTest, APathBelowTheExportIsMountedWithItAndLookedUpNoMore) {
  FakeMountServer server({"/export"});
  EXPECT_THAT(Connects(server, "/export/a/b"), ElementsAre("/export", "/export/a/b"));
  EXPECT_THAT(server.looked_up(), ::testing::IsEmpty());
  EXPECT_THAT(server.root_handles(), ::testing::Each("d:/export/a/b"));
}

TEST(NfsMountTest, APathBelowTheExportTheServerWillNotMountIsLookedUp) {
  FakeMountServer server({"/export"}, /*refused=*/{"/export/a/b"});
  EXPECT_THAT(Connects(server, "/export/a/b"), ElementsAre("/export", "/export/a/b"));
  EXPECT_THAT(server.looked_up(), ElementsAre("a", "b"));
  EXPECT_THAT(server.root_handles(), ::testing::Each("d:/export/a/b"));
}

TEST(NfsMountTest, RootedAtTheExportAURLOfTheRootOrATopFileMountsNothingDeeper) {
  for (const std::string path : {"/", "/file"}) {
    FakeMountServer server({"/"});
    Runtime runtime;
    ASSERT_NE(ConnectAtExport(runtime, server, path), nullptr);
    EXPECT_THAT(server.mounted(), ::testing::Each(::testing::AnyOf("/", "/file"))) << path;
    // The top file is looked up with the connect (LookupPath takes it).
    EXPECT_EQ(server.looked_up(),
              path == "/" ? std::vector<std::string>{} : std::vector<std::string>{"file"});
  }
}

TEST(NfsMountTest, RootedAtTheExportAPathWhoseDirectoryIsUnknownIsNotLookedUpAhead) {
  FakeMountServer server({"/export"}, /*refused=*/{"/export/a/b"});
  Runtime runtime;
  ASSERT_NE(ConnectAtExport(runtime, server, "/export/a/b/file"), nullptr);
  EXPECT_THAT(server.looked_up(), ::testing::IsEmpty());  // "a" and "b" are LookupPath's
}

TEST(NfsMountTest, RootedAtTheExportWithoutADirectoryCacheNothingIsLookedUpAhead) {
  FakeMountServer server({"/export"});
  Runtime runtime;
  NfsClientOptions options;
  options.directory_handle_time = absl::ZeroDuration();  // every LOOKUP made when asked
  ASSERT_NE(ConnectAtExport(runtime, server, "/export/file", options), nullptr);
  EXPECT_THAT(server.looked_up(), ::testing::IsEmpty());
}

TEST(NfsMountTest, APathBelowTheExportTheServerNeverAnswersIsLookedUpAfterAShortWait) {
  FakeMountServer server({"/export"}, /*refused=*/{}, /*ignored=*/{"/export/a/b"});
  const absl::Time start = absl::Now();
  EXPECT_THAT(Connects(server, "/export/a/b"), ElementsAre("/export", "/export/a/b"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));  // not a call's whole timeout
  EXPECT_THAT(server.looked_up(), ElementsAre("a", "b"));
  EXPECT_THAT(server.root_handles(), ::testing::Each("d:/export/a/b"));
}

TEST(NfsMountTest, RootedAtTheExportTheURLsDirectoryIsMountedForTheDirectoryCache) {
  FakeMountServer server({"/export"});
  Runtime runtime;
  std::unique_ptr<NfsClient> client = ConnectAtExport(runtime, server, "/export/a/b/file");
  ASSERT_NE(client, nullptr);
  EXPECT_THAT(server.mounted(), ElementsAre("/export", "/export/a/b"));
  EXPECT_THAT(server.root_handles(), ::testing::Each("d:/export"));

  absl::StatusOr<NfsObject> dir = client->LookupDirectory("a/b");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(dir->handle, FileHandle("d:/export/a/b"));
  absl::StatusOr<NfsObject> below = client->LookupPath("a/b/c");
  ASSERT_TRUE(below.ok()) << below.status();
  // "file" went with the connect (the URL's own path, asked ahead); "a" and
  // "b" were never asked for.
  EXPECT_THAT(server.looked_up(), ElementsAre("file", "c"));
}

}  // namespace
}  // namespace ferry::nfs
