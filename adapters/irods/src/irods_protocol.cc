#include "ferry/irods/irods_protocol.h"

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/irods/irods_xml.h"

namespace ferry::irods {
namespace {

void PutBigEndian32(uint32_t v, std::string* out) {
  out->push_back(static_cast<char>(v >> 24));
  out->push_back(static_cast<char>(v >> 16));
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}

uint32_t GetBigEndian32(std::string_view b) {
  return (static_cast<uint32_t>(static_cast<unsigned char>(b[0])) << 24) |
         (static_cast<uint32_t>(static_cast<unsigned char>(b[1])) << 16) |
         (static_cast<uint32_t>(static_cast<unsigned char>(b[2])) << 8) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[3]));
}

}  // namespace

absl::StatusOr<FrameHeader> ParseFrameHeader(std::string_view header) {
  auto node = ParseXml(header);
  if (!node.ok()) return absl::DataLossError(Cat("iRODS header: ", node.status().message()));
  if ((*node)->name != "MsgHeader_PI") {
    return absl::DataLossError(Cat("iRODS header is <", (*node)->name, ">"));
  }
  FrameHeader h;
  h.type = std::string((*node)->Text("type"));
  h.msg = (*node)->Int("msgLen", -1);
  h.error = (*node)->Int("errorLen", -1);
  h.bs = (*node)->Int("bsLen", -1);
  h.int_info = (*node)->Int("intInfo", 0);
  constexpr int64_t kMax = int64_t{64} << 20;
  for (int64_t v : {h.msg, h.error, h.bs}) {
    if (v < 0 || v > kMax) {
      return absl::DataLossError(Cat("iRODS header announces a section of ", v, " bytes"));
    }
  }
  return h;
}

std::string EncodeMessageHead(std::string_view type, int64_t int_info, std::string_view msg,
                              size_t bs_size) {
  const std::string header =
      Cat("<MsgHeader_PI><type>", EscapeXml(type), "</type><msgLen>", msg.size(),
                   "</msgLen><errorLen>0</errorLen><bsLen>", bs_size, "</bsLen><intInfo>",
                   int_info, "</intInfo></MsgHeader_PI>");
  std::string out;
  out.reserve(4 + header.size() + msg.size());
  PutBigEndian32(static_cast<uint32_t>(header.size()), &out);
  out += header;
  out += msg;
  return out;
}

std::string EncodeMessage(std::string_view type, int64_t int_info, std::string_view msg,
                          std::string_view bs) {
  std::string out = EncodeMessageHead(type, int_info, msg, bs.size());
  out += bs;
  return out;
}

absl::StatusOr<Message> DecodeMessage(std::string_view frame) {
  if (frame.size() < 4) return absl::DataLossError("iRODS frame shorter than its length prefix");
  const uint32_t header_len = GetBigEndian32(frame);
  if (header_len > frame.size() - 4) return absl::DataLossError("iRODS frame shorter than its header");
  FERRY_ASSIGN_OR_RETURN(FrameHeader h, ParseFrameHeader(frame.substr(4, header_len)));
  std::string_view body = frame.substr(4 + header_len);
  if (static_cast<int64_t>(body.size()) != h.msg + h.error + h.bs) {
    return absl::DataLossError(Cat("iRODS frame body is ", body.size(), " bytes, header says ",
                                            h.msg + h.error + h.bs));
  }
  Message m;
  m.type = std::move(h.type);
  m.int_info = h.int_info;
  m.msg = std::string(body.substr(0, h.msg));
  m.error = std::string(body.substr(h.msg, h.error));
  m.bs = std::string(body.substr(h.msg + h.error));
  return m;
}

std::shared_ptr<const Framing> NewIrodsFraming() {
  return NewHeaderDescribedFraming(
      [](std::string_view header) -> absl::StatusOr<size_t> {
        FERRY_ASSIGN_OR_RETURN(FrameHeader h, ParseFrameHeader(header));
        return static_cast<size_t>(h.msg + h.error + h.bs);
      },
      HeaderDescribedOptions{.max_header_size = kMaxFrameHeaderBytes, .max_body_size = (size_t{64} << 20) * 3});
}

std::string_view IrodsErrorName(int64_t code) {
  // Codes carry a sub-code in the last three digits (errno for system calls).
  switch ((code / 1000) * 1000) {
    case -12000: return "SYS_UNMATCHED_API_NUM";
    case -13000: return "SYS_NO_API_PRIV";
    case -14000: return "SYS_API_INPUT_ERR";
    case -130000: return "SYS_INVALID_INPUT_PARAM";
    case -169000: return "SYS_REPLICA_ACCESS_TOKEN_ERROR";
    case -310000: return "USER_FILE_DOES_NOT_EXIST";
    case -312000: return "OVERWRITE_WITHOUT_FORCE_FLAG";
    case -317000: return "USER_INPUT_PATH_ERR";
    case -345000: return "SYS_BAD_FILE_DESCRIPTOR";
    case -358000: return "OBJ_PATH_DOES_NOT_EXIST";
    case -806000: return "CAT_SQL_ERR";
    case -808000: return "CAT_NO_ROWS_FOUND";
    case -809000: return "CATALOG_ALREADY_HAS_ITEM_BY_THAT_NAME";
    case -814000: return "CAT_UNKNOWN_COLLECTION";
    case -816000: return "CAT_INVALID_ARGUMENT";
    case -817000: return "CAT_UNKNOWN_FILE";
    case -818000: return "CAT_NO_ACCESS_PERMISSION";
    case -821000: return "CAT_COLLECTION_NOT_EMPTY";
    case -826000: return "CAT_INVALID_AUTHENTICATION";
    case -827000: return "CAT_INVALID_USER";
    case -830000: return "CAT_INSUFFICIENT_PRIVILEGE";
    case -833000: return "CAT_NAME_EXISTS_AS_COLLECTION";
    case -834000: return "CAT_NAME_EXISTS_AS_DATAOBJ";
  }
  return "";
}

absl::Status IrodsError(int64_t code, std::string_view context, std::string_view server_text) {
  const std::string_view name = IrodsErrorName(code);
  std::string msg = Cat("iRODS error ", code, name.empty() ? "" : " (", name,
                                 name.empty() ? "" : ")", " on ", context);
  if (!server_text.empty()) CatAppend(&msg, ": ", server_text);
  switch ((code / 1000) * 1000) {
    case -310000: case -358000: case -808000: case -814000: case -817000:
      return absl::NotFoundError(msg);
    case -13000: case -818000: case -830000:
      return absl::PermissionDeniedError(msg);
    case -826000: case -827000:
      return absl::UnauthenticatedError(msg);
    case -312000: case -809000: case -833000: case -834000:
      return absl::AlreadyExistsError(msg);
    case -821000:
      return absl::FailedPreconditionError(msg);
    case -14000: case -130000: case -317000: case -816000:
      return absl::InvalidArgumentError(msg);
    case -12000:  // SYS_UNMATCHED_API_NUM: an older server lacks the API
      return absl::UnimplementedError(msg);
  }
  return absl::UnknownError(msg);
}

}  // namespace ferry::irods
