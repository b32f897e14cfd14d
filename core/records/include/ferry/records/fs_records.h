// The protocol-neutral records every binding hands across languages, made
// once here in C++ (Python's ferry.records_pb2 and Java's io.ferry.records
// decode the same bytes): walk batches of fs::Entry, and transfer stats.
//
//   ferry::records::WalkBatchContext context{.walk_id = id};
//   fs.Walk(root, {}, [&](ferry::fs::WalkBatch& batch) {
//     Send(ferry::records::SerializeWalkBatch(batch, context));
//     ++context.sequence;
//     return true;
//   });
//   Send(ferry::records::SerializeTransferStats({.operation = kCopy, ...}, stats));
//
// Mapping: an entry's kind becomes records.proto's FileType (REGULAR,
// DIRECTORY, SYMLINK; other kinds UNSPECIFIED), mtime nanoseconds since the
// epoch (0 when unknown), id the fileid; a WalkError's status its code
// number and message. Counters records.proto holds in 32 bits saturate.
//
// Part of ferry::records (it needs protobuf; ferry::core does not).
// Thread-safety: pure functions.
#ifndef FERRY_RECORDS_FS_RECORDS_H_
#define FERRY_RECORDS_FS_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ferry/fs/entry.h"
#include "ferry/transfer/transfer_stats.h"

namespace ferry::records {

class WalkBatch;      // ferry/records.pb.h
class TransferStats;  // ferry/records.pb.h

// What a WalkBatch record carries besides the batch itself.
struct WalkBatchContext {
  uint64_t walk_id = 0;   // the same for every batch of one walk
  uint64_t sequence = 0;  // 0, 1, 2, ... in the order the batches are sent
  bool last = false;      // the walk's final batch (the walk completed)
};

// Replaces `*out`. REQUIRES: out != nullptr.
void ToWalkBatchProto(const fs::WalkBatch& batch, const WalkBatchContext& context,
                      WalkBatch* out);
std::string SerializeWalkBatch(const fs::WalkBatch& batch, const WalkBatchContext& context);

// records.proto TransferStats.Operation (same numbers).
enum class TransferOperation { kDownload = 1, kUpload = 2, kCopy = 3 };

struct TransferRecordContext {
  TransferOperation operation = TransferOperation::kCopy;
  std::string source;       // URL or local path
  std::string destination;  // URL or local path
  absl::Status status;      // a failed transfer's status (code and message)
  // A tree copy's refused and skipped entries, and one line for each.
  int64_t entries_refused = 0;
  int64_t files_skipped = 0;
  std::vector<std::string> warnings;
};

void ToTransferStatsProto(const TransferRecordContext& context, const ferry::TransferStats& stats,
                          TransferStats* out);
std::string SerializeTransferStats(const TransferRecordContext& context,
                                   const ferry::TransferStats& stats);

}  // namespace ferry::records

#endif  // FERRY_RECORDS_FS_RECORDS_H_
