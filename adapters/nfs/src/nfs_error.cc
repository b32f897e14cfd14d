// The nfsstat3 table, in one place. Codes follow absl's errno mapping where
// the error has an errno twin (ENOTDIR, ENOTEMPTY -> FailedPrecondition),
// except STALE: a stale handle means the object is gone, NotFound.
#include "ferry/nfs/nfs_error.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/directory_errors.h"
#include "ferry/base/strings.h"
#include "ferry/nfs/nfs3_xdr.h"

namespace ferry::nfs {
namespace {

constexpr char kNfsStatusPayload[] = "ferry.nfs/nfsstat3";

struct StatusInfo {
  std::string_view name;
  std::string_view meaning;
  absl::StatusCode code;
};

StatusInfo Info(Nfs3Status s) {
  using C = absl::StatusCode;
  switch (s) {
    case Nfs3Status::kOk: return {"NFS3_OK", "success", C::kOk};
    case Nfs3Status::kPerm: return {"NFS3ERR_PERM", "not owner", C::kPermissionDenied};
    case Nfs3Status::kNoEnt: return {"NFS3ERR_NOENT", "no such file or directory", C::kNotFound};
    case Nfs3Status::kIo: return {"NFS3ERR_IO", "I/O error", C::kUnavailable};
    case Nfs3Status::kNxio: return {"NFS3ERR_NXIO", "no such device or address", C::kNotFound};
    case Nfs3Status::kAcces: return {"NFS3ERR_ACCES", "permission denied", C::kPermissionDenied};
    case Nfs3Status::kExist: return {"NFS3ERR_EXIST", "file exists", C::kAlreadyExists};
    case Nfs3Status::kXdev: return {"NFS3ERR_XDEV", "cross-device link", C::kInvalidArgument};
    case Nfs3Status::kNoDev: return {"NFS3ERR_NODEV", "no such device", C::kNotFound};
    case Nfs3Status::kNotDir: return {"NFS3ERR_NOTDIR", "not a directory", C::kFailedPrecondition};
    case Nfs3Status::kIsDir: return {"NFS3ERR_ISDIR", "is a directory", C::kFailedPrecondition};
    case Nfs3Status::kInval: return {"NFS3ERR_INVAL", "invalid argument", C::kInvalidArgument};
    case Nfs3Status::kFBig: return {"NFS3ERR_FBIG", "file too large", C::kInvalidArgument};
    case Nfs3Status::kNoSpc: return {"NFS3ERR_NOSPC", "no space left on device", C::kResourceExhausted};
    case Nfs3Status::kRofs: return {"NFS3ERR_ROFS", "read-only file system", C::kFailedPrecondition};
    case Nfs3Status::kMLink: return {"NFS3ERR_MLINK", "too many hard links", C::kResourceExhausted};
    case Nfs3Status::kNameTooLong: return {"NFS3ERR_NAMETOOLONG", "name too long", C::kInvalidArgument};
    case Nfs3Status::kNotEmpty: return {"NFS3ERR_NOTEMPTY", "directory not empty", C::kFailedPrecondition};
    case Nfs3Status::kDQuot: return {"NFS3ERR_DQUOT", "quota exceeded", C::kResourceExhausted};
    case Nfs3Status::kStale: return {"NFS3ERR_STALE", "stale file handle", C::kNotFound};
    case Nfs3Status::kRemote: return {"NFS3ERR_REMOTE", "too many levels of remote in path", C::kUnimplemented};
    case Nfs3Status::kBadHandle: return {"NFS3ERR_BADHANDLE", "illegal file handle", C::kInvalidArgument};
    case Nfs3Status::kNotSync: return {"NFS3ERR_NOT_SYNC", "update synchronization mismatch", C::kFailedPrecondition};
    case Nfs3Status::kBadCookie: return {"NFS3ERR_BAD_COOKIE", "directory cookie is stale", C::kFailedPrecondition};
    case Nfs3Status::kNotSupp: return {"NFS3ERR_NOTSUPP", "operation not supported", C::kUnimplemented};
    case Nfs3Status::kTooSmall: return {"NFS3ERR_TOOSMALL", "buffer or request too small", C::kInvalidArgument};
    case Nfs3Status::kServerFault: return {"NFS3ERR_SERVERFAULT", "server fault", C::kInternal};
    case Nfs3Status::kBadType: return {"NFS3ERR_BADTYPE", "type not supported", C::kInvalidArgument};
    case Nfs3Status::kJukebox: return {"NFS3ERR_JUKEBOX", "server busy, retry later", C::kUnavailable};
  }
  return {"", "unknown error", C::kInternal};
}

}  // namespace

std::string Nfs3StatusName(Nfs3Status status) {
  StatusInfo info = Info(status);
  if (info.name.empty()) return absl::StrCat("nfsstat3 ", static_cast<uint32_t>(status));
  return std::string(info.name);
}

std::string Mount3StatusName(Mount3Status status) {
  switch (status) {
    case Mount3Status::kOk: return "MNT3_OK";
    case Mount3Status::kPerm: return "MNT3ERR_PERM";
    case Mount3Status::kNoEnt: return "MNT3ERR_NOENT";
    case Mount3Status::kIo: return "MNT3ERR_IO";
    case Mount3Status::kAcces: return "MNT3ERR_ACCES";
    case Mount3Status::kNotDir: return "MNT3ERR_NOTDIR";
    case Mount3Status::kInval: return "MNT3ERR_INVAL";
    case Mount3Status::kNameTooLong: return "MNT3ERR_NAMETOOLONG";
    case Mount3Status::kNotSupp: return "MNT3ERR_NOTSUPP";
    case Mount3Status::kServerFault: return "MNT3ERR_SERVERFAULT";
  }
  return absl::StrCat("mountstat3 ", static_cast<uint32_t>(status));
}

absl::StatusCode Nfs3StatusCode(Nfs3Status status) { return Info(status).code; }

absl::Status Nfs3StatusToStatus(Nfs3Status status, std::string_view operation,
                                std::string_view path) {
  if (status == Nfs3Status::kOk) return absl::OkStatus();
  StatusInfo info = Info(status);
  absl::Status out(info.code, absl::StrCat("NFS3 ", ToAbsl(operation), " ", ToAbsl(path), ": ",
                                           Nfs3StatusName(status), " (", ToAbsl(info.meaning),
                                           ")"));
  out.SetPayload(kNfsStatusPayload, absl::Cord(absl::StrCat(static_cast<uint32_t>(status))));
  // As errno's EISDIR / ENOTDIR are (ErrnoStatus), for the bindings' classes.
  if (status == Nfs3Status::kIsDir || status == Nfs3Status::kNotDir) {
    out.SetPayload(kDirectoryErrorPayload,
                   absl::Cord(status == Nfs3Status::kIsDir ? "EISDIR" : "ENOTDIR"));
  }
  return out;
}

std::optional<Nfs3Status> GetNfs3Status(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kNfsStatusPayload);
  if (!payload) return std::nullopt;
  uint32_t v = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &v)) return std::nullopt;
  return static_cast<Nfs3Status>(v);
}

absl::Status Mount3StatusToStatus(Mount3Status status, std::string_view operation,
                                  std::string_view path) {
  if (status == Mount3Status::kOk) return absl::OkStatus();
  // mountstat3 values are the matching nfsstat3 values.
  StatusInfo info = Info(static_cast<Nfs3Status>(static_cast<uint32_t>(status)));
  return absl::Status(info.code, absl::StrCat("MOUNT3 ", ToAbsl(operation), " ", ToAbsl(path),
                                              ": ", Mount3StatusName(status), " (",
                                              ToAbsl(info.meaning), ")"));
}

}  // namespace ferry::nfs
