// The answers every in-process fake NFSv3 server of the tests gives so
// that NfsClient::Connect mounts it: MOUNT's EXPORT (an empty list: the
// URL's path is mounted) and MNT (the root handle "d:root", AUTH_SYS), and
// NFS's GETATTR of the root and FSINFO (1 MiB transfers). Each appends the
// results after the reply header already in `out`.
#ifndef FERRY_TESTS_INTEGRATION_NFS_FAKE_NFS_ANSWERS_H_
#define FERRY_TESTS_INTEGRATION_NFS_FAKE_NFS_ANSWERS_H_

#include <cstdint>
#include <string>

#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/xdr.h"

namespace ferry::nfs::fake_nfs {

// An accepted, successful reply's header for call `xid`, results to follow.
inline std::string SuccessHeader(uint32_t xid) {
  RpcReply reply;
  reply.xid = xid;
  std::string out;
  EncodeReplyHeader(reply, &out);
  return out;
}

// The results of a MOUNT call (EXPORT or MNT).
inline void AppendMountResults(const RpcCall& call, std::string* out) {
  XdrEncoder e(out);
  if (call.proc == static_cast<uint32_t>(Mount3Proc::kExport)) {
    e.WriteBool(false);  // an empty export list: the URL's path is mounted
    return;
  }
  e.WriteUint32(static_cast<uint32_t>(Mount3Status::kOk));  // MNT
  e.WriteOpaque("d:root");
  e.WriteUint32(1);  // one flavour: AUTH_SYS
  e.WriteUint32(static_cast<uint32_t>(AuthFlavor::kSys));
}

// GETATTR's results for a directory (the root, at connect).
inline void AppendDirectoryGetAttrResults(uint64_t fileid, std::string* out) {
  Fattr3 a;
  a.type = FileType::kDirectory;
  a.mode = 0755;
  a.nlink = 1;
  a.size = 4096;
  a.fileid = fileid;
  XdrEncoder(out).WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
  EncodeFattr3(a, out);
}

// FSINFO's results: 1 MiB reads and writes.
inline void AppendFsInfoResults(std::string* out) {
  XdrEncoder e(out);
  e.WriteUint32(static_cast<uint32_t>(Nfs3Status::kOk));
  e.WriteBool(false);  // no post-op attributes
  for (uint32_t v : {1u << 20, 1u << 20, 4096u, 1u << 20, 1u << 20, 4096u, 4096u}) {
    e.WriteUint32(v);  // rtmax rtpref rtmult wtmax wtpref wtmult dtpref
  }
  e.WriteUint64(~uint64_t{0});  // maxfilesize
  e.WriteUint32(0);             // time_delta
  e.WriteUint32(1);
  e.WriteUint32(0x1b);  // properties: LINK SYMLINK HOMOGENEOUS CANSETTIME
}

}  // namespace ferry::nfs::fake_nfs

#endif  // FERRY_TESTS_INTEGRATION_NFS_FAKE_NFS_ANSWERS_H_
