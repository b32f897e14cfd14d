// How a written file is published: NfsClient::SetAttrAndRename and the
// NFS writer's Close, against an in-process fake NFSv3 server (no real
// peer): a server that answers a SETATTR only once the RENAME is in, or
// fails a SETATTR, cannot be made of ganesha on demand.
//
// The fake mounts as every fake does (fake_nfs_answers.h), CREATEs any
// name as the file handle "f:<name>" (LOOKUP finds it so too), takes every
// WRITE whole (FILE_SYNC), answers SETATTR with the statuses it is given
// in turn (then OK), RENAME with the status it is given, and REMOVE with
// OK. Told to pair them, it holds the first of a SETATTR and a RENAME
// until the other has come: a client that waits for one before sending
// the other gets no answer.
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/base/mutex.h"
#include "ferry/fs/file_system.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_file_system.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/xdr.h"
#include "ferry/runtime/runtime.h"
#include "fake_nfs_answers.h"
#include "testing/test_tcp_server.h"

namespace ferry::nfs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ferry::testing::TestTcpServer;

// Thread-safety: the handler runs on the TestTcpServer's thread; the
// records are read by the test under mu_.
class FakePublishServer {
 public:
  struct Script {
    // Hold the first of a SETATTR and a RENAME until the other comes.
    bool pair = false;
    // The statuses of the first SETATTRs, in turn.
    std::vector<Nfs3Status> set_attr;
    Nfs3Status rename = Nfs3Status::kOk;
  };
  explicit FakePublishServer(Script script)
      : pair_(script.pair),
        rename_status_(script.rename),
        set_attr_statuses_(script.set_attr.begin(), script.set_attr.end()),
        server_(NewRecordMarkingFraming({}),
                [this](const TestTcpServer::ConnPtr& conn, std::string record) {
                  Answer(conn, record);
                }) {}

  std::string Url() const {
    return absl::StrCat("nfs://127.0.0.1/export?nfsport=", server_.port(),
                        "&mountport=", server_.port());
  }
  // "SETATTR <handle>", "RENAME <from> <to>", "LOOKUP <name>",
  // "REMOVE <name>", in the order they came.
  std::vector<std::string> calls() const {
    MutexLock l(&mu_);
    return calls_;
  }

 private:
  void Answer(const TestTcpServer::ConnPtr& conn, std::string_view record) {
    absl::StatusOr<RpcCall> call = DecodeCall(record);
    if (!call.ok()) return;
    std::string out = fake_nfs::SuccessHeader(call->xid);
    XdrEncoder e(&out);
    XdrDecoder args(call->args, "args");
    if (call->prog == kMountProgram) {
      fake_nfs::AppendMountResults(*call, &out);
      conn->Send(std::move(out));
      return;
    }
    const std::string handle(args.ReadOpaque("fh").value_or(""));
    switch (static_cast<Nfs3Proc>(call->proc)) {
      case Nfs3Proc::kFsInfo:
        fake_nfs::AppendFsInfoResults(&out);
        break;
      case Nfs3Proc::kCreate: {
        const std::string name(args.ReadString("name").value_or(""));
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
        e.WriteBool(true);
        AppendFile(name, &out);
        WriteNoWcc(e);
        break;
      }
      case Nfs3Proc::kWrite: {
        (void)args.ReadUint64("offset");
        const uint32_t count = args.ReadUint32("count").value_or(0);
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
        WriteNoWcc(e);
        e.WriteUint32(count);
        e.WriteUint32(static_cast<uint32_t>(StableHow::kFileSync));
        e.WriteUint64(0);  // verifier
        break;
      }
      case Nfs3Proc::kSetAttr: {
        Nfs3Status status = Nfs3Status::kOk;
        {
          MutexLock l(&mu_);
          calls_.push_back("SETATTR " + handle);
          if (!set_attr_statuses_.empty()) {
            status = set_attr_statuses_.front();
            set_attr_statuses_.pop_front();
          }
        }
        e.WriteUint32(static_cast<uint32_t>(status));
        WriteNoWcc(e);
        SendPaired(conn, std::move(out));
        return;
      }
      case Nfs3Proc::kRename: {
        const std::string from(args.ReadString("from").value_or(""));
        (void)args.ReadOpaque("to_dir");
        const std::string to(args.ReadString("to").value_or(""));
        Record(absl::StrCat("RENAME ", from, " ", to));
        e.WriteUint32(static_cast<uint32_t>(rename_status_));
        WriteNoWcc(e);
        WriteNoWcc(e);
        SendPaired(conn, std::move(out));
        return;
      }
      case Nfs3Proc::kLookup: {
        const std::string name(args.ReadString("name").value_or(""));
        Record("LOOKUP " + name);
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
        AppendFile(name, &out);
        e.WriteBool(false);  // none of the directory's
        break;
      }
      case Nfs3Proc::kRemove: {
        const std::string name(args.ReadString("name").value_or(""));
        Record("REMOVE " + name);
        e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
        WriteNoWcc(e);
        break;
      }
      default:  // GETATTR (the root, at connect)
        fake_nfs::AppendDirectoryGetAttrResults(1, &out);
        break;
    }
    conn->Send(std::move(out));
  }

  void Record(std::string call) {
    MutexLock l(&mu_);
    calls_.push_back(std::move(call));
  }

  // The file `name`: its handle "f:<name>", then its attributes.
  static void AppendFile(const std::string& name, std::string* out) {
    XdrEncoder e(out);
    e.WriteOpaque("f:" + name);
    e.WriteBool(true);
    Fattr3 a;
    a.type = FileType::kRegular;
    a.mode = 0644;
    a.nlink = 1;
    EncodeFattr3(a, out);
  }

  // wcc_data with neither side's attributes.
  static void WriteNoWcc(XdrEncoder& e) {
    e.WriteBool(false);
    e.WriteBool(false);
  }

  // Sends a SETATTR's or a RENAME's answer; paired, the first waits for
  // the second, and both go then, each on its own connection.
  void SendPaired(const TestTcpServer::ConnPtr& conn, std::string answer) {
    if (!pair_) {
      conn->Send(std::move(answer));
      return;
    }
    std::pair<TestTcpServer::ConnPtr, std::string> first;
    {
      MutexLock l(&mu_);
      if (held_.first == nullptr) {
        held_ = {conn, std::move(answer)};
        return;
      }
      first = std::exchange(held_, {});
    }
    first.first->Send(std::move(first.second));
    conn->Send(std::move(answer));
  }

  const bool pair_;
  const Nfs3Status rename_status_;
  mutable Mutex mu_;
  std::deque<Nfs3Status> set_attr_statuses_ ABSL_GUARDED_BY(mu_);
  std::pair<TestTcpServer::ConnPtr, std::string> held_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  TestTcpServer server_;  // last: its thread stops before the records go
};

class NfsPublishTest : public ::testing::Test {
 protected:
  // A fake playing `script`, and a client of its export and a filesystem
  // over it. A call unanswered for 5 s fails: a paired fake never answers
  // a client that sends one call at a time.
  void Serve(FakePublishServer::Script script) {
    server_ = std::make_unique<FakePublishServer>(std::move(script));
    NfsClientOptions o;
    o.timeouts.call = absl::Seconds(5);
    o.timeouts.retry_window = absl::ZeroDuration();
    absl::StatusOr<std::unique_ptr<NfsClient>> client =
        NfsClient::Connect(runtime_, server_->Url(), o);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    fs_ = NfsFileSystem::Over(*client_);
  }

  // The client's SetAttrAndRename of the handle "f:tmp" to "t.bin".
  NfsClient::SetAttrAndRenameResult SetAttrAndRename() {
    return client_->SetAttrAndRename(FileHandle("f:tmp"), {.mtime = NfsTime{1'600'000'000, 0}},
                                     "tmp", client_->root_handle(), "tmp",
                                     client_->root_handle(), "t.bin", "t.bin");
  }

  // "t.bin" written through the filesystem with a modification time, up
  // to Close's status; the writer is left in writer_.
  absl::Status WriteTimed() {
    absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenWrite(
        "t.bin", {.size = 5, .mtime = absl::FromUnixSeconds(1'600'000'000),
                  .target = fs::PathSeen::Missing()});
    if (!f.ok()) return f.status();
    writer_ = *std::move(f);
    absl::StatusOr<size_t> n = writer_->WriteAt(0, absl::MakeConstSpan("hello", 5));
    if (!n.ok()) return n.status();
    return writer_->Close();
  }

  std::vector<std::string> Calls() const { return server_->calls(); }

  // The temporary CREATE made for "t.bin" (the handle "f:<it>").
  std::string Temp() const {
    for (const std::string& c : Calls()) {
      if (c.rfind("RENAME ", 0) == 0) return c.substr(7, c.find(' ', 7) - 7);
    }
    return "";
  }

  Runtime runtime_{{.io_threads = 1, .blocking_threads = 2}};
  std::unique_ptr<FakePublishServer> server_;
  std::unique_ptr<NfsClient> client_;
  std::unique_ptr<NfsFileSystem> fs_;
  std::unique_ptr<fs::File> writer_;
};

TEST_F(NfsPublishTest, SetAttrAndRenameAreBothSentBeforeEitherIsAnswered) {
  ASSERT_NO_FATAL_FAILURE(Serve({.pair = true}));
  NfsClient::SetAttrAndRenameResult r = SetAttrAndRename();
  EXPECT_TRUE(r.set_attr.ok()) << r.set_attr;
  EXPECT_TRUE(r.rename.ok()) << r.rename;
  EXPECT_THAT(Calls(), ElementsAre("SETATTR f:tmp", "RENAME tmp t.bin"));
}

TEST_F(NfsPublishTest, AFailedSetAttrIsToldBesideTheRenameThatWasDone) {
  ASSERT_NO_FATAL_FAILURE(Serve({.set_attr = {Nfs3Status::kIo}}));
  NfsClient::SetAttrAndRenameResult r = SetAttrAndRename();
  EXPECT_FALSE(r.set_attr.ok());
  EXPECT_THAT(r.set_attr.message(), AllOf(HasSubstr("SETATTR"), HasSubstr("/export/tmp")));
  EXPECT_TRUE(r.rename.ok()) << r.rename;
}

TEST_F(NfsPublishTest, AWrittenFileWithATimeIsPublishedBySetAttrAndRenameInOneRoundTrip) {
  ASSERT_NO_FATAL_FAILURE(Serve({.pair = true}));
  const absl::Status closed = WriteTimed();
  ASSERT_TRUE(closed.ok()) << closed;
  EXPECT_THAT(Calls(), ElementsAre("SETATTR f:" + Temp(), "RENAME " + Temp() + " t.bin"));
}

TEST_F(NfsPublishTest, AFileWhoseTimeFailsOnceIsPublishedWithTheTimeSetAgainOnItsHandle) {
  ASSERT_NO_FATAL_FAILURE(Serve({.set_attr = {Nfs3Status::kIo}}));
  const absl::Status closed = WriteTimed();
  ASSERT_TRUE(closed.ok()) << closed;
  EXPECT_THAT(Calls(), ElementsAre("SETATTR f:" + Temp(), "RENAME " + Temp() + " t.bin",
                                   "SETATTR f:" + Temp()));
}

TEST_F(NfsPublishTest, AFileWhoseTimeFailsTwiceIsPublishedAndItsCloseSaysSo) {
  ASSERT_NO_FATAL_FAILURE(Serve({.set_attr = {Nfs3Status::kIo, Nfs3Status::kIo}}));
  const absl::Status closed = WriteTimed();
  EXPECT_FALSE(closed.ok());
  EXPECT_THAT(closed.message(),
              AllOf(HasSubstr("write nfs://127.0.0.1/export/t.bin"),
                    HasSubstr("its bytes are in place"), HasSubstr("SETATTR")));
  ASSERT_NE(writer_, nullptr);
  EXPECT_EQ(writer_->Close(), closed);  // said again, not forgotten
  // Published: nothing is left to remove.
  EXPECT_TRUE(writer_->Discard().ok());
  for (const std::string& c : Calls()) EXPECT_THAT(c, ::testing::Not(HasSubstr("REMOVE")));
}

TEST_F(NfsPublishTest, AFileWhoseHandleTheRenameMadeStaleHasItsTimeSetOnTheTargetsHandle) {
  ASSERT_NO_FATAL_FAILURE(Serve({.set_attr = {Nfs3Status::kStale}}));
  const absl::Status closed = WriteTimed();
  ASSERT_TRUE(closed.ok()) << closed;
  EXPECT_THAT(Calls(), ElementsAre("SETATTR f:" + Temp(), "RENAME " + Temp() + " t.bin",
                                   "LOOKUP t.bin", "SETATTR f:t.bin"));
}

TEST_F(NfsPublishTest, AFileWhoseRenameFailsIsNotPublishedAndItsTemporaryIsRemoved) {
  ASSERT_NO_FATAL_FAILURE(Serve({.rename = Nfs3Status::kAcces}));
  const absl::Status closed = WriteTimed();
  EXPECT_EQ(closed.code(), absl::StatusCode::kPermissionDenied) << closed;
  EXPECT_THAT(closed.message(), HasSubstr("RENAME"));
  EXPECT_THAT(closed.message(), ::testing::Not(HasSubstr("in place")));
  ASSERT_NE(writer_, nullptr);
  EXPECT_TRUE(writer_->Discard().ok());
  EXPECT_EQ(Calls().back(), "REMOVE " + Temp());
}

}  // namespace
}  // namespace ferry::nfs
