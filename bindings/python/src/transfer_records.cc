// Field-by-field copies into the generated class; records.proto's counters
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

records::TransferStats Start(const TransferRecordContext& context) {
  records::TransferStats r;
  r.set_operation(static_cast<records::TransferStats::Operation>(context.operation));
  r.set_source(context.source);
  r.set_destination(context.destination);
  return r;
}

}  // namespace

std::string SerializeTransferStats(const TransferRecordContext& context,
                                   const TransferStats& stats) {
  records::TransferStats r = Start(context);
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
  records::TransferStats r = Start(context);
  r.set_bytes(stats.bytes);
  const bool upload = context.operation == TransferOperation::kUpload;
  r.set_bytes_fetched(upload ? 0 : stats.bytes);
  r.set_bytes_uploaded(upload ? stats.bytes * static_cast<uint64_t>(1 + stats.rewrites) : 0);
  r.set_requests(Count32(static_cast<int64_t>(std::min<uint64_t>(
      stats.chunks * static_cast<uint64_t>(1 + stats.rewrites),
      std::numeric_limits<int64_t>::max()))));
  r.set_retries(Count32(stats.rewrites));
  r.set_elapsed_ns(absl::ToInt64Nanoseconds(stats.elapsed));
  r.set_peak_memory_bytes(peak_memory_bytes);
  return r.SerializeAsString();
}

}  // namespace ferry::python
