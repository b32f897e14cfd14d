// The tree walker's batches as ferry.records.WalkBatch (records.proto): the
// one translation every binding uses, so Python (ferry.records_pb2) and Java
// (io.ferry.records) decode the same bytes that C++ wrote.
//
//   ferry::nfs::WalkBatchContext context{.walk_id = id};
//   WalkTree(*client, "", {}, [&](ferry::nfs::WalkBatch& batch) {
//     std::string bytes = ferry::nfs::SerializeWalkBatch(batch, context);
//     ++context.sequence;
//     Send(bytes);   // Python: ferry.records_pb2.WalkBatch.FromString(bytes)
//     return true;
//   });
//
// Mapping: path bytes unchanged; type is the ftype3 number (the proto enum
// uses NFS's numbers); mtime_ns = seconds * 1e9 + nseconds; a WalkError's
// status becomes its code number (absl::StatusCode) and message.
//
// Its own library (ferry::nfs_records, built when protobuf is found) so that
// ferry::nfs and its installed package stay free of protobuf; not installed.
//
// Thread-safety: pure functions.
#ifndef FERRY_NFS_WALK_RECORDS_H_
#define FERRY_NFS_WALK_RECORDS_H_

#include <cstdint>
#include <string>

#include "ferry/nfs/tree_walker.h"

namespace ferry::records {
class WalkBatch;  // ferry/records.pb.h (generated from records.proto)
}  // namespace ferry::records

namespace ferry::nfs {

// What a WalkBatch record carries besides the walker's batch.
struct WalkBatchContext {
  uint64_t walk_id = 0;   // the same for every batch of one walk
  uint64_t sequence = 0;  // 0, 1, 2, ... in the order the batches are sent
  bool last = false;      // the walk's final batch (the walk completed)
};

// Replaces `*out` with `batch` and `context`. REQUIRES: out != nullptr.
void ToWalkBatchProto(const WalkBatch& batch, const WalkBatchContext& context,
                      ferry::records::WalkBatch* out);

// ToWalkBatchProto, serialized (the bytes that cross languages).
std::string SerializeWalkBatch(const WalkBatch& batch, const WalkBatchContext& context);

}  // namespace ferry::nfs

#endif  // FERRY_NFS_WALK_RECORDS_H_
