// Fuzzes the ONC RPC reply header, as every NFS, MOUNT and portmapper
// reply record starts (RFC 5531 rpc_msg with reply_body).
//
// The input is one record as the record-marking reader hands it out.
// Whatever the bytes: DecodeReplyHeader answers a reply or DataLoss;
// DecodeReply agrees with ReplyToStatus on what it accepted; the views it
// returns lie inside the record; and an accepted header encodes and
// decodes back to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/rpc/onc_rpc.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;
using ferry::fuzz::CheckInside;

constexpr ferry::RpcProcedure kProcedures[] = {
    {100003, 3, 17, "NFS", "READDIRPLUS"},
    {100005, 3, 1, "MOUNT", "MNT"},
    {100000, 2, 3, "PORTMAP", "GETPORT"},
    {100003, 3, 6, "NFS", "READ"},
};

bool SameReply(const ferry::RpcReply& a, const ferry::RpcReply& b) {
  return a.xid == b.xid && a.reply_stat == b.reply_stat && a.verf.flavor == b.verf.flavor &&
         a.verf.body == b.verf.body && a.accept_stat == b.accept_stat &&
         a.reject_stat == b.reject_stat && a.auth_stat == b.auth_stat &&
         a.mismatch.low == b.mismatch.low && a.mismatch.high == b.mismatch.high &&
         a.results == b.results;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string copy(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  const std::string_view record(copy);
  absl::StatusOr<uint32_t> xid = ferry::ReadXidChecked(record);
  Check(xid.ok() == (record.size() >= 4));
  absl::StatusOr<ferry::RpcReply> reply = ferry::DecodeReplyHeader(record);
  if (!reply.ok()) {
    Check(reply.status().code() == absl::StatusCode::kDataLoss);
    for (const ferry::RpcProcedure& p : kProcedures) {
      Check(ferry::DecodeReply(record, p).status().code() == absl::StatusCode::kDataLoss);
    }
    return 0;
  }
  Check(reply->xid == *xid);
  CheckInside(record, reply->verf.body);
  CheckInside(record, reply->results);
  for (const ferry::RpcProcedure& p : kProcedures) {
    const absl::Status judged = ferry::ReplyToStatus(*reply, p);
    absl::StatusOr<ferry::RpcReply> whole = ferry::DecodeReply(record, p);
    Check(whole.ok() == judged.ok());
    if (!judged.ok()) Check(!judged.message().empty());
  }
  std::string again;
  ferry::EncodeReplyHeader(*reply, &again);
  absl::StatusOr<ferry::RpcReply> round = ferry::DecodeReplyHeader(again);
  Check(round.ok() && SameReply(*round, *reply));
  return 0;
}
