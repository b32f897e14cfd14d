// Field-by-field copies into the generated class (an NFS copy's stats are
// first mapped onto ferry::TransferStats); records.proto's counters
// are unsigned or 32-bit where ferry's are int64: values are clamped at 0
// below (never negative in practice) and the 32-bit ones saturate rather
// than wrap.
#include "transfer_records.h"

#include <algorithm>
#include <limits>

#include "absl/time/time.h"
#include "ferry/records.pb.h"

namespace ferry::python {
namespace {

uint64_t Unsigned(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(v, 0)); }

uint32_t Count32(int64_t v) {
  return static_cast<uint32_t>(
      std::clamp<int64_t>(v, 0, std::numeric_limits<uint32_t>::max()));
}

}  // namespace

std::string SerializeTransferStats(const TransferRecordContext& context,
                                   const TransferStats& stats) {
  records::TransferStats r;
  r.set_operation(static_cast<records::TransferStats::Operation>(context.operation));
  r.set_source(context.source);
  r.set_destination(context.destination);
  r.set_bytes(Unsigned(stats.bytes));
  r.set_bytes_fetched(Unsigned(stats.bytes_fetched));
  r.set_bytes_uploaded(Unsigned(stats.bytes_uploaded));
  r.set_requests(Count32(stats.requests));
  r.set_parts(Count32(stats.parts));
  r.set_retries(Count32(stats.retries));
  r.set_elapsed_ns(absl::ToInt64Nanoseconds(stats.elapsed));
  r.set_peak_memory_bytes(stats.peak_memory_bytes);
  return r.SerializeAsString();
}

std::string SerializeCopyStats(const TransferRecordContext& context, const nfs::CopyStats& stats,
                               int64_t peak_memory_bytes) {
  // One READ or WRITE per chunk per send; an upload rewritten after a
  // write-verifier change was sent 1 + rewrites times.
  const bool upload = context.operation == TransferOperation::kUpload;
  const int64_t sends = 1 + stats.rewrites;
  TransferStats t;
  t.bytes = static_cast<int64_t>(stats.bytes);
  t.bytes_fetched = upload ? 0 : t.bytes;
  t.bytes_uploaded = upload ? t.bytes * sends : 0;
  t.requests = static_cast<int64_t>(stats.chunks) * sends;
  t.retries = stats.rewrites;
  t.elapsed = stats.elapsed;
  t.peak_memory_bytes = peak_memory_bytes;
  return SerializeTransferStats(context, t);
}

}  // namespace ferry::python
