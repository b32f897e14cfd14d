// NfsClient design.
//
// One RpcPool carries every NFS call; the pool does the pipelining, the xid
// matching, deadlines and idempotent retries. Each procedure here is three
// small steps: encode the CALL (a cached AUTH_SYS credential, so no
// re-encoding per call), hand it to the pool, and in the completion decode
// the reply and turn an nfsstat3 into a Status that names the path. The
// blocking twins wrap the async forms in a Promise/Future.
//
// MOUNT and the portmapper are spoken only at Connect (and for EXPORT /
// UMNT on demand) through short-lived one-connection pools: a walk never
// pays for them, and no idle connection is kept open.
#include "ferry/nfs/nfs_client.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_error.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/portmapper.h"
#include "ferry/rpc/rpc_pool.h"

namespace ferry::nfs {
namespace {

// READDIRPLUS sizing (see readdir_dircount()).
constexpr uint32_t kMinDircount = 32 << 10;
constexpr uint32_t kMaxMaxcount = 1 << 20;
constexpr uint32_t kMaxcountPerDircount = 8;

// Fallback transfer sizes if a server reports 0 (RFC 1813 says they are
// advisory; 64 KiB is what every server handles).
constexpr uint32_t kFallbackTransferSize = 64 << 10;

RpcPoolOptions PoolOptions(const std::string& host, uint16_t port, int connections,
                           int max_in_flight, const NfsClientOptions& o) {
  RpcPoolOptions p;
  p.host = host;
  p.port = port;
  p.framing = NewRecordMarkingFraming({});
  p.connections = connections;
  p.max_in_flight_per_connection = max_in_flight;
  p.default_timeout = o.timeout;
  p.connect_timeout = o.connect_timeout;
  // Connect fails fast (a wrong port should say so in seconds), but a pool
  // that has been up keeps reconnecting in the background.
  p.max_connect_attempts = 2;
  // Enough queue for a walker that keeps thousands of calls waiting.
  p.max_queued_calls = 1 << 16;
  return p;
}

// Runs one call on a short-lived pool (portmapper, MOUNT) and returns the
// reply record.
absl::StatusOr<std::string> OneShotCall(Runtime& runtime, const std::string& host, uint16_t port,
                                        const RpcProcedure& proc, const OpaqueAuth& cred,
                                        std::string_view args, const NfsClientOptions& o) {
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<RpcPool> pool,
                         RpcPool::Create(runtime, PoolOptions(host, port, 1, 1, o)));
  std::string call;
  EncodeCallHeader(0, proc, cred, AuthNone(), &call);
  call.append(args.data(), args.size());
  return pool->CallBlocking(std::move(call), {.idempotent = true});
}

// True if `path` is `prefix` or below it, component-wise.
bool PathIsUnder(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return true;
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

template <typename T>
absl::StatusOr<T> Block(absl::AnyInvocable<void(Callback<T>)> start) {
  Promise<T> p;
  Future<T> f = p.GetFuture();
  start([p = std::move(p)](absl::StatusOr<T> r) mutable { p.Set(std::move(r)); });
  return std::move(f).Get();
}

}  // namespace

struct NfsClient::Impl {
  Runtime* runtime = nullptr;
  NfsClientOptions options;
  NfsUrl url;
  std::string url_base;  // "nfs://host" + url.path, without a trailing '/'
  uint16_t mount_port = 0;
  std::string export_path;
  FileHandle root_handle;
  Fattr3 root_attributes;
  FsInfo fsinfo;
  OpaqueAuth cred;
  std::unique_ptr<RpcPool> pool;

  std::string Display(std::string_view relative) const {
    if (relative.empty()) return url_base;
    return absl::StrCat(url_base, "/", ToAbsl(relative));
  }

  std::string NewCall(Nfs3Proc proc) const {
    std::string call;
    call.reserve(256);
    EncodeCallHeader(0, Nfs3Procedure(proc), cred, AuthNone(), &call);
    return call;
  }

  // Sends `call`; `finish(record) -> StatusOr<T>` decodes the reply record.
  // Transport and RPC-level errors are annotated with the procedure and path.
  template <typename T, typename Finish>
  void Send(Nfs3Proc proc, std::string call, bool idempotent, std::string path, Finish finish,
            Callback<T> done) {
    pool->CallAsync(
        std::move(call),
        [this, proc, path = std::move(path), finish = std::move(finish),
         done = std::move(done)](absl::StatusOr<std::string> record) mutable {
          if (!record.ok()) {
            done(Annotate(record.status(),
                          absl::StrCat("NFS3 ", ToAbsl(Nfs3Procedure(proc).procedure_name), " ",
                                       Display(path))));
            return;
          }
          done(finish(std::move(*record), path));
        },
        {.idempotent = idempotent});
  }

  // The SUCCESS results of `record`, or why the call failed.
  absl::StatusOr<std::string_view> Results(const std::string& record, Nfs3Proc proc,
                                           std::string_view path) const {
    absl::StatusOr<RpcReply> reply = DecodeReply(record, Nfs3Procedure(proc));
    if (!reply.ok()) return Annotate(reply.status(), Display(path));
    return reply->results;
  }

  // OK if `decoded` is a well-formed NFS3_OK reply. A malformed one is
  // DataLoss naming the procedure and the path, as NFS3ERR_* statuses are:
  //   NFS3 READDIRPLUS nfs://host/export/dir: XDR decode of READDIRPLUS3res: truncated ...
  template <typename R>
  absl::Status Check(const absl::StatusOr<R>& decoded, Nfs3Proc proc, std::string_view path) const {
    if (!decoded.ok()) {
      return Annotate(decoded.status(), absl::StrCat("NFS3 ",
                                                     ToAbsl(Nfs3Procedure(proc).procedure_name),
                                                     " ", Display(path)));
    }
    return Nfs3StatusToStatus(decoded->status, Nfs3Procedure(proc).procedure_name, Display(path));
  }

  absl::StatusOr<std::string> MountCall(Mount3Proc proc, std::string_view args) {
    const RpcProcedure p = Mount3Procedure(proc);
    FERRY_ASSIGN_OR_RETURN(std::string record,
                           OneShotCall(*runtime, url.host, mount_port, p, cred, args, options));
    FERRY_ASSIGN_OR_RETURN(RpcReply reply, DecodeReply(record, p));
    return std::string(reply.results);
  }
};

NfsClient::NfsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NfsClient::~NfsClient() = default;

absl::StatusOr<std::unique_ptr<NfsClient>> NfsClient::Connect(Runtime& runtime,
                                                              std::string_view url,
                                                              const NfsClientOptions& options) {
  FERRY_ASSIGN_OR_RETURN(NfsUrl parsed, ParseNfsUrl(url));
  return Connect(runtime, parsed, options);
}

absl::StatusOr<std::unique_ptr<NfsClient>> NfsClient::Connect(Runtime& runtime, const NfsUrl& url,
                                                              const NfsClientOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->runtime = &runtime;
  impl->options = options;
  impl->url = url;
  impl->url_base = url.ToString();
  const std::string where = absl::StrCat("NFS connect to ", url.ToString());

  FERRY_ASSIGN_OR_RETURN(
      impl->cred, MakeAuthSys({.machine_name = options.machine_name,
                               .uid = url.uid.value_or(static_cast<uint32_t>(getuid())),
                               .gid = url.gid.value_or(static_cast<uint32_t>(getgid()))}));

  // Ports: the URL's, else the portmapper's.
  auto getport = [&](uint32_t prog, uint32_t vers) -> absl::StatusOr<uint16_t> {
    const PortMapping query{prog, vers, kIpProtoTcp, 0};
    std::string args;
    EncodeGetPortArgs(query, &args);
    const RpcProcedure proc = PortmapProcedure(PortmapProc::kGetPort);
    absl::StatusOr<std::string> record =
        OneShotCall(runtime, url.host, kPortmapPort, proc, AuthNone(), args, options);
    if (!record.ok()) {
      return Annotate(record.status(), absl::StrCat(where, ": portmapper GETPORT"));
    }
    FERRY_ASSIGN_OR_RETURN(RpcReply reply, DecodeReply(*record, proc));
    absl::StatusOr<uint16_t> port = DecodeGetPortResult(reply.results, query);
    if (!port.ok()) return Annotate(port.status(), where);
    return *port;
  };
  uint16_t nfs_port = 0;
  if (url.nfs_port) {
    nfs_port = *url.nfs_port;
  } else {
    FERRY_ASSIGN_OR_RETURN(nfs_port, getport(kNfsProgram, kNfsVersion3));
  }
  if (url.mount_port) {
    impl->mount_port = *url.mount_port;
  } else {
    FERRY_ASSIGN_OR_RETURN(impl->mount_port, getport(kMountProgram, kMountVersion3));
  }

  // The export: the longest exported path the URL's path lies under (EXPORT),
  // else the whole path (servers that hide their list may still mount it).
  impl->export_path = url.path;
  if (absl::StatusOr<std::string> exports = impl->MountCall(Mount3Proc::kExport, {});
      exports.ok()) {
    absl::StatusOr<std::vector<ExportEntry>> list = DecodeExportResult(*exports);
    if (list.ok()) {
      size_t best = 0;
      for (const ExportEntry& e : *list) {
        std::string normal = e.path.size() > 1 && e.path.back() == '/'
                                 ? e.path.substr(0, e.path.size() - 1)
                                 : e.path;
        if (PathIsUnder(url.path, normal) && normal.size() >= best) {
          best = normal.size();
          impl->export_path = normal;
        }
      }
    }
  }
  std::string mnt_args;
  EncodeMountPathArgs(impl->export_path, &mnt_args);
  absl::StatusOr<std::string> mnt = impl->MountCall(Mount3Proc::kMnt, mnt_args);
  if (!mnt.ok()) return Annotate(mnt.status(), absl::StrCat(where, ": MOUNT3 MNT ", impl->export_path));
  FERRY_ASSIGN_OR_RETURN(MountResult mounted, DecodeMountResult(*mnt));
  FERRY_RETURN_IF_ERROR(Mount3StatusToStatus(
      mounted.status, "MNT", NfsUrl{.host = url.host, .path = impl->export_path}.ToString()));
  if (!mounted.auth_flavors.empty() &&
      std::find(mounted.auth_flavors.begin(), mounted.auth_flavors.end(),
                static_cast<uint32_t>(AuthFlavor::kSys)) == mounted.auth_flavors.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat(where, ": the export ", impl->export_path, " does not accept AUTH_SYS"));
  }

  FERRY_ASSIGN_OR_RETURN(impl->pool,
                         RpcPool::Create(runtime, PoolOptions(url.host, nfs_port,
                                                              options.connections,
                                                              options.max_in_flight_per_connection,
                                                              options)));
  std::unique_ptr<NfsClient> client(new NfsClient(std::move(impl)));
  Impl& m = *client->impl_;

  // Below the export: LOOKUP each remaining component. The display base is
  // still the URL, so errors here name the component as a URL path.
  m.root_handle = mounted.root;
  if (options.root_at_export) {
    m.url.path = m.export_path;
    m.url_base = NfsUrl{.host = url.host, .path = m.export_path}.ToString();
  }
  std::string_view below = std::string_view(url.path).substr(
      m.export_path == "/" ? 0 : m.export_path.size());
  if (options.root_at_export) below = {};
  if (!below.empty() && below.front() == '/') below.remove_prefix(1);
  std::string walked;
  // Display paths are relative to the URL; during resolution name the
  // components from the export instead.
  const std::string saved_base = m.url_base;
  m.url_base = NfsUrl{.host = url.host, .path = m.export_path}.ToString();
  for (absl::string_view c : absl::StrSplit(ToAbsl(below), '/', absl::SkipEmpty())) {
    walked = walked.empty() ? std::string(c) : absl::StrCat(walked, "/", c);
    absl::StatusOr<NfsObject> o = client->Lookup(m.root_handle, ToStd(c), walked);
    if (!o.ok()) return Annotate(o.status(), where);
    m.root_handle = o->handle;
  }
  m.url_base = saved_base;

  FERRY_ASSIGN_OR_RETURN(m.root_attributes, client->GetAttr(m.root_handle, ""));
  FERRY_ASSIGN_OR_RETURN(m.fsinfo, client->FsInfoOf(m.root_handle, ""));
  if (m.fsinfo.rtmax == 0) m.fsinfo.rtmax = kFallbackTransferSize;
  if (m.fsinfo.wtmax == 0) m.fsinfo.wtmax = kFallbackTransferSize;
  return client;
}

const NfsUrl& NfsClient::url() const { return impl_->url; }
const std::string& NfsClient::export_path() const { return impl_->export_path; }
const FileHandle& NfsClient::root_handle() const { return impl_->root_handle; }
const Fattr3& NfsClient::root_attributes() const { return impl_->root_attributes; }
const FsInfo& NfsClient::fsinfo() const { return impl_->fsinfo; }
std::string NfsClient::DisplayPath(std::string_view relative) const {
  return impl_->Display(relative);
}
RpcPoolMetrics NfsClient::metrics() const { return impl_->pool->metrics(); }

uint32_t NfsClient::readdir_dircount() const {
  return std::max(impl_->fsinfo.dtpref, kMinDircount);
}
uint32_t NfsClient::readdir_maxcount() const {
  uint32_t cap = kMaxMaxcount;
  if (impl_->fsinfo.rtmax != 0) cap = std::min(cap, impl_->fsinfo.rtmax);
  return std::max(std::min(readdir_dircount() * kMaxcountPerDircount, cap), readdir_dircount());
}

// --- MOUNT --------------------------------------------------------------------

absl::StatusOr<std::vector<ExportEntry>> NfsClient::Exports() {
  absl::StatusOr<std::string> r = impl_->MountCall(Mount3Proc::kExport, {});
  if (!r.ok()) return Annotate(r.status(), absl::StrCat("MOUNT3 EXPORT ", impl_->url.host));
  return DecodeExportResult(*r);
}

absl::Status NfsClient::Unmount() {
  std::string args;
  EncodeMountPathArgs(impl_->export_path, &args);
  absl::StatusOr<std::string> r = impl_->MountCall(Mount3Proc::kUmnt, args);
  if (!r.ok()) {
    return Annotate(r.status(),
                    absl::StrCat("MOUNT3 UMNT ",
                                 NfsUrl{.host = impl_->url.host, .path = impl_->export_path}
                                     .ToString()));
  }
  return absl::OkStatus();
}

// --- Async --------------------------------------------------------------------

void NfsClient::NullAsync(Callback<NfsDone> done) {
  impl_->Send<NfsDone>(
      Nfs3Proc::kNull, impl_->NewCall(Nfs3Proc::kNull), true, "",
      [this](std::string record, const std::string& p) -> absl::StatusOr<NfsDone> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kNull, p));
        (void)results;
        return NfsDone{};
      },
      std::move(done));
}

void NfsClient::GetAttrAsync(const FileHandle& fh, std::string path, Callback<Fattr3> done) {
  std::string call = impl_->NewCall(Nfs3Proc::kGetAttr);
  EncodeGetAttrArgs(fh, &call);
  impl_->Send<Fattr3>(
      Nfs3Proc::kGetAttr, std::move(call), true, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<Fattr3> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kGetAttr, p));
        absl::StatusOr<GetAttrResult> r = DecodeGetAttrResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kGetAttr, p));
        return r->attributes;
      },
      std::move(done));
}

void NfsClient::LookupAsync(const FileHandle& dir, std::string_view name, std::string path,
                            Callback<NfsObject> done) {
  std::string call = impl_->NewCall(Nfs3Proc::kLookup);
  EncodeDirOpArgs(dir, name, &call);
  impl_->Send<NfsObject>(
      Nfs3Proc::kLookup, std::move(call), true, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<NfsObject> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kLookup, p));
        absl::StatusOr<LookupResult> r = DecodeLookupResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kLookup, p));
        return NfsObject{std::move(r->object), r->object_attributes};
      },
      std::move(done));
}

void NfsClient::AccessAsync(const FileHandle& fh, uint32_t mask, std::string path,
                            Callback<uint32_t> done) {
  std::string call = impl_->NewCall(Nfs3Proc::kAccess);
  EncodeAccessArgs(fh, mask, &call);
  impl_->Send<uint32_t>(
      Nfs3Proc::kAccess, std::move(call), true, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<uint32_t> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kAccess, p));
        absl::StatusOr<AccessResult> r = DecodeAccessResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kAccess, p));
        return r->access;
      },
      std::move(done));
}

void NfsClient::ReaddirplusAsync(const FileHandle& dir, uint64_t cookie, uint64_t cookieverf,
                                 uint32_t dircount, uint32_t maxcount, std::string path,
                                 Callback<ReaddirplusPage> done) {
  std::string call = impl_->NewCall(Nfs3Proc::kReaddirplus);
  EncodeReaddirplusArgs(dir, cookie, cookieverf, dircount == 0 ? readdir_dircount() : dircount,
                        maxcount == 0 ? readdir_maxcount() : maxcount, &call);
  impl_->Send<ReaddirplusPage>(
      Nfs3Proc::kReaddirplus, std::move(call), true, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<ReaddirplusPage> {
        ReaddirplusPage page;
        page.record = std::make_unique<std::string>(std::move(record));
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(*page.record, Nfs3Proc::kReaddirplus, p));
        absl::StatusOr<ReaddirplusResult> r = DecodeReaddirplusResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kReaddirplus, p));
        page.result = std::move(*r);
        return page;
      },
      std::move(done));
}

void NfsClient::ReadAsync(const FileHandle& fh, uint64_t offset, uint32_t count, std::string path,
                          Callback<ReadReply> done) {
  std::string call = impl_->NewCall(Nfs3Proc::kRead);
  EncodeReadArgs(fh, offset, count, &call);
  impl_->Send<ReadReply>(
      Nfs3Proc::kRead, std::move(call), true, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<ReadReply> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kRead, p));
        absl::StatusOr<ReadResult> r = DecodeReadResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kRead, p));
        return ReadReply{std::string(r->data), r->eof};
      },
      std::move(done));
}

void NfsClient::ReadIntoAsync(const FileHandle& fh, uint64_t offset, absl::Span<char> dest,
                              std::string path, Callback<ReadIntoReply> done) {
  std::string call = impl_->NewCall(Nfs3Proc::kRead);
  EncodeReadArgs(fh, offset, static_cast<uint32_t>(dest.size()), &call);
  impl_->Send<ReadIntoReply>(
      Nfs3Proc::kRead, std::move(call), true, std::move(path),
      [this, dest](std::string record, const std::string& p) -> absl::StatusOr<ReadIntoReply> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kRead, p));
        absl::StatusOr<ReadResult> r = DecodeReadResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kRead, p));
        if (r->data.size() > dest.size()) {
          return absl::DataLossError(absl::StrCat("NFS3 READ ", impl_->Display(p), ": asked ",
                                                  dest.size(), " bytes, got ", r->data.size()));
        }
        // The only copy of the data in user space after the record itself.
        std::memcpy(dest.data(), r->data.data(), r->data.size());
        return ReadIntoReply{r->data.size(), r->eof};
      },
      std::move(done));
}

void NfsClient::WriteAsync(const FileHandle& fh, uint64_t offset, std::string_view data,
                           StableHow stable, std::string path, Callback<WriteReply> done) {
  std::string call;
  call.reserve(256 + data.size());
  EncodeCallHeader(0, Nfs3Procedure(Nfs3Proc::kWrite), impl_->cred, AuthNone(), &call);
  EncodeWriteArgs(fh, offset, stable, data, &call);
  impl_->Send<WriteReply>(
      Nfs3Proc::kWrite, std::move(call), true, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<WriteReply> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kWrite, p));
        absl::StatusOr<WriteResult> r = DecodeWriteResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kWrite, p));
        return WriteReply{r->count, r->committed, r->verifier};
      },
      std::move(done));
}

void NfsClient::CommitAsync(const FileHandle& fh, uint64_t offset, uint32_t count,
                            std::string path, Callback<uint64_t> done) {
  std::string call = impl_->NewCall(Nfs3Proc::kCommit);
  EncodeCommitArgs(fh, offset, count, &call);
  impl_->Send<uint64_t>(
      Nfs3Proc::kCommit, std::move(call), true, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<uint64_t> {
        FERRY_ASSIGN_OR_RETURN(std::string_view results,
                               impl_->Results(record, Nfs3Proc::kCommit, p));
        absl::StatusOr<CommitResult> r = DecodeCommitResult(results);
        FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kCommit, p));
        return r->verifier;
      },
      std::move(done));
}

// --- Blocking -----------------------------------------------------------------

absl::Status NfsClient::Null() {
  return Block<NfsDone>([this](Callback<NfsDone> cb) { NullAsync(std::move(cb)); }).status();
}

absl::StatusOr<Fattr3> NfsClient::GetAttr(const FileHandle& fh, std::string_view path) {
  return Block<Fattr3>(
      [&](Callback<Fattr3> cb) { GetAttrAsync(fh, std::string(path), std::move(cb)); });
}

absl::StatusOr<NfsObject> NfsClient::Lookup(const FileHandle& dir, std::string_view name,
                                            std::string_view path) {
  return Block<NfsObject>(
      [&](Callback<NfsObject> cb) { LookupAsync(dir, name, std::string(path), std::move(cb)); });
}

absl::StatusOr<NfsObject> NfsClient::LookupPath(std::string_view relative) {
  NfsObject current{impl_->root_handle, impl_->root_attributes};
  std::string walked;
  for (absl::string_view c : absl::StrSplit(ToAbsl(relative), '/', absl::SkipEmpty())) {
    walked = walked.empty() ? std::string(c) : absl::StrCat(walked, "/", c);
    FERRY_ASSIGN_OR_RETURN(current, Lookup(current.handle, ToStd(c), walked));
  }
  return current;
}

absl::StatusOr<uint32_t> NfsClient::Access(const FileHandle& fh, uint32_t mask,
                                           std::string_view path) {
  return Block<uint32_t>(
      [&](Callback<uint32_t> cb) { AccessAsync(fh, mask, std::string(path), std::move(cb)); });
}

absl::StatusOr<ReaddirplusPage> NfsClient::Readdirplus(const FileHandle& dir, uint64_t cookie,
                                                       uint64_t cookieverf,
                                                       std::string_view path) {
  return Block<ReaddirplusPage>([&](Callback<ReaddirplusPage> cb) {
    ReaddirplusAsync(dir, cookie, cookieverf, 0, 0, std::string(path), std::move(cb));
  });
}

absl::StatusOr<ReadReply> NfsClient::Read(const FileHandle& fh, uint64_t offset, uint32_t count,
                                          std::string_view path) {
  return Block<ReadReply>([&](Callback<ReadReply> cb) {
    ReadAsync(fh, offset, count, std::string(path), std::move(cb));
  });
}

absl::StatusOr<ReadIntoReply> NfsClient::ReadInto(const FileHandle& fh, uint64_t offset,
                                                  absl::Span<char> dest, std::string_view path) {
  return Block<ReadIntoReply>([&](Callback<ReadIntoReply> cb) {
    ReadIntoAsync(fh, offset, dest, std::string(path), std::move(cb));
  });
}

absl::StatusOr<WriteReply> NfsClient::Write(const FileHandle& fh, uint64_t offset,
                                            std::string_view data, StableHow stable,
                                            std::string_view path) {
  return Block<WriteReply>([&](Callback<WriteReply> cb) {
    WriteAsync(fh, offset, data, stable, std::string(path), std::move(cb));
  });
}

absl::StatusOr<uint64_t> NfsClient::Commit(const FileHandle& fh, uint64_t offset, uint32_t count,
                                           std::string_view path) {
  return Block<uint64_t>([&](Callback<uint64_t> cb) {
    CommitAsync(fh, offset, count, std::string(path), std::move(cb));
  });
}

absl::StatusOr<NfsObject> NfsClient::Create(const FileHandle& dir, std::string_view name,
                                            uint32_t mode, bool exclusive, bool truncate,
                                            std::string_view path) {
  std::string call = impl_->NewCall(Nfs3Proc::kCreate);
  Sattr3 attrs;
  attrs.mode = mode;
  if (truncate) attrs.size = 0;
  EncodeCreateArgs(dir, name, exclusive ? CreateMode::kGuarded : CreateMode::kUnchecked, attrs, 0,
                   &call);
  FERRY_ASSIGN_OR_RETURN(
      NfsObject created,
      Block<NfsObject>([&](Callback<NfsObject> cb) {
        impl_->Send<NfsObject>(
            Nfs3Proc::kCreate, std::move(call), false, std::string(path),
            [this](std::string record, const std::string& p) -> absl::StatusOr<NfsObject> {
              FERRY_ASSIGN_OR_RETURN(std::string_view results,
                                     impl_->Results(record, Nfs3Proc::kCreate, p));
              absl::StatusOr<CreateResult> r = DecodeCreateResult(results);
              FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kCreate, p));
              return NfsObject{r->object.value_or(""), r->attributes};
            },
            std::move(cb));
      }));
  // The handle is optional on the wire: LOOKUP it if the server left it out.
  if (created.handle.empty()) return Lookup(dir, name, path);
  return created;
}

absl::StatusOr<NfsObject> NfsClient::Mkdir(const FileHandle& dir, std::string_view name,
                                           uint32_t mode, std::string_view path) {
  std::string call = impl_->NewCall(Nfs3Proc::kMkdir);
  Sattr3 attrs;
  attrs.mode = mode;
  EncodeMkdirArgs(dir, name, attrs, &call);
  FERRY_ASSIGN_OR_RETURN(
      NfsObject created,
      Block<NfsObject>([&](Callback<NfsObject> cb) {
        impl_->Send<NfsObject>(
            Nfs3Proc::kMkdir, std::move(call), false, std::string(path),
            [this](std::string record, const std::string& p) -> absl::StatusOr<NfsObject> {
              FERRY_ASSIGN_OR_RETURN(std::string_view results,
                                     impl_->Results(record, Nfs3Proc::kMkdir, p));
              absl::StatusOr<CreateResult> r = DecodeCreateResult(results);
              FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kMkdir, p));
              return NfsObject{r->object.value_or(""), r->attributes};
            },
            std::move(cb));
      }));
  if (created.handle.empty()) return Lookup(dir, name, path);
  return created;
}

namespace {
// REMOVE and RMDIR share their shape.
absl::Status RemoveLike(NfsClient::Impl& impl, Nfs3Proc proc, const FileHandle& dir,
                        std::string_view name, std::string_view path) {
  std::string call = impl.NewCall(proc);
  EncodeDirOpArgs(dir, name, &call);
  return Block<NfsDone>([&](Callback<NfsDone> cb) {
           impl.Send<NfsDone>(
               proc, std::move(call), false, std::string(path),
               [&impl, proc](std::string record, const std::string& p) -> absl::StatusOr<NfsDone> {
                 FERRY_ASSIGN_OR_RETURN(std::string_view results, impl.Results(record, proc, p));
                 absl::StatusOr<RemoveResult> r = DecodeRemoveResult(results);
                 FERRY_RETURN_IF_ERROR(impl.Check(r, proc, p));
                 return NfsDone{};
               },
               std::move(cb));
         })
      .status();
}
}  // namespace

absl::Status NfsClient::Remove(const FileHandle& dir, std::string_view name,
                               std::string_view path) {
  return RemoveLike(*impl_, Nfs3Proc::kRemove, dir, name, path);
}

absl::Status NfsClient::Rmdir(const FileHandle& dir, std::string_view name,
                              std::string_view path) {
  return RemoveLike(*impl_, Nfs3Proc::kRmdir, dir, name, path);
}

absl::Status NfsClient::Rename(const FileHandle& from_dir, std::string_view from_name,
                               const FileHandle& to_dir, std::string_view to_name,
                               std::string_view from_path, std::string_view to_path) {
  std::string call = impl_->NewCall(Nfs3Proc::kRename);
  EncodeRenameArgs(from_dir, from_name, to_dir, to_name, &call);
  const std::string both =
      absl::StrCat(ToAbsl(from_path), " -> ", impl_->Display(to_path));
  return Block<NfsDone>([&](Callback<NfsDone> cb) {
           impl_->Send<NfsDone>(
               Nfs3Proc::kRename, std::move(call), false, both,
               [this](std::string record, const std::string& p) -> absl::StatusOr<NfsDone> {
                 FERRY_ASSIGN_OR_RETURN(std::string_view results,
                                        impl_->Results(record, Nfs3Proc::kRename, p));
                 absl::StatusOr<RenameResult> r = DecodeRenameResult(results);
                 FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kRename, p));
                 return NfsDone{};
               },
               std::move(cb));
         })
      .status();
}

absl::StatusOr<FsInfo> NfsClient::FsInfoOf(const FileHandle& fh, std::string_view path) {
  std::string call = impl_->NewCall(Nfs3Proc::kFsInfo);
  EncodeGetAttrArgs(fh, &call);
  return Block<FsInfo>([&](Callback<FsInfo> cb) {
    impl_->Send<FsInfo>(
        Nfs3Proc::kFsInfo, std::move(call), true, std::string(path),
        [this](std::string record, const std::string& p) -> absl::StatusOr<FsInfo> {
          FERRY_ASSIGN_OR_RETURN(std::string_view results,
                                 impl_->Results(record, Nfs3Proc::kFsInfo, p));
          absl::StatusOr<FsInfoResult> r = DecodeFsInfoResult(results);
          FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kFsInfo, p));
          return r->fsinfo;
        },
        std::move(cb));
  });
}

absl::StatusOr<FsStat> NfsClient::FsStatOf(const FileHandle& fh, std::string_view path) {
  std::string call = impl_->NewCall(Nfs3Proc::kFsStat);
  EncodeGetAttrArgs(fh, &call);
  return Block<FsStat>([&](Callback<FsStat> cb) {
    impl_->Send<FsStat>(
        Nfs3Proc::kFsStat, std::move(call), true, std::string(path),
        [this](std::string record, const std::string& p) -> absl::StatusOr<FsStat> {
          FERRY_ASSIGN_OR_RETURN(std::string_view results,
                                 impl_->Results(record, Nfs3Proc::kFsStat, p));
          absl::StatusOr<FsStatResult> r = DecodeFsStatResult(results);
          FERRY_RETURN_IF_ERROR(impl_->Check(r, Nfs3Proc::kFsStat, p));
          return r->fsstat;
        },
        std::move(cb));
  });
}

}  // namespace ferry::nfs
