// The one progress report and the one statistics record every transfer in
// ferry produces: a single file or a tree, through the copy engine
// (copy_engine.h) or the object-store file transfers (file_transfer.h),
// over any protocol. records.proto's TransferStats is its wire form.
//
// Thread-safety: plain values.
#ifndef FERRY_TRANSFER_TRANSFER_STATS_H_
#define FERRY_TRANSFER_TRANSFER_STATS_H_

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace ferry {

// How far a transfer has got.
struct TransferProgress {
  int64_t bytes_done = 0;    // payload bytes written to the destination
  // The whole transfer's size; -1 while unknown (a tree still being
  // listed, a file not yet opened).
  int64_t bytes_total = -1;
  absl::Duration elapsed;
  int64_t files_done = 0;    // files finished (copied or failed); trees
  // Files in the transfer, or listed so far while bytes_total is -1 (a
  // tree copies while it is listed).
  int64_t files_total = 0;
};

// Called on the thread that called the transfer function (never on an I/O
// thread, so it may take the GIL or a lock), at most once per progress
// interval and once more at the end. A non-OK return stops the transfer,
// which then fails with that status: this is how callers cancel.
using ProgressCallback = absl::AnyInvocable<absl::Status(const TransferProgress&)>;

// What one transfer did (the C++ side of records.proto's TransferStats).
// A tree's totals sum its files'.
struct TransferStats {
  int64_t bytes = 0;           // payload bytes moved
  int64_t bytes_fetched = 0;   // bytes received from the source
  int64_t bytes_uploaded = 0;  // bytes the destination accepted
  // Bytes an interrupted earlier copy left in place and this one kept
  // instead of moving them again (CopyOptions::resume_min_bytes).
  int64_t bytes_resumed = 0;
  int64_t requests = 0;        // chunks / GETs / parts that succeeded
  int parts = 0;               // multipart parts uploaded
  int64_t retries = 0;         // attempts repeated (a rewrite counts one)
  int64_t files = 0;           // files copied (1 for a single file)
  absl::Duration elapsed;
  int64_t peak_memory_bytes = 0;  // the MemoryBudget's peak during it
};

}  // namespace ferry

#endif  // FERRY_TRANSFER_TRANSFER_STATS_H_
