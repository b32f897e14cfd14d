// ONC RPC version 2 (RFC 5531) message headers.
//
// A client encodes a CALL header followed by its XDR arguments into one
// record, sends it through a Framing, and decodes the REPLY record it gets
// back. Every way a server can refuse a call becomes an absl::Status that
// names the call, e.g.
//
//   ONC RPC call to program 100003 (NFS) v3 proc 17 (READDIRPLUS): PROC_UNAVAIL
//
// Worked example (a NULL call to NFSv3 with AUTH_SYS):
//
//   constexpr ferry::RpcProcedure kNfsNull{100003, 3, 0, "NFS", "NULL"};
//   FERRY_ASSIGN_OR_RETURN(ferry::OpaqueAuth cred,
//                          ferry::MakeAuthSys({.machine_name = "client", .uid = 1000, .gid = 1000}));
//   std::string call;                          // reused across calls
//   call.clear();
//   ferry::EncodeCallHeader(/*xid=*/0, kNfsNull, cred, ferry::AuthNone(), &call);
//   // ... append the XDR arguments (none for NULL) ...
//   ferry::WriteXid(pool_chosen_id, &call);    // the pool stamps the id
//   ...
//   FERRY_ASSIGN_OR_RETURN(ferry::RpcReply reply, ferry::DecodeReply(record, kNfsNull));
//   ferry::XdrDecoder results(reply.results, "NULL3res");
//
// Status codes for replies (see DecodeReply):
//   MSG_ACCEPTED PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL -> Unimplemented
//   MSG_ACCEPTED GARBAGE_ARGS                             -> InvalidArgument
//   MSG_ACCEPTED SYSTEM_ERR                               -> Internal (the
//       server failed internally, e.g. out of memory; not a transport
//       failure, so not Unavailable: blindly retrying a non-idempotent call
//       would be wrong)
//   MSG_DENIED RPC_MISMATCH                               -> FailedPrecondition
//   MSG_DENIED AUTH_ERROR AUTH_TOOWEAK                    -> PermissionDenied
//       (the credentials were understood but this flavour is not allowed,
//       e.g. an export that demands Kerberos or a privileged source port)
//   MSG_DENIED AUTH_ERROR, every other auth_stat          -> Unauthenticated
//   not a REPLY, truncated, an unknown accept/reject stat -> DataLoss
//
// Thread-safety: everything here is a pure function or a plain value type.
#ifndef FERRY_RPC_ONC_RPC_H_
#define FERRY_RPC_ONC_RPC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ferry/rpc/xdr.h"

namespace ferry {

// The only RPC protocol version there is (rpcvers in a CALL).
inline constexpr uint32_t kOncRpcVersion = 2;

// RFC 5531 limits: opaque_auth body<400>, authsys_parms machinename<255> and
// gids<16>.
inline constexpr uint32_t kMaxAuthBodySize = 400;
inline constexpr uint32_t kMaxAuthSysMachineNameSize = 255;
inline constexpr uint32_t kMaxAuthSysGids = 16;

enum class RpcMsgType : uint32_t { kCall = 0, kReply = 1 };
enum class ReplyStat : uint32_t { kAccepted = 0, kDenied = 1 };
enum class AcceptStat : uint32_t {
  kSuccess = 0,       // results follow
  kProgUnavail = 1,   // program not exported
  kProgMismatch = 2,  // version not supported: low..high follow
  kProcUnavail = 3,   // procedure not supported
  kGarbageArgs = 4,   // arguments could not be decoded
  kSystemErr = 5,     // e.g. memory allocation failure
};
enum class RejectStat : uint32_t {
  kRpcMismatch = 0,  // rpcvers != 2: low..high follow
  kAuthError = 1,    // an AuthStat follows
};
enum class AuthStat : uint32_t {
  kOk = 0,
  kBadCred = 1,       // bad credential (seal broken)
  kRejectedCred = 2,  // client must begin a new session
  kBadVerf = 3,       // bad verifier (seal broken)
  kRejectedVerf = 4,  // verifier expired or replayed
  kTooWeak = 5,       // rejected for security reasons
  kInvalidResp = 6,   // bogus response verifier
  kFailed = 7,        // reason unknown
  kKerbGeneric = 8,
  kTimeExpire = 9,
  kTktFile = 10,
  kDecode = 11,
  kNetAddr = 12,
  kRpcsecGssCredProblem = 13,
  kRpcsecGssCtxProblem = 14,
};
// Authentication flavours ferry knows by name (others are carried as numbers).
enum class AuthFlavor : uint32_t { kNone = 0, kSys = 1, kShort = 2, kDh = 3, kRpcsecGss = 6 };

// "PROC_UNAVAIL", "AUTH_TOOWEAK", ...; "accept_stat 9" for unknown values.
std::string AcceptStatName(AcceptStat stat);
std::string AuthStatName(AuthStat stat);

// RpcProcedure
//
// Names a call for error messages: the numbers and, optionally, human names.
// A literal type, meant to be a constexpr constant next to the procedure's
// codec. REQUIRES: the names point at storage that outlives every use
// (string literals).
struct RpcProcedure {
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t proc = 0;
  std::string_view program_name;    // "NFS", "MOUNT", "portmapper"; may be empty
  std::string_view procedure_name;  // "READDIRPLUS"; may be empty
};

// "program 100003 (NFS) v3 proc 17 (READDIRPLUS)"; names are left out when
// empty.
std::string DescribeProcedure(const RpcProcedure& p);

// OpaqueAuth: a credential or verifier to send, with its encoded body.
// REQUIRES (for encoding): body.size() <= kMaxAuthBodySize; MakeAuthSys
// guarantees it.
struct OpaqueAuth {
  uint32_t flavor = static_cast<uint32_t>(AuthFlavor::kNone);
  std::string body;
};

// A decoded credential or verifier; `body` views the record it came from.
struct OpaqueAuthView {
  uint32_t flavor = static_cast<uint32_t>(AuthFlavor::kNone);
  std::string_view body;
};

// AUTH_NONE with an empty body (also the usual verifier).
inline OpaqueAuth AuthNone() { return OpaqueAuth{}; }

// authsys_parms (RFC 5531 appendix A).
struct AuthSysParams {
  uint32_t stamp = 0;  // arbitrary id the caller may set; servers ignore it
  std::string machine_name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> gids;  // supplementary groups, at most 16
};

// An AUTH_SYS credential. Build it once per identity and reuse it: calls then
// copy its body without re-encoding. InvalidArgument if machine_name is over
// 255 bytes or there are more than 16 gids.
absl::StatusOr<OpaqueAuth> MakeAuthSys(const AuthSysParams& params);

// Decodes an AUTH_SYS credential body (for servers). DataLoss if malformed
// or over the limits.
absl::StatusOr<AuthSysParams> DecodeAuthSys(std::string_view body);

// --- Calls ------------------------------------------------------------------

// Appends a CALL header (xid, CALL, rpcvers 2, prog, vers, proc, cred, verf)
// to `*out`; the caller then appends the XDR arguments. The record starts
// with the xid only if `*out` was empty.
// REQUIRES: cred.body and verf.body are at most kMaxAuthBodySize bytes.
void EncodeCallHeader(uint32_t xid, const RpcProcedure& procedure, const OpaqueAuth& cred,
                      const OpaqueAuth& verf, std::string* out);

// A decoded CALL record (for in-process test servers). Views point into the
// record.
struct RpcCall {
  uint32_t xid = 0;
  uint32_t rpcvers = 0;  // not checked: a server answers RPC_MISMATCH if != 2
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t proc = 0;
  OpaqueAuthView cred;
  OpaqueAuthView verf;
  std::string_view args;  // the XDR arguments: the rest of the record
};

// Decodes a CALL record. DataLoss if it is truncated, not a CALL, or an auth
// body is over 400 bytes.
absl::StatusOr<RpcCall> DecodeCall(std::string_view record);

// --- Replies ----------------------------------------------------------------

// Versions a server supports (PROG_MISMATCH, RPC_MISMATCH).
struct RpcVersionRange {
  uint32_t low = 0;
  uint32_t high = 0;
};

// A REPLY, decoded or to encode. Which fields mean something depends on the
// stats: `verf`, `accept_stat` when accepted; `results` when SUCCESS;
// `mismatch` for PROG_MISMATCH and RPC_MISMATCH; `reject_stat` when denied;
// `auth_stat` for AUTH_ERROR.
struct RpcReply {
  uint32_t xid = 0;
  ReplyStat reply_stat = ReplyStat::kAccepted;
  OpaqueAuthView verf;
  AcceptStat accept_stat = AcceptStat::kSuccess;
  RejectStat reject_stat = RejectStat::kRpcMismatch;
  AuthStat auth_stat = AuthStat::kOk;
  RpcVersionRange mismatch;
  // SUCCESS: the XDR results, the rest of the record (views the record).
  std::string_view results;
};

// Decodes a REPLY record's header without judging it: any well-formed
// reply, accepted or denied, is OK. DataLoss if the record is truncated, is
// a CALL, or has a reply_stat, accept_stat or reject_stat RFC 5531 does not
// define. Unknown auth_stat values are kept as they are.
absl::StatusOr<RpcReply> DecodeReplyHeader(std::string_view record);

// OK if `reply` is MSG_ACCEPTED/SUCCESS, otherwise the status the table at
// the top of this file gives, with a message naming the call and the
// server's answer, e.g.
//   "ONC RPC call to program 100003 (NFS) v4 proc 0 (NULL): PROG_MISMATCH
//    (server supports v2..v3)".
absl::Status ReplyToStatus(const RpcReply& reply, const RpcProcedure& procedure);

// DecodeReplyHeader + ReplyToStatus: the reply of a successful call, or
// why it failed. A DataLoss message also names the call.
absl::StatusOr<RpcReply> DecodeReply(std::string_view record, const RpcProcedure& procedure);

// Appends a REPLY header for `reply` to `*out` and then reply.results
// verbatim (for SUCCESS; leave it empty to append the results afterwards).
// For test servers: any combination of stats can be encoded, including
// ones DecodeReplyHeader rejects when cast from an out-of-range number.
// REQUIRES: reply.verf.body.size() <= kMaxAuthBodySize.
void EncodeReplyHeader(const RpcReply& reply, std::string* out);

// --- Reply correlation --------------------------------------------------------

// Size of the id at the start of every ONC RPC record (the xid).
inline constexpr size_t kXidSize = 4;

// The xid: bytes 0..3 of `record`, big-endian. REQUIRES: record.size() >= 4.
inline uint32_t ReadXid(std::string_view record) {
  return xdr_internal::LoadBigEndian32(record.data());
}
// As ReadXid; DataLoss if the record is shorter than 4 bytes.
absl::StatusOr<uint32_t> ReadXidChecked(std::string_view record);
// Overwrites bytes 0..3 of `*record` with `xid`. REQUIRES: record->size() >= 4.
inline void WriteXid(uint32_t xid, std::string* record) {
  xdr_internal::StoreBigEndian32(xid, record->data());
}

}  // namespace ferry

#endif  // FERRY_RPC_ONC_RPC_H_
