#include "ferry/rpc/onc_rpc.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

constexpr RpcProcedure kReaddirplus{100003, 3, 17, "NFS", "READDIRPLUS"};
constexpr std::string_view kReaddirplusPrefix =
    "ONC RPC call to program 100003 (NFS) v3 proc 17 (READDIRPLUS): ";

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

std::string Encode(const RpcReply& reply) {
  std::string out;
  EncodeReplyHeader(reply, &out);
  return out;
}

RpcReply Accepted(AcceptStat stat) {
  RpcReply r;
  r.xid = 7;
  r.reply_stat = ReplyStat::kAccepted;
  r.accept_stat = stat;
  return r;
}

RpcReply AuthError(AuthStat stat) {
  RpcReply r;
  r.xid = 7;
  r.reply_stat = ReplyStat::kDenied;
  r.reject_stat = RejectStat::kAuthError;
  r.auth_stat = stat;
  return r;
}

TEST(OncRpcTest, AuthSysCallHeaderMatchesHandComputedBytes) {
  absl::StatusOr<OpaqueAuth> cred = MakeAuthSys(
      {.stamp = 0x01020304, .machine_name = "host1", .uid = 1000, .gid = 100, .gids = {100, 10}});
  ASSERT_TRUE(cred.ok()) << cred.status();
  std::string out;
  EncodeCallHeader(0xdeadbeef, kReaddirplus, *cred, AuthNone(), &out);
  const std::string expected = Bytes({
      0xde, 0xad, 0xbe, 0xef,  // xid
      0, 0, 0, 0,              // CALL
      0, 0, 0, 2,              // rpcvers
      0, 0x01, 0x86, 0xa3,     // prog 100003
      0, 0, 0, 3,              // vers
      0, 0, 0, 17,             // proc
      0, 0, 0, 1,              // cred flavor AUTH_SYS
      0, 0, 0, 36,             // cred body length
      1, 2, 3, 4,              //   stamp
      0, 0, 0, 5,              //   machinename length
      'h', 'o', 's', 't',      //
      '1', 0, 0, 0,            //   + 3 bytes padding
      0, 0, 0x03, 0xe8,        //   uid 1000
      0, 0, 0, 100,            //   gid 100
      0, 0, 0, 2,              //   gids count
      0, 0, 0, 100,            //   gids[0]
      0, 0, 0, 10,             //   gids[1]
      0, 0, 0, 0,              // verf flavor AUTH_NONE
      0, 0, 0, 0,              // verf body length
  });
  EXPECT_EQ(out, expected);
}

TEST(OncRpcTest, AuthSysAcceptsTheRfcLimits) {
  AuthSysParams p;
  p.machine_name = std::string(kMaxAuthSysMachineNameSize, 'm');
  p.gids.assign(kMaxAuthSysGids, 5);
  absl::StatusOr<OpaqueAuth> cred = MakeAuthSys(p);
  ASSERT_TRUE(cred.ok());
  EXPECT_LE(cred->body.size(), kMaxAuthBodySize);
}

TEST(OncRpcTest, AuthSysMachineNameOver255BytesIsInvalidArgument) {
  AuthSysParams p;
  p.machine_name = std::string(256, 'm');
  absl::StatusOr<OpaqueAuth> cred = MakeAuthSys(p);
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cred.status().message(), HasSubstr("machine name is 256 bytes"));
}

TEST(OncRpcTest, AuthSysWithMoreThan16GidsIsInvalidArgument) {
  AuthSysParams p;
  p.gids.assign(17, 1);
  absl::StatusOr<OpaqueAuth> cred = MakeAuthSys(p);
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cred.status().message(), HasSubstr("17 supplementary gids"));
}

TEST(OncRpcTest, AuthSysBodyRoundTrips) {
  const AuthSysParams in{.stamp = 9, .machine_name = "box", .uid = 0, .gid = 1, .gids = {2, 3, 4}};
  absl::StatusOr<OpaqueAuth> cred = MakeAuthSys(in);
  ASSERT_TRUE(cred.ok());
  absl::StatusOr<AuthSysParams> out = DecodeAuthSys(cred->body);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stamp, 9u);
  EXPECT_EQ(out->machine_name, "box");
  EXPECT_EQ(out->uid, 0u);
  EXPECT_EQ(out->gid, 1u);
  EXPECT_EQ(out->gids, (std::vector<uint32_t>{2, 3, 4}));
}

TEST(OncRpcTest, CallRoundTripsThroughDecodeCall) {
  absl::StatusOr<OpaqueAuth> cred = MakeAuthSys({.machine_name = "c", .uid = 5, .gid = 6});
  ASSERT_TRUE(cred.ok());
  const OpaqueAuth verf{.flavor = 42, .body = "vv"};
  std::string record;
  EncodeCallHeader(123, kReaddirplus, *cred, verf, &record);
  record += Bytes({0, 0, 0, 9});  // the arguments
  absl::StatusOr<RpcCall> call = DecodeCall(record);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->xid, 123u);
  EXPECT_EQ(call->rpcvers, 2u);
  EXPECT_EQ(call->prog, 100003u);
  EXPECT_EQ(call->vers, 3u);
  EXPECT_EQ(call->proc, 17u);
  EXPECT_EQ(call->cred.flavor, 1u);
  EXPECT_EQ(call->cred.body, cred->body);
  EXPECT_EQ(call->verf.flavor, 42u);
  EXPECT_EQ(call->verf.body, "vv");
  EXPECT_EQ(call->args, Bytes({0, 0, 0, 9}));
}

TEST(OncRpcTest, DecodeCallRejectsAReply) {
  absl::StatusOr<RpcCall> call = DecodeCall(Encode(Accepted(AcceptStat::kSuccess)));
  EXPECT_EQ(call.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(call.status().message(), HasSubstr("not CALL"));
}

TEST(OncRpcTest, SuccessReplyYieldsVerifierAndResultsView) {
  RpcReply in = Accepted(AcceptStat::kSuccess);
  in.verf = {.flavor = 1, .body = "verifier"};
  in.results = "RESULTS!";
  const std::string record = Encode(in);
  absl::StatusOr<RpcReply> out = DecodeReply(record, kReaddirplus);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->xid, 7u);
  EXPECT_EQ(out->verf.flavor, 1u);
  EXPECT_EQ(out->verf.body, "verifier");
  EXPECT_EQ(out->results, "RESULTS!");
  EXPECT_EQ(out->results.data(), record.data() + record.size() - 8);
}

// The common reply (empty verifier, SUCCESS) takes a fast path: it must
// agree with the general decoder, which a non-empty verifier forces.
TEST(OncRpcTest, SuccessReplyWithEmptyVerifierDecodesLikeTheGeneralCase) {
  RpcReply in = Accepted(AcceptStat::kSuccess);
  in.xid = 0xfeedf00d;
  in.verf.flavor = 1;
  in.results = "results";
  const std::string record = Encode(in);
  absl::StatusOr<RpcReply> out = DecodeReplyHeader(record);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->xid, 0xfeedf00du);
  EXPECT_EQ(out->reply_stat, ReplyStat::kAccepted);
  EXPECT_EQ(out->accept_stat, AcceptStat::kSuccess);
  EXPECT_EQ(out->verf.flavor, 1u);
  EXPECT_TRUE(out->verf.body.empty());
  EXPECT_EQ(out->results, "results");
  EXPECT_EQ(out->results.data(), record.data() + 24);
}

TEST(OncRpcTest, SuccessReplyWithEmptyResultsIsOk) {
  absl::StatusOr<RpcReply> out = DecodeReply(Encode(Accepted(AcceptStat::kSuccess)), kReaddirplus);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->results.empty());
}

// An accept_stat with no data of its own, and what DecodeReply makes of it.
struct AcceptedError {
  const char* name;
  AcceptStat stat;
  absl::StatusCode code;
  const char* says;  // after the call's prefix
};

void PrintTo(const AcceptedError& e, std::ostream* os) { *os << e.name; }

class OncRpcAcceptedErrorTest : public ::testing::TestWithParam<AcceptedError> {};

TEST_P(OncRpcAcceptedErrorTest, IsItsStatusCodeNamingTheCallAndTheStat) {
  absl::StatusOr<RpcReply> r = DecodeReply(Encode(Accepted(GetParam().stat)), kReaddirplus);
  EXPECT_EQ(r.status().code(), GetParam().code);
  EXPECT_EQ(r.status().message(), absl::StrCat(ToAbsl(kReaddirplusPrefix), GetParam().says));
}

INSTANTIATE_TEST_SUITE_P(
    AcceptStats, OncRpcAcceptedErrorTest,
    ::testing::Values(
        AcceptedError{"ProgUnavailIsUnimplemented", AcceptStat::kProgUnavail,
                      absl::StatusCode::kUnimplemented,
                      "PROG_UNAVAIL (the server does not offer this program)"},
        AcceptedError{"GarbageArgsIsInvalidArgument", AcceptStat::kGarbageArgs,
                      absl::StatusCode::kInvalidArgument,
                      "GARBAGE_ARGS (the server could not decode the arguments)"},
        AcceptedError{"SystemErrIsInternal", AcceptStat::kSystemErr,
                      absl::StatusCode::kInternal, "SYSTEM_ERR (server-side failure)"}),
    [](const ::testing::TestParamInfo<AcceptedError>& p) { return p.param.name; });

TEST(OncRpcTest, ProgMismatchIsUnimplementedAndNamesTheSupportedVersions) {
  RpcReply in = Accepted(AcceptStat::kProgMismatch);
  in.mismatch = {2, 3};
  absl::StatusOr<RpcReply> r = DecodeReply(Encode(in), kReaddirplus);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(),
            absl::StrCat(ToAbsl(kReaddirplusPrefix), "PROG_MISMATCH (server supports v2..v3)"));
}

TEST(OncRpcTest, ProcUnavailIsUnimplemented) {
  absl::StatusOr<RpcReply> r = DecodeReply(Encode(Accepted(AcceptStat::kProcUnavail)),
                                           RpcProcedure{100003, 3, 17, "NFS", ""});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(), "ONC RPC call to program 100003 (NFS) v3 proc 17: PROC_UNAVAIL");
}

TEST(OncRpcTest, RpcMismatchIsFailedPrecondition) {
  RpcReply in;
  in.reply_stat = ReplyStat::kDenied;
  in.reject_stat = RejectStat::kRpcMismatch;
  in.mismatch = {3, 4};
  absl::StatusOr<RpcReply> r = DecodeReply(Encode(in), kReaddirplus);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            absl::StrCat(ToAbsl(kReaddirplusPrefix),
                         "MSG_DENIED RPC_MISMATCH (server supports RPC versions 3..4, we sent 2)"));
}

TEST(OncRpcTest, EveryAuthErrorButTooWeakIsUnauthenticatedAndNamed) {
  const std::vector<std::pair<AuthStat, std::string_view>> cases = {
      {AuthStat::kOk, "AUTH_OK"},
      {AuthStat::kBadCred, "AUTH_BADCRED"},
      {AuthStat::kRejectedCred, "AUTH_REJECTEDCRED"},
      {AuthStat::kBadVerf, "AUTH_BADVERF"},
      {AuthStat::kRejectedVerf, "AUTH_REJECTEDVERF"},
      {AuthStat::kInvalidResp, "AUTH_INVALIDRESP"},
      {AuthStat::kFailed, "AUTH_FAILED"},
      {AuthStat::kKerbGeneric, "AUTH_KERB_GENERIC"},
      {AuthStat::kTimeExpire, "AUTH_TIMEEXPIRE"},
      {AuthStat::kTktFile, "AUTH_TKT_FILE"},
      {AuthStat::kDecode, "AUTH_DECODE"},
      {AuthStat::kNetAddr, "AUTH_NET_ADDR"},
      {AuthStat::kRpcsecGssCredProblem, "RPCSEC_GSS_CREDPROBLEM"},
      {AuthStat::kRpcsecGssCtxProblem, "RPCSEC_GSS_CTXPROBLEM"},
      {static_cast<AuthStat>(99), "auth_stat 99"},
  };
  for (const auto& [stat, name] : cases) {
    absl::StatusOr<RpcReply> r = DecodeReply(Encode(AuthError(stat)), kReaddirplus);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << name;
    EXPECT_EQ(r.status().message(),
              absl::StrCat(ToAbsl(kReaddirplusPrefix), "MSG_DENIED AUTH_ERROR ", ToAbsl(name)));
  }
}

TEST(OncRpcTest, AuthTooWeakIsPermissionDenied) {
  absl::StatusOr<RpcReply> r = DecodeReply(Encode(AuthError(AuthStat::kTooWeak)), kReaddirplus);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(r.status().message(),
              HasSubstr(absl::StrCat(ToAbsl(kReaddirplusPrefix), "MSG_DENIED AUTH_ERROR AUTH_TOOWEAK")));
}

TEST(OncRpcTest, DecodeReplyHeaderKeepsTheRawStatsOfARejection) {
  absl::StatusOr<RpcReply> r = DecodeReplyHeader(Encode(AuthError(AuthStat::kRejectedCred)));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->reply_stat, ReplyStat::kDenied);
  EXPECT_EQ(r->reject_stat, RejectStat::kAuthError);
  EXPECT_EQ(r->auth_stat, AuthStat::kRejectedCred);
}

TEST(OncRpcTest, ACallWhereAReplyIsExpectedIsDataLossNamingTheCall) {
  std::string record;
  EncodeCallHeader(1, kReaddirplus, AuthNone(), AuthNone(), &record);
  absl::StatusOr<RpcReply> r = DecodeReply(record, kReaddirplus);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr(kReaddirplusPrefix));
  EXPECT_THAT(r.status().message(), HasSubstr("msg_type is 0, not REPLY (1) at offset 4"));
}

TEST(OncRpcTest, UnknownReplyStatIsDataLoss) {
  const std::string record = Bytes({0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 2});
  EXPECT_EQ(DecodeReply(record, kReaddirplus).status().code(), absl::StatusCode::kDataLoss);
}

TEST(OncRpcTest, UnknownAcceptStatIsDataLoss) {
  absl::StatusOr<RpcReply> r =
      DecodeReply(Encode(Accepted(static_cast<AcceptStat>(6))), kReaddirplus);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("accept_stat has unknown discriminant 6"));
}

TEST(OncRpcTest, UnknownRejectStatIsDataLoss) {
  RpcReply in;
  in.reply_stat = ReplyStat::kDenied;
  in.reject_stat = static_cast<RejectStat>(2);
  absl::StatusOr<RpcReply> r = DecodeReply(Encode(in), kReaddirplus);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("reject_stat has unknown discriminant 2"));
}

TEST(OncRpcTest, VerifierOver400BytesIsDataLoss) {
  RpcReply in = Accepted(AcceptStat::kSuccess);
  const std::string big(401, 'v');
  in.verf.body = big;
  absl::StatusOr<RpcReply> r = DecodeReply(Encode(in), kReaddirplus);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("verf body length 401 exceeds its maximum of 400"));
}

// Every proper prefix of a reply's header must be DataLoss, never a crash or
// a misparse. (A SUCCESS reply's results run to the end of the record, so
// for it only prefixes that cut the header are truncations.)
TEST(OncRpcTest, EveryTruncationOfAReplyHeaderIsDataLoss) {
  RpcReply success = Accepted(AcceptStat::kSuccess);
  success.verf = {.flavor = 1, .body = "verifier12"};  // 10 bytes: padding too
  RpcReply mismatch = Accepted(AcceptStat::kProgMismatch);
  mismatch.mismatch = {2, 4};
  RpcReply rpc_mismatch;
  rpc_mismatch.reply_stat = ReplyStat::kDenied;
  rpc_mismatch.reject_stat = RejectStat::kRpcMismatch;
  for (const RpcReply& reply :
       {Accepted(AcceptStat::kSuccess), success, mismatch, rpc_mismatch,
        AuthError(AuthStat::kBadCred), Accepted(AcceptStat::kGarbageArgs)}) {
    const std::string record = Encode(reply);
    ASSERT_TRUE(DecodeReplyHeader(record).ok());
    for (size_t n = 0; n < record.size(); ++n) {
      absl::StatusOr<RpcReply> r = DecodeReply(std::string_view(record).substr(0, n), kReaddirplus);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << n << " of " << record.size();
      EXPECT_THAT(r.status().message(), HasSubstr("truncated")) << n;
    }
  }
}

TEST(OncRpcTest, ReplyHeaderRoundTripsForEveryState) {
  std::vector<RpcReply> replies;
  for (uint32_t s = 0; s <= 5; ++s) replies.push_back(Accepted(static_cast<AcceptStat>(s)));
  replies[2].mismatch = {1, 9};
  for (uint32_t a = 0; a <= 14; ++a) replies.push_back(AuthError(static_cast<AuthStat>(a)));
  RpcReply rpc_mismatch;
  rpc_mismatch.reply_stat = ReplyStat::kDenied;
  rpc_mismatch.reject_stat = RejectStat::kRpcMismatch;
  rpc_mismatch.mismatch = {5, 6};
  replies.push_back(rpc_mismatch);
  for (const RpcReply& in : replies) {
    absl::StatusOr<RpcReply> out = DecodeReplyHeader(Encode(in));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->xid, in.xid);
    EXPECT_EQ(out->reply_stat, in.reply_stat);
    if (in.reply_stat == ReplyStat::kAccepted) {
      EXPECT_EQ(out->accept_stat, in.accept_stat);
    } else {
      EXPECT_EQ(out->reject_stat, in.reject_stat);
      EXPECT_EQ(out->auth_stat, in.auth_stat);
    }
    EXPECT_EQ(out->mismatch.low, in.mismatch.low);
    EXPECT_EQ(out->mismatch.high, in.mismatch.high);
  }
}

TEST(OncRpcTest, XidIsTheFirstFourBytesBigEndian) {
  std::string record;
  EncodeCallHeader(0, kReaddirplus, AuthNone(), AuthNone(), &record);
  WriteXid(0x11223344, &record);
  EXPECT_EQ(record.substr(0, 4), Bytes({0x11, 0x22, 0x33, 0x44}));
  EXPECT_EQ(ReadXid(record), 0x11223344u);
  EXPECT_EQ(*ReadXidChecked(record), 0x11223344u);
  EXPECT_EQ(DecodeCall(record)->xid, 0x11223344u);
}

TEST(OncRpcTest, ReadXidCheckedRejectsShortRecords) {
  absl::StatusOr<uint32_t> xid = ReadXidChecked("abc");
  EXPECT_EQ(xid.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(xid.status().message(), HasSubstr("3 bytes"));
}

TEST(OncRpcTest, DescribeProcedureLeavesOutEmptyNames) {
  EXPECT_EQ(DescribeProcedure(kReaddirplus), "program 100003 (NFS) v3 proc 17 (READDIRPLUS)");
  EXPECT_EQ(DescribeProcedure({100005, 3, 1}), "program 100005 v3 proc 1");
}

}  // namespace
}  // namespace ferry
