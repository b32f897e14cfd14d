// Fuzzes the XDR decoder and the ONC RPC / portmapper / AUTH_SYS decoders
// built on it.
//
// The input is split in two: a "program" of typed reads (one byte per read,
// the first byte giving how many) and the XDR data they decode. Whatever the
// bytes, decoding must not read out of bounds (ASan), must keep its offset
// within the input, and every view it returns must lie inside the input.
// The whole input is also handed to DecodeReply / DecodeCall / the
// portmapper decoders, and what they accept must survive an encode/decode
// round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/base/status_macros.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/portmapper.h"
#include "ferry/rpc/xdr.h"

namespace {

using ferry::XdrDecoder;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckInside(std::string_view input, std::string_view v) {
  if (v.empty()) return;
  Check(v.data() >= input.data() && v.data() + v.size() <= input.data() + input.size());
}

absl::Status ReadU32(XdrDecoder& d, uint32_t* v) {
  FERRY_ASSIGN_OR_RETURN(*v, d.ReadUint32("item"));
  return absl::OkStatus();
}

// The status of `read`, a read of a list of at most `max` items (ReadArray,
// ReadOptionalList), which must keep to `max` when it succeeds.
template <typename ReadList>
absl::Status CheckBoundedList(uint32_t max, ReadList read) {
  std::vector<uint32_t> items;
  const absl::Status s = read(&items);
  if (s.ok()) Check(items.size() <= max);
  return s;
}

// Runs one typed read chosen by `op` (its low 4 bits pick the type, the high
// bits a size or maximum).
void RunOp(uint8_t op, std::string_view data, XdrDecoder& d) {
  const size_t before = d.offset();
  const uint32_t arg = op >> 4;  // 0..15
  absl::Status s;
  switch (op & 0x0f) {
    case 0: s = d.ReadUint32("u32").status(); break;
    case 1: s = d.ReadInt32("i32").status(); break;
    case 2: s = d.ReadUint64("u64").status(); break;
    case 3: s = d.ReadInt64("i64").status(); break;
    case 4: s = d.ReadBool("bool").status(); break;
    case 5: s = d.ReadEnum<ferry::AcceptStat>("enum").status(); break;
    case 6: {
      absl::StatusOr<std::string_view> v = d.ReadFixedOpaque(arg, "fixed");
      if (v.ok()) {
        CheckInside(data, *v);
        Check(v->size() == arg);
      }
      s = v.status();
      break;
    }
    case 7: {
      absl::StatusOr<std::string_view> v = d.ReadOpaque("opaque", arg * 4);
      if (v.ok()) {
        CheckInside(data, *v);
        Check(v->size() <= arg * 4);
      }
      s = v.status();
      break;
    }
    case 8: {
      absl::StatusOr<std::string_view> v = d.ReadString("string");
      if (v.ok()) CheckInside(data, *v);
      s = v.status();
      break;
    }
    case 9: {
      std::string copy;
      s = d.ReadString("string copy", arg * 8, &copy);
      if (s.ok()) Check(copy.size() <= arg * 8);
      break;
    }
    case 10:
      s = CheckBoundedList(arg, [&](std::vector<uint32_t>* items) {
        return d.ReadArray("array", arg, items, ReadU32);
      });
      break;
    case 11: {
      std::optional<uint32_t> v;
      s = d.ReadOptional("optional", &v, ReadU32);
      break;
    }
    case 12:
      s = CheckBoundedList(arg, [&](std::vector<uint32_t>* items) {
        return d.ReadOptionalList("list", arg, items, ReadU32);
      });
      break;
    case 13: s = d.Skip(arg, "skip"); break;
    case 14: s = d.ReadArrayCount("count", ferry::kXdrNoLimit, arg).status(); break;
    case 15: s = d.ReadDiscriminant("discriminant").status(); break;
  }
  Check(d.offset() <= data.size());
  if (!s.ok()) {
    Check(s.code() == absl::StatusCode::kDataLoss);
    Check(!s.message().empty());
    // Failed scalar and opaque reads leave the position unchanged; compound
    // ones may have consumed a prefix, never more than the input.
    if ((op & 0x0f) <= 9 || (op & 0x0f) == 13 || (op & 0x0f) == 14) Check(d.offset() == before);
  }
}

void FuzzReply(std::string_view data) {
  constexpr ferry::RpcProcedure kProc{100003, 3, 17, "NFS", "READDIRPLUS"};
  absl::StatusOr<ferry::RpcReply> reply = ferry::DecodeReplyHeader(data);
  absl::StatusOr<ferry::RpcReply> judged = ferry::DecodeReply(data, kProc);
  if (!reply.ok()) {
    Check(reply.status().code() == absl::StatusCode::kDataLoss);
    Check(judged.status().code() == absl::StatusCode::kDataLoss);
    return;
  }
  Check(judged.ok() == ferry::ReplyToStatus(*reply, kProc).ok());
  CheckInside(data, reply->verf.body);
  CheckInside(data, reply->results);
  std::string again;
  ferry::EncodeReplyHeader(*reply, &again);
  absl::StatusOr<ferry::RpcReply> round = ferry::DecodeReplyHeader(again);
  Check(round.ok());
  Check(round->xid == reply->xid && round->reply_stat == reply->reply_stat &&
        round->verf.flavor == reply->verf.flavor && round->verf.body == reply->verf.body &&
        round->accept_stat == reply->accept_stat && round->reject_stat == reply->reject_stat &&
        round->auth_stat == reply->auth_stat && round->mismatch.low == reply->mismatch.low &&
        round->mismatch.high == reply->mismatch.high && round->results == reply->results);
}

void FuzzCall(std::string_view data) {
  absl::StatusOr<ferry::RpcCall> call = ferry::DecodeCall(data);
  if (!call.ok()) {
    Check(call.status().code() == absl::StatusCode::kDataLoss);
    return;
  }
  CheckInside(data, call->args);
  std::string again;
  ferry::EncodeCallHeader(call->xid, {call->prog, call->vers, call->proc},
                          {call->cred.flavor, std::string(call->cred.body)},
                          {call->verf.flavor, std::string(call->verf.body)}, &again);
  again.append(call->args);
  absl::StatusOr<ferry::RpcCall> round = ferry::DecodeCall(again);
  Check(round.ok());
  Check(round->xid == call->xid && round->prog == call->prog && round->vers == call->vers &&
        round->proc == call->proc && round->cred.body == call->cred.body &&
        round->verf.body == call->verf.body && round->args == call->args);
  if (call->cred.flavor == static_cast<uint32_t>(ferry::AuthFlavor::kSys)) {
    absl::StatusOr<ferry::AuthSysParams> sys = ferry::DecodeAuthSys(call->cred.body);
    if (sys.ok()) {
      absl::StatusOr<ferry::OpaqueAuth> cred = ferry::MakeAuthSys(*sys);
      Check(cred.ok());
      absl::StatusOr<ferry::AuthSysParams> back = ferry::DecodeAuthSys(cred->body);
      Check(back.ok() && back->machine_name == sys->machine_name && back->gids == sys->gids);
    }
  }
}

void FuzzPortmapper(std::string_view data) {
  absl::StatusOr<std::vector<ferry::PortMapping>> dump = ferry::DecodeDumpResult(data, 64);
  if (dump.ok()) {
    std::string again;
    ferry::EncodeDumpResult(*dump, &again);
    Check(ferry::DecodeDumpResult(again).value() == *dump);
  }
  absl::StatusOr<uint16_t> port = ferry::DecodeGetPortResult(data, {100005, 3, ferry::kIpProtoTcp, 0});
  Check(port.ok() || port.status().code() == absl::StatusCode::kDataLoss ||
        port.status().code() == absl::StatusCode::kNotFound);
  (void)ferry::DecodeSetResult(data);
  (void)ferry::DecodePortMappingArgs(data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(bytes), size);
  if (!input.empty()) {
    const size_t ops = std::min<size_t>(static_cast<uint8_t>(input[0]) % 32, input.size() - 1);
    const std::string_view program = input.substr(1, ops);
    // Decode from a copy of exactly the data, so ASan sees any overrun.
    const std::string data_copy(input.substr(1 + ops));
    const std::string_view data(data_copy);
    XdrDecoder d(data, "fuzz");
    for (char op : program) RunOp(static_cast<uint8_t>(op), data, d);
    (void)d.ExpectEnd();
  }
  const std::string whole(input);  // exact-size heap copy for ASan
  FuzzReply(whole);
  FuzzCall(whole);
  FuzzPortmapper(whole);
  return 0;
}
