// A finished transfer as records.proto's ferry.records.TransferStats
// bytes, filled in C++ (as the NFS walk's batches are) and decoded in
// Python into ferry.records_pb2.TransferStats.
//
//   std::string bytes = SerializeTransferStats(
//       {.operation = TransferOperation::kDownload, .source = url, .destination = path},
//       *stats);
//
// Mapping: ferry::TransferStats field by field (elapsed in ns). An NFS copy
// (ferry::nfs::CopyStats) has one READ or WRITE per chunk, so `requests`
// is its chunk count; bytes_fetched is the payload for a download and
// bytes_uploaded the payload times the sends for an upload (a rewrite after
// a write-verifier change sends it twice). The status fields stay 0/empty:
// a failed transfer raises instead of returning stats.
//
// Thread-safety: pure functions.
#ifndef FERRY_BINDINGS_PYTHON_TRANSFER_RECORDS_H_
#define FERRY_BINDINGS_PYTHON_TRANSFER_RECORDS_H_

#include <cstdint>
#include <string>

#include "ferry/nfs/nfs_copy.h"
#include "ferry/transfer/file_transfer.h"

namespace ferry::python {

// records.proto TransferStats.Operation (same numbers).
enum class TransferOperation { kDownload = 1, kUpload = 2, kCopy = 3 };

struct TransferRecordContext {
  TransferOperation operation = TransferOperation::kCopy;
  std::string source;       // URL or local path
  std::string destination;  // URL or local path
};

std::string SerializeTransferStats(const TransferRecordContext& context,
                                   const TransferStats& stats);

// `peak_memory_bytes`: the Runtime's MemoryBudget peak (CopyStats has none).
std::string SerializeCopyStats(const TransferRecordContext& context, const nfs::CopyStats& stats,
                               int64_t peak_memory_bytes);

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_TRANSFER_RECORDS_H_
