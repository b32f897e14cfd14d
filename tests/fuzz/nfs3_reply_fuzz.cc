// Fuzzes every NFSv3 and MOUNT3 result decoder the client uses.
//
// The first byte picks the procedure's decoder, the rest is the results
// part of a reply (what follows the ONC RPC reply header). Whatever the
// bytes: a decoder answers a value or DataLoss, every view it returns
// lies inside the input, handles are within the protocol's 64 bytes, and
// what the encoders can write back (READDIRPLUS, GETATTR) decodes to the
// same value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/rpc/xdr.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;
using ferry::fuzz::CheckInside;
namespace nfs = ferry::nfs;

template <typename T>
bool Judge(const absl::StatusOr<T>& r) {
  if (!r.ok()) {
    Check(r.status().code() == absl::StatusCode::kDataLoss);
    Check(!r.status().message().empty());
  }
  return r.ok();
}

bool SameEntry(const nfs::DirEntryPlus& a, const nfs::DirEntryPlus& b) {
  return a.fileid == b.fileid && a.name == b.name && a.cookie == b.cookie &&
         a.attributes == b.attributes && a.handle == b.handle;
}

void Readdirplus(std::string_view in) {
  absl::StatusOr<nfs::ReaddirplusResult> r = nfs::DecodeReaddirplusResult(in, 4096);
  if (!Judge(r)) return;
  for (const nfs::DirEntryPlus& e : r->entries) {
    CheckInside(in, e.name);
    if (e.handle.has_value()) {
      CheckInside(in, *e.handle);
      Check(e.handle->size() <= nfs::kMaxFileHandleSize);
    }
  }
  if (r->status != nfs::Nfs3Status::kOk) return;
  std::string again;
  nfs::EncodeReaddirplusResult(*r, &again);
  absl::StatusOr<nfs::ReaddirplusResult> back = nfs::DecodeReaddirplusResult(again, 4096);
  Check(back.ok());
  Check(back->status == r->status && back->dir_attributes == r->dir_attributes &&
        back->cookieverf == r->cookieverf && back->eof == r->eof &&
        back->entries.size() == r->entries.size());
  for (size_t i = 0; i < r->entries.size(); ++i) Check(SameEntry(back->entries[i], r->entries[i]));
}

void GetAttr(std::string_view in) {
  absl::StatusOr<nfs::GetAttrResult> r = nfs::DecodeGetAttrResult(in);
  if (!Judge(r) || r->status != nfs::Nfs3Status::kOk) return;
  std::string again;
  ferry::XdrEncoder(&again).WriteUint32(0);
  nfs::EncodeFattr3(r->attributes, &again);
  absl::StatusOr<nfs::GetAttrResult> back = nfs::DecodeGetAttrResult(again);
  Check(back.ok() && back->attributes == r->attributes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0];
  // An exact-size heap copy, so ASan sees any read past the end.
  const std::string copy(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string_view in(copy);
  switch (which % 16) {
    case 0: Judge(nfs::DecodeNullResult(in)); break;
    case 1: GetAttr(in); break;
    case 2: {
      auto r = nfs::DecodeLookupResult(in);
      if (Judge(r)) Check(r->object.size() <= nfs::kMaxFileHandleSize);
      break;
    }
    case 3: Judge(nfs::DecodeAccessResult(in)); break;
    case 4: Readdirplus(in); break;
    case 5: {
      auto r = nfs::DecodeReadResult(in);
      if (Judge(r)) {
        CheckInside(in, r->data);
        if (r->status == nfs::Nfs3Status::kOk) Check(r->data.size() <= in.size());
      }
      break;
    }
    case 6: Judge(nfs::DecodeWriteResult(in)); break;
    case 7: Judge(nfs::DecodeCommitResult(in)); break;
    case 8: {
      auto r = nfs::DecodeCreateResult(in);
      if (Judge(r) && r->object.has_value()) Check(r->object->size() <= nfs::kMaxFileHandleSize);
      break;
    }
    case 9: Judge(nfs::DecodeRemoveResult(in)); break;
    case 10: Judge(nfs::DecodeRenameResult(in)); break;
    case 11: Judge(nfs::DecodeFsStatResult(in)); break;
    case 12: Judge(nfs::DecodeFsInfoResult(in)); break;
    case 13: {
      auto r = nfs::DecodeMountResult(in);
      if (Judge(r)) Check(r->root.size() <= nfs::kMaxFileHandleSize);
      break;
    }
    case 14: Judge(nfs::DecodeExportResult(in)); break;
    case 15: Readdirplus(in); break;  // the walker's hot path gets twice the share
  }
  return 0;
}
