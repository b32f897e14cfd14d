// Field-by-field translation of the walker's structs into the generated
// protobuf classes. The entry vector is reserved up front: a batch holds
// thousands of entries and this runs once per batch, not per entry.
#include "ferry/nfs/walk_records.h"

#include <string>

#include "ferry/records.pb.h"

namespace ferry::nfs {
namespace {

// ns per second, for mtime_ns.
constexpr int64_t kNanosPerSecond = 1'000'000'000;

records::FileType ToProtoType(FileType type) {
  const auto n = static_cast<int>(type);
  // records.proto numbers FileType as ftype3 does; anything a server sends
  // beyond those is unspecified rather than an invalid enum value.
  return records::FileType_IsValid(n) ? static_cast<records::FileType>(n)
                                      : records::FILE_TYPE_UNSPECIFIED;
}

}  // namespace

void ToWalkBatchProto(const WalkBatch& batch, const WalkBatchContext& context,
                      records::WalkBatch* out) {
  out->Clear();
  out->mutable_entries()->Reserve(static_cast<int>(batch.entries.size()));
  for (const WalkEntry& e : batch.entries) {
    records::WalkEntry* r = out->add_entries();
    r->set_path(e.path);
    r->set_type(ToProtoType(e.type));
    r->set_size(e.size);
    r->set_mode(e.mode);
    r->set_uid(e.uid);
    r->set_gid(e.gid);
    r->set_mtime_ns(static_cast<int64_t>(e.mtime.seconds) * kNanosPerSecond + e.mtime.nseconds);
    r->set_fileid(e.fileid);
  }
  for (const WalkError& e : batch.errors) {
    records::WalkError* r = out->add_errors();
    r->set_path(e.path);
    r->set_code(static_cast<int32_t>(e.status.code()));
    r->set_message(std::string(e.status.message()));
  }
  out->set_walk_id(context.walk_id);
  out->set_sequence(context.sequence);
  out->set_last(context.last);
}

std::string SerializeWalkBatch(const WalkBatch& batch, const WalkBatchContext& context) {
  records::WalkBatch proto;
  ToWalkBatchProto(batch, context, &proto);
  return proto.SerializeAsString();
}

}  // namespace ferry::nfs
