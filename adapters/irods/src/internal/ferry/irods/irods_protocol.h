// The iRODS wire protocol as the client needs it: frames (a 4-byte header
// length, an XML MsgHeader_PI, then msg, error and bs sections), the API
// numbers ferry calls, the error codes it maps, and the framing SessionPool
// reads with.
#ifndef FERRY_IRODS_IRODS_PROTOCOL_H_
#define FERRY_IRODS_IRODS_PROTOCOL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ferry/rpc/framing.h"

namespace ferry::irods {

// API numbers (irods/lib/api/include/irods/apiNumber.h).
enum Api : int {
  kDataObjCreate = 601,
  kDataObjOpen = 602,
  kDataObjUnlink = 615,
  kDataObjRename = 627,
  kDataObjChksum = 629,  // DATA_OBJ_CHKSUM_AN: the server hashes the replica
  kObjStat = 633,
  kDataObjClose = 673,
  kDataObjLseek = 674,
  kDataObjRead = 675,
  kDataObjWrite = 676,
  kRmColl = 679,
  kCollCreate = 681,
  kGenQuery = 702,
  kAuthRequest = 703,
  kAuthResponse = 704,
  kModAvuMetadata = 706,
  kModAccessControl = 707,
  kGetFileDescriptorInfo = 20000,
  kReplicaClose = 20004,
  kTouch = 20007,  // 4.3's touch: JSON {logical_path, options}
  kAuthentication = 110000,
};

// Interim reply of a long collection operation, and the client's answer.
constexpr int kSvrToCliCollStat = 99999996;
constexpr int kCliToSvrCollStatReply = 99999997;

struct Message {
  std::string type;
  int64_t int_info = 0;
  std::string msg;
  std::string error;
  std::string bs;
};

// One frame, ready for Session::Send (the framing adds nothing).
std::string EncodeMessage(std::string_view type, int64_t int_info, std::string_view msg,
                          std::string_view bs = {});
// The frame up to its bs section (length prefix, header, msg) for `bs_size`
// payload bytes the caller sends after it from its own buffer.
std::string EncodeMessageHead(std::string_view type, int64_t int_info, std::string_view msg,
                              size_t bs_size);
// A frame header's fields.
struct FrameHeader {
  std::string type;
  int64_t int_info = 0;
  int64_t msg = 0, error = 0, bs = 0;  // section lengths, each 0..64 MiB
};
// Largest MsgHeader_PI accepted (real ones are ~200 bytes).
constexpr size_t kMaxFrameHeaderBytes = 4096;
// Parses a MsgHeader_PI (the bytes after the length prefix). DataLoss for
// a malformed one or a section length outside 0..64 MiB.
absl::StatusOr<FrameHeader> ParseFrameHeader(std::string_view header);
// A frame as the framing hands it out (prefix, header, sections). DataLoss
// for a malformed header or sections that do not add up.
absl::StatusOr<Message> DecodeMessage(std::string_view frame);
// The framing for SessionPool: header-described, bodies up to 64 MiB.
std::shared_ptr<const Framing> NewIrodsFraming();

// An iRODS error code as a Status: NotFound, PermissionDenied,
// Unauthenticated, AlreadyExists, FailedPrecondition, or Unknown; the
// message names the code, its name, `context` and the server's text.
absl::Status IrodsError(int64_t code, std::string_view context, std::string_view server_text);
// The error's name (CAT_NO_ACCESS_PERMISSION), or "" if ferry does not know it.
std::string_view IrodsErrorName(int64_t code);

}  // namespace ferry::irods

#endif  // FERRY_IRODS_IRODS_PROTOCOL_H_
