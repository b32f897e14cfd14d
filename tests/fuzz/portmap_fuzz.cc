// Fuzzes the portmapper (RFC 1833, program 100000 v2) result decoders the
// NFS client and the test portmapper use: GETPORT, SET/UNSET, DUMP, and
// the mapping argument.
//
// The input is the results part of a reply. Whatever the bytes: each
// decoder answers a value or DataLoss (GETPORT also NotFound, for port 0
// or one outside 1..65535), and what DUMP and the mapping accept encodes
// and decodes back to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/rpc/portmapper.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;

bool Same(const ferry::PortMapping& a, const ferry::PortMapping& b) {
  return a.prog == b.prog && a.vers == b.vers && a.prot == b.prot && a.port == b.port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string copy(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  const std::string_view in(copy);

  absl::StatusOr<uint16_t> port = ferry::DecodeGetPortResult(in, {100005, 3, ferry::kIpProtoTcp, 0});
  if (port.ok()) {
    Check(*port != 0);
  } else {
    Check(port.status().code() == absl::StatusCode::kDataLoss ||
          port.status().code() == absl::StatusCode::kNotFound);
  }

  absl::StatusOr<bool> set = ferry::DecodeSetResult(in);
  if (!set.ok()) Check(set.status().code() == absl::StatusCode::kDataLoss);

  absl::StatusOr<std::vector<ferry::PortMapping>> dump = ferry::DecodeDumpResult(in, 256);
  if (dump.ok()) {
    Check(dump->size() <= 256);
    std::string again;
    ferry::EncodeDumpResult(*dump, &again);
    absl::StatusOr<std::vector<ferry::PortMapping>> back = ferry::DecodeDumpResult(again, 256);
    Check(back.ok() && back->size() == dump->size());
    for (size_t i = 0; i < dump->size(); ++i) Check(Same((*back)[i], (*dump)[i]));
  } else {
    Check(dump.status().code() == absl::StatusCode::kDataLoss);
  }

  absl::StatusOr<ferry::PortMapping> m = ferry::DecodePortMappingArgs(in);
  if (m.ok()) {
    std::string again;
    ferry::EncodePortMapping(*m, &again);
    absl::StatusOr<ferry::PortMapping> back = ferry::DecodePortMappingArgs(again);
    Check(back.ok() && Same(*back, *m));
  }
  return 0;
}
