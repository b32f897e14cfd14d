// RpcPool + ONC RPC against the real nfs-ganesha of the peer_ganesha
// fixture: NULL calls to NFS v3 and MOUNT v3, many thousands pipelined on
// one and on four connections, and the errors a server gives for a program
// or version it does not serve.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/runtime.h"
#include "rpc_test_util.h"
#include "testing/peers.h"
#include "testing/rpc_load.h"

namespace ferry {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Enough calls that every connection's in-flight window fills and drains
// many times over; ~1 s against ganesha on loopback even under ASan.
constexpr int kPipelinedCalls = 20000;

class RpcPoolAgainstGaneshaTest : public ::testing::Test {
 protected:
  std::unique_ptr<RpcPool> Pool(uint16_t port, int connections = 1, int max_in_flight = 64) {
    absl::StatusOr<std::unique_ptr<RpcPool>> pool =
        rpc_test::MakeReadyPool(runtime_, rpc_test::PoolOptions(port, connections, max_in_flight));
    EXPECT_TRUE(pool.ok()) << pool.status();
    return pool.ok() ? *std::move(pool) : nullptr;
  }

  // One `null` call on a pool to `port` succeeds, with empty results.
  void ExpectNullCallSucceeds(uint16_t port, const RpcProcedure& null) {
    std::unique_ptr<RpcPool> pool = Pool(port);
    ASSERT_NE(pool, nullptr);
    absl::StatusOr<std::string> results = rpc_test::CallProcedure(*pool, null);
    ASSERT_TRUE(results.ok()) << results.status();
    EXPECT_EQ(*results, "");
  }

  // Runs kPipelinedCalls NFS v3 NULL calls with `depth` in flight and
  // checks that every one succeeded and was counted.
  void ExpectPipelinedNullCallsSucceed(RpcPool& pool, int depth) {
    const peers::RpcLoadResult r =
        peers::RunClosedLoop(pool, rpc_test::Nfs3NullLoad(kPipelinedCalls, depth));
    EXPECT_EQ(r.succeeded, kPipelinedCalls) << r.first_error;
    EXPECT_EQ(r.failed, 0) << r.first_error;
    const RpcPoolMetrics m = pool.metrics();
    EXPECT_EQ(m.calls_succeeded, static_cast<uint64_t>(kPipelinedCalls));
    EXPECT_EQ(m.calls_failed, 0u);
    EXPECT_EQ(m.in_flight, 0u);
  }

  // Calls `procedure`, which ganesha does not serve, through `pool` and
  // expects Unimplemented with a message that `message` matches.
  template <typename Matcher>
  static void ExpectUnimplemented(RpcPool& pool, const RpcProcedure& procedure, Matcher message) {
    absl::StatusOr<std::string> results = rpc_test::CallProcedure(pool, procedure);
    EXPECT_EQ(results.status().code(), absl::StatusCode::kUnimplemented) << results.status();
    EXPECT_THAT(results.status().message(), message);
  }

  Runtime runtime_;
};

TEST_F(RpcPoolAgainstGaneshaTest, NfsV3NullCallSucceeds) {
  ExpectNullCallSucceeds(peers::kNfsPort, rpc_test::kNfs3Null);
}

TEST_F(RpcPoolAgainstGaneshaTest, MountV3NullCallSucceeds) {
  ExpectNullCallSucceeds(peers::kMountPort, rpc_test::kMount3Null);
}

TEST_F(RpcPoolAgainstGaneshaTest, TwentyThousandNullCallsWith256InFlightOnOneConnectionSucceed) {
  std::unique_ptr<RpcPool> pool = Pool(peers::kNfsPort, /*connections=*/1, /*max_in_flight=*/256);
  ASSERT_NE(pool, nullptr);
  ExpectPipelinedNullCallsSucceed(*pool, /*depth=*/256);
  ASSERT_EQ(pool->metrics().connections.size(), 1u);
  EXPECT_EQ(pool->metrics().connections[0].replies, static_cast<uint64_t>(kPipelinedCalls));
}

TEST_F(RpcPoolAgainstGaneshaTest, TwentyThousandNullCallsWith64InFlightOnFourConnectionsSucceed) {
  std::unique_ptr<RpcPool> pool = Pool(peers::kNfsPort, /*connections=*/4, /*max_in_flight=*/64);
  ASSERT_NE(pool, nullptr);
  ExpectPipelinedNullCallsSucceed(*pool, /*depth=*/64);
  const RpcPoolMetrics m = pool->metrics();
  ASSERT_EQ(m.connections.size(), 4u);
  uint64_t replies = 0;
  for (const RpcConnectionMetrics& c : m.connections) replies += c.replies;
  EXPECT_EQ(replies, static_cast<uint64_t>(kPipelinedCalls));
}

TEST_F(RpcPoolAgainstGaneshaTest, TwentyThousandNullCallsWith256InFlightOnFourConnectionsSucceed) {
  std::unique_ptr<RpcPool> pool = Pool(peers::kNfsPort, /*connections=*/4, /*max_in_flight=*/64);
  ASSERT_NE(pool, nullptr);
  // 256 in flight on 4 x 64 slots: every connection is kept full.
  ExpectPipelinedNullCallsSucceed(*pool, /*depth=*/256);
  for (const RpcConnectionMetrics& c : pool->metrics().connections) {
    EXPECT_GT(c.replies, 0u) << "connection " << c.index << " carried no call";
  }
}

TEST_F(RpcPoolAgainstGaneshaTest, UnservedProgramIsProgUnavailNamingTheCall) {
  std::unique_ptr<RpcPool> pool = Pool(peers::kNfsPort);
  ASSERT_NE(pool, nullptr);
  const RpcProcedure unserved{rpc_test::kUnassignedProgram, 1, 0, "", "NULL"};
  ExpectUnimplemented(*pool, unserved,
                      AllOf(HasSubstr("PROG_UNAVAIL"),
                            HasSubstr(absl::StrCat("program ", rpc_test::kUnassignedProgram)),
                            HasSubstr("v1"), HasSubstr("proc 0")));
  // The connection stays usable.
  EXPECT_TRUE(rpc_test::CallProcedure(*pool, rpc_test::kNfs3Null).ok());
}

TEST_F(RpcPoolAgainstGaneshaTest, UnservedVersionIsProgMismatchNamingTheServedRange) {
  std::unique_ptr<RpcPool> pool = Pool(peers::kNfsPort);
  ASSERT_NE(pool, nullptr);
  const RpcProcedure nfs7{peers::kNfsProgram, 7, 0, "NFS", "NULL"};
  // ganesha serves NFS v3 and v4 (ganesha.conf.in: Protocols = 3, 4).
  ExpectUnimplemented(*pool, nfs7,
                      AllOf(HasSubstr("PROG_MISMATCH"), HasSubstr("program 100003 (NFS) v7 proc 0"),
                            HasSubstr("v3"), HasSubstr("v4")));
}

}  // namespace
}  // namespace ferry
