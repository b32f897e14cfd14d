// Every blocking call into the front ends with DeadlineExceeded when the
// server accepts its requests and never answers (issue #28), whatever the
// protocol: the filesystem is resolved through the registry with the one
// timeout a tool sets (BuiltinFileSystemOptions::io_timeout), connected
// through a toxiproxy proxy, given a directory holding one file, and then
// the proxy stalls (its `timeout` toxic: the server's bytes never reach
// the client, no connection is closed).
//
// The bound asserted is two timeouts (a request safe to repeat is sent
// once more before it fails) plus slack for a loaded machine: the point is
// that the call ends, not how fast.
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/adapters/builtin.h"
#include "ferry/base/random.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/runtime.h"
#include "gtest/gtest.h"
#include "testing/peers.h"

namespace ferry {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(2);
const absl::Duration kBound = 2 * kTimeout + absl::Seconds(30);
constexpr uint16_t kVersitygwPort = 7070;  // the peer_versitygw fixture
constexpr uint16_t kIrodsPort = 1247;      // the peer_irods fixture

using Param = std::tuple<std::string, std::string>;  // protocol, call

class StalledServerTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const std::string& protocol = std::get<0>(GetParam());
    const uint16_t upstream = protocol == "nfs"   ? peers::kNfsPort
                              : protocol == "s3" ? kVersitygwPort
                                                 : kIrodsPort;
    const std::string name = absl::StrCat("deadline-", RandomUint64() % 1000000000);
    proxy_ = std::make_unique<peers::ScopedProxy>(toxiproxy_, absl::StrCat("stall_", name), upstream);
    ASSERT_TRUE(proxy_->status().ok()) << proxy_->status();
    const std::string port = absl::StrCat(proxy_->port());
    std::string dir_url;
    if (protocol == "nfs") {
      // MOUNT goes straight to ganesha; every NFS call through the proxy.
      dir_url = absl::StrCat("nfs://127.0.0.1/export/", name, "?nfsport=", port,
                             "&mountport=", peers::kMountPort);
    } else if (protocol == "s3") {
      setenv("AWS_ENDPOINT_URL", absl::StrCat("http://127.0.0.1:", port).c_str(), 1);
      setenv("AWS_ACCESS_KEY_ID", "AKIDLOCAL", 1);
      setenv("AWS_SECRET_ACCESS_KEY", "SECRETLOCAL", 1);
      setenv("AWS_REGION", "us-east-1", 1);
      setenv("AWS_CONFIG_FILE", "/dev/null", 1);
      setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null", 1);
      dir_url = absl::StrCat("s3://", name, "/d");
    } else {
      setenv("IRODS_PASSWORD", "rods", 1);
      dir_url = absl::StrCat("irods://rods@127.0.0.1:", port, "/tempZone/home/rods/", name);
    }
    ASSERT_TRUE(RegisterBuiltinFileSystems(registry_, {.s3_make_bucket = true, .io_timeout = kTimeout}).ok());
    absl::StatusOr<fs::Location> where = registry_.Resolve(dir_url);
    ASSERT_TRUE(where.ok()) << where.status();
    fs_ = where->fs;
    dir_ = where->path;
    file_ = absl::StrCat(dir_, "/f");
    if (protocol == "s3") {
      absl::Status bucket = fs_->CreateDir(name, false);
      ASSERT_TRUE(bucket.ok()) << bucket;
    } else {
      absl::Status made = fs_->CreateDir(dir_, true);
      ASSERT_TRUE(made.ok()) << made;
    }
    const std::string data(5000, 'x');
    absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenWrite(file_, {.size = 5000});
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->WriteAt(0, data).ok());
    ASSERT_TRUE((*f)->Close().ok());
    ASSERT_TRUE(fs_->Stat(file_).ok());
    ASSERT_TRUE(proxy_->AddToxic({.name = "stall", .type = "timeout", .attributes = {{"timeout", 0}}}).ok());
  }

  // The call the test names, on the stalled server.
  absl::Status Run(const std::string& call) {
    if (call == "stat") return fs_->Stat(file_).status();
    if (call == "list") {
      return fs_->List(dir_, [](std::vector<fs::Entry>&) { return true; });
    }
    if (call == "walk") {
      absl::Status listed;  // a walk reports an unreadable directory and goes on
      absl::StatusOr<fs::WalkStats> walked = fs_->Walk(dir_, {}, [&](fs::WalkBatch& b) {
        for (const fs::WalkError& e : b.errors) {
          if (listed.ok()) listed = e.status;
        }
        return true;
      });
      return walked.ok() ? listed : walked.status();
    }
    if (call == "read") {
      absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenRead(file_);
      if (!f.ok()) return f.status();
      std::string buf(5000, '\0');
      return (*f)->ReadAt(0, absl::MakeSpan(buf)).status();
    }
    // write
    absl::StatusOr<std::unique_ptr<fs::File>> f = fs_->OpenWrite(absl::StrCat(dir_, "/new"), {.size = 5000});
    if (!f.ok()) return f.status();
    const std::string data(5000, 'y');
    if (absl::StatusOr<size_t> w = (*f)->WriteAt(0, data); !w.ok()) return w.status();
    return (*f)->Close();
  }

  peers::ToxiproxyClient toxiproxy_;
  std::unique_ptr<peers::ScopedProxy> proxy_;
  Runtime runtime_;
  fs::FileSystemRegistry registry_{runtime_};
  std::shared_ptr<fs::FileSystem> fs_;
  std::string dir_;
  std::string file_;
};

TEST_P(StalledServerTest, CallEndsWithDeadlineExceededWithinTwoTimeouts) {
  const absl::Time start = absl::Now();
  const absl::Status s = Run(std::get<1>(GetParam()));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(took, kBound) << s;
}

INSTANTIATE_TEST_SUITE_P(
    EveryProtocolAndCall, StalledServerTest,
    ::testing::Combine(::testing::Values("nfs", "s3", "irods"),
                       ::testing::Values("stat", "list", "walk", "read", "write")),
    [](const ::testing::TestParamInfo<Param>& p) {
      return absl::StrCat(std::get<0>(p.param), "_", std::get<1>(p.param));
    });

}  // namespace
}  // namespace ferry
