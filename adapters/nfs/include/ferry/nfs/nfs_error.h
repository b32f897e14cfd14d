// NFS3ERR_* and MNT3ERR_* as absl::Status, following ferry's one error table
// (docs/architecture.md): NOENT -> NotFound, ACCES/PERM -> PermissionDenied,
// and so on. The message names the operation, the path and the server's
// own code, e.g.
//
//   NFS3 LOOKUP nfs://127.0.0.1/export/a/b: NFS3ERR_NOENT (no such file or directory)
//
//   if (r.status != ferry::nfs::Nfs3Status::kOk)
//     return ferry::nfs::Nfs3StatusToStatus(r.status, "LOOKUP", display_path);
//
// Thread-safety: pure functions.
#ifndef FERRY_NFS_NFS_ERROR_H_
#define FERRY_NFS_NFS_ERROR_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "ferry/nfs/nfs3_types.h"

namespace ferry::nfs {

// "NFS3ERR_NOENT", "NFS3_OK", or "nfsstat3 12345" for unknown values.
std::string Nfs3StatusName(Nfs3Status status);
// "MNT3ERR_ACCES", "MNT3_OK", or "mountstat3 N".
std::string Mount3StatusName(Mount3Status status);

// The canonical code for an nfsstat3:
//   NOENT, STALE, NXIO, NODEV          NotFound
//   PERM, ACCES                        PermissionDenied
//   EXIST                              AlreadyExists
//   NOTDIR, ISDIR, NOTEMPTY, ROFS,
//   BAD_COOKIE, NOT_SYNC               FailedPrecondition (state of the object)
//   INVAL, NAMETOOLONG, BADHANDLE,
//   BADTYPE, TOOSMALL, XDEV, FBIG      InvalidArgument
//   NOSPC, DQUOT, MLINK                ResourceExhausted
//   NOTSUPP, REMOTE                    Unimplemented
//   JUKEBOX, IO                        Unavailable (retry later / device)
//   SERVERFAULT, unknown               Internal
absl::StatusCode Nfs3StatusCode(Nfs3Status status);

// OK for NFS3_OK, otherwise
//   "NFS3 <operation> <path>: NFS3ERR_X (<meaning>)"
// with the code above.
absl::Status Nfs3StatusToStatus(Nfs3Status status, std::string_view operation,
                                std::string_view path);

// OK for MNT3_OK, otherwise "MOUNT3 <operation> <path>: MNT3ERR_X (...)",
// codes as for the matching nfsstat3.
absl::Status Mount3StatusToStatus(Mount3Status status, std::string_view operation,
                                  std::string_view path);

// The nfsstat3 a status made by Nfs3StatusToStatus carries (as a payload,
// kept by ferry::Annotate), or nullopt.
std::optional<Nfs3Status> GetNfs3Status(const absl::Status& status);

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS_ERROR_H_
