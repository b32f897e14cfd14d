// NfsClient design.
//
// One RpcPool carries every NFS call; the pool does the pipelining, the xid
// matching, deadlines and idempotent retries on a reconnect. Above it,
// Send retries idempotent calls that still fail Unavailable (their
// connection kept dying: a blip, a server restarting) with back-off until
// NfsClientOptions::timeouts.retry_window has passed (CallWithRetry, the policy the
// transfers use), so an outage of seconds is ridden out and a peer that
// stays down fails after the window. Every procedure goes through
// one template, Impl::Send, over its Nfs3Call (nfs3_xdr.h: number, retry
// safety, codecs): encode the CALL (a cached AUTH_SYS credential, so no
// re-encoding per call), hand it to the pool, and in the completion decode
// the reply and turn an nfsstat3 into a Status that names the path. What is
// left per procedure is turning its result into the caller's value. The
// blocking twins wrap the async forms in a Promise/Future.
//
// MOUNT and the portmapper are spoken only at Connect (and for EXPORT /
// UMNT on demand) through short-lived one-connection pools: a walk never
// pays for them, and no idle connection is kept open.
#include "ferry/nfs/nfs_client.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/cache/ttl_cache.h"
#include "ferry/io/internal/positional_io.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_error.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/portmapper.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/retry_policy.h"

namespace ferry::nfs {
namespace {

// What Send retries: a lost or unreachable connection. Not DeadlineExceeded
// (a stalled server keeps its per-call timeout as the bound), not DataLoss
// (malformed bytes are not cured by asking again).
bool ConnectionFailed(const absl::Status& s) { return absl::IsUnavailable(s); }

RetryPolicy CallRetryPolicy(const NfsClientOptions& o) {
  return RetryPolicy{.max_attempts = std::numeric_limits<int>::max(),
                     .initial_backoff = absl::Milliseconds(100),
                     .max_backoff = absl::Seconds(2),
                     .jitter = 0.5,
                     .max_elapsed = o.timeouts.retry_window,
                     .retryable = ConnectionFailed};
}

// READDIRPLUS sizing (see readdir_dircount()).
constexpr uint32_t kMinDircount = 32 << 10;
constexpr uint32_t kMaxMaxcount = 1 << 20;
constexpr uint32_t kMaxcountPerDircount = 8;

// Fallback transfer sizes if a server reports 0 (RFC 1813 says they are
// advisory; 64 KiB is what every server handles).
constexpr uint32_t kFallbackTransferSize = 64 << 10;

// Largest fragment sent: any call ferry makes (a WRITE carries at most
// 1 MiB of data plus its headers).
constexpr size_t kMaxCallFragment = size_t{4} << 20;

// Socket reads of 256 KiB: a 1 MiB READ reply arrives in 4 reads instead
// of 16, and the buffer still stays in the CPU cache until copied out.
constexpr size_t kReadBufferBytes = size_t{256} << 10;

// Directory handles a client keeps (a few hundred bytes each): far more
// directories than a tree copy works in at once.
constexpr int64_t kMaxCachedDirectories = 4096;

RpcPoolOptions PoolOptions(const std::string& host, uint16_t port, int connections,
                           int max_in_flight, const NfsClientOptions& o) {
  RpcPoolOptions p;
  p.host = host;
  p.port = port;
  // Each call in one fragment, as the Linux client and libnfs send them: a
  // 1 MiB WRITE split at 1 MiB made ganesha reassemble its last ~200 bytes.
  p.framing = NewRecordMarkingFraming({.max_fragment_size = kMaxCallFragment});
  p.connections = connections;
  p.read_buffer_bytes = kReadBufferBytes;
  p.max_in_flight_per_connection = max_in_flight;
  // One connection first; the others open once calls pile up (a pipelined
  // copy or walk opens them within its first calls). A small get then
  // connects once instead of `connections` times.
  p.connections_at_start = 1;
  p.default_timeout = o.timeouts.call;
  p.connect_timeout = o.timeouts.connect;
  // Connect fails fast (a wrong port should say so in seconds), but a pool
  // that has been up keeps reconnecting in the background.
  p.max_connect_attempts = 2;
  // Enough queue for a walker that keeps thousands of calls waiting.
  p.max_queued_calls = 1 << 16;
  return p;
}

// One call on `pool` (MOUNT, the portmapper: a one-connection pool),
// started; the future has the reply record.
Future<std::string> StartCallOn(RpcPool& pool, const RpcProcedure& proc, const OpaqueAuth& cred,
                                std::string_view args) {
  std::string call;
  EncodeCallHeader(0, proc, cred, AuthNone(), &call);
  call.append(args.data(), args.size());
  return pool.Call(std::move(call), {.idempotent = true});
}

absl::StatusOr<std::string> CallOn(RpcPool& pool, const RpcProcedure& proc, const OpaqueAuth& cred,
                                   std::string_view args) {
  return StartCallOn(pool, proc, cred, args).Get();
}

// Runs one call on a short-lived pool (portmapper, MOUNT) and returns the
// reply record.
absl::StatusOr<std::string> OneShotCall(Runtime& runtime, const std::string& host, uint16_t port,
                                        const RpcProcedure& proc, const OpaqueAuth& cred,
                                        std::string_view args, const NfsClientOptions& o) {
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<RpcPool> pool,
                         RpcPool::Create(runtime, PoolOptions(host, port, 1, 1, o)));
  return CallOn(*pool, proc, cred, args);
}

// A WRITE's reply as the client answers it.
WriteReply WriteReplyOf(WriteResult r) { return WriteReply{r.count, r.committed, r.verifier}; }

// "/a" for "/a/b/c" and "/a"; "/" for "/".
std::string FirstComponent(std::string_view path) {
  const size_t end = path.find('/', 1);
  return std::string(end == std::string_view::npos ? path : path.substr(0, end));
}

// How long at least Connect waits for the deep MNT's answer once the
// EXPORT and first MNT have answered.
constexpr absl::Duration kDeepMountGrace = absl::Milliseconds(50);

// The oldest answer of Connect's LOOKUP ahead that the client's first
// LookupPath takes (Impl::FirstLookup): what a caller that connects and
// then stats its path takes, not what a client left idle would hold. A
// shorter directory_handle_time shortens it (zero: nothing is sent ahead).
constexpr absl::Duration kFirstLookupLife = absl::Seconds(1);

// The directory `path` lies in ("/a/b" for "/a/b/c", "a/b" for "a/b/c"),
// or "" for a path of one component or none.
std::string ParentDirectory(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos || slash == 0 ? "" : std::string(path.substr(0, slash));
}

// Whether a mount's answer lets the client in with AUTH_SYS (a server that
// lists no flavours takes any).
bool AcceptsAuthSys(const MountResult& m) {
  return m.auth_flavors.empty() ||
         std::find(m.auth_flavors.begin(), m.auth_flavors.end(),
                   static_cast<uint32_t>(AuthFlavor::kSys)) != m.auth_flavors.end();
}

// A directory's handle in the client's cache, and when it was put there.
struct CachedDirectory {
  FileHandle handle;
  absl::Time cached_at;  // MonotonicNow()
};
using DirectoryCache = TtlCache<std::string, CachedDirectory>;

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
  std::unique_ptr<RuntimeDelayScheduler> timers;
  // Retries waiting out their back-off; drained by ~Impl.
  std::unique_ptr<DrainableDelayScheduler> retry_timers;
  // Guards retries (attempts after the first, which run on timer threads)
  // against the pool going away under them.
  Mutex retry_mu;
  bool closing ABSL_GUARDED_BY(retry_mu) = false;
  std::unique_ptr<RpcPool> pool;
  // Handles of directories paths pass through, by relative path; null
  // when directory_handle_time is zero.
  std::unique_ptr<DirectoryCache> directories;

  // The LOOKUP that Connect sends with the root's GETATTR and FSINFO for
  // the path the client is about to be asked about (NfsClient::Connect).
  // Only the client's first call may take it: LookupPath (or
  // LookupDirectory) of that very path takes its answer instead of asking
  // again; any other call, and ForgetDirectory, drops it, so no answer
  // older than the client's own changes is ever used.
  struct FirstLookup {
    std::string relative;  // as LookupPath keys it: "a/b/c"
    bool parent_cached = false;  // its directory came from the cache (the deep MNT)
    Future<NfsObject> result;
    absl::Time sent;  // MonotonicNow()
  };
  // Set while first_lookup holds one: every call checks it, the lock only then.
  std::atomic<bool> first_lookup_held{false};
  Mutex first_lookup_mu;
  std::optional<FirstLookup> first_lookup ABSL_GUARDED_BY(first_lookup_mu);

  std::optional<FirstLookup> TakeFirstLookup() {
    if (!first_lookup_held.load(std::memory_order_acquire)) return std::nullopt;
    MutexLock l(&first_lookup_mu);
    first_lookup_held.store(false, std::memory_order_relaxed);
    return std::exchange(first_lookup, std::nullopt);
  }
  // Sends the FirstLookup of the URL's path `url_path` (below the export)
  // if its directory's handle is known without a call.
  std::optional<FirstLookup> SendFirstLookup(NfsClient& client, std::string_view url_path);

  ~Impl() {
    {
      MutexLock l(&retry_mu);
      closing = true;
    }
    // Calls in flight end first (Cancelled; a retryable end schedules a
    // retry), then every waiting retry runs now, sees `closing` and ends
    // its call Cancelled: no callback runs after the client is gone.
    pool.reset();
    if (retry_timers != nullptr) retry_timers->Drain();
  }

  // Sends `call` on the pool, retrying an idempotent one that fails
  // Unavailable (see CallRetryPolicy); `done` gets the last result.
  // `o`: the call's pool options (idempotent, placer, payload).
  void CallWithRetries(std::string call, RpcCallOptions o, Callback<std::string> done) {
    if (!o.idempotent || options.timeouts.retry_window <= absl::ZeroDuration() || retry_timers == nullptr) {
      pool->CallAsync(std::move(call), std::move(done), o);
      return;
    }
    CallWithRetry<std::string>(
        CallRetryPolicy(options), *retry_timers,
        [this, call = std::move(call), o = std::move(o)](int attempt, Callback<std::string> cb) mutable {
          if (attempt == 1) {  // on the caller's thread, which holds the client
            pool->CallAsync(call, std::move(cb), o);
            return;
          }
          {
            MutexLock l(&retry_mu);
            if (!closing) {
              // CallAsync never runs `cb` inline, so holding the lock is safe.
              pool->CallAsync(call, std::move(cb), o);
              return;
            }
          }
          cb(absl::CancelledError("the NFS client was closed while the call waited to retry"));
        },
        std::move(done));
  }

  std::string Display(std::string_view relative) const {
    if (relative.empty()) return url_base;
    return absl::StrCat(url_base, "/", ToAbsl(relative));
  }

  // A RENAME's path for its messages, which Display in turn: "<from> ->
  // nfs://host/export/<to>".
  std::string RenamePath(std::string_view from, std::string_view to) const {
    return absl::StrCat(ToAbsl(from), " -> ", Display(to));
  }

  // Sends `args` as `op`; `finish(record, path) -> StatusOr<T>` turns the
  // reply record into the caller's value. Transport and RPC-level errors are
  // annotated with the procedure and path.
  template <typename T, typename Op, typename Finish>
  void Send(const Op& op, const typename Op::Args& args, std::string path, Finish finish,
            Callback<T> done, RpcReplyPlacer placer = nullptr) {
    // Not the first call's LOOKUP any more (FirstLookup).
    if (first_lookup_held.load(std::memory_order_relaxed)) TakeFirstLookup();
    std::string call;
    call.reserve(256);
    EncodeCallHeader(0, Nfs3Procedure(op.proc), cred, AuthNone(), &call);
    RpcCallOptions o{.idempotent = op.idempotent, .placer = std::move(placer)};
    if constexpr (requires { args.data; }) {
      // WRITE: the data goes out from the caller's buffer, not copied in,
      // or from the caller's file by sendfile.
      EncodeWriteArgsHead(args, &call);
      if (args.from_file.fd >= 0) {
        o.payload_file = args.from_file;
      } else {
        o.payload = args.data;
      }
      o.payload_at = call.size();
      call.append(xdr_internal::PaddingFor(args.count()), '\0');
    } else {
      op.encode(args, &call);
    }
    CallWithRetries(
        std::move(call), std::move(o),
        [this, proc = op.proc, path = std::move(path), finish = std::move(finish),
         done = std::move(done)](absl::StatusOr<std::string> record) mutable {
          if (!record.ok()) {
            done(Annotate(record.status(),
                          absl::StrCat("NFS3 ", ToAbsl(Nfs3Procedure(proc).procedure_name), " ",
                                       Display(path))));
            return;
          }
          done(finish(std::move(*record), path));
        });
  }

  // `record`'s results decoded as `op`'s, and NFS3_OK (see Check).
  template <typename Op>
  absl::StatusOr<typename Op::Result> Decode(const Op& op, const std::string& record,
                                             std::string_view path) const {
    FERRY_ASSIGN_OR_RETURN(std::string_view results, Results(record, op.proc, path));
    absl::StatusOr<typename Op::Result> r = op.decode(results);
    FERRY_RETURN_IF_ERROR(Check(r, op.proc, path));
    return r;
  }

  // Calls `op`; `convert(result) -> T` makes the caller's value of an OK reply.
  template <typename T, typename Op, typename Convert>
  void Call(const Op& op, const typename Op::Args& args, std::string path, Convert convert,
            Callback<T> done) {
    Send<T>(
        op, args, std::move(path),
        [this, &op, convert = std::move(convert)](std::string record,
                                                  const std::string& p) -> absl::StatusOr<T> {
          FERRY_ASSIGN_OR_RETURN(typename Op::Result r, Decode(op, record, p));
          return convert(std::move(r));
        },
        std::move(done));
  }

  // Call's blocking twin.
  template <typename T, typename Op, typename Convert>
  absl::StatusOr<T> CallBlocking(const Op& op, const typename Op::Args& args, std::string path,
                                 Convert convert) {
    return BlockOn<T>([&](Callback<T> cb) {
      Call<T>(op, args, std::move(path), std::move(convert), std::move(cb));
    });
  }

  // A blocking call that only succeeds or fails (REMOVE, RMDIR, RENAME).
  template <typename Op>
  absl::Status CallForStatus(const Op& op, const typename Op::Args& args, std::string path) {
    return CallBlocking<NfsDone>(op, args, std::move(path),
                                 [](const typename Op::Result&) { return NfsDone{}; })
        .status();
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

  // A READ whose data goes from the socket straight into `memory` or,
  // when file.fd >= 0, into the file range `file` (RpcReplyPlacer): its
  // bytes cross user space once, or never (a reply that arrives whole is
  // copied or written from its record). `placed` is how many the
  // attempt that answered placed (0: the reply came whole, and its data is
  // copied or written from the record).
  void ReadPlaced(const FileHandle& fh, uint64_t offset, absl::Span<char> memory, FileRange file,
                  std::string path, Callback<ReadIntoReply> done) {
    const bool into_file = file.fd >= 0;
    const size_t capacity = into_file ? file.size : memory.size();
    auto placed = std::make_shared<size_t>(0);
    RpcReplyPlacer placer = [memory, file, into_file, capacity, placed](std::string_view prefix) -> RpcPlacement {
      *placed = 0;
      if (prefix.empty()) return {};  // voided
      absl::StatusOr<RpcReply> reply = DecodeReply(prefix, Nfs3Procedure(Nfs3Proc::kRead));
      if (!reply.ok()) return {.decision = RpcPlacement::Decision::kAskAgain};
      absl::StatusOr<ReadHead> head = DecodeReadHead(reply->results);
      if (!head.ok()) return {.decision = RpcPlacement::Decision::kAskAgain};
      // Anything unusual is read whole, for its decode to name.
      if (head->status != Nfs3Status::kOk || head->data_size == 0 || head->data_size > capacity ||
          head->data_size != head->count) {
        return {};
      }
      *placed = head->data_size;
      RpcPlacement p{.decision = RpcPlacement::Decision::kPlace,
                     .offset = static_cast<size_t>(reply->results.data() - prefix.data()) + head->data_offset};
      if (into_file) {
        p.file = {.fd = file.fd, .offset = file.offset, .size = head->data_size, .write_lock = file.write_lock};
      } else {
        p.dest = memory.first(head->data_size);
      }
      return p;
    };
    Send<ReadIntoReply>(
        kReadCall, {.file = fh, .offset = offset, .count = static_cast<uint32_t>(capacity)},
        std::move(path),
        [this, memory, file, into_file, capacity, placed](
            std::string record, const std::string& p) -> absl::StatusOr<ReadIntoReply> {
          FERRY_ASSIGN_OR_RETURN(std::string_view results, Results(record, Nfs3Proc::kRead, p));
          absl::StatusOr<ReadResult> r = DecodeReadResult(results, *placed);
          FERRY_RETURN_IF_ERROR(Check(r, Nfs3Proc::kRead, p));
          if (*placed > 0) return ReadIntoReply{*placed, r->eof, r->attributes};
          if (r->data.size() > capacity) {
            return absl::DataLossError(absl::StrCat("NFS3 READ ", Display(p), ": asked ", capacity,
                                                    " bytes, got ", r->data.size()));
          }
          if (into_file) {
            absl::Status wrote = WriteIntoRange(file, 0, std::span<const char>(r->data.data(), r->data.size()));
            if (!wrote.ok()) {
              return io_internal::LocalFileWriteFailed(wrote,
                                                       absl::StrCat("NFS3 READ ", Display(p), ": writing its data"));
            }
          } else {
            std::memcpy(memory.data(), r->data.data(), r->data.size());
          }
          return ReadIntoReply{r->data.size(), r->eof, r->attributes};
        },
        std::move(done), std::move(placer));
  }

  // A MOUNT call on `pool` (Connect's, kept for its EXPORT and MNT), else
  // on a connection of its own.
  absl::StatusOr<std::string> MountCall(Mount3Proc proc, std::string_view args,
                                        RpcPool* pool = nullptr) {
    return MountResults(proc, pool != nullptr ? StartMountCall(proc, args, *pool).Get()
                                              : OneShotCall(*runtime, url.host, mount_port,
                                                            Mount3Procedure(proc), cred, args, options));
  }

  // MountCall's two halves, for calls in flight together.
  Future<std::string> StartMountCall(Mount3Proc proc, std::string_view args, RpcPool& pool) {
    return StartCallOn(pool, Mount3Procedure(proc), cred, args);
  }
  absl::StatusOr<std::string> MountResults(Mount3Proc proc, absl::StatusOr<std::string> record) {
    if (!record.ok()) return record.status();
    FERRY_ASSIGN_OR_RETURN(RpcReply reply, DecodeReply(*record, Mount3Procedure(proc)));
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
  if (options.directory_handle_time > absl::ZeroDuration()) {
    impl->directories = std::make_unique<DirectoryCache>(
        DirectoryCache::Options{
            .refresh_time = options.directory_handle_time,
            .negative_refresh_time = absl::ZeroDuration(),
            .max_entries = kMaxCachedDirectories});
  }
  impl->timers = std::make_unique<RuntimeDelayScheduler>(runtime);
  impl->retry_timers = std::make_unique<DrainableDelayScheduler>(*impl->timers);
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

  // Round trips in series are what a mount costs on a distant server (at
  // +1 ms each way, ~25 ms of a 0.24 s walk): the NFS connection is opened
  // now, while MOUNT is spoken (MOUNT's first: its answer comes first);
  // EXPORT and MNT share one connection, in flight together (below); the
  // root's GETATTR and FSINFO go out together.
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<RpcPool> mount_pool,
                         RpcPool::Create(runtime, PoolOptions(url.host, impl->mount_port, 1, 3,
                                                              options)));
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<RpcPool> nfs_pool,
                         RpcPool::Create(runtime, PoolOptions(url.host, nfs_port,
                                                              options.connections,
                                                              options.max_in_flight_per_connection,
                                                              options)));

  // The export: the longest exported path the URL's path lies under (EXPORT),
  // else the whole path (servers that hide their list may still mount it).
  // The MNT of the path's first component goes out with the EXPORT: the
  // usual export, one level deep ("/export", "/data"), is then mounted in
  // the round trip that finds it (a 1-byte get makes 4 round trips, not
  // 5). Another answer is mounted after; the guess, when it is an export,
  // stays in the server's list of mounts, which nothing reads but
  // `showmount`.
  //
  // A path deeper than that is MNTed in the same round trip too, as
  // libnfs mounts a file's directory: the directory the client's work
  // starts in (the URL's directory for a filesystem rooted at the export,
  // else the URL's path, the client's root). Servers resolve a MNT below
  // an export (ganesha, the kernel's), so its handle spares a LOOKUP per
  // level: `ferry-cp FILE nfs://h/export/a/b/FILE` makes one LOOKUP, not
  // three. Its answer is only a shortcut: refused or failed, the LOOKUPs
  // are made as before.
  impl->export_path = url.path;
  const std::string guess = FirstComponent(url.path);
  std::string guess_args;
  EncodeMountPathArgs(guess, &guess_args);
  const absl::Time sent = absl::Now();
  Future<std::string> exports_call = impl->StartMountCall(Mount3Proc::kExport, {}, *mount_pool);
  Future<std::string> guess_call = impl->StartMountCall(Mount3Proc::kMnt, guess_args, *mount_pool);
  const std::string deep = options.root_at_export ? ParentDirectory(url.path) : url.path;
  std::optional<Future<std::string>> deep_call;
  if (!deep.empty() && deep != guess && NfsPathIsUnder(deep, guess)) {
    std::string deep_args;
    EncodeMountPathArgs(deep, &deep_args);
    deep_call = impl->StartMountCall(Mount3Proc::kMnt, deep_args, *mount_pool);
  }
  if (absl::StatusOr<std::string> exports =
          impl->MountResults(Mount3Proc::kExport, std::move(exports_call).Get());
      exports.ok()) {
    absl::StatusOr<std::vector<ExportEntry>> list = DecodeExportResult(*exports);
    if (list.ok()) {
      size_t best = 0;
      for (const ExportEntry& e : *list) {
        std::string normal = e.path.size() > 1 && e.path.back() == '/'
                                 ? e.path.substr(0, e.path.size() - 1)
                                 : e.path;
        if (NfsPathIsUnder(url.path, normal) && normal.size() >= best) {
          best = normal.size();
          impl->export_path = normal;
        }
      }
    }
  }
  // Awaited either way: the pool goes next.
  absl::StatusOr<std::string> mnt = impl->MountResults(Mount3Proc::kMnt, std::move(guess_call).Get());
  // The deep MNT's answer, if it came: it went out with the others, so it
  // is waited for as long again as they took (50 ms at least), not for a
  // whole timeout: a server that never answers a MNT below its exports
  // costs that, and the levels are LOOKUPed.
  std::optional<absl::StatusOr<std::string>> deep_mnt;
  if (deep_call) {
    const absl::Time now = absl::Now();
    absl::StatusOr<std::string> r =
        deep_call->GetUntil(now + std::max(now - sent, kDeepMountGrace));
    if (!absl::IsDeadlineExceeded(r.status())) {
      deep_mnt = impl->MountResults(Mount3Proc::kMnt, std::move(r));
    }
  }
  if (impl->export_path == deep && deep_mnt) {
    // The export is the deep path (nested, or no list): already mounted.
    mnt = *std::move(deep_mnt);
    deep_mnt.reset();
  } else if (impl->export_path != guess) {
    std::string mnt_args;
    EncodeMountPathArgs(impl->export_path, &mnt_args);
    mnt = impl->MountCall(Mount3Proc::kMnt, mnt_args, mount_pool.get());
  }
  // The deep directory's handle, where the server gave it for AUTH_SYS.
  std::optional<FileHandle> deep_handle;
  if (deep_mnt && deep_mnt->ok()) {
    absl::StatusOr<MountResult> m = DecodeMountResult(**deep_mnt);
    if (m.ok() && m->status == Mount3Status::kOk && AcceptsAuthSys(*m)) {
      deep_handle = std::move(m->root);
    }
  }
  mount_pool.reset();
  if (!mnt.ok()) return Annotate(mnt.status(), absl::StrCat(where, ": MOUNT3 MNT ", impl->export_path));
  FERRY_ASSIGN_OR_RETURN(MountResult mounted, DecodeMountResult(*mnt));
  FERRY_RETURN_IF_ERROR(Mount3StatusToStatus(
      mounted.status, "MNT", NfsUrl{.host = url.host, .path = impl->export_path}.ToString()));
  if (!AcceptsAuthSys(mounted)) {
    return absl::PermissionDeniedError(
        absl::StrCat(where, ": the export ", impl->export_path, " does not accept AUTH_SYS"));
  }

  impl->pool = std::move(nfs_pool);
  std::unique_ptr<NfsClient> client(new NfsClient(std::move(impl)));
  Impl& m = *client->impl_;

  // Below the export: LOOKUP each remaining component. The display base is
  // still the URL, so errors here name the component as a URL path.
  m.root_handle = mounted.root;
  if (options.root_at_export) {
    m.url.path = m.export_path;
    m.url_base = NfsUrl{.host = url.host, .path = m.export_path}.ToString();
  }
  std::string_view below =
      options.root_at_export ? std::string_view() : NfsPathBelow(url.path, m.export_path);
  // What the deep MNT found, below the export: the client's root itself,
  // or (rooted at the export) a directory for the cache.
  if (deep_handle && deep != m.export_path && NfsPathIsUnder(deep, m.export_path)) {
    if (!options.root_at_export) {
      m.root_handle = *std::move(deep_handle);
      below = {};
    } else if (m.directories != nullptr) {
      m.directories->Put(std::string(NfsPathBelow(deep, m.export_path)),
                         {*std::move(deep_handle), MonotonicNow()});
    }
  }
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

  Promise<Fattr3> attributes;
  Future<Fattr3> attributes_done = attributes.GetFuture();
  client->GetAttrAsync(m.root_handle, "", std::move(attributes).AsCallback());
  // The URL's own path is what a client rooted at the export is asked
  // about first (the file a copy stats, the folder a walk lists): its
  // LOOKUP rides in this round trip instead of taking one of its own.
  std::optional<Impl::FirstLookup> first =
      options.root_at_export && options.directory_handle_time > absl::ZeroDuration()
          ? m.SendFirstLookup(*client, url.path)
          : std::nullopt;
  absl::StatusOr<FsInfo> fsinfo = client->FsInfoOf(m.root_handle, "");
  absl::StatusOr<Fattr3> root_attributes = std::move(attributes_done).Get();
  FERRY_ASSIGN_OR_RETURN(m.root_attributes, std::move(root_attributes));
  FERRY_ASSIGN_OR_RETURN(m.fsinfo, std::move(fsinfo));
  if (m.fsinfo.rtmax == 0) m.fsinfo.rtmax = kFallbackTransferSize;
  if (m.fsinfo.wtmax == 0) m.fsinfo.wtmax = kFallbackTransferSize;
  if (first) {
    MutexLock l(&m.first_lookup_mu);
    m.first_lookup = *std::move(first);
    m.first_lookup_held.store(true, std::memory_order_release);
  }
  return client;
}

std::optional<NfsClient::Impl::FirstLookup> NfsClient::Impl::SendFirstLookup(
    NfsClient& client, std::string_view url_path) {
  const std::vector<absl::string_view> components =
      absl::StrSplit(ToAbsl(NfsPathBelow(url_path, export_path)), '/', absl::SkipEmpty());
  if (components.empty()) return std::nullopt;  // the export itself: nothing to ask
  for (const absl::string_view c : components) {
    if (c == "." || c == "..") return std::nullopt;  // LookupPath's key would differ
  }
  const std::string relative = absl::StrJoin(components, "/");
  const std::string_view name = ToStd(components.back());
  const std::string parent = ParentDirectory(relative);
  // Its directory: the root, or the one the deep MNT put in the cache.
  // Directories further up would take LOOKUPs in series: LookupPath's work.
  FileHandle dir = root_handle;
  if (!parent.empty()) {
    std::shared_ptr<const CachedDirectory> cached =
        directories != nullptr ? directories->TryGetFresh(parent) : nullptr;
    if (cached == nullptr) return std::nullopt;
    dir = cached->handle;
  }
  Promise<NfsObject> p;
  FirstLookup first{.relative = relative,
                    .parent_cached = !parent.empty(),
                    .result = p.GetFuture(),
                    .sent = MonotonicNow()};
  client.LookupAsync(dir, name, relative,
                     std::move(p).AsCallback());
  return first;
}

const NfsUrl& NfsClient::url() const { return impl_->url; }
const std::string& NfsClient::export_path() const { return impl_->export_path; }
const FileHandle& NfsClient::root_handle() const { return impl_->root_handle; }
const Fattr3& NfsClient::root_attributes() const { return impl_->root_attributes; }
const FsInfo& NfsClient::fsinfo() const { return impl_->fsinfo; }
Runtime& NfsClient::runtime() const { return *impl_->runtime; }
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
  impl_->Call<NfsDone>(kNullCall, {}, "", [](NullResult) { return NfsDone{}; }, std::move(done));
}

void NfsClient::GetAttrAsync(const FileHandle& fh, std::string path, Callback<Fattr3> done) {
  impl_->Call<Fattr3>(
      kGetAttrCall, {.object = fh}, std::move(path),
      [](GetAttrResult r) { return r.attributes; }, std::move(done));
}

void NfsClient::LookupAsync(const FileHandle& dir, std::string_view name, std::string path,
                            Callback<NfsObject> done) {
  impl_->Call<NfsObject>(
      kLookupCall, {.dir = dir, .name = name}, std::move(path),
      [](LookupResult r) { return NfsObject{std::move(r.object), r.object_attributes}; },
      std::move(done));
}

void NfsClient::AccessAsync(const FileHandle& fh, uint32_t mask, std::string path,
                            Callback<uint32_t> done) {
  impl_->Call<uint32_t>(
      kAccessCall, {.object = fh, .access = mask}, std::move(path),
      [](AccessResult r) { return r.access; }, std::move(done));
}

void NfsClient::ReaddirplusAsync(const FileHandle& dir, uint64_t cookie, uint64_t cookieverf,
                                 uint32_t dircount, uint32_t maxcount, std::string path,
                                 Callback<ReaddirplusPage> done) {
  const ReaddirplusArgs args{.dir = dir,
                             .cookie = cookie,
                             .cookieverf = cookieverf,
                             .dircount = dircount == 0 ? readdir_dircount() : dircount,
                             .maxcount = maxcount == 0 ? readdir_maxcount() : maxcount};
  // The page owns the record its entries view, so it is decoded in place.
  impl_->Send<ReaddirplusPage>(
      kReaddirplusCall, args, std::move(path),
      [this](std::string record, const std::string& p) -> absl::StatusOr<ReaddirplusPage> {
        ReaddirplusPage page;
        page.record = std::make_unique<std::string>(std::move(record));
        FERRY_ASSIGN_OR_RETURN(page.result, impl_->Decode(kReaddirplusCall, *page.record, p));
        return page;
      },
      std::move(done));
}

void NfsClient::ReadAsync(const FileHandle& fh, uint64_t offset, uint32_t count, std::string path,
                          Callback<ReadReply> done) {
  impl_->Call<ReadReply>(
      kReadCall, {.file = fh, .offset = offset, .count = count}, std::move(path),
      [](ReadResult r) { return ReadReply{std::string(r.data), r.eof}; }, std::move(done));
}

void NfsClient::ReadIntoAsync(const FileHandle& fh, uint64_t offset, absl::Span<char> dest,
                              std::string path, Callback<ReadIntoReply> done) {
  impl_->ReadPlaced(fh, offset, dest, FileRange{}, std::move(path), std::move(done));
}

void NfsClient::ReadIntoFileAsync(const FileHandle& fh, uint64_t offset, FileRange to,
                                  std::string path, Callback<ReadIntoReply> done) {
  impl_->ReadPlaced(fh, offset, absl::Span<char>(), to, std::move(path), std::move(done));
}

void NfsClient::WriteAsync(const FileHandle& fh, uint64_t offset, std::string_view data,
                           StableHow stable, std::string path, Callback<WriteReply> done) {
  impl_->Call<WriteReply>(kWriteCall, {.file = fh, .offset = offset, .stable = stable, .data = data},
                          std::move(path), WriteReplyOf, std::move(done));
}

void NfsClient::CommitAsync(const FileHandle& fh, uint64_t offset, uint32_t count,
                            std::string path, Callback<uint64_t> done) {
  impl_->Call<uint64_t>(
      kCommitCall, {.file = fh, .offset = offset, .count = count}, std::move(path),
      [](CommitResult r) { return r.verifier; }, std::move(done));
}

// --- Blocking -----------------------------------------------------------------

absl::Status NfsClient::Null() {
  return BlockOn<NfsDone>([this](Callback<NfsDone> cb) { NullAsync(std::move(cb)); }).status();
}

absl::StatusOr<Fattr3> NfsClient::GetAttr(const FileHandle& fh, std::string_view path) {
  return BlockOn<Fattr3>(
      [&](Callback<Fattr3> cb) { GetAttrAsync(fh, std::string(path), std::move(cb)); });
}

absl::StatusOr<NfsObject> NfsClient::Lookup(const FileHandle& dir, std::string_view name,
                                            std::string_view path) {
  return BlockOn<NfsObject>(
      [&](Callback<NfsObject> cb) { LookupAsync(dir, name, std::string(path), std::move(cb)); });
}

absl::StatusOr<NfsObject> NfsClient::LookupPath(std::string_view relative) {
  return LookupPathRetryingStale(relative, /*cache_last=*/false);
}

absl::StatusOr<NfsObject> NfsClient::LookupDirectory(std::string_view relative) {
  return LookupPathRetryingStale(relative, /*cache_last=*/true);
}

absl::StatusOr<NfsObject> NfsClient::LookupPathRetryingStale(std::string_view relative,
                                                             bool cache_last) {
  bool used_cached = false;
  absl::StatusOr<NfsObject> found =
      LookupPathOnce(relative, /*use_cache=*/true, cache_last, &used_cached);
  // A cached directory that went stale (removed, by another client, since
  // it was cached): forget them all and look every component up.
  if (used_cached && !found.ok() && GetNfs3Status(found.status()) == Nfs3Status::kStale) {
    ForgetDirectory("");
    found = LookupPathOnce(relative, /*use_cache=*/false, cache_last, &used_cached);
  }
  return found;
}

absl::StatusOr<NfsObject> NfsClient::LookupPathOnce(std::string_view relative, bool use_cache,
                                                    bool cache_last, bool* used_cached) {
  DirectoryCache* const cache = use_cache ? impl_->directories.get() : nullptr;
  const std::vector<absl::string_view> components =
      absl::StrSplit(ToAbsl(relative), '/', absl::SkipEmpty());
  // The path as the cache keys it ("a/b/c"), and where each prefix ends.
  const std::string joined = absl::StrJoin(components, "/");
  // The client's first call, about the path Connect looked up ahead: that
  // answer, if it is recent (a LOOKUP of now would have been sent after it)
  // and says what the path is, or that it is not there, or that the server
  // did not answer for a whole call's timeout (asking again would double
  // the caller's wait). Other failures (a reset, a server error) are not
  // passed on: the path is asked again.
  if (std::optional<Impl::FirstLookup> ahead = impl_->TakeFirstLookup();
      ahead && use_cache && ahead->relative == joined &&
      MonotonicNow() - ahead->sent <=
          std::min(kFirstLookupLife, impl_->options.directory_handle_time)) {
    absl::StatusOr<NfsObject> found = std::move(ahead->result).Get();
    if (found.ok() || absl::IsNotFound(found.status()) ||
        absl::IsDeadlineExceeded(found.status())) {
      *used_cached = ahead->parent_cached;
      if (found.ok() && cache_last && impl_->directories != nullptr && found->attributes &&
          found->attributes->type == FileType::kDirectory) {
        impl_->directories->Put(joined, {found->handle, ahead->sent});
      }
      return found;
    }
  }
  std::vector<size_t> ends;
  ends.reserve(components.size());
  for (const absl::string_view c : components) {
    ends.push_back((ends.empty() ? 0 : ends.back() + 1) + c.size());
  }
  NfsObject current{impl_->root_handle, impl_->root_attributes};
  // From the deepest cacheable directory on the way that is cached (the
  // deep MNT seeds one without its parents): each level is asked of the
  // cache once, then only LOOKUPs follow.
  size_t first = 0;
  if (cache != nullptr && !components.empty()) {
    for (size_t n = cache_last ? components.size() : components.size() - 1; n > 0; --n) {
      if (std::shared_ptr<const CachedDirectory> d =
              cache->TryGetFresh(joined.substr(0, ends[n - 1]))) {
        current = NfsObject{d->handle, std::nullopt};
        *used_cached = true;
        first = n;
        break;
      }
    }
  }
  for (size_t i = first; i < components.size(); ++i) {
    const std::string walked = joined.substr(0, ends[i]);
    FERRY_ASSIGN_OR_RETURN(current, Lookup(current.handle, ToStd(components[i]), walked));
    const bool cacheable = i + 1 < components.size() || cache_last;
    if (impl_->directories != nullptr && cacheable && current.attributes &&
        current.attributes->type == FileType::kDirectory) {
      impl_->directories->Put(walked, {current.handle, MonotonicNow()});
    }
  }
  return current;
}

bool NfsClient::HasCachedDirectory(std::string_view relative, absl::Duration max_age) {
  if (impl_->directories == nullptr) return false;
  std::shared_ptr<const CachedDirectory> d = impl_->directories->TryGetFresh(std::string(relative));
  return d != nullptr && MonotonicNow() - d->cached_at <= max_age;
}

void NfsClient::ForgetDirectory(std::string_view relative) {
  impl_->TakeFirstLookup();  // it may have been found through what is forgotten
  if (impl_->directories == nullptr) return;
  if (relative.empty()) {
    impl_->directories->InvalidateAll();
  } else {
    impl_->directories->InvalidatePrefix(relative);
  }
}

absl::StatusOr<uint32_t> NfsClient::Access(const FileHandle& fh, uint32_t mask,
                                           std::string_view path) {
  return BlockOn<uint32_t>(
      [&](Callback<uint32_t> cb) { AccessAsync(fh, mask, std::string(path), std::move(cb)); });
}

absl::StatusOr<ReaddirplusPage> NfsClient::Readdirplus(const FileHandle& dir, uint64_t cookie,
                                                       uint64_t cookieverf,
                                                       std::string_view path) {
  return BlockOn<ReaddirplusPage>([&](Callback<ReaddirplusPage> cb) {
    ReaddirplusAsync(dir, cookie, cookieverf, 0, 0, std::string(path), std::move(cb));
  });
}

absl::StatusOr<ReadReply> NfsClient::Read(const FileHandle& fh, uint64_t offset, uint32_t count,
                                          std::string_view path) {
  return BlockOn<ReadReply>([&](Callback<ReadReply> cb) {
    ReadAsync(fh, offset, count, std::string(path), std::move(cb));
  });
}

absl::StatusOr<ReadIntoReply> NfsClient::ReadInto(const FileHandle& fh, uint64_t offset,
                                                  absl::Span<char> dest, std::string_view path) {
  return BlockOn<ReadIntoReply>([&](Callback<ReadIntoReply> cb) {
    ReadIntoAsync(fh, offset, dest, std::string(path), std::move(cb));
  });
}

absl::StatusOr<WriteReply> NfsClient::Write(const FileHandle& fh, uint64_t offset,
                                            std::string_view data, StableHow stable,
                                            std::string_view path) {
  return BlockOn<WriteReply>([&](Callback<WriteReply> cb) {
    WriteAsync(fh, offset, data, stable, std::string(path), std::move(cb));
  });
}

absl::StatusOr<WriteReply> NfsClient::WriteFromFile(const FileHandle& fh, uint64_t offset, int fd,
                                                    int64_t fd_offset, size_t n, StableHow stable,
                                                    std::string_view path) {
  return BlockOn<WriteReply>([&](Callback<WriteReply> cb) {
    impl_->Call<WriteReply>(kWriteCall,
                            {.file = fh,
                             .offset = offset,
                             .stable = stable,
                             .from_file = {.fd = fd, .offset = fd_offset, .size = n}},
                            std::string(path), WriteReplyOf, std::move(cb));
  });
}

absl::StatusOr<uint64_t> NfsClient::Commit(const FileHandle& fh, uint64_t offset, uint32_t count,
                                           std::string_view path) {
  return BlockOn<uint64_t>([&](Callback<uint64_t> cb) {
    CommitAsync(fh, offset, count, std::string(path), std::move(cb));
  });
}

namespace {
// CREATE and MKDIR. The handle is optional on the wire: LOOKUP it if the
// server left it out.
template <typename Op>
absl::StatusOr<NfsObject> MakeObject(NfsClient& client, NfsClient::Impl& impl, const Op& op,
                                     const typename Op::Args& args, std::string_view path) {
  FERRY_ASSIGN_OR_RETURN(
      NfsObject created,
      impl.CallBlocking<NfsObject>(op, args, std::string(path), [](CreateResult r) {
        return NfsObject{r.object.value_or(""), r.attributes};
      }));
  if (created.handle.empty()) {
    return client.Lookup(FileHandle(args.where.dir), args.where.name, path);
  }
  return created;
}
}  // namespace

absl::StatusOr<NfsObject> NfsClient::Create(const FileHandle& dir, std::string_view name,
                                            uint32_t mode, bool exclusive, bool truncate,
                                            std::string_view path) {
  CreateArgs args{.where = {.dir = dir, .name = name},
                  .mode = exclusive ? CreateMode::kGuarded : CreateMode::kUnchecked};
  args.attrs.mode = mode;
  if (truncate) args.attrs.size = 0;
  return MakeObject(*this, *impl_, kCreateCall, args, path);
}

absl::StatusOr<NfsObject> NfsClient::Mkdir(const FileHandle& dir, std::string_view name,
                                           uint32_t mode, std::string_view path) {
  MkdirArgs args{.where = {.dir = dir, .name = name}};
  args.attrs.mode = mode;
  return MakeObject(*this, *impl_, kMkdirCall, args, path);
}

absl::Status NfsClient::Remove(const FileHandle& dir, std::string_view name,
                               std::string_view path) {
  return impl_->CallForStatus(kRemoveCall, {.dir = dir, .name = name}, std::string(path));
}

absl::Status NfsClient::SetAttr(const FileHandle& fh, const Sattr3& attrs,
                                std::string_view path) {
  return impl_->CallForStatus(kSetAttrCall, {.object = fh, .attrs = attrs}, std::string(path));
}

absl::Status NfsClient::Rmdir(const FileHandle& dir, std::string_view name,
                              std::string_view path) {
  return impl_->CallForStatus(kRmdirCall, {.dir = dir, .name = name}, std::string(path));
}

absl::Status NfsClient::Rename(const FileHandle& from_dir, std::string_view from_name,
                               const FileHandle& to_dir, std::string_view to_name,
                               std::string_view from_path, std::string_view to_path) {
  return impl_->CallForStatus(
      kRenameCall,
      {.from = {.dir = from_dir, .name = from_name}, .to = {.dir = to_dir, .name = to_name}},
      impl_->RenamePath(from_path, to_path));
}

NfsClient::SetAttrAndRenameResult NfsClient::SetAttrAndRename(
    const FileHandle& fh, const Sattr3& attrs, std::string_view path, const FileHandle& from_dir,
    std::string_view from_name, const FileHandle& to_dir, std::string_view to_name,
    std::string_view to_path) {
  const auto done = [](const auto&) { return NfsDone{}; };
  Promise<NfsDone> set_attr;
  Promise<NfsDone> rename;
  Future<NfsDone> set_attr_done = set_attr.GetFuture();
  Future<NfsDone> rename_done = rename.GetFuture();
  impl_->Call<NfsDone>(kSetAttrCall, {.object = fh, .attrs = attrs}, std::string(path), done,
                       std::move(set_attr).AsCallback());
  impl_->Call<NfsDone>(
      kRenameCall,
      {.from = {.dir = from_dir, .name = from_name}, .to = {.dir = to_dir, .name = to_name}},
      impl_->RenamePath(path, to_path), done,
      std::move(rename).AsCallback());
  SetAttrAndRenameResult result;
  result.set_attr = std::move(set_attr_done).Get().status();
  result.rename = std::move(rename_done).Get().status();
  return result;
}

absl::StatusOr<FsInfo> NfsClient::FsInfoOf(const FileHandle& fh, std::string_view path) {
  return impl_->CallBlocking<FsInfo>(kFsInfoCall, {.object = fh}, std::string(path),
                                     [](FsInfoResult r) { return r.fsinfo; });
}

absl::StatusOr<FsStat> NfsClient::FsStatOf(const FileHandle& fh, std::string_view path) {
  return impl_->CallBlocking<FsStat>(kFsStatCall, {.object = fh}, std::string(path),
                                     [](FsStatResult r) { return r.fsstat; });
}

}  // namespace ferry::nfs
