#include "ferry/irods/irods_replies.h"


#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/irods/irods_xml.h"
#include "ferry/transfer/checksum.h"

namespace ferry::irods {

absl::StatusOr<IrodsStat> DecodeObjStatReply(std::string_view msg, std::string_view context) {
  FERRY_ASSIGN_OR_RETURN(auto n, ParseXml(msg));
  IrodsStat st;
  st.type = static_cast<IrodsObjectType>(n->Int("objType"));
  st.size = n->Int("objSize");
  st.id = n->Int("dataId");
  st.modify_time = n->Int("modifyTime");
  st.mode = static_cast<uint32_t>(n->Int("dataMode"));
  st.owner = std::string(n->Text("ownerName"));
  st.checksum = std::string(n->Text("chksum"));
  if (st.type != IrodsObjectType::kDataObject && st.type != IrodsObjectType::kCollection) {
    return absl::NotFoundError(Cat(context, ": no such data object or collection"));
  }
  if (st.size < 0) return absl::DataLossError(Cat(context, ": negative size ", st.size));
  return st;
}

absl::StatusOr<GenQueryPage> DecodeGenQueryReply(std::string_view msg, size_t columns,
                                                 std::string_view context) {
  FERRY_ASSIGN_OR_RETURN(auto out, ParseXml(msg));
  const int64_t rows = out->Int("rowCnt");
  std::vector<const XmlNode*> cols = out->All("SqlResult_PI");
  if (cols.size() != columns) {
    return absl::DataLossError(Cat(context, ": ", cols.size(), " columns for ", columns));
  }
  // Every column is checked against rowCnt before anything is sized by
  // it: the count is the server's word, the values are what it sent.
  if (rows < 0) return absl::DataLossError(Cat(context, ": row count ", rows));
  std::vector<std::vector<const XmlNode*>> values;
  values.reserve(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    values.push_back(cols[c]->All("value"));
    if (static_cast<int64_t>(values.back().size()) != rows) {
      return absl::DataLossError(
          Cat(context, ": column ", c, " has ", values.back().size(), " values for ", rows, " rows"));
    }
  }
  GenQueryPage page;
  page.rows.resize(static_cast<size_t>(rows));
  for (const std::vector<const XmlNode*>& column : values) {
    for (size_t i = 0; i < column.size(); ++i) page.rows[i].push_back(column[i]->text);
  }
  page.continue_index = out->Int("continueInx");
  return page;
}

namespace {

// The JSON object in a BinBytesBuf_PI: base64 text, NUL-padded by iRODS.
absl::StatusOr<nlohmann::json> JsonObjectFromBinBytesBuf(std::string_view msg,
                                                         std::string_view context) {
  FERRY_ASSIGN_OR_RETURN(auto node, ParseXml(msg));
  std::string raw;
  if (!absl::Base64Unescape(absl::StripAsciiWhitespace(ToAbsl(node->Text("buf"))), &raw)) {
    return absl::DataLossError(Cat(context, ": reply buf is not base64"));
  }
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  nlohmann::json j = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError(Cat(context, ": reply is not a JSON object"));
  }
  return j;
}

// The string member `key` of `j`; DataLoss naming `context` without one.
absl::StatusOr<std::string> StringMember(const nlohmann::json& j, const char* key,
                                         std::string_view context) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    return absl::DataLossError(Cat(context, ": reply has no ", key));
  }
  return it->get<std::string>();
}

std::string Md5(std::string_view data) {
  return ferry::Md5(std::span<const char>(data.data(), data.size()));
}

}  // namespace

std::string NativeDigest(std::string_view challenge, std::string_view password) {
  std::string buf(64 + 50, '\0');
  buf.replace(0, std::min<size_t>(64, challenge.size()), challenge.substr(0, 64));
  buf.replace(64, std::min<size_t>(50, password.size()), password.substr(0, 50));
  std::string d = Md5(buf);
  for (char& c : d) {
    if (c == '\0') c = 1;
  }
  return d;
}

absl::StatusOr<std::string> NativeAuthResponse(std::string_view msg, std::string_view password,
                                               std::string_view context) {
  FERRY_ASSIGN_OR_RETURN(nlohmann::json j, JsonObjectFromBinBytesBuf(msg, context));
  FERRY_ASSIGN_OR_RETURN(std::string challenge, StringMember(j, "request_result", context));
  j["digest"] = absl::Base64Escape(NativeDigest(challenge, password));
  j["next_operation"] = "auth_agent_auth_response";
  j.erase("request_result");
  // Replace, not throw, on invalid UTF-8 the server put in other members.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<std::string> DecodeReplicaToken(std::string_view msg, std::string_view context) {
  FERRY_ASSIGN_OR_RETURN(nlohmann::json j, JsonObjectFromBinBytesBuf(msg, context));
  return StringMember(j, "replica_token", context);
}

absl::StatusOr<std::string> DecodeStrPi(std::string_view msg, std::string_view context) {
  absl::StatusOr<std::unique_ptr<XmlNode>> root = ParseXml(msg);
  if (!root.ok() || (*root)->name != "STR_PI" || (*root)->Child("myStr") == nullptr) {
    return absl::DataLossError(
        Cat(context, ": the server's reply is not a STR_PI string (", msg.substr(0, 120), ")"));
  }
  return std::string((*root)->Text("myStr"));
}

}  // namespace ferry::irods
