// NFSv3 (RFC 1813, program 100003 v3) and MOUNT v3 (RFC 1813 appendix I,
// program 100005 v3) messages: the XDR of every procedure ferry's NFS client
// calls. Byte-level codecs only; NfsClient (nfs_client.h) sends them.
//
// Each Encode*Args appends a procedure's arguments to a call record whose
// ONC RPC header is already there. Each Decode*Result reads the SUCCESS
// results of a reply into a plain struct. A result struct always carries
// the server's nfsstat3: a well-formed NFS3ERR_* reply decodes fine (with
// `status` set and the failure arm's fields, e.g. wcc data), so the caller
// decides what the error means (Nfs3StatusToStatus in nfs_error.h).
// Malformed or truncated results are DataLoss naming the procedure.
//
//   std::string call;
//   ferry::EncodeCallHeader(0, ferry::nfs::Nfs3Procedure(ferry::nfs::Nfs3Proc::kGetAttr),
//                           cred, ferry::AuthNone(), &call);
//   ferry::nfs::EncodeFileHandleArgs({.object = fh}, &call);
//   ... send, DecodeReply ...
//   FERRY_ASSIGN_OR_RETURN(ferry::nfs::GetAttrResult r,
//                          ferry::nfs::DecodeGetAttrResult(reply.results));
//   if (r.status == ferry::nfs::Nfs3Status::kOk) Use(r.attributes);
//
// Views: DecodeReaddirplusResult returns names and handles as views into
// the reply record (no copy per entry); they live as long as the record.
//
// Thread-safety: pure functions and plain value types.
#ifndef FERRY_NFS_NFS3_XDR_H_
#define FERRY_NFS_NFS3_XDR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/nfs/nfs3_types.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/rpc_pool.h"

namespace ferry::nfs {

// {100003, 3, proc, "NFS", "READDIRPLUS"}; unknown procs get an empty name.
RpcProcedure Nfs3Procedure(Nfs3Proc proc);
// {100005, 3, proc, "MOUNT", "MNT"}.
RpcProcedure Mount3Procedure(Mount3Proc proc);

// --- Arguments --------------------------------------------------------------
// Views of the caller's handles, names and data: they live until the call is
// encoded. REQUIRES (all): handles are at most kMaxFileHandleSize bytes.

// NULL.
struct NullArgs {};
// GETATTR, FSSTAT, FSINFO: just the handle.
struct FileHandleArgs {
  std::string_view object;
};
// diropargs3: LOOKUP, REMOVE, RMDIR.
struct DirOpArgs {
  std::string_view dir;
  std::string_view name;
};
struct AccessArgs {
  std::string_view object;
  uint32_t access = 0;
};
struct ReaddirplusArgs {
  std::string_view dir;
  uint64_t cookie = 0;
  uint64_t cookieverf = 0;
  uint32_t dircount = 0;
  uint32_t maxcount = 0;
};
// READ and COMMIT (whose arguments have the same shape).
struct ReadArgs {
  std::string_view file;
  uint64_t offset = 0;
  uint32_t count = 0;
};
using CommitArgs = ReadArgs;
struct WriteArgs {
  std::string_view file;
  uint64_t offset = 0;
  StableHow stable = StableHow::kUnstable;
  std::string_view data;  // count is data.size()
  // Or the data is `from_file.size` bytes of a local file (fd >= 0), which
  // the RPC layer sends from the descriptor (RpcCallOptions::payload_file);
  // only the head is encoded then.
  RpcCallOptions::FilePayload from_file;
  size_t count() const { return from_file.fd >= 0 ? from_file.size : data.size(); }
};
// CREATE with UNCHECKED or GUARDED (`attrs`) or EXCLUSIVE (`verifier`).
struct CreateArgs {
  DirOpArgs where;
  CreateMode mode = CreateMode::kUnchecked;
  Sattr3 attrs;
  uint64_t verifier = 0;
};
struct MkdirArgs {
  DirOpArgs where;
  Sattr3 attrs;
};
struct SetAttrArgs {
  std::string_view object;
  Sattr3 attrs;
};
struct RenameArgs {
  DirOpArgs from;
  DirOpArgs to;
};

// --- Encoders (append the arguments to a call record) -----------------------

void EncodeFileHandle(std::string_view fh, std::string* out);
void EncodeSattr3(const Sattr3& attrs, std::string* out);
void EncodeNullArgs(const NullArgs& args, std::string* out);
void EncodeFileHandleArgs(const FileHandleArgs& args, std::string* out);
void EncodeDirOpArgs(const DirOpArgs& args, std::string* out);
void EncodeAccessArgs(const AccessArgs& args, std::string* out);
void EncodeReaddirplusArgs(const ReaddirplusArgs& args, std::string* out);
void EncodeReadArgs(const ReadArgs& args, std::string* out);
void EncodeWriteArgs(const WriteArgs& args, std::string* out);
// WRITE3args up to its data: the data's length is the last field written;
// the data and its padding (xdr_internal::PaddingFor) are the caller's to
// send after it (RpcCallOptions::payload).
void EncodeWriteArgsHead(const WriteArgs& args, std::string* out);
void EncodeCreateArgs(const CreateArgs& args, std::string* out);
void EncodeMkdirArgs(const MkdirArgs& args, std::string* out);
void EncodeRenameArgs(const RenameArgs& args, std::string* out);
void EncodeSetAttrArgs(const SetAttrArgs& args, std::string* out);
// MNT, UMNT: dirpath.
void EncodeMountPathArgs(std::string_view path, std::string* out);

// --- Decoders (the SUCCESS results of a reply) ------------------------------

struct GetAttrResult {
  Nfs3Status status = Nfs3Status::kOk;
  Fattr3 attributes;  // when kOk
};
absl::StatusOr<GetAttrResult> DecodeGetAttrResult(std::string_view results);

// LOOKUP, and CREATE/MKDIR (whose handle is optional on the wire: absent
// handle = empty `object`).
struct LookupResult {
  Nfs3Status status = Nfs3Status::kOk;
  FileHandle object;                    // when kOk
  std::optional<Fattr3> object_attributes;  // when kOk
  std::optional<Fattr3> dir_attributes;     // LOOKUP only
};
absl::StatusOr<LookupResult> DecodeLookupResult(std::string_view results);

struct AccessResult {
  Nfs3Status status = Nfs3Status::kOk;
  std::optional<Fattr3> attributes;
  uint32_t access = 0;  // granted bits, when kOk
};
absl::StatusOr<AccessResult> DecodeAccessResult(std::string_view results);

// Appends entries to a fresh result. More than `max_entries` entries is
// DataLoss (bounds a hostile reply; a real one is bounded by maxcount).
absl::StatusOr<ReaddirplusResult> DecodeReaddirplusResult(std::string_view results,
                                                          size_t max_entries = 1 << 20);

struct ReadResult {
  Nfs3Status status = Nfs3Status::kOk;
  std::optional<Fattr3> attributes;
  uint32_t count = 0;
  bool eof = false;
  std::string_view data;  // views the reply record
};
// `placed`: the data's bytes were placed elsewhere from the reply (its
// length must say so): only their padding is left, and `data` stays empty.
absl::StatusOr<ReadResult> DecodeReadResult(std::string_view results, size_t placed = 0);

// READ3res as far as its data: enough of a reply's first bytes to place the
// data (RpcReplyPlacer) before the rest arrives. DataLoss while `results`
// is too short. For NFS3_OK, data_size (the opaque's length, not yet
// checked against count) bytes of data start at data_offset in `results`.
struct ReadHead {
  Nfs3Status status = Nfs3Status::kOk;
  std::optional<Fattr3> attributes;
  uint32_t count = 0;
  bool eof = false;
  uint32_t data_size = 0;
  size_t data_offset = 0;
};
absl::StatusOr<ReadHead> DecodeReadHead(std::string_view results);

struct WriteResult {
  Nfs3Status status = Nfs3Status::kOk;
  WccData wcc;
  uint32_t count = 0;
  StableHow committed = StableHow::kUnstable;
  uint64_t verifier = 0;
};
absl::StatusOr<WriteResult> DecodeWriteResult(std::string_view results);

struct CommitResult {
  Nfs3Status status = Nfs3Status::kOk;
  WccData wcc;
  uint64_t verifier = 0;
};
absl::StatusOr<CommitResult> DecodeCommitResult(std::string_view results);

// CREATE and MKDIR.
struct CreateResult {
  Nfs3Status status = Nfs3Status::kOk;
  std::optional<FileHandle> object;
  std::optional<Fattr3> attributes;
  WccData dir_wcc;
};
absl::StatusOr<CreateResult> DecodeCreateResult(std::string_view results);

// REMOVE and RMDIR (wcc_data either way).
struct RemoveResult {
  Nfs3Status status = Nfs3Status::kOk;
  WccData dir_wcc;
};
absl::StatusOr<RemoveResult> DecodeRemoveResult(std::string_view results);

struct SetAttrResult {
  Nfs3Status status = Nfs3Status::kOk;
  WccData object_wcc;
};
absl::StatusOr<SetAttrResult> DecodeSetAttrResult(std::string_view results);

struct RenameResult {
  Nfs3Status status = Nfs3Status::kOk;
  WccData from_dir_wcc;
  WccData to_dir_wcc;
};
absl::StatusOr<RenameResult> DecodeRenameResult(std::string_view results);

struct FsStatResult {
  Nfs3Status status = Nfs3Status::kOk;
  std::optional<Fattr3> attributes;
  FsStat fsstat;
};
absl::StatusOr<FsStatResult> DecodeFsStatResult(std::string_view results);

struct FsInfoResult {
  Nfs3Status status = Nfs3Status::kOk;
  std::optional<Fattr3> attributes;
  FsInfo fsinfo;
};
absl::StatusOr<FsInfoResult> DecodeFsInfoResult(std::string_view results);

struct MountResult {
  Mount3Status status = Mount3Status::kOk;
  FileHandle root;                   // when kOk
  std::vector<uint32_t> auth_flavors;  // when kOk
};
absl::StatusOr<MountResult> DecodeMountResult(std::string_view results);

absl::StatusOr<std::vector<ExportEntry>> DecodeExportResult(std::string_view results);

// NULL's results are empty; a reply to it is only checked at the RPC level.
struct NullResult {
  Nfs3Status status = Nfs3Status::kOk;
};
absl::StatusOr<NullResult> DecodeNullResult(std::string_view results);

// --- Procedures ---------------------------------------------------------------

// One NFSv3 procedure as a client calls it, declared once: its number,
// whether a call may be sent again after a dropped connection (RFC 1813
// section 2.4: the pool retries only those), and the codecs of its
// arguments and results. NfsClient sends every procedure through one
// template over these.
template <typename ArgsT, typename ResultT>
struct Nfs3Call {
  using Args = ArgsT;
  using Result = ResultT;
  Nfs3Proc proc;
  bool idempotent;
  void (*encode)(const Args& args, std::string* out);
  absl::StatusOr<Result> (*decode)(std::string_view results);
};

inline constexpr Nfs3Call<NullArgs, NullResult> kNullCall{
    Nfs3Proc::kNull, true, EncodeNullArgs, DecodeNullResult};
inline constexpr Nfs3Call<FileHandleArgs, GetAttrResult> kGetAttrCall{
    Nfs3Proc::kGetAttr, true, EncodeFileHandleArgs, DecodeGetAttrResult};
inline constexpr Nfs3Call<DirOpArgs, LookupResult> kLookupCall{
    Nfs3Proc::kLookup, true, EncodeDirOpArgs, DecodeLookupResult};
inline constexpr Nfs3Call<AccessArgs, AccessResult> kAccessCall{
    Nfs3Proc::kAccess, true, EncodeAccessArgs, DecodeAccessResult};
inline constexpr Nfs3Call<ReaddirplusArgs, ReaddirplusResult> kReaddirplusCall{
    Nfs3Proc::kReaddirplus, true, EncodeReaddirplusArgs,
    [](std::string_view results) { return DecodeReaddirplusResult(results); }};
inline constexpr Nfs3Call<ReadArgs, ReadResult> kReadCall{
    Nfs3Proc::kRead, true, EncodeReadArgs,
    [](std::string_view results) { return DecodeReadResult(results); }};
// WRITE at an offset: repeating it writes the same bytes again.
inline constexpr Nfs3Call<WriteArgs, WriteResult> kWriteCall{
    Nfs3Proc::kWrite, true, EncodeWriteArgs, DecodeWriteResult};
inline constexpr Nfs3Call<CommitArgs, CommitResult> kCommitCall{
    Nfs3Proc::kCommit, true, EncodeReadArgs, DecodeCommitResult};
inline constexpr Nfs3Call<CreateArgs, CreateResult> kCreateCall{
    Nfs3Proc::kCreate, false, EncodeCreateArgs, DecodeCreateResult};
inline constexpr Nfs3Call<MkdirArgs, CreateResult> kMkdirCall{
    Nfs3Proc::kMkdir, false, EncodeMkdirArgs, DecodeCreateResult};
inline constexpr Nfs3Call<DirOpArgs, RemoveResult> kRemoveCall{
    Nfs3Proc::kRemove, false, EncodeDirOpArgs, DecodeRemoveResult};
inline constexpr Nfs3Call<DirOpArgs, RemoveResult> kRmdirCall{
    Nfs3Proc::kRmdir, false, EncodeDirOpArgs, DecodeRemoveResult};
// SETATTR of times and modes: setting them again sets the same.
inline constexpr Nfs3Call<SetAttrArgs, SetAttrResult> kSetAttrCall{
    Nfs3Proc::kSetAttr, true, EncodeSetAttrArgs, DecodeSetAttrResult};
inline constexpr Nfs3Call<RenameArgs, RenameResult> kRenameCall{
    Nfs3Proc::kRename, false, EncodeRenameArgs, DecodeRenameResult};
inline constexpr Nfs3Call<FileHandleArgs, FsStatResult> kFsStatCall{
    Nfs3Proc::kFsStat, true, EncodeFileHandleArgs, DecodeFsStatResult};
inline constexpr Nfs3Call<FileHandleArgs, FsInfoResult> kFsInfoCall{
    Nfs3Proc::kFsInfo, true, EncodeFileHandleArgs, DecodeFsInfoResult};

// --- For test servers -------------------------------------------------------

void EncodeFattr3(const Fattr3& a, std::string* out);
// A READDIRPLUS3res with status OK. Entries are encoded with their
// attributes and handles when present.
void EncodeReaddirplusResult(const ReaddirplusResult& r, std::string* out);

}  // namespace ferry::nfs

#endif  // FERRY_NFS_NFS3_XDR_H_
