// The portmapper helpers (ferry/rpc/portmapper.h) through RpcPool against the
// real rpcbind that the peer_ganesha fixture runs, with ganesha's NFS v3 and
// MOUNT v3 registered in it.
#include "ferry/rpc/portmapper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/runtime.h"
#include "rpc_test_util.h"
#include "testing/peers.h"

namespace ferry {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

class PortmapperAgainstRpcbindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RpcPool>> pool =
        rpc_test::MakeReadyPool(runtime_, rpc_test::PoolOptions(kPortmapPort));
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
  }

  absl::StatusOr<std::string> Call(PortmapProc proc, std::string args = {}) {
    return rpc_test::CallProcedure(*pool_, PortmapProcedure(proc), args);
  }

  // GETPORT for `query` (its port is ignored), decoded.
  absl::StatusOr<uint16_t> GetPort(const PortMapping& query) {
    std::string args;
    EncodeGetPortArgs(query, &args);
    absl::StatusOr<std::string> results = Call(PortmapProc::kGetPort, args);
    if (!results.ok()) return results.status();
    return DecodeGetPortResult(*results, query);
  }

  Runtime runtime_;
  std::unique_ptr<RpcPool> pool_;
};

TEST_F(PortmapperAgainstRpcbindTest, NullCallSucceeds) {
  absl::StatusOr<std::string> results = Call(PortmapProc::kNull);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(*results, "");
}

TEST_F(PortmapperAgainstRpcbindTest, DumpListsNfsV3AndMountV3OnTcp) {
  absl::StatusOr<std::string> results = Call(PortmapProc::kDump);
  ASSERT_TRUE(results.ok()) << results.status();
  absl::StatusOr<std::vector<PortMapping>> mappings = DecodeDumpResult(*results);
  ASSERT_TRUE(mappings.ok()) << mappings.status();
  EXPECT_THAT(*mappings,
              Contains(PortMapping{peers::kNfsProgram, 3, kIpProtoTcp, peers::kNfsPort}));
  EXPECT_THAT(*mappings,
              Contains(PortMapping{peers::kMountProgram, 3, kIpProtoTcp, peers::kMountPort}));
  EXPECT_THAT(*mappings,
              Contains(PortMapping{kPortmapProgram, 2, kIpProtoTcp, kPortmapPort}));
}

TEST_F(PortmapperAgainstRpcbindTest, GetPortFindsNfsV3OnTcpAt2049) {
  absl::StatusOr<uint16_t> port = GetPort({peers::kNfsProgram, 3, kIpProtoTcp, 0});
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(*port, peers::kNfsPort);
}

TEST_F(PortmapperAgainstRpcbindTest, GetPortFindsMountV3OnTcpAt20048) {
  absl::StatusOr<uint16_t> port = GetPort({peers::kMountProgram, 3, kIpProtoTcp, 0});
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(*port, peers::kMountPort);
}

TEST_F(PortmapperAgainstRpcbindTest, GetPortOfAnUnregisteredProgramIsNotFound) {
  absl::StatusOr<uint16_t> port = GetPort({rpc_test::kUnassignedProgram, 1, kIpProtoTcp, 0});
  EXPECT_EQ(port.status().code(), absl::StatusCode::kNotFound) << port.status();
  EXPECT_THAT(port.status().message(), HasSubstr(absl::StrCat(rpc_test::kUnassignedProgram)));
}

}  // namespace
}  // namespace ferry
