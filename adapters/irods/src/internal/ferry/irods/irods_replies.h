// The readers of the iRODS API replies ferry decodes beyond the frame:
// ObjStat's RodsObjStat_PI, GenQuery's GenQueryOut_PI, and the JSON in a
// BinBytesBuf_PI (the 4.3 authentication framework's challenge, a
// descriptor's replica token); and the native login's digest. Apart from
// IrodsClient (which sends the requests) so the bytes a server sends are
// unit-tested and fuzzed (tests/fuzz/irods_replies_fuzz.cc) without one.
// A reply that cannot be right is DataLoss naming `context`.
//
// Thread-safety: pure functions.
#ifndef FERRY_IRODS_IRODS_REPLIES_H_
#define FERRY_IRODS_IRODS_REPLIES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/irods/irods_client.h"

namespace ferry::irods {

// RodsObjStat_PI. NotFound when it names neither a data object nor a
// collection; DataLoss for a negative size.
absl::StatusOr<IrodsStat> DecodeObjStatReply(std::string_view msg, std::string_view context);

// One page of a GenQuery: `rows` of `columns` values each, and the
// continuation index (0 or less: the last page).
struct GenQueryPage {
  std::vector<std::vector<std::string>> rows;
  int64_t continue_index = 0;
};
// GenQueryOut_PI for a query of `columns` columns. DataLoss when its
// column count is not `columns`, its row count is negative, or a column
// has not rowCnt values.
absl::StatusOr<GenQueryPage> DecodeGenQueryReply(std::string_view msg, size_t columns,
                                                 std::string_view context);

// The native scheme's digest of a challenge: MD5 of the challenge's first
// 64 bytes and the password NUL-padded to 50, its NUL bytes made 1 (as the
// server computes it).
std::string NativeDigest(std::string_view challenge, std::string_view password);

// The 4.3 native scheme's second request, from the server's first reply
// (a BinBytesBuf_PI holding a JSON object with the challenge in
// `request_result`): that object without the challenge, with `digest` (the
// base64 NativeDigest) and `next_operation` auth_agent_auth_response, as
// JSON text. DataLoss naming `context` when the buf is not base64, the
// text not a JSON object, or the challenge missing.
absl::StatusOr<std::string> NativeAuthResponse(std::string_view msg, std::string_view password,
                                               std::string_view context);

// The `replica_token` of a GetFileDescriptorInfo reply (BinBytesBuf_PI of
// JSON); DataLoss naming `context` without one.
absl::StatusOr<std::string> DecodeReplicaToken(std::string_view msg, std::string_view context);

// The string of a STR_PI reply (<STR_PI><myStr>...</myStr></STR_PI>);
// DataLoss naming `context` for anything else.
absl::StatusOr<std::string> DecodeStrPi(std::string_view msg, std::string_view context);

}  // namespace ferry::irods

#endif  // FERRY_IRODS_IRODS_REPLIES_H_
