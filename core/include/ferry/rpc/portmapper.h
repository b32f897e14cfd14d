// Portmapper version 2 (RFC 1833, program 100000): the messages that find the
// port a program listens on (GETPORT) and list every registration (DUMP).
// Byte-level helpers only; send them with any ONC RPC client.
//
// Worked example, finding MOUNT v3 over TCP:
//
//   constexpr ferry::PortMapping kMount3Tcp{100005, 3, ferry::kIpProtoTcp, 0};
//   std::string call;
//   ferry::EncodeCallHeader(xid, ferry::PortmapProcedure(ferry::PortmapProc::kGetPort),
//                           ferry::AuthNone(), ferry::AuthNone(), &call);
//   ferry::EncodeGetPortArgs(kMount3Tcp, &call);
//   ... send `call`, receive `record` ...
//   FERRY_ASSIGN_OR_RETURN(ferry::RpcReply reply,
//       ferry::DecodeReply(record, ferry::PortmapProcedure(ferry::PortmapProc::kGetPort)));
//   FERRY_ASSIGN_OR_RETURN(uint16_t port, ferry::DecodeGetPortResult(reply.results, kMount3Tcp));
//
// Thread-safety: pure functions and plain value types.
#ifndef FERRY_RPC_PORTMAPPER_H_
#define FERRY_RPC_PORTMAPPER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/rpc/onc_rpc.h"

namespace ferry {

inline constexpr uint32_t kPortmapProgram = 100000;
inline constexpr uint32_t kPortmapVersion = 2;
// The portmapper's well-known port (TCP and UDP).
inline constexpr uint16_t kPortmapPort = 111;

// Values of PortMapping::prot (IP protocol numbers).
inline constexpr uint32_t kIpProtoTcp = 6;
inline constexpr uint32_t kIpProtoUdp = 17;

enum class PortmapProc : uint32_t {
  kNull = 0,     // void -> void
  kSet = 1,      // mapping -> bool
  kUnset = 2,    // mapping -> bool
  kGetPort = 3,  // mapping -> unsigned int port (0: not registered)
  kDump = 4,     // void -> pmaplist (optional-data linked list of mappings)
  kCallIt = 5,   // call_args -> call_result (not supported here)
};

// The descriptor of a portmapper v2 procedure, for EncodeCallHeader and
// DecodeReply: {100000, 2, proc, "portmapper", "GETPORT"}.
RpcProcedure PortmapProcedure(PortmapProc proc);

// struct mapping.
struct PortMapping {
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t prot = kIpProtoTcp;  // kIpProtoTcp or kIpProtoUdp
  uint32_t port = 0;            // ignored by GETPORT and UNSET

  friend bool operator==(const PortMapping&, const PortMapping&) = default;
};

// "program 100005 v3 tcp port 20048" (for messages and test output).
std::string DescribeMapping(const PortMapping& m);

// Appends the XDR of `m` (the arguments of SET, UNSET and GETPORT).
void EncodePortMapping(const PortMapping& m, std::string* out);
// GETPORT's arguments: `query` with its port sent as 0.
void EncodeGetPortArgs(const PortMapping& query, std::string* out);

// Decodes GETPORT's result (the SUCCESS results body of the reply). NotFound
// naming `query` if the port is 0 (the program is not registered); DataLoss
// if the body is not exactly one unsigned int or the port is over 65535.
absl::StatusOr<uint16_t> DecodeGetPortResult(std::string_view results, const PortMapping& query);

// Decodes SET's or UNSET's result (a bool). DataLoss if malformed.
absl::StatusOr<bool> DecodeSetResult(std::string_view results);

// Most mappings DecodeDumpResult accepts: bounds what a hostile server can
// make us allocate (a real rpcbind holds a few dozen).
inline constexpr size_t kMaxDumpMappings = 1 << 16;

// Decodes DUMP's result: the optional-data linked list of mappings, in the
// server's order. DataLoss if truncated, followed by extra bytes, or longer
// than `max_mappings`.
absl::StatusOr<std::vector<PortMapping>> DecodeDumpResult(std::string_view results,
                                                          size_t max_mappings = kMaxDumpMappings);

// Appends DUMP's result for `mappings` (for test servers).
void EncodeDumpResult(const std::vector<PortMapping>& mappings, std::string* out);

// Decodes a mapping (the arguments of SET, UNSET and GETPORT; for test
// servers). DataLoss if malformed or followed by extra bytes.
absl::StatusOr<PortMapping> DecodePortMappingArgs(std::string_view args);

}  // namespace ferry

#endif  // FERRY_RPC_PORTMAPPER_H_
