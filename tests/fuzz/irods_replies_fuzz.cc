// Fuzzes the iRODS API reply readers beyond the frame (irods_replies.h):
// ObjStat (RodsObjStat_PI), GenQuery (GenQueryOut_PI), and the JSON a
// BinBytesBuf_PI carries (the 4.3 login's challenge, a replica token).
//
// The first byte picks the reader: odd below 0x80 ObjStat, odd from 0x80
// the BinBytesBuf readers, even GenQuery with 1..4 columns (as ferry's
// queries have); the rest is the message. Whatever the bytes: a value or
// DataLoss (NotFound for a stat of nothing); a page has exactly the
// columns asked for in every row; a stat's size is never negative; a
// login answer is a JSON object that carries the digest, asks for the
// next step and no longer holds the challenge. A row count the values do
// not back must not size anything.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ferry/irods/irods_replies.h"
#include "fuzz_check.h"

using ferry::fuzz::Check;
namespace irods = ferry::irods;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0];
  const std::string copy(reinterpret_cast<const char*>(data) + 1, size - 1);  // exact size for ASan
  if ((which & 1) && (which & 0x80)) {
    absl::StatusOr<std::string> answer = irods::NativeAuthResponse(copy, "rods", "login");
    if (answer.ok()) {
      const nlohmann::json j = nlohmann::json::parse(*answer, nullptr, /*allow_exceptions=*/false);
      Check(j.is_object() && !j.contains("request_result"));
      Check(j.value("next_operation", "") == "auth_agent_auth_response");
      Check(!j.value("digest", "").empty());
    } else {
      Check(answer.status().code() == absl::StatusCode::kDataLoss);
    }
    absl::StatusOr<std::string> token = irods::DecodeReplicaToken(copy, "info");
    if (!token.ok()) Check(token.status().code() == absl::StatusCode::kDataLoss);
    return 0;
  }
  if (which & 1) {
    absl::StatusOr<irods::IrodsStat> st = irods::DecodeObjStatReply(copy, "stat /z/x");
    if (st.ok()) {
      Check(st->size >= 0);
    } else {
      Check(st.status().code() == absl::StatusCode::kDataLoss ||
            st.status().code() == absl::StatusCode::kNotFound);
    }
    return 0;
  }
  const size_t columns = 1 + (which >> 1) % 4;
  absl::StatusOr<irods::GenQueryPage> page = irods::DecodeGenQueryReply(copy, columns, "list /z");
  if (!page.ok()) {
    Check(page.status().code() == absl::StatusCode::kDataLoss);
    return 0;
  }
  for (const auto& row : page->rows) Check(row.size() == columns);
  return 0;
}
