// Helpers shared by the RPC integration tests (see rpc_test_util.h).
#include "rpc_test_util.h"

#include <utility>

#include "ferry/base/status_macros.h"
#include "ferry/rpc/framing.h"
#include "testing/peers.h"

namespace ferry::rpc_test {

// Every test call is tiny; a reply that takes this long means a stuck peer.
constexpr absl::Duration kTestCallTimeout = absl::Seconds(5);

std::string MakeCall(const RpcProcedure& procedure, std::string_view args) {
  std::string call;
  EncodeCallHeader(/*xid=*/0, procedure, AuthNone(), AuthNone(), &call);
  call.append(args);
  return call;
}

RpcPoolOptions PoolOptions(uint16_t port, int connections, int max_in_flight) {
  RpcPoolOptions o;
  o.host = peers::kPeerHost;
  o.port = port;
  o.framing = NewRecordMarkingFraming({});
  o.connections = connections;
  o.max_in_flight_per_connection = max_in_flight;
  o.default_timeout = kTestCallTimeout;
  o.connect_timeout = absl::Seconds(2);
  return o;
}

absl::StatusOr<std::unique_ptr<RpcPool>> MakeReadyPool(Runtime& runtime, RpcPoolOptions options) {
  const int connections = options.connections;
  std::unique_ptr<RpcPool> pool;
  FERRY_ASSIGN_OR_RETURN(pool, RpcPool::Create(runtime, std::move(options)));
  FERRY_RETURN_IF_ERROR(pool->WaitUntilReady(connections, absl::Now() + kTestCallTimeout));
  return pool;
}

absl::StatusOr<std::string> CallProcedure(RpcPool& pool, const RpcProcedure& procedure,
                                          std::string_view args, const RpcCallOptions& options) {
  std::string record;
  FERRY_ASSIGN_OR_RETURN(record, pool.CallBlocking(MakeCall(procedure, args), options));
  RpcReply reply;
  FERRY_ASSIGN_OR_RETURN(reply, DecodeReply(record, procedure));
  return std::string(reply.results);
}

peers::RpcLoad Nfs3NullLoad(int64_t calls, int depth) {
  return {.request = MakeCall(kNfs3Null),
          .depth = depth,
          .max_calls = calls,
          .check_reply = [](const std::string& record) {
            return DecodeReply(record, kNfs3Null).status();
          }};
}

}  // namespace ferry::rpc_test
