// Fuzzes the iRODS API reply readers beyond the frame: ObjStat
// (RodsObjStat_PI) and GenQuery (GenQueryOut_PI) (irods_replies.h).
//
// The first byte picks the reader and, for GenQuery, the query's column
// count (1..4 as ferry's queries have); the rest is the message. Whatever
// the bytes: a value or DataLoss (NotFound for a stat of nothing); a page
// has exactly the columns asked for in every row; a stat's size is never
// negative. A row count the values do not back must not size anything.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/irods/irods_replies.h"
#include "fuzz_check.h"

using ferry::fuzz::Check;
namespace irods = ferry::irods;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0];
  const std::string copy(reinterpret_cast<const char*>(data) + 1, size - 1);  // exact size for ASan
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
