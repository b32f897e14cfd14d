// The readers of the iRODS API replies ferry decodes beyond the frame:
// ObjStat's RodsObjStat_PI and GenQuery's GenQueryOut_PI. Apart from
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

}  // namespace ferry::irods

#endif  // FERRY_IRODS_IRODS_REPLIES_H_
