// Portmapper v2 messages (RFC 1833 section 3). Stateless XDR codecs: the
// DUMP list is an optional-data linked list, decoded iteratively (never
// recursively, so a long list cannot exhaust the stack) and bounded by a
// caller-given maximum.
#include "ferry/rpc/portmapper.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"

namespace ferry {

namespace {

constexpr std::string_view kProcedureNames[] = {"NULL", "SET", "UNSET", "GETPORT", "DUMP", "CALLIT"};

absl::Status ReadMapping(XdrDecoder& d, PortMapping* m) {
  FERRY_ASSIGN_OR_RETURN(m->prog, d.ReadUint32("mapping.prog"));
  FERRY_ASSIGN_OR_RETURN(m->vers, d.ReadUint32("mapping.vers"));
  FERRY_ASSIGN_OR_RETURN(m->prot, d.ReadUint32("mapping.prot"));
  FERRY_ASSIGN_OR_RETURN(m->port, d.ReadUint32("mapping.port"));
  return absl::OkStatus();
}

void WriteMapping(XdrEncoder& e, const PortMapping& m) {
  e.WriteUint32(m.prog);
  e.WriteUint32(m.vers);
  e.WriteUint32(m.prot);
  e.WriteUint32(m.port);
}

std::string ProtocolName(uint32_t prot) {
  switch (prot) {
    case kIpProtoTcp: return "tcp";
    case kIpProtoUdp: return "udp";
  }
  return absl::StrCat("protocol ", prot);
}

}  // namespace

RpcProcedure PortmapProcedure(PortmapProc proc) {
  const auto n = static_cast<uint32_t>(proc);
  return RpcProcedure{kPortmapProgram, kPortmapVersion, n, "portmapper",
                      n < std::size(kProcedureNames) ? kProcedureNames[n] : std::string_view()};
}

std::string DescribeMapping(const PortMapping& m) {
  return absl::StrCat("program ", m.prog, " v", m.vers, " ", ProtocolName(m.prot), " port ",
                      m.port);
}

void EncodePortMapping(const PortMapping& m, std::string* out) {
  XdrEncoder e(out);
  WriteMapping(e, m);
}

void EncodeGetPortArgs(const PortMapping& query, std::string* out) {
  PortMapping q = query;
  q.port = 0;
  EncodePortMapping(q, out);
}

absl::StatusOr<uint16_t> DecodeGetPortResult(std::string_view results, const PortMapping& query) {
  XdrDecoder d(results, "portmapper GETPORT result");
  FERRY_ASSIGN_OR_RETURN(uint32_t port, d.ReadUint32("port"));
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  if (port > std::numeric_limits<uint16_t>::max()) {
    return d.Error("port", absl::StrCat(port, " is not a TCP/UDP port"));
  }
  if (port == 0) {
    return absl::NotFoundError(absl::StrCat("portmapper: program ", query.prog, " v", query.vers,
                                            " over ", ProtocolName(query.prot),
                                            " is not registered"));
  }
  return static_cast<uint16_t>(port);
}

absl::StatusOr<bool> DecodeSetResult(std::string_view results) {
  XdrDecoder d(results, "portmapper SET/UNSET result");
  FERRY_ASSIGN_OR_RETURN(bool ok, d.ReadBool("result"));
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  return ok;
}

absl::StatusOr<std::vector<PortMapping>> DecodeDumpResult(std::string_view results,
                                                          size_t max_mappings) {
  XdrDecoder d(results, "portmapper DUMP result");
  std::vector<PortMapping> mappings;
  FERRY_RETURN_IF_ERROR(d.ReadOptionalList("pmaplist value-follows", max_mappings, &mappings,
                                           ReadMapping));
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  return mappings;
}

void EncodeDumpResult(const std::vector<PortMapping>& mappings, std::string* out) {
  XdrEncoder e(out);
  e.WriteOptionalList(mappings, WriteMapping);
}

absl::StatusOr<PortMapping> DecodePortMappingArgs(std::string_view args) {
  XdrDecoder d(args, "portmapper mapping");
  PortMapping m;
  FERRY_RETURN_IF_ERROR(ReadMapping(d, &m));
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  return m;
}

}  // namespace ferry
