// Helpers shared by the RPC integration tests: the procedures they call on
// ganesha and rpcbind, building CALL records, and pools aimed at a port.
#ifndef FERRY_TESTS_INTEGRATION_RPC_RPC_TEST_UTIL_H_
#define FERRY_TESTS_INTEGRATION_RPC_RPC_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/runtime.h"
#include "testing/rpc_load.h"

namespace ferry::rpc_test {

// A program number from the range RFC 5531 leaves to users (0x20000000-
// 0x3fffffff), so no server here registers or serves it.
inline constexpr uint32_t kUnassignedProgram = 0x20fe0001;

inline constexpr RpcProcedure kNfs3Null{100003, 3, 0, "NFS", "NULL"};
inline constexpr RpcProcedure kMount3Null{100005, 3, 0, "MOUNT", "NULL"};

// A CALL record for `procedure` with AUTH_NONE and `args` (XDR) appended;
// the xid is left 0 for the pool to stamp.
std::string MakeCall(const RpcProcedure& procedure, std::string_view args = {});

// A record-marking kById pool on 127.0.0.1:`port`, with the test-friendly
// defaults below changed by `adjust` if given (a stale peer must fail a test
// in seconds, not the 60 s default).
RpcPoolOptions PoolOptions(uint16_t port, int connections = 1, int max_in_flight = 64);
absl::StatusOr<std::unique_ptr<RpcPool>> MakeReadyPool(Runtime& runtime, RpcPoolOptions options);

// Sends `MakeCall(procedure, args)` through `pool`, blocking, and returns
// the results of a successful reply (copied out of the record), or the
// error of the call or of the reply (DecodeReply's status).
absl::StatusOr<std::string> CallProcedure(RpcPool& pool, const RpcProcedure& procedure,
                                          std::string_view args = {},
                                          const RpcCallOptions& options = {});

// A closed-loop load of `calls` NFS v3 NULL calls, `depth` in flight, each
// reply checked to decode as NULL's (for peers::RunClosedLoop).
peers::RpcLoad Nfs3NullLoad(int64_t calls, int depth);

}  // namespace ferry::rpc_test

#endif  // FERRY_TESTS_INTEGRATION_RPC_RPC_TEST_UTIL_H_
