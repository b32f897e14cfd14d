// WalkTree against an in-process fake NFSv3 server (no real peer): the
// cases a real server cannot be made to produce on demand. The fake speaks
// just enough MOUNT (EXPORT, MNT) and NFS (GETATTR, FSINFO, READDIRPLUS)
// for NfsClient::Connect and a walk, over record-marked TCP on 127.0.0.1.
//
// Its tree: the root holds files f0..f7 and the directories "sub" (files
// s0..s6) and, in one test, "bad". Listings include "." and "..", as real
// servers send them, and come in pages of kPageEntries, each entry's cookie
// being its index + 1.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_error.h"
#include "ferry/nfs/tree_walker.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/xdr.h"
#include "ferry/runtime/runtime.h"
#include "fake_nfs_answers.h"
#include "testing/test_tcp_server.h"

namespace ferry::nfs {
namespace {

using ::testing::HasSubstr;
using ferry::testing::TestTcpServer;

// Small pages, so that a directory of a few entries takes several
// READDIRPLUS calls and has continuations to refuse.
constexpr size_t kPageEntries = 3;

Fattr3 Attrs(FileType type, uint64_t fileid) {
  Fattr3 a;
  a.type = type;
  a.mode = type == FileType::kDirectory ? 0755 : 0644;
  a.nlink = 1;
  a.size = type == FileType::kDirectory ? 4096 : 100 + fileid;
  a.fileid = fileid;
  return a;
}

struct FakeEntry {
  std::string name;
  FileType type;
  // 0 / empty: 100 + its index in the listing, "d:" + its name.
  uint64_t fileid = 0;
  std::string handle;
};

struct FakeOptions {
  // Adds the directory "bad" to the root, whose every READDIRPLUS reply is
  // cut short.
  bool truncating_directory = false;
  // If not 0: the first READDIRPLUS of "sub" that continues from this
  // cookie or a later one answers NFS3ERR_BAD_COOKIE.
  uint64_t refuse_sub_from_cookie = 0;
  // Adds the directory "evil" (fileid 111) to the root, listing names no
  // walk may take as they are (an empty one, one with '/', "..", "."
  // entries of its own), a subdirectory "again" that is "evil" itself
  // (same handle and fileid), and one good file "ok".
  bool hostile_directory = false;
  // Adds the directory "stuck", whose every READDIRPLUS answers its first
  // page whatever the cookie, never at eof.
  bool stuck_directory = false;
  // The first this many READDIRPLUS calls of "sub" are never answered (a
  // reply lost on the way, a server that drops a request); every other
  // call is.
  int unanswered_sub_listings = 0;
};

// The fake server's state and handler. Thread-safety: the state is fixed at
// construction and then touched only by the handler, on the TestTcpServer's
// thread; the counters are atomics the test reads after the walk.
class FakeNfsServer {
 public:
  explicit FakeNfsServer(const FakeOptions& options)
      : refuse_sub_from_cookie_(options.refuse_sub_from_cookie),
        unanswered_sub_listings_(options.unanswered_sub_listings) {
    dirs_["d:root"] = {{".", FileType::kDirectory}, {"..", FileType::kDirectory}};
    for (int i = 0; i < 8; ++i) dirs_["d:root"].push_back({absl::StrCat("f", i), FileType::kRegular});
    dirs_["d:root"].push_back({"sub", FileType::kDirectory});
    dirs_["d:sub"] = {{".", FileType::kDirectory}, {"..", FileType::kDirectory}};
    for (int i = 0; i < 7; ++i) dirs_["d:sub"].push_back({absl::StrCat("s", i), FileType::kRegular});
    if (options.hostile_directory) {
      dirs_["d:root"].push_back({"evil", FileType::kDirectory});  // index 11: fileid 111
      dirs_["d:evil"] = {{".", FileType::kDirectory},
                         {"..", FileType::kDirectory},
                         {"", FileType::kDirectory},
                         {"a/b", FileType::kRegular},
                         {"again", FileType::kDirectory, 111, "d:evil"},
                         {"ok", FileType::kRegular}};
    }
    if (options.stuck_directory) {
      dirs_["d:root"].push_back({"stuck", FileType::kDirectory});
      dirs_["d:stuck"] = {{"p", FileType::kRegular}, {"q", FileType::kRegular},
                          {"r", FileType::kRegular}, {"s", FileType::kRegular}};
    }
    if (options.truncating_directory) {
      dirs_["d:root"].push_back({"bad", FileType::kDirectory});
      dirs_["d:bad"] = {{".", FileType::kDirectory}, {"x", FileType::kRegular}};
    }
    server_ = std::make_unique<TestTcpServer>(
        NewRecordMarkingFraming({}),
        [this](const TestTcpServer::ConnPtr& conn, std::string record) {
          std::string answer = Answer(record);
          if (!answer.empty()) conn->Send(std::move(answer));  // empty: left unanswered
        });
  }

  std::string Url() const {
    return absl::StrCat("nfs://127.0.0.1/export?nfsport=", server_->port(),
                        "&mountport=", server_->port());
  }
  int bad_cookies_sent() const { return bad_cookies_sent_.load(); }
  int readdirplus_calls() const { return readdirplus_calls_.load(); }

 private:
  std::string Answer(std::string_view record) {
    absl::StatusOr<RpcCall> call = DecodeCall(record);
    if (!call.ok()) return "";  // never happens with ferry's client
    std::string out = fake_nfs::SuccessHeader(call->xid);
    if (call->prog == kMountProgram) {
      fake_nfs::AppendMountResults(*call, &out);
      return out;
    }
    XdrDecoder args(call->args, "args");
    const std::string handle(args.ReadOpaque("fh").value_or(""));
    switch (static_cast<Nfs3Proc>(call->proc)) {
      case Nfs3Proc::kGetAttr:
        fake_nfs::AppendDirectoryGetAttrResults(1, &out);
        break;
      case Nfs3Proc::kFsInfo:
        fake_nfs::AppendFsInfoResults(&out);
        break;
      case Nfs3Proc::kReaddirplus:
        ++readdirplus_calls_;
        AnswerReaddirplus(handle, args.ReadUint64("cookie").value_or(0), &out);
        break;
      default:
        XdrEncoder(&out).WriteUint32(static_cast<uint32_t>(Nfs3Status::kNotSupp));
        break;
    }
    return out;
  }

  void AnswerReaddirplus(const std::string& dir, uint64_t cookie, std::string* out) {
    ReaddirplusResult r;
    if (dir == "d:sub" && unanswered_sub_listings_ > 0) {
      --unanswered_sub_listings_;
      out->clear();
      return;
    }
    if (dir == "d:sub" && refuse_sub_from_cookie_ != 0 && cookie >= refuse_sub_from_cookie_) {
      refuse_sub_from_cookie_ = 0;
      ++bad_cookies_sent_;
      r.status = Nfs3Status::kBadCookie;
      EncodeReaddirplusResult(r, out);
      return;
    }
    const std::vector<FakeEntry>& entries = dirs_.at(dir);
    std::vector<std::string> handles;
    handles.reserve(entries.size());
    for (const FakeEntry& f : entries) {
      handles.push_back(f.handle.empty() ? absl::StrCat("d:", f.name) : f.handle);
    }
    r.cookieverf = 42;
    if (dir == "d:stuck") cookie = 0;  // the first page, again and again
    for (size_t i = cookie; i < entries.size() && r.entries.size() < kPageEntries; ++i) {
      DirEntryPlus d;
      d.fileid = entries[i].fileid != 0 ? entries[i].fileid : 100 + i;
      d.name = entries[i].name;
      d.cookie = i + 1;
      d.attributes = Attrs(entries[i].type, d.fileid);
      d.handle = handles[i];
      r.entries.push_back(d);
    }
    r.eof = dir != "d:stuck" && cookie + r.entries.size() >= entries.size();
    if (dir != "d:bad") {
      EncodeReaddirplusResult(r, out);
      return;
    }
    // Half of the results: the record ends inside the entry list.
    std::string results;
    EncodeReaddirplusResult(r, &results);
    out->append(results, 0, results.size() / 2);
  }

  std::map<std::string, std::vector<FakeEntry>> dirs_;
  uint64_t refuse_sub_from_cookie_;  // 0: never
  int unanswered_sub_listings_;
  std::atomic<int> bad_cookies_sent_{0};
  std::atomic<int> readdirplus_calls_{0};
  // Last: stopped (joined) first, before the state its handler uses goes.
  std::unique_ptr<TestTcpServer> server_;
};

struct Walked {
  std::map<std::string, int> times_reported;
  std::vector<WalkError> errors;
  WalkStats stats;
};

class WalkerFakeServerTest : public ::testing::Test {
 protected:
  Walked Walk(const FakeNfsServer& fake, const NfsClientOptions& options = {}) {
    Walked w;
    absl::StatusOr<std::unique_ptr<NfsClient>> client = NfsClient::Connect(runtime_, fake.Url(), options);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return w;
    absl::StatusOr<WalkStats> stats = WalkTree(**client, "", {}, [&](WalkBatch& batch) {
      for (const WalkEntry& e : batch.entries) ++w.times_reported[e.path];
      for (WalkError& e : batch.errors) w.errors.push_back(std::move(e));
      return true;
    });
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (stats.ok()) w.stats = *stats;
    return w;
  }

  static std::map<std::string, int> EachOnce(bool with_bad) {
    std::map<std::string, int> m;
    for (int i = 0; i < 8; ++i) m[absl::StrCat("f", i)] = 1;
    m["sub"] = 1;
    for (int i = 0; i < 7; ++i) m[absl::StrCat("sub/s", i)] = 1;
    if (with_bad) m["bad"] = 1;
    return m;
  }

  Runtime runtime_{{.io_threads = 2, .blocking_threads = 2}};
};

TEST_F(WalkerFakeServerTest, WalksEveryEntryOnceOverSeveralPages) {
  FakeNfsServer fake({});
  Walked w = Walk(fake);
  EXPECT_EQ(w.times_reported, EachOnce(false));
  EXPECT_TRUE(w.errors.empty());
  EXPECT_EQ(w.stats.directories, 2u);
  EXPECT_EQ(w.stats.retries, 0u);
  EXPECT_EQ(fake.readdirplus_calls(), 4 + 3);
}

TEST_F(WalkerFakeServerTest, BadCookieRestartsTheDirectoryAndReportsEachEntryOnce) {
  // "sub" lists ".", "..", s0 | s1 s2 s3 | s4 s5 s6: refuse the third page,
  // after s0..s3 have been reported.
  FakeNfsServer fake({.refuse_sub_from_cookie = 6});
  Walked w = Walk(fake);
  EXPECT_EQ(fake.bad_cookies_sent(), 1);
  EXPECT_EQ(w.times_reported, EachOnce(false));
  EXPECT_TRUE(w.errors.empty());
  EXPECT_EQ(w.stats.directories, 2u);
  EXPECT_EQ(w.stats.retries, 1u);
  EXPECT_EQ(w.stats.entries, EachOnce(false).size());
  // root: 4 pages; sub: 2 pages, the refused one, then 3 pages again.
  EXPECT_EQ(w.stats.requests, 4u + 2u + 1u + 3u);
  EXPECT_EQ(fake.readdirplus_calls(), 10);
}

TEST_F(WalkerFakeServerTest, TruncatedReaddirplusReplyIsDataLossNamingTheDirectory) {
  FakeNfsServer fake({.truncating_directory = true});
  Walked w = Walk(fake);
  EXPECT_EQ(w.times_reported, EachOnce(true));
  ASSERT_EQ(w.errors.size(), 1u);
  EXPECT_EQ(w.errors[0].path, "bad");
  EXPECT_EQ(w.errors[0].status.code(), absl::StatusCode::kDataLoss) << w.errors[0].status;
  EXPECT_THAT(std::string(w.errors[0].status.message()),
              HasSubstr("READDIRPLUS nfs://127.0.0.1/export/bad"));
  EXPECT_EQ(w.stats.errors, 1u);
  EXPECT_EQ(w.stats.directories, 2u);  // root and sub; not bad
}

TEST_F(WalkerFakeServerTest, HostileNamesAreRefusedOnceAndNeverWalkedInto) {
  FakeNfsServer fake({.hostile_directory = true});
  Walked w = Walk(fake);
  std::map<std::string, int> expected = EachOnce(false);
  expected["evil"] = 1;
  expected["evil/ok"] = 1;
  EXPECT_EQ(w.times_reported, expected);
  std::map<std::string, std::string> refused;  // name -> parent
  for (const WalkError& e : w.errors) {
    EXPECT_TRUE(e.refused) << e.status;
    refused[e.name] = e.path;
  }
  EXPECT_EQ(refused, (std::map<std::string, std::string>{{"", "evil"}, {"a/b", "evil"},
                                                          {"again", "evil"}}));
  EXPECT_EQ(w.stats.entries_refused, 3u);
  // root 4 pages, sub 3, evil 2: "evil" was listed once.
  EXPECT_EQ(fake.readdirplus_calls(), 4 + 3 + 2);
}

TEST_F(WalkerFakeServerTest, AListingWhoseCookieDoesNotAdvanceEndsWithDataLoss) {
  FakeNfsServer fake({.stuck_directory = true});
  Walked w = Walk(fake);
  ASSERT_EQ(w.errors.size(), 1u);
  EXPECT_EQ(w.errors[0].path, "stuck");
  EXPECT_FALSE(w.errors[0].refused);
  EXPECT_EQ(w.errors[0].status.code(), absl::StatusCode::kDataLoss) << w.errors[0].status;
  EXPECT_THAT(std::string(w.errors[0].status.message()), HasSubstr("does not advance"));
  EXPECT_EQ(w.times_reported["stuck/p"], 1);  // the repeated page is not taken
}

TEST_F(WalkerFakeServerTest, ListingWhoseReplyIsLostIsSentAgainAndTheWalkCompletes) {
  FakeNfsServer fake({.unanswered_sub_listings = 1});
  NfsClientOptions options;
  options.timeouts.call = absl::Milliseconds(500);
  Walked w = Walk(fake, options);
  EXPECT_EQ(w.times_reported, EachOnce(false));
  EXPECT_TRUE(w.errors.empty()) << w.errors[0].status;
  EXPECT_EQ(fake.readdirplus_calls(), 4 + 3 + 1);
}

TEST_F(WalkerFakeServerTest, ListingNeverAnsweredIsDeadlineExceededAndTheRestIsWalked) {
  FakeNfsServer fake({.unanswered_sub_listings = 1000});
  NfsClientOptions options;
  options.timeouts.call = absl::Milliseconds(500);
  const absl::Time start = absl::Now();
  Walked w = Walk(fake, options);
  // Two timeouts (the listing is sent once more) and slack for a loaded
  // machine: the walk ends.
  EXPECT_LT(absl::Now() - start, absl::Seconds(1) + absl::Seconds(20));
  std::map<std::string, int> root_only = EachOnce(false);
  for (int i = 0; i < 7; ++i) root_only.erase(absl::StrCat("sub/s", i));
  EXPECT_EQ(w.times_reported, root_only);
  ASSERT_EQ(w.errors.size(), 1u);
  EXPECT_EQ(w.errors[0].path, "sub");
  EXPECT_EQ(w.errors[0].status.code(), absl::StatusCode::kDeadlineExceeded) << w.errors[0].status;
  EXPECT_THAT(std::string(w.errors[0].status.message()), HasSubstr("READDIRPLUS nfs://127.0.0.1/export/sub"));
}

}  // namespace
}  // namespace ferry::nfs
