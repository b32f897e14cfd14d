// Field-by-field copies into the generated classes. The entry vector is
// reserved up front: a batch holds thousands of entries and this runs once
// per batch, not per entry.
#include "ferry/records/fs_records.h"

#include <algorithm>
#include <limits>

#include "absl/time/time.h"
#include "ferry/records.pb.h"

namespace ferry::records {
namespace {

FileType ToProtoType(fs::EntryKind kind) {
  switch (kind) {
    case fs::EntryKind::kFile: return FILE_TYPE_REGULAR;
    case fs::EntryKind::kDirectory: return FILE_TYPE_DIRECTORY;
    case fs::EntryKind::kSymlink: return FILE_TYPE_SYMLINK;
    default: return FILE_TYPE_UNSPECIFIED;
  }
}

uint64_t Unsigned(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(v, 0)); }

uint32_t Count32(int64_t v) {
  return static_cast<uint32_t>(std::clamp<int64_t>(v, 0, std::numeric_limits<uint32_t>::max()));
}

}  // namespace

void ToWalkBatchProto(const fs::WalkBatch& batch, const WalkBatchContext& context,
                      WalkBatch* out) {
  out->Clear();
  out->mutable_entries()->Reserve(static_cast<int>(batch.entries.size()));
  for (const fs::Entry& e : batch.entries) {
    WalkEntry* r = out->add_entries();
    r->set_path(e.path);
    r->set_type(ToProtoType(e.kind));
    r->set_size(Unsigned(e.size));
    r->set_mode(e.mode);
    r->set_uid(e.uid);
    r->set_gid(e.gid);
    r->set_mtime_ns(e.mtime == absl::InfinitePast() ? 0 : absl::ToUnixNanos(e.mtime));
    r->set_fileid(e.id);
  }
  for (const fs::WalkError& e : batch.errors) {
    WalkError* r = out->add_errors();
    r->set_path(e.path);
    r->set_code(static_cast<int32_t>(e.status.code()));
    r->set_message(std::string(e.status.message()));
    if (e.refused) {
      r->set_refused(true);
      r->set_name(e.name);
    }
  }
  out->set_walk_id(context.walk_id);
  out->set_sequence(context.sequence);
  out->set_last(context.last);
}

std::string SerializeWalkBatch(const fs::WalkBatch& batch, const WalkBatchContext& context) {
  WalkBatch proto;
  ToWalkBatchProto(batch, context, &proto);
  return proto.SerializeAsString();
}

void ToTransferStatsProto(const TransferRecordContext& context, const ferry::TransferStats& stats,
                          TransferStats* out) {
  out->Clear();
  out->set_operation(static_cast<TransferStats::Operation>(context.operation));
  out->set_source(context.source);
  out->set_destination(context.destination);
  out->set_bytes(Unsigned(stats.bytes));
  out->set_files(Unsigned(stats.files));
  out->set_bytes_fetched(Unsigned(stats.bytes_fetched));
  out->set_bytes_uploaded(Unsigned(stats.bytes_uploaded));
  out->set_bytes_resumed(Unsigned(stats.bytes_resumed));
  out->set_requests(Count32(stats.requests));
  out->set_parts(Count32(stats.parts));
  out->set_retries(Count32(stats.retries));
  out->set_elapsed_ns(absl::ToInt64Nanoseconds(stats.elapsed));
  out->set_peak_memory_bytes(stats.peak_memory_bytes);
  out->set_code(static_cast<int32_t>(context.status.code()));
  if (!context.status.ok()) out->set_message(std::string(context.status.message()));
  out->set_entries_refused(Unsigned(context.entries_refused));
  out->set_files_skipped(Unsigned(context.files_skipped));
  for (const std::string& w : context.warnings) out->add_warnings(w);
}

std::string SerializeTransferStats(const TransferRecordContext& context,
                                   const ferry::TransferStats& stats) {
  TransferStats proto;
  ToTransferStatsProto(context, stats, &proto);
  return proto.SerializeAsString();
}

}  // namespace ferry::records
