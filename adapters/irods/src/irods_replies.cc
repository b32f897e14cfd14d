#include "ferry/irods/irods_replies.h"

#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/irods/irods_xml.h"

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

}  // namespace ferry::irods
