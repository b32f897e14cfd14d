// ONC RPC v2 message headers (RFC 5531 section 9).
//
// Decoding is split in two: DecodeReplyHeader only parses (DataLoss is its
// single failure), ReplyToStatus only judges, and DecodeReply composes them.
// The pool and tests can then look at the raw stats (e.g. to refresh a
// credential on AUTH_REJECTEDCRED) while adapters get a ready-made status.
// All results hold views into the record, so decoding a reply allocates
// nothing unless it fails. Error replies other than SUCCESS may carry
// trailing bytes (some servers pad them); they are ignored, since failing
// with DataLoss would hide the server's real answer.
#include "ferry/rpc/onc_rpc.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry {

namespace {

constexpr std::string_view kReplyContext = "ONC RPC reply";
// msg_type follows the 4-byte xid.
constexpr size_t kMsgTypeOffset = 4;

absl::Status ReadAuth(XdrDecoder& d, std::string_view flavor_what, std::string_view body_what,
                      OpaqueAuthView* out) {
  FERRY_ASSIGN_OR_RETURN(out->flavor, d.ReadUint32(flavor_what));
  FERRY_ASSIGN_OR_RETURN(out->body, d.ReadOpaque(body_what, kMaxAuthBodySize));
  return absl::OkStatus();
}

void WriteAuth(XdrEncoder& e, uint32_t flavor, std::string_view body) {
  e.WriteUint32(flavor);
  e.WriteOpaque(body);
}

std::string CallPrefix(const RpcProcedure& p) {
  return absl::StrCat("ONC RPC call to ", DescribeProcedure(p));
}

}  // namespace

std::string AcceptStatName(AcceptStat stat) {
  switch (stat) {
    case AcceptStat::kSuccess: return "SUCCESS";
    case AcceptStat::kProgUnavail: return "PROG_UNAVAIL";
    case AcceptStat::kProgMismatch: return "PROG_MISMATCH";
    case AcceptStat::kProcUnavail: return "PROC_UNAVAIL";
    case AcceptStat::kGarbageArgs: return "GARBAGE_ARGS";
    case AcceptStat::kSystemErr: return "SYSTEM_ERR";
  }
  return absl::StrCat("accept_stat ", static_cast<uint32_t>(stat));
}

std::string AuthStatName(AuthStat stat) {
  switch (stat) {
    case AuthStat::kOk: return "AUTH_OK";
    case AuthStat::kBadCred: return "AUTH_BADCRED";
    case AuthStat::kRejectedCred: return "AUTH_REJECTEDCRED";
    case AuthStat::kBadVerf: return "AUTH_BADVERF";
    case AuthStat::kRejectedVerf: return "AUTH_REJECTEDVERF";
    case AuthStat::kTooWeak: return "AUTH_TOOWEAK";
    case AuthStat::kInvalidResp: return "AUTH_INVALIDRESP";
    case AuthStat::kFailed: return "AUTH_FAILED";
    case AuthStat::kKerbGeneric: return "AUTH_KERB_GENERIC";
    case AuthStat::kTimeExpire: return "AUTH_TIMEEXPIRE";
    case AuthStat::kTktFile: return "AUTH_TKT_FILE";
    case AuthStat::kDecode: return "AUTH_DECODE";
    case AuthStat::kNetAddr: return "AUTH_NET_ADDR";
    case AuthStat::kRpcsecGssCredProblem: return "RPCSEC_GSS_CREDPROBLEM";
    case AuthStat::kRpcsecGssCtxProblem: return "RPCSEC_GSS_CTXPROBLEM";
  }
  return absl::StrCat("auth_stat ", static_cast<uint32_t>(stat));
}

std::string DescribeProcedure(const RpcProcedure& p) {
  std::string s = absl::StrCat("program ", p.prog);
  if (!p.program_name.empty()) absl::StrAppend(&s, " (", ToAbsl(p.program_name), ")");
  absl::StrAppend(&s, " v", p.vers, " proc ", p.proc);
  if (!p.procedure_name.empty()) absl::StrAppend(&s, " (", ToAbsl(p.procedure_name), ")");
  return s;
}

absl::StatusOr<OpaqueAuth> MakeAuthSys(const AuthSysParams& params) {
  if (params.machine_name.size() > kMaxAuthSysMachineNameSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("AUTH_SYS credential: machine name is ", params.machine_name.size(),
                     " bytes, RFC 5531 allows at most ", kMaxAuthSysMachineNameSize));
  }
  if (params.gids.size() > kMaxAuthSysGids) {
    return absl::InvalidArgumentError(
        absl::StrCat("AUTH_SYS credential: ", params.gids.size(),
                     " supplementary gids, RFC 5531 allows at most ", kMaxAuthSysGids));
  }
  OpaqueAuth auth;
  auth.flavor = static_cast<uint32_t>(AuthFlavor::kSys);
  XdrEncoder e(&auth.body);
  e.WriteUint32(params.stamp);
  e.WriteString(params.machine_name);
  e.WriteUint32(params.uid);
  e.WriteUint32(params.gid);
  e.WriteArray(params.gids, [](XdrEncoder& x, uint32_t g) { x.WriteUint32(g); });
  return auth;
}

absl::StatusOr<AuthSysParams> DecodeAuthSys(std::string_view body) {
  XdrDecoder d(body, "AUTH_SYS credential");
  AuthSysParams p;
  FERRY_ASSIGN_OR_RETURN(p.stamp, d.ReadUint32("stamp"));
  FERRY_RETURN_IF_ERROR(d.ReadString("machinename", kMaxAuthSysMachineNameSize, &p.machine_name));
  FERRY_ASSIGN_OR_RETURN(p.uid, d.ReadUint32("uid"));
  FERRY_ASSIGN_OR_RETURN(p.gid, d.ReadUint32("gid"));
  FERRY_RETURN_IF_ERROR(
      d.ReadArray("gids", kMaxAuthSysGids, &p.gids, [](XdrDecoder& x, uint32_t* g) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(*g, x.ReadUint32("gids[]"));
        return absl::OkStatus();
      }));
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  return p;
}

// Every call goes through here, so the header is sized once and stored in
// place rather than appended field by field (about twice as fast); resize()
// zero-fills, which provides the XDR padding.
void EncodeCallHeader(uint32_t xid, const RpcProcedure& procedure, const OpaqueAuth& cred,
                      const OpaqueAuth& verf, std::string* out) {
  using xdr_internal::kUnit;
  using xdr_internal::PaddingFor;
  using xdr_internal::StoreBigEndian32;
  // xid, mtype, rpcvers, prog, vers, proc, then flavor + length per auth.
  constexpr size_t kFixedWords = 6 + 2 + 2;
  const size_t cred_padded = cred.body.size() + PaddingFor(cred.body.size());
  const size_t verf_padded = verf.body.size() + PaddingFor(verf.body.size());
  const size_t start = out->size();
  out->resize(start + kFixedWords * kUnit + cred_padded + verf_padded);
  char* p = out->data() + start;
  auto put = [&p](uint32_t v) {
    StoreBigEndian32(v, p);
    p += kUnit;
  };
  auto put_auth = [&p, &put](const OpaqueAuth& a, size_t padded) {
    put(a.flavor);
    put(static_cast<uint32_t>(a.body.size()));
    if (!a.body.empty()) std::memcpy(p, a.body.data(), a.body.size());
    p += padded;
  };
  put(xid);
  put(static_cast<uint32_t>(RpcMsgType::kCall));
  put(kOncRpcVersion);
  put(procedure.prog);
  put(procedure.vers);
  put(procedure.proc);
  put_auth(cred, cred_padded);
  put_auth(verf, verf_padded);
}

absl::StatusOr<RpcCall> DecodeCall(std::string_view record) {
  XdrDecoder d(record, "ONC RPC call");
  RpcCall c;
  FERRY_ASSIGN_OR_RETURN(c.xid, d.ReadUint32("xid"));
  FERRY_ASSIGN_OR_RETURN(RpcMsgType type, d.ReadEnum<RpcMsgType>("msg_type"));
  if (type != RpcMsgType::kCall) {
    return d.ErrorAt(kMsgTypeOffset, "msg_type",
                     absl::StrCat("is ", static_cast<uint32_t>(type), ", not CALL (0)"));
  }
  FERRY_ASSIGN_OR_RETURN(c.rpcvers, d.ReadUint32("rpcvers"));
  FERRY_ASSIGN_OR_RETURN(c.prog, d.ReadUint32("prog"));
  FERRY_ASSIGN_OR_RETURN(c.vers, d.ReadUint32("vers"));
  FERRY_ASSIGN_OR_RETURN(c.proc, d.ReadUint32("proc"));
  FERRY_RETURN_IF_ERROR(ReadAuth(d, "cred flavor", "cred body", &c.cred));
  FERRY_RETURN_IF_ERROR(ReadAuth(d, "verf flavor", "verf body", &c.verf));
  c.args = d.rest();
  return c;
}

absl::StatusOr<RpcReply> DecodeReplyHeader(std::string_view record) {
  // Fast path for nearly every reply on the wire: REPLY, MSG_ACCEPTED, an
  // empty verifier (AUTH_NONE / AUTH_SYS servers), SUCCESS: six words read
  // without per-field status checks.
  constexpr size_t kSimpleSuccessWords = 6;
  RpcReply r;
  if (record.size() >= kSimpleSuccessWords * xdr_internal::kUnit) {
    uint32_t w[kSimpleSuccessWords];
    for (size_t i = 0; i < kSimpleSuccessWords; ++i) {
      w[i] = xdr_internal::LoadBigEndian32(record.data() + i * xdr_internal::kUnit);
    }
    if (w[1] == static_cast<uint32_t>(RpcMsgType::kReply) &&
        w[2] == static_cast<uint32_t>(ReplyStat::kAccepted) && w[4] == 0 &&
        w[5] == static_cast<uint32_t>(AcceptStat::kSuccess)) {
      r.xid = w[0];
      r.verf.flavor = w[3];
      r.verf.body = record.substr(5 * xdr_internal::kUnit, 0);  // empty, after its length
      r.results = record.substr(kSimpleSuccessWords * xdr_internal::kUnit);
      return r;
    }
  }
  XdrDecoder d(record, kReplyContext);
  FERRY_ASSIGN_OR_RETURN(r.xid, d.ReadUint32("xid"));
  FERRY_ASSIGN_OR_RETURN(RpcMsgType type, d.ReadEnum<RpcMsgType>("msg_type"));
  if (type != RpcMsgType::kReply) {
    return d.ErrorAt(kMsgTypeOffset, "msg_type",
                     absl::StrCat("is ", static_cast<uint32_t>(type), ", not REPLY (1)"));
  }
  FERRY_ASSIGN_OR_RETURN(r.reply_stat, d.ReadDiscriminant<ReplyStat>("reply_stat"));
  switch (r.reply_stat) {
    case ReplyStat::kAccepted: {
      FERRY_RETURN_IF_ERROR(ReadAuth(d, "verf flavor", "verf body", &r.verf));
      FERRY_ASSIGN_OR_RETURN(r.accept_stat, d.ReadDiscriminant<AcceptStat>("accept_stat"));
      switch (r.accept_stat) {
        case AcceptStat::kSuccess:
          r.results = d.rest();
          return r;
        case AcceptStat::kProgMismatch: {
          FERRY_ASSIGN_OR_RETURN(r.mismatch.low, d.ReadUint32("mismatch_info.low"));
          FERRY_ASSIGN_OR_RETURN(r.mismatch.high, d.ReadUint32("mismatch_info.high"));
          return r;
        }
        case AcceptStat::kProgUnavail:
        case AcceptStat::kProcUnavail:
        case AcceptStat::kGarbageArgs:
        case AcceptStat::kSystemErr:
          return r;
      }
      return d.BadDiscriminant("accept_stat", static_cast<uint32_t>(r.accept_stat));
    }
    case ReplyStat::kDenied: {
      FERRY_ASSIGN_OR_RETURN(r.reject_stat, d.ReadDiscriminant<RejectStat>("reject_stat"));
      switch (r.reject_stat) {
        case RejectStat::kRpcMismatch: {
          FERRY_ASSIGN_OR_RETURN(r.mismatch.low, d.ReadUint32("mismatch_info.low"));
          FERRY_ASSIGN_OR_RETURN(r.mismatch.high, d.ReadUint32("mismatch_info.high"));
          return r;
        }
        case RejectStat::kAuthError: {
          FERRY_ASSIGN_OR_RETURN(r.auth_stat, d.ReadEnum<AuthStat>("auth_stat"));
          return r;
        }
      }
      return d.BadDiscriminant("reject_stat", static_cast<uint32_t>(r.reject_stat));
    }
  }
  return d.BadDiscriminant("reply_stat", static_cast<uint32_t>(r.reply_stat));
}

absl::Status ReplyToStatus(const RpcReply& reply, const RpcProcedure& procedure) {
  if (reply.reply_stat == ReplyStat::kAccepted) {
    if (reply.accept_stat == AcceptStat::kSuccess) return absl::OkStatus();
    const std::string prefix = CallPrefix(procedure);
    switch (reply.accept_stat) {
      case AcceptStat::kSuccess:
        break;
      case AcceptStat::kProgUnavail:
        return absl::UnimplementedError(
            absl::StrCat(prefix, ": PROG_UNAVAIL (the server does not offer this program)"));
      case AcceptStat::kProgMismatch:
        return absl::UnimplementedError(absl::StrCat(prefix, ": PROG_MISMATCH (server supports v",
                                                     reply.mismatch.low, "..v",
                                                     reply.mismatch.high, ")"));
      case AcceptStat::kProcUnavail:
        return absl::UnimplementedError(absl::StrCat(prefix, ": PROC_UNAVAIL"));
      case AcceptStat::kGarbageArgs:
        return absl::InvalidArgumentError(
            absl::StrCat(prefix, ": GARBAGE_ARGS (the server could not decode the arguments)"));
      case AcceptStat::kSystemErr:
        return absl::InternalError(absl::StrCat(prefix, ": SYSTEM_ERR (server-side failure)"));
    }
    return absl::DataLossError(
        absl::StrCat(prefix, ": reply has unknown ", AcceptStatName(reply.accept_stat)));
  }
  const std::string prefix = CallPrefix(procedure);
  if (reply.reply_stat == ReplyStat::kDenied) {
    switch (reply.reject_stat) {
      case RejectStat::kRpcMismatch:
        return absl::FailedPreconditionError(absl::StrCat(
            prefix, ": MSG_DENIED RPC_MISMATCH (server supports RPC versions ", reply.mismatch.low,
            "..", reply.mismatch.high, ", we sent ", kOncRpcVersion, ")"));
      case RejectStat::kAuthError: {
        std::string message =
            absl::StrCat(prefix, ": MSG_DENIED AUTH_ERROR ", AuthStatName(reply.auth_stat));
        if (reply.auth_stat == AuthStat::kTooWeak) {
          return absl::PermissionDeniedError(absl::StrCat(
              message, " (the server refuses this authentication flavour or source port)"));
        }
        return absl::UnauthenticatedError(std::move(message));
      }
    }
    return absl::DataLossError(absl::StrCat(prefix, ": reply has unknown reject_stat ",
                                            static_cast<uint32_t>(reply.reject_stat)));
  }
  return absl::DataLossError(absl::StrCat(prefix, ": reply has unknown reply_stat ",
                                          static_cast<uint32_t>(reply.reply_stat)));
}

absl::StatusOr<RpcReply> DecodeReply(std::string_view record, const RpcProcedure& procedure) {
  absl::StatusOr<RpcReply> reply = DecodeReplyHeader(record);
  if (ABSL_PREDICT_FALSE(!reply.ok())) {
    return Annotate(reply.status(), CallPrefix(procedure));
  }
  FERRY_RETURN_IF_ERROR(ReplyToStatus(*reply, procedure));
  return reply;
}

void EncodeReplyHeader(const RpcReply& reply, std::string* out) {
  XdrEncoder e(out);
  e.WriteUint32(reply.xid);
  e.WriteEnum(RpcMsgType::kReply);
  e.WriteEnum(reply.reply_stat);
  switch (reply.reply_stat) {
    case ReplyStat::kAccepted:
      WriteAuth(e, reply.verf.flavor, reply.verf.body);
      e.WriteEnum(reply.accept_stat);
      if (reply.accept_stat == AcceptStat::kSuccess) {
        e.WriteRaw(reply.results);
      } else if (reply.accept_stat == AcceptStat::kProgMismatch) {
        e.WriteUint32(reply.mismatch.low);
        e.WriteUint32(reply.mismatch.high);
      }
      return;
    case ReplyStat::kDenied:
      e.WriteEnum(reply.reject_stat);
      if (reply.reject_stat == RejectStat::kRpcMismatch) {
        e.WriteUint32(reply.mismatch.low);
        e.WriteUint32(reply.mismatch.high);
      } else if (reply.reject_stat == RejectStat::kAuthError) {
        e.WriteEnum(reply.auth_stat);
      }
      return;
  }
}

absl::StatusOr<uint32_t> ReadXidChecked(std::string_view record) {
  if (ABSL_PREDICT_FALSE(record.size() < kXidSize)) {
    return absl::DataLossError(absl::StrCat("ONC RPC record of ", record.size(),
                                            " bytes is too short to hold an xid (", kXidSize,
                                            " bytes)"));
  }
  return ReadXid(record);
}

}  // namespace ferry
