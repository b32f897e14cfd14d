// NFSv3 and MOUNT v3 codecs. Each decoder reads the nfsstat3 first and
// then exactly the arm RFC 1813 gives for it, and insists on the end of the
// record, so a reply that disagrees with the spec anywhere is DataLoss
// rather than a silently misread field. READDIRPLUS, the hot path of every
// walk, decodes into views of the reply (names, handles): no allocation
// per entry beyond the vector's slot.
#include "ferry/nfs/nfs3_xdr.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/rpc/xdr.h"

namespace ferry::nfs {
namespace {

// Size of an encoded fattr3: 5 uint32 + 2 uint64 + specdata3 (2 uint32) +
// 2 uint64 + 3 nfstime3 (2 uint32 each).
constexpr size_t kFattr3Size = 84;

std::string_view Nfs3ProcName(Nfs3Proc p) {
  switch (p) {
    case Nfs3Proc::kNull: return "NULL";
    case Nfs3Proc::kGetAttr: return "GETATTR";
    case Nfs3Proc::kSetAttr: return "SETATTR";
    case Nfs3Proc::kLookup: return "LOOKUP";
    case Nfs3Proc::kAccess: return "ACCESS";
    case Nfs3Proc::kReadLink: return "READLINK";
    case Nfs3Proc::kRead: return "READ";
    case Nfs3Proc::kWrite: return "WRITE";
    case Nfs3Proc::kCreate: return "CREATE";
    case Nfs3Proc::kMkdir: return "MKDIR";
    case Nfs3Proc::kSymlink: return "SYMLINK";
    case Nfs3Proc::kMknod: return "MKNOD";
    case Nfs3Proc::kRemove: return "REMOVE";
    case Nfs3Proc::kRmdir: return "RMDIR";
    case Nfs3Proc::kRename: return "RENAME";
    case Nfs3Proc::kLink: return "LINK";
    case Nfs3Proc::kReaddir: return "READDIR";
    case Nfs3Proc::kReaddirplus: return "READDIRPLUS";
    case Nfs3Proc::kFsStat: return "FSSTAT";
    case Nfs3Proc::kFsInfo: return "FSINFO";
    case Nfs3Proc::kPathConf: return "PATHCONF";
    case Nfs3Proc::kCommit: return "COMMIT";
  }
  return "";
}

std::string_view Mount3ProcName(Mount3Proc p) {
  switch (p) {
    case Mount3Proc::kNull: return "NULL";
    case Mount3Proc::kMnt: return "MNT";
    case Mount3Proc::kDump: return "DUMP";
    case Mount3Proc::kUmnt: return "UMNT";
    case Mount3Proc::kUmntAll: return "UMNTALL";
    case Mount3Proc::kExport: return "EXPORT";
  }
  return "";
}

absl::StatusOr<NfsTime> ReadTime(XdrDecoder& d, std::string_view what) {
  NfsTime t;
  FERRY_ASSIGN_OR_RETURN(t.seconds, d.ReadUint32(what));
  FERRY_ASSIGN_OR_RETURN(t.nseconds, d.ReadUint32(what));
  return t;
}

absl::Status ReadFattr3(XdrDecoder& d, Fattr3* a) {
  if (d.remaining() < kFattr3Size) {
    return d.Error("fattr3", absl::StrCat("truncated (need ", kFattr3Size, " bytes, ",
                                          d.remaining(), " left)"));
  }
  // Bounds checked once above: the reads below cannot fail.
  a->type = static_cast<FileType>(*d.ReadUint32("fattr3.type"));
  a->mode = *d.ReadUint32("fattr3.mode");
  a->nlink = *d.ReadUint32("fattr3.nlink");
  a->uid = *d.ReadUint32("fattr3.uid");
  a->gid = *d.ReadUint32("fattr3.gid");
  a->size = *d.ReadUint64("fattr3.size");
  a->used = *d.ReadUint64("fattr3.used");
  a->rdev_major = *d.ReadUint32("fattr3.rdev");
  a->rdev_minor = *d.ReadUint32("fattr3.rdev");
  a->fsid = *d.ReadUint64("fattr3.fsid");
  a->fileid = *d.ReadUint64("fattr3.fileid");
  a->atime = *ReadTime(d, "fattr3.atime");
  a->mtime = *ReadTime(d, "fattr3.mtime");
  a->ctime = *ReadTime(d, "fattr3.ctime");
  return absl::OkStatus();
}

absl::Status ReadPostOpAttr(XdrDecoder& d, std::optional<Fattr3>* out) {
  return d.ReadOptional("post_op_attr", out,
                        [](XdrDecoder& dd, Fattr3* a) { return ReadFattr3(dd, a); });
}

absl::Status ReadWccAttr(XdrDecoder& d, WccAttr* w) {
  FERRY_ASSIGN_OR_RETURN(w->size, d.ReadUint64("wcc_attr.size"));
  FERRY_ASSIGN_OR_RETURN(w->mtime, ReadTime(d, "wcc_attr.mtime"));
  FERRY_ASSIGN_OR_RETURN(w->ctime, ReadTime(d, "wcc_attr.ctime"));
  return absl::OkStatus();
}

absl::Status ReadWccData(XdrDecoder& d, WccData* out) {
  FERRY_RETURN_IF_ERROR(d.ReadOptional("pre_op_attr", &out->before, ReadWccAttr));
  return ReadPostOpAttr(d, &out->after);
}

absl::StatusOr<std::string_view> ReadFileHandle(XdrDecoder& d) {
  return d.ReadOpaque("nfs_fh3", kMaxFileHandleSize);
}

absl::Status ReadEntryPlus(XdrDecoder& d, DirEntryPlus* e) {
  FERRY_ASSIGN_OR_RETURN(e->fileid, d.ReadUint64("entryplus3.fileid"));
  FERRY_ASSIGN_OR_RETURN(e->name, d.ReadString("entryplus3.name", kMaxFileNameSize));
  FERRY_ASSIGN_OR_RETURN(e->cookie, d.ReadUint64("entryplus3.cookie"));
  FERRY_RETURN_IF_ERROR(ReadPostOpAttr(d, &e->attributes));
  FERRY_ASSIGN_OR_RETURN(bool has_handle, d.ReadBool("post_op_fh3"));
  if (has_handle) {
    FERRY_ASSIGN_OR_RETURN(std::string_view fh, ReadFileHandle(d));
    e->handle = fh;
  }
  return absl::OkStatus();
}

absl::Status ReadAuthFlavor(XdrDecoder& d, uint32_t* f) {
  FERRY_ASSIGN_OR_RETURN(*f, d.ReadUint32("auth_flavors[]"));
  return absl::OkStatus();
}

absl::Status ReadGroupName(XdrDecoder& d, std::string* name) {
  return d.ReadString("gr_name", 255, name);  // name<MNTNAMLEN = 255>
}

// Bounds for a hostile server; real ones export a few dozen paths.
constexpr size_t kMaxExports = 1 << 16;
constexpr size_t kMaxGroups = 1 << 12;

absl::Status ReadExportNode(XdrDecoder& d, ExportEntry* e) {
  FERRY_RETURN_IF_ERROR(d.ReadString("ex_dir", kMaxMountPathLength, &e->path));
  return d.ReadOptionalList("groupnode", kMaxGroups, &e->groups, ReadGroupName);
}

absl::StatusOr<uint64_t> ReadVerifier(XdrDecoder& d, std::string_view what) {
  return d.ReadUint64(what);
}

template <typename Status>
absl::StatusOr<Status> ReadStatus(XdrDecoder& d) {
  return d.ReadEnum<Status>("status");
}

// The XDR of a struct's plain fields, in order: a uint32, uint64 or enum is
// its number, a string_view its opaque (XDR spells opaque<> and string<>
// alike).
void Put(XdrEncoder& e, uint32_t v) { e.WriteUint32(v); }
void Put(XdrEncoder& e, uint64_t v) { e.WriteUint64(v); }
void Put(XdrEncoder& e, std::string_view v) { e.WriteOpaque(v); }
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
void Put(XdrEncoder& e, E v) {
  e.WriteEnum(v);
}

template <typename... Fields>
void EncodeFields(std::string* out, const Fields&... fields) {
  XdrEncoder e(out);
  (Put(e, fields), ...);
}

void WriteTimeHow(XdrEncoder& e, bool to_server) {
  // time_how: DONT_CHANGE = 0, SET_TO_SERVER_TIME = 1.
  e.WriteUint32(to_server ? 1 : 0);
}

// Reads plain fields in order, each as its type says (the decoding twin of
// EncodeFields); errors name `what` and the offset.
absl::Status Get(XdrDecoder& d, std::string_view what, uint32_t* v) {
  FERRY_ASSIGN_OR_RETURN(*v, d.ReadUint32(what));
  return absl::OkStatus();
}
absl::Status Get(XdrDecoder& d, std::string_view what, uint64_t* v) {
  FERRY_ASSIGN_OR_RETURN(*v, d.ReadUint64(what));
  return absl::OkStatus();
}
absl::Status Get(XdrDecoder& d, std::string_view what, NfsTime* t) {
  FERRY_ASSIGN_OR_RETURN(*t, ReadTime(d, what));
  return absl::OkStatus();
}

template <typename... Fields>
absl::Status DecodeFields(XdrDecoder& d, std::string_view what, Fields*... fields) {
  absl::Status status;
  // Stops at the first failure (&& short-circuits the fold).
  (void)(... && (status = Get(d, what, fields)).ok());
  return status;
}

// FSSTAT3resok after its attributes.
absl::Status ReadFsStat(XdrDecoder& d, FsStat* s) {
  return DecodeFields(d, "fsstat3", &s->total_bytes, &s->free_bytes, &s->available_bytes,
                      &s->total_files, &s->free_files, &s->available_files, &s->invarsec);
}

// FSINFO3resok after its attributes.
absl::Status ReadFsInfo(XdrDecoder& d, FsInfo* f) {
  return DecodeFields(d, "fsinfo3", &f->rtmax, &f->rtpref, &f->rtmult, &f->wtmax, &f->wtpref,
                      &f->wtmult, &f->dtpref, &f->maxfilesize, &f->time_delta, &f->properties);
}

// Every result decodes the same way around its arms: the status first,
// then `read_arms(d, r)` reads what RFC 1813 gives for that status, then
// nothing may be left of the record.
template <typename R, typename ReadArms>
absl::StatusOr<R> DecodeResults(std::string_view results, std::string_view name,
                                ReadArms read_arms) {
  XdrDecoder d(results, name);
  R r;
  FERRY_ASSIGN_OR_RETURN(r.status, ReadStatus<decltype(r.status)>(d));
  FERRY_RETURN_IF_ERROR(read_arms(d, r));
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  return r;
}

// The commonest shape: post_op_attr in both arms (into r.*attributes), then
// `read_ok(d, r)` for the NFS3_OK arm only.
template <typename R, typename ReadOk>
absl::StatusOr<R> DecodeAttrsThenOk(std::string_view results, std::string_view name,
                                    std::optional<Fattr3> R::*attributes, ReadOk read_ok) {
  return DecodeResults<R>(results, name, [&](XdrDecoder& d, R& r) -> absl::Status {
    FERRY_RETURN_IF_ERROR(ReadPostOpAttr(d, &(r.*attributes)));
    return r.status == Nfs3Status::kOk ? read_ok(d, r) : absl::OkStatus();
  });
}

// WRITE and COMMIT: wcc_data (into r.wcc) in both arms, then `read_ok`.
template <typename R, typename ReadOk>
absl::StatusOr<R> DecodeWccThenOk(std::string_view results, std::string_view name,
                                  ReadOk read_ok) {
  return DecodeResults<R>(results, name, [&](XdrDecoder& d, R& r) -> absl::Status {
    FERRY_RETURN_IF_ERROR(ReadWccData(d, &r.wcc));
    return r.status == Nfs3Status::kOk ? read_ok(d, r) : absl::OkStatus();
  });
}

}  // namespace

RpcProcedure Nfs3Procedure(Nfs3Proc proc) {
  return RpcProcedure{kNfsProgram, kNfsVersion3, static_cast<uint32_t>(proc), "NFS",
                      Nfs3ProcName(proc)};
}

RpcProcedure Mount3Procedure(Mount3Proc proc) {
  return RpcProcedure{kMountProgram, kMountVersion3, static_cast<uint32_t>(proc), "MOUNT",
                      Mount3ProcName(proc)};
}

std::string FileTypeName(FileType type) {
  switch (type) {
    case FileType::kRegular: return "file";
    case FileType::kDirectory: return "dir";
    case FileType::kBlock: return "block";
    case FileType::kCharacter: return "char";
    case FileType::kSymlink: return "symlink";
    case FileType::kSocket: return "socket";
    case FileType::kFifo: return "fifo";
  }
  return absl::StrCat("type ", static_cast<uint32_t>(type));
}

// --- Encoders ----------------------------------------------------------------

void EncodeFileHandle(std::string_view fh, std::string* out) { XdrEncoder(out).WriteOpaque(fh); }

void EncodeSattr3(const Sattr3& a, std::string* out) {
  XdrEncoder e(out);
  e.WriteBool(a.mode.has_value());
  if (a.mode) e.WriteUint32(*a.mode);
  e.WriteBool(a.uid.has_value());
  if (a.uid) e.WriteUint32(*a.uid);
  e.WriteBool(a.gid.has_value());
  if (a.gid) e.WriteUint32(*a.gid);
  e.WriteBool(a.size.has_value());
  if (a.size) e.WriteUint64(*a.size);
  WriteTimeHow(e, a.atime_to_server_time);
  if (a.mtime) {
    e.WriteUint32(2);  // SET_TO_CLIENT_TIME
    e.WriteUint32(a.mtime->seconds);
    e.WriteUint32(a.mtime->nseconds);
  } else {
    WriteTimeHow(e, a.mtime_to_server_time);
  }
}

void EncodeSetAttrArgs(const SetAttrArgs& args, std::string* out) {
  EncodeFileHandle(args.object, out);
  EncodeSattr3(args.attrs, out);
  XdrEncoder(out).WriteBool(false);  // sattrguard3: no ctime check
}

void EncodeNullArgs(const NullArgs&, std::string*) {}

void EncodeFileHandleArgs(const FileHandleArgs& args, std::string* out) {
  EncodeFileHandle(args.object, out);
}

void EncodeDirOpArgs(const DirOpArgs& args, std::string* out) {
  EncodeFields(out, args.dir, args.name);
}

void EncodeAccessArgs(const AccessArgs& args, std::string* out) {
  EncodeFields(out, args.object, args.access);
}

void EncodeReaddirplusArgs(const ReaddirplusArgs& args, std::string* out) {
  EncodeFields(out, args.dir, args.cookie, args.cookieverf, args.dircount, args.maxcount);
}

void EncodeReadArgs(const ReadArgs& args, std::string* out) {
  EncodeFields(out, args.file, args.offset, args.count);
}

void EncodeWriteArgsHead(const WriteArgs& args, std::string* out) {
  const auto size = static_cast<uint32_t>(args.count());
  EncodeFields(out, args.file, args.offset, size, args.stable, size);  // the last: data's length
}

void EncodeWriteArgs(const WriteArgs& args, std::string* out) {
  // Data from a file is the RPC layer's to send (NfsClient's Send does).
  assert(args.from_file.fd < 0);
  EncodeWriteArgsHead(args, out);
  XdrEncoder(out).WriteFixedOpaque(args.data);  // the data and its padding
}

void EncodeCreateArgs(const CreateArgs& args, std::string* out) {
  EncodeDirOpArgs(args.where, out);
  XdrEncoder e(out);
  e.WriteEnum(args.mode);
  if (args.mode == CreateMode::kExclusive) {
    e.WriteUint64(args.verifier);
  } else {
    EncodeSattr3(args.attrs, out);
  }
}

void EncodeMkdirArgs(const MkdirArgs& args, std::string* out) {
  EncodeDirOpArgs(args.where, out);
  EncodeSattr3(args.attrs, out);
}

void EncodeRenameArgs(const RenameArgs& args, std::string* out) {
  EncodeDirOpArgs(args.from, out);
  EncodeDirOpArgs(args.to, out);
}

void EncodeMountPathArgs(std::string_view path, std::string* out) {
  XdrEncoder(out).WriteString(path);
}

// --- Decoders ----------------------------------------------------------------

absl::StatusOr<NullResult> DecodeNullResult(std::string_view) { return NullResult{}; }

absl::StatusOr<GetAttrResult> DecodeGetAttrResult(std::string_view results) {
  return DecodeResults<GetAttrResult>(results, "GETATTR3res", [](XdrDecoder& d, GetAttrResult& r) {
    return r.status == Nfs3Status::kOk ? ReadFattr3(d, &r.attributes) : absl::OkStatus();
  });
}

absl::StatusOr<LookupResult> DecodeLookupResult(std::string_view results) {
  return DecodeResults<LookupResult>(
      results, "LOOKUP3res", [](XdrDecoder& d, LookupResult& r) -> absl::Status {
        if (r.status == Nfs3Status::kOk) {
          FERRY_ASSIGN_OR_RETURN(std::string_view fh, ReadFileHandle(d));
          r.object.assign(fh);
          FERRY_RETURN_IF_ERROR(ReadPostOpAttr(d, &r.object_attributes));
        }
        return ReadPostOpAttr(d, &r.dir_attributes);
      });
}

absl::StatusOr<AccessResult> DecodeAccessResult(std::string_view results) {
  return DecodeAttrsThenOk<AccessResult>(
      results, "ACCESS3res", &AccessResult::attributes,
      [](XdrDecoder& d, AccessResult& r) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(r.access, d.ReadUint32("access"));
        return absl::OkStatus();
      });
}

absl::StatusOr<ReaddirplusResult> DecodeReaddirplusResult(std::string_view results,
                                                          size_t max_entries) {
  return DecodeAttrsThenOk<ReaddirplusResult>(
      results, "READDIRPLUS3res", &ReaddirplusResult::dir_attributes,
      [max_entries](XdrDecoder& d, ReaddirplusResult& r) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(r.cookieverf, ReadVerifier(d, "cookieverf"));
        // Each entry is at least fileid + empty name + cookie + two FALSE
        // optionals + the list's TRUE = 32 bytes: reserve no more than fits.
        r.entries.reserve(std::min(max_entries, d.remaining() / 32));
        FERRY_RETURN_IF_ERROR(
            d.ReadOptionalList("entryplus3", max_entries, &r.entries, ReadEntryPlus));
        FERRY_ASSIGN_OR_RETURN(r.eof, d.ReadBool("dirlistplus3.eof"));
        return absl::OkStatus();
      });
}

absl::StatusOr<ReadHead> DecodeReadHead(std::string_view results) {
  XdrDecoder d(results, "READ3res");
  ReadHead h;
  FERRY_ASSIGN_OR_RETURN(h.status, ReadStatus<Nfs3Status>(d));
  FERRY_RETURN_IF_ERROR(ReadPostOpAttr(d, &h.attributes));
  if (h.status != Nfs3Status::kOk) return h;
  FERRY_ASSIGN_OR_RETURN(h.count, d.ReadUint32("count"));
  FERRY_ASSIGN_OR_RETURN(h.eof, d.ReadBool("eof"));
  FERRY_ASSIGN_OR_RETURN(h.data_size, d.ReadUint32("data length"));
  h.data_offset = results.size() - d.rest().size();
  return h;
}

absl::StatusOr<ReadResult> DecodeReadResult(std::string_view results, size_t placed) {
  return DecodeAttrsThenOk<ReadResult>(
      results, "READ3res", &ReadResult::attributes,
      [placed](XdrDecoder& d, ReadResult& r) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(r.count, d.ReadUint32("count"));
        FERRY_ASSIGN_OR_RETURN(r.eof, d.ReadBool("eof"));
        if (placed > 0) {
          // The data went elsewhere; its padding is all that is left.
          FERRY_ASSIGN_OR_RETURN(const uint32_t size, d.ReadUint32("data length"));
          if (size != placed) {
            return d.Error("data", absl::StrCat("is ", size, " bytes but ", placed,
                                                " were placed from the reply"));
          }
          FERRY_RETURN_IF_ERROR(d.SkipPaddingOf(size, "data padding"));
        } else {
          FERRY_ASSIGN_OR_RETURN(r.data, d.ReadOpaque("data"));
        }
        const size_t size = placed > 0 ? placed : r.data.size();
        if (size != r.count) {
          return d.Error("data", absl::StrCat("is ", size, " bytes but count says ", r.count));
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<WriteResult> DecodeWriteResult(std::string_view results) {
  return DecodeWccThenOk<WriteResult>(
      results, "WRITE3res", [](XdrDecoder& d, WriteResult& r) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(r.count, d.ReadUint32("count"));
        FERRY_ASSIGN_OR_RETURN(r.committed, d.ReadEnum<StableHow>("committed"));
        FERRY_ASSIGN_OR_RETURN(r.verifier, ReadVerifier(d, "verf"));
        return absl::OkStatus();
      });
}

absl::StatusOr<CommitResult> DecodeCommitResult(std::string_view results) {
  return DecodeWccThenOk<CommitResult>(
      results, "COMMIT3res", [](XdrDecoder& d, CommitResult& r) -> absl::Status {
        FERRY_ASSIGN_OR_RETURN(r.verifier, ReadVerifier(d, "verf"));
        return absl::OkStatus();
      });
}

absl::StatusOr<CreateResult> DecodeCreateResult(std::string_view results) {
  return DecodeResults<CreateResult>(
      results, "CREATE3res", [](XdrDecoder& d, CreateResult& r) -> absl::Status {
        if (r.status == Nfs3Status::kOk) {
          FERRY_ASSIGN_OR_RETURN(bool has_handle, d.ReadBool("post_op_fh3"));
          if (has_handle) {
            FERRY_ASSIGN_OR_RETURN(std::string_view fh, ReadFileHandle(d));
            r.object.emplace(fh);
          }
          FERRY_RETURN_IF_ERROR(ReadPostOpAttr(d, &r.attributes));
        }
        return ReadWccData(d, &r.dir_wcc);
      });
}

absl::StatusOr<RemoveResult> DecodeRemoveResult(std::string_view results) {
  return DecodeResults<RemoveResult>(results, "REMOVE3res", [](XdrDecoder& d, RemoveResult& r) {
    return ReadWccData(d, &r.dir_wcc);
  });
}

absl::StatusOr<SetAttrResult> DecodeSetAttrResult(std::string_view results) {
  return DecodeResults<SetAttrResult>(results, "SETATTR3res", [](XdrDecoder& d, SetAttrResult& r) {
    return ReadWccData(d, &r.object_wcc);
  });
}

absl::StatusOr<RenameResult> DecodeRenameResult(std::string_view results) {
  return DecodeResults<RenameResult>(
      results, "RENAME3res", [](XdrDecoder& d, RenameResult& r) -> absl::Status {
        FERRY_RETURN_IF_ERROR(ReadWccData(d, &r.from_dir_wcc));
        return ReadWccData(d, &r.to_dir_wcc);
      });
}

absl::StatusOr<FsStatResult> DecodeFsStatResult(std::string_view results) {
  return DecodeAttrsThenOk<FsStatResult>(
      results, "FSSTAT3res", &FsStatResult::attributes,
      [](XdrDecoder& d, FsStatResult& r) { return ReadFsStat(d, &r.fsstat); });
}

absl::StatusOr<FsInfoResult> DecodeFsInfoResult(std::string_view results) {
  return DecodeAttrsThenOk<FsInfoResult>(
      results, "FSINFO3res", &FsInfoResult::attributes,
      [](XdrDecoder& d, FsInfoResult& r) { return ReadFsInfo(d, &r.fsinfo); });
}

absl::StatusOr<MountResult> DecodeMountResult(std::string_view results) {
  XdrDecoder d(results, "mountres3");
  MountResult r;
  FERRY_ASSIGN_OR_RETURN(r.status, ReadStatus<Mount3Status>(d));
  if (r.status == Mount3Status::kOk) {
    FERRY_ASSIGN_OR_RETURN(std::string_view fh, d.ReadOpaque("fhandle3", kMaxFileHandleSize));
    r.root.assign(fh);
    // A server offers a handful of flavours; 64 bounds a hostile list.
    FERRY_RETURN_IF_ERROR(d.ReadArray("auth_flavors", 64, &r.auth_flavors, ReadAuthFlavor));
  }
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  return r;
}

absl::StatusOr<std::vector<ExportEntry>> DecodeExportResult(std::string_view results) {
  XdrDecoder d(results, "exports");
  std::vector<ExportEntry> out;
  FERRY_RETURN_IF_ERROR(d.ReadOptionalList("exportnode", kMaxExports, &out, ReadExportNode));
  FERRY_RETURN_IF_ERROR(d.ExpectEnd());
  return out;
}

// --- Test-server encoders ---------------------------------------------------

void EncodeFattr3(const Fattr3& a, std::string* out) {
  EncodeFields(out, a.type, a.mode, a.nlink, a.uid, a.gid, a.size, a.used, a.rdev_major,
               a.rdev_minor, a.fsid, a.fileid);
  for (const NfsTime* t : {&a.atime, &a.mtime, &a.ctime}) {
    EncodeFields(out, t->seconds, t->nseconds);
  }
}

void EncodeReaddirplusResult(const ReaddirplusResult& r, std::string* out) {
  XdrEncoder e(out);
  e.WriteEnum(r.status);
  e.WriteBool(r.dir_attributes.has_value());
  if (r.dir_attributes) EncodeFattr3(*r.dir_attributes, out);
  if (r.status != Nfs3Status::kOk) return;
  e.WriteUint64(r.cookieverf);
  for (const DirEntryPlus& entry : r.entries) {
    e.WriteBool(true);
    e.WriteUint64(entry.fileid);
    e.WriteString(entry.name);
    e.WriteUint64(entry.cookie);
    e.WriteBool(entry.attributes.has_value());
    if (entry.attributes) EncodeFattr3(*entry.attributes, out);
    e.WriteBool(entry.handle.has_value());
    if (entry.handle) e.WriteOpaque(*entry.handle);
  }
  e.WriteBool(false);
  e.WriteBool(r.eof);
}

}  // namespace ferry::nfs
