// ferry-cp: copies files between the local filesystem and S3 or NFS, with
// many requests in flight per file and several files at once.
//
//   ferry-cp /tmp/big.bin s3://bucket/dir/              upload (key dir/big.bin)
//   ferry-cp s3://bucket/dir/big.bin /tmp/              download
//   ferry-cp -r /data/tree s3://bucket/tree/ --jobs=8   a tree, 8 files at once
//   ferry-cp -r s3://bucket/tree/ /data/copy            and back (ListObjectsV2)
//   ferry-cp --range=1048576:1024 s3://bucket/big.bin -  1 KiB from the middle
//   ferry-cp 'nfs://127.0.0.1/export/big.bin?nfsport=2049&mountport=20048' /tmp/big.bin
//
// Options:
//   -r, --recursive     copy a directory or an S3 prefix (its contents go
//                       under DST, as with `aws s3 cp --recursive`)
//   --jobs=N            files copied at once (default 4); they share one
//                       Runtime, one S3Client and its memory budget
//   --chunk-mib=N       S3 part / ranged-GET size (default 8; the S3Client
//                       caps it so 4 x concurrency chunks fit the budget)
//   --concurrency=N     S3 requests in flight per file (default 10)
//   --memory-mib=N      the Runtime's memory budget (default 512)
//   --idle-buffer-mib=N transfer buffers kept for reuse between chunks,
//                       parts and files (default: a quarter of the budget;
//                       0: none)
//   --parallelism=N     NFS chunks in flight (default 16)
//   --range=OFF:LEN     read LEN bytes at OFF of one S3 object (DST may be -)
//   --make-bucket       create the destination bucket if it is missing
//   --progress          a progress bar on stderr even when it is no tty
//   --quiet             no progress bar, no summary (errors only)
//   --json              one JSON summary line on stdout instead of the text
//
// S3 credentials, region and endpoint come from the AWS environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL,
// ~/.aws profiles), as the AWS CLI reads them. A destination ending in '/'
// (or an existing local directory) gets the source's file name. Exit status:
// 0 if every file was copied, 1 if any failed (one line per failure on
// stderr), 2 for a usage error.
//
// Endpoints are kinds (local, s3, nfs). Every copy has one local side and
// one remote side; a remote kind knows how to fetch an object to a local
// file, store a local file as an object and list a prefix, and main() only
// picks the pair. The library does the work: this program parses, plans
// the file list, runs it and presents the figures.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_copy.h"
#include "ferry/nfs/nfs_url.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"
#include "ferry/s3/s3_client.h"
#include "ferry/s3/s3_config.h"
#include "ferry/transfer/file_transfer.h"
#include "ferry/transfer/object_file_table.h"

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// ---------------------------------------------------------------------------
// Command line

enum class ProgressMode { kAuto, kOn, kOff };

struct ByteRange {
  int64_t offset = 0;
  int64_t length = 0;
};

struct CpOptions {
  bool recursive = false;
  // Files at once. 4 keeps a tree of small files busy without multiplying
  // the requests in flight past what one server answers well.
  int jobs = 4;
  // 8 MiB parts and 10 requests in flight: the AWS CLI's defaults, so the
  // two are compared like for like; 10 x 8 MiB per file is 80 MiB of
  // buffers, well inside the default budget.
  int64_t chunk_bytes = 8 * kMiB;
  int concurrency = 10;
  int64_t memory_budget_bytes = 512 * kMiB;
  int64_t idle_buffer_bytes = -1;  // RuntimeOptions' default
  int nfs_parallelism = 16;
  std::optional<ByteRange> range;
  bool make_bucket = false;
  ProgressMode progress = ProgressMode::kAuto;
  bool json = false;
  std::vector<std::string> operands;
};

constexpr char kUsage[] =
    "usage: ferry-cp [-r] [--jobs=N] [--chunk-mib=N] [--concurrency=N] [--memory-mib=N]\n"
    "                [--idle-buffer-mib=N] [--parallelism=N] [--range=OFF:LEN] [--make-bucket]\n"
    "                [--progress|--quiet] [--json] SRC DST\n"
    "  SRC/DST: a local path, s3://bucket/key or nfs://host/export/path?...;\n"
    "  one side local, the other remote\n";

// "--name=VALUE" -> VALUE if `arg` starts with "--name=".
std::optional<std::string_view> FlagValue(std::string_view arg, std::string_view name) {
  if (arg.size() <= name.size() + 3 || arg.substr(0, 2) != "--" ||
      arg.substr(2, name.size()) != name || arg[2 + name.size()] != '=') {
    return std::nullopt;
  }
  return arg.substr(name.size() + 3);
}

// A whole number of at least `min` (0 or 1), named in the error as "a
// number >= 0" or "a positive number".
template <typename Int>
absl::Status ParseAtLeast(std::string_view flag, std::string_view text, int64_t min, Int* out) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(ferry::ToAbsl(text), &v) || v < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", ferry::ToAbsl(flag), " wants ",
                     min > 0 ? "a positive number" : "a number >= 0", ", got '",
                     ferry::ToAbsl(text), "'"));
  }
  *out = static_cast<Int>(v);
  return absl::OkStatus();
}

template <typename Int>
absl::Status ParsePositive(std::string_view flag, std::string_view text, Int* out) {
  return ParseAtLeast(flag, text, 1, out);
}

absl::StatusOr<ByteRange> ParseRange(std::string_view text) {
  const size_t colon = text.find(':');
  ByteRange r;
  if (colon == std::string_view::npos ||
      !absl::SimpleAtoi(ferry::ToAbsl(text.substr(0, colon)), &r.offset) ||
      !absl::SimpleAtoi(ferry::ToAbsl(text.substr(colon + 1)), &r.length) || r.offset < 0 ||
      r.length <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--range wants OFFSET:LENGTH (LENGTH > 0), got '", ferry::ToAbsl(text), "'"));
  }
  return r;
}

absl::StatusOr<CpOptions> ParseArgs(int argc, char** argv) {
  CpOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::optional<std::string_view> v;
    if (a == "-r" || a == "-R" || a == "--recursive") {
      o.recursive = true;
    } else if (a == "--progress") {
      o.progress = ProgressMode::kOn;
    } else if (a == "--quiet" || a == "-q") {
      o.progress = ProgressMode::kOff;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--make-bucket") {
      o.make_bucket = true;
    } else if ((v = FlagValue(a, "jobs"))) {
      FERRY_RETURN_IF_ERROR(ParsePositive("jobs", *v, &o.jobs));
    } else if ((v = FlagValue(a, "chunk-mib"))) {
      FERRY_RETURN_IF_ERROR(ParsePositive("chunk-mib", *v, &o.chunk_bytes));
      o.chunk_bytes *= kMiB;
    } else if ((v = FlagValue(a, "concurrency"))) {
      FERRY_RETURN_IF_ERROR(ParsePositive("concurrency", *v, &o.concurrency));
    } else if ((v = FlagValue(a, "memory-mib"))) {
      FERRY_RETURN_IF_ERROR(ParsePositive("memory-mib", *v, &o.memory_budget_bytes));
      o.memory_budget_bytes *= kMiB;
    } else if ((v = FlagValue(a, "idle-buffer-mib"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("idle-buffer-mib", *v, 0, &o.idle_buffer_bytes));
      o.idle_buffer_bytes *= kMiB;
    } else if ((v = FlagValue(a, "parallelism"))) {
      FERRY_RETURN_IF_ERROR(ParsePositive("parallelism", *v, &o.nfs_parallelism));
    } else if ((v = FlagValue(a, "range"))) {
      FERRY_ASSIGN_OR_RETURN(o.range, ParseRange(*v));
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", ferry::ToAbsl(a)));
    } else {
      o.operands.emplace_back(a);
    }
  }
  if (o.operands.size() != 2) {
    return absl::InvalidArgumentError("expected exactly two operands, SRC and DST");
  }
  if (o.range && o.recursive) return absl::InvalidArgumentError("--range reads one object, not -r");
  return o;
}

// ---------------------------------------------------------------------------
// Endpoints

enum class Kind { kLocal, kS3, kNfs };

// One side of a copy, as the user wrote it.
struct Endpoint {
  Kind kind = Kind::kLocal;
  std::string text;  // as given
  // kLocal: the path. kS3: "bucket/key" (key possibly empty or ending in
  // '/'). kNfs: the path below the export, from the URL.
  std::string path;
  ferry::nfs::NfsUrl nfs;  // kNfs: the URL (path = the export root's)
  // Written as a directory: trailing '/', an S3 bucket alone, an existing
  // local directory.
  bool is_dir = false;
};

std::string_view BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "a/b" + "c" -> "a/b/c"; "a/b/" + "c" -> "a/b/c"; "" + "c" -> "c".
std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(ferry::ToAbsl(dir), ferry::ToAbsl(name));
  return absl::StrCat(ferry::ToAbsl(dir), "/", ferry::ToAbsl(name));
}

absl::StatusOr<Endpoint> ParseEndpoint(const std::string& text) {
  Endpoint e;
  e.text = text;
  if (text.rfind("s3://", 0) == 0) {
    e.kind = Kind::kS3;
    FERRY_ASSIGN_OR_RETURN(e.path, ferry::s3::S3UrlToKey(text));
    // "bucket" alone is the bucket's root: make it "bucket/" so that every
    // S3 path has the form bucket/key.
    if (e.path.find('/') == std::string::npos) e.path += '/';
    e.is_dir = e.path.back() == '/';
    return e;
  }
  if (text.rfind("nfs://", 0) == 0) {
    e.kind = Kind::kNfs;
    const std::string_view before_query = std::string_view(text).substr(0, text.find('?'));
    e.is_dir = before_query.back() == '/';
    FERRY_ASSIGN_OR_RETURN(e.nfs, ferry::nfs::ParseNfsUrl(text));
    // The client is rooted at the parent directory; path is the file name.
    const std::string full = e.nfs.path;
    const size_t slash = full.rfind('/');
    e.path = e.is_dir ? "" : full.substr(slash + 1);
    e.nfs.path = e.is_dir ? full : (slash == 0 ? "/" : full.substr(0, slash));
    return e;
  }
  if (text.find("://") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("unknown URL scheme in ", text));
  }
  e.kind = Kind::kLocal;
  e.path = text;
  std::error_code ec;
  e.is_dir = (!text.empty() && text.back() == '/') || std::filesystem::is_directory(text, ec);
  return e;
}

// ---------------------------------------------------------------------------
// Remote kinds: how each fetches, stores and lists

// What ferry-cp reports per file, whatever the kind.
using ProgressFn = absl::FunctionRef<void(int64_t done, int64_t total)>;

struct RemoteObject {
  std::string path;  // relative to the listed directory
  int64_t size = 0;
};

// What --range read, and what it cost.
struct RangeRead {
  std::string bytes;
  int64_t object_size = 0;
  int64_t bytes_from_store = 0;  // response body bytes the store sent
};

// One remote side. Thread-safe: the copy workers call it concurrently.
class Remote {
 public:
  virtual ~Remote() = default;
  // The remote `path` as the user would write it, for messages.
  virtual std::string Label(std::string_view path) const = 0;
  // Copies remote `path` to `local_path` (created or replaced).
  virtual absl::StatusOr<ferry::TransferStats> Fetch(std::string_view path,
                                                     const std::string& local_path,
                                                     ProgressFn progress) = 0;
  // Copies `local_path` to remote `path` (created or replaced).
  virtual absl::StatusOr<ferry::TransferStats> Store(const std::string& local_path,
                                                     std::string_view path,
                                                     ProgressFn progress) = 0;
  // Every object below directory `dir`, recursively, paths relative to it.
  virtual absl::StatusOr<std::vector<RemoteObject>> List(std::string_view dir) = 0;
  // Lets `dir` receive objects (S3 with --make-bucket: creates the bucket).
  virtual absl::Status PrepareTarget(std::string_view /*dir*/) { return absl::OkStatus(); }
  // `range` of object `path`, moving as few bytes as the kind can.
  virtual absl::StatusOr<RangeRead> ReadRange(std::string_view /*path*/, ByteRange /*range*/) {
    return absl::UnimplementedError("--range is offered for s3:// sources only");
  }
};

// S3 through one S3Client: every file of the run shares its connections,
// its download manager and the Runtime's memory budget.
class S3Remote : public Remote {
 public:
  static absl::StatusOr<std::unique_ptr<Remote>> Open(ferry::Runtime& runtime,
                                                      const CpOptions& options) {
    FERRY_ASSIGN_OR_RETURN(ferry::s3::S3Config config,
                           ferry::s3::S3Config::FromEnvironment(
                               ferry::s3::S3Config::ProcessEnvironment()));
    config.mpu_chunk_bytes = options.chunk_bytes;
    config.mpu_threads = options.concurrency;
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::s3::S3Client> client,
                           ferry::s3::S3Client::Create(runtime, config));
    return std::unique_ptr<Remote>(new S3Remote(std::move(client), options));
  }

  std::string Label(std::string_view path) const override {
    return absl::StrCat("s3://", ferry::ToAbsl(path));
  }

  absl::StatusOr<ferry::TransferStats> Fetch(std::string_view path, const std::string& local_path,
                                             ProgressFn progress) override {
    return client_->Download(path, local_path, TransferOptionsFor(progress));
  }

  absl::StatusOr<ferry::TransferStats> Store(const std::string& local_path, std::string_view path,
                                             ProgressFn progress) override {
    return client_->Upload(local_path, path, TransferOptionsFor(progress));
  }

  absl::StatusOr<std::vector<RemoteObject>> List(std::string_view dir) override {
    const size_t slash = dir.find('/');
    const std::string_view bucket = dir.substr(0, slash);
    const std::string_view prefix = dir.substr(slash + 1);
    FERRY_ASSIGN_OR_RETURN(std::vector<ferry::s3::ListedObject> listed,
                           client_->store().ListAllObjects(bucket, prefix));
    std::vector<RemoteObject> objects;
    for (ferry::s3::ListedObject& o : listed) {
      // Keys ending in '/' are the "folder" markers consoles create: no data.
      if (o.key.empty() || o.key.back() == '/') continue;
      objects.push_back({o.key.substr(prefix.size()), o.size});
    }
    return objects;
  }

  absl::Status PrepareTarget(std::string_view dir) override {
    if (!make_bucket_) return absl::OkStatus();
    const std::string bucket(dir.substr(0, dir.find('/')));
    ferry::Promise<bool> created;
    ferry::Future<bool> done = created.GetFuture();
    client_->store().CreateBucket(bucket, [&created](absl::Status s) {
      if (s.ok() || absl::IsAlreadyExists(s)) {
        created.Set(true);
      } else {
        created.Set(std::move(s));
      }
    });
    return std::move(done).Get().status();
  }

  absl::StatusOr<RangeRead> ReadRange(std::string_view path, ByteRange range) override {
    // Through the object file table, as a POSIX reader would: one reader
    // alone moves only the bytes it reads (no read-ahead).
    const int64_t received_before = client_->store().body_bytes_received();
    ferry::ObjectFileTable& files = client_->files();
    FERRY_ASSIGN_OR_RETURN(int fd, files.Open(path, ferry::OpenMode::kRead));
    absl::StatusOr<RangeRead> out = ReadOpened(files, fd, range);
    const absl::Status closed = files.Close(fd);
    FERRY_RETURN_IF_ERROR(out.status());
    FERRY_RETURN_IF_ERROR(closed);
    out->bytes_from_store = client_->store().body_bytes_received() - received_before;
    return out;
  }

 private:
  static absl::StatusOr<RangeRead> ReadOpened(ferry::ObjectFileTable& files, int fd,
                                              ByteRange range) {
    RangeRead out;
    FERRY_ASSIGN_OR_RETURN(ferry::ObjectInfo info, files.Stat(fd));
    out.object_size = info.size;
    out.bytes.resize(static_cast<size_t>(range.length));
    FERRY_ASSIGN_OR_RETURN(size_t n, files.PRead(fd, range.offset, absl::MakeSpan(out.bytes)));
    out.bytes.resize(n);
    return out;
  }

  S3Remote(std::unique_ptr<ferry::s3::S3Client> client, const CpOptions& options)
      : client_(std::move(client)),
        part_bytes_(options.chunk_bytes),
        concurrency_(options.concurrency),
        make_bucket_(options.make_bucket) {}

  ferry::TransferOptions TransferOptionsFor(ProgressFn progress) const {
    ferry::TransferOptions t;
    t.progress = [progress](const ferry::TransferProgress& p) {
      progress(p.bytes_done, p.bytes_total);
      return absl::OkStatus();
    };
    t.upload.part_bytes = part_bytes_;
    t.upload.concurrency = concurrency_;
    return t;
  }

  const std::unique_ptr<ferry::s3::S3Client> client_;
  const int64_t part_bytes_;
  const int concurrency_;
  const bool make_bucket_;
};

// NFS through one NfsClient rooted at the URL's directory; single files
// only (a tree walk over NFS is ferry-walk's, not wired in here yet).
class NfsRemote : public Remote {
 public:
  static absl::StatusOr<std::unique_ptr<Remote>> Open(ferry::Runtime& runtime,
                                                      const Endpoint& endpoint,
                                                      const CpOptions& options) {
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::nfs::NfsClient> client,
                           ferry::nfs::NfsClient::Connect(runtime, endpoint.nfs));
    return std::unique_ptr<Remote>(new NfsRemote(runtime, std::move(client), endpoint, options));
  }

  std::string Label(std::string_view path) const override {
    return JoinPath(dir_label_, path);
  }

  absl::StatusOr<ferry::TransferStats> Fetch(std::string_view path, const std::string& local_path,
                                             ProgressFn progress) override {
    return Finish(
        ferry::nfs::CopyNfsToLocal(runtime_, *client_, path, local_path, NewCopyOptions()),
        progress);
  }

  absl::StatusOr<ferry::TransferStats> Store(const std::string& local_path, std::string_view path,
                                             ProgressFn progress) override {
    return Finish(
        ferry::nfs::CopyLocalToNfs(runtime_, *client_, local_path, path, NewCopyOptions()),
        progress);
  }

  absl::StatusOr<std::vector<RemoteObject>> List(std::string_view dir) override {
    return absl::UnimplementedError(absl::StrCat(
        "ferry-cp -r over NFS is not supported yet: ", Label(dir)));
  }

 private:
  NfsRemote(ferry::Runtime& runtime, std::unique_ptr<ferry::nfs::NfsClient> client,
            const Endpoint& endpoint, const CpOptions& options)
      : runtime_(runtime),
        client_(std::move(client)),
        dir_label_(endpoint.nfs.ToString()),
        parallelism_(options.nfs_parallelism) {}

  // Fresh per copy: CopyOptions is move-only (it may hold a callback).
  ferry::nfs::CopyOptions NewCopyOptions() const {
    ferry::nfs::CopyOptions copy;
    copy.parallelism = parallelism_;
    return copy;
  }

  // The NFS copies report no progress on the way: one report at the end.
  static absl::StatusOr<ferry::TransferStats> Finish(absl::StatusOr<ferry::nfs::CopyStats> copied,
                                                     ProgressFn progress) {
    FERRY_RETURN_IF_ERROR(copied.status());
    const auto bytes = static_cast<int64_t>(copied->bytes);
    progress(bytes, bytes);
    ferry::TransferStats stats;
    stats.bytes = bytes;
    stats.requests = static_cast<int64_t>(copied->chunks);
    stats.elapsed = copied->elapsed;
    return stats;
  }

  ferry::Runtime& runtime_;
  const std::unique_ptr<ferry::nfs::NfsClient> client_;
  const std::string dir_label_;
  const int parallelism_;
};

absl::StatusOr<std::unique_ptr<Remote>> OpenRemote(ferry::Runtime& runtime,
                                                   const Endpoint& endpoint,
                                                   const CpOptions& options) {
  if (endpoint.kind == Kind::kS3) return S3Remote::Open(runtime, options);
  return NfsRemote::Open(runtime, endpoint, options);
}

// ---------------------------------------------------------------------------
// The plan: which files go where

enum class Direction { kFetch, kStore };

struct FileCopy {
  std::string local_path;
  std::string remote_path;
  int64_t size = -1;  // -1: unknown until the transfer starts
};

struct Plan {
  Direction direction = Direction::kFetch;
  std::vector<FileCopy> files;
};

absl::Status LocalError(std::string_view what, const std::string& path, const std::error_code& ec) {
  return absl::InvalidArgumentError(
      absl::StrCat(ferry::ToAbsl(what), " ", path, ": ", ec.message()));
}

// Local file(s) -> remote.
absl::StatusOr<Plan> PlanStore(const Endpoint& src, const Endpoint& dst, bool recursive) {
  Plan plan{Direction::kStore, {}};
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(src.path, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("cannot read ", src.path, ": ", ec.message()));
  if (!recursive) {
    if (std::filesystem::is_directory(st)) {
      return absl::InvalidArgumentError(absl::StrCat(src.path, " is a directory (use -r)"));
    }
    const std::string remote =
        dst.is_dir ? JoinPath(dst.path, BaseName(src.path)) : dst.path;
    plan.files.push_back({src.path, remote, static_cast<int64_t>(std::filesystem::file_size(src.path, ec))});
    return plan;
  }
  if (!std::filesystem::is_directory(st)) {
    return absl::InvalidArgumentError(absl::StrCat("-r wants a directory, ", src.path, " is not one"));
  }
  for (auto it = std::filesystem::recursive_directory_iterator(src.path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string rel = it->path().lexically_relative(src.path).generic_string();
    plan.files.push_back({it->path().string(), JoinPath(dst.path, rel),
                          static_cast<int64_t>(it->file_size())});
  }
  if (ec) return LocalError("listing", src.path, ec);
  std::sort(plan.files.begin(), plan.files.end(),
            [](const FileCopy& a, const FileCopy& b) { return a.remote_path < b.remote_path; });
  return plan;
}

// Remote object(s) -> local.
absl::StatusOr<Plan> PlanFetch(const Endpoint& src, const Endpoint& dst, bool recursive,
                               Remote& remote) {
  Plan plan{Direction::kFetch, {}};
  if (!recursive) {
    if (src.is_dir) {
      return absl::InvalidArgumentError(absl::StrCat(src.text, " names a directory (use -r)"));
    }
    const std::string local = dst.is_dir ? JoinPath(dst.path, BaseName(src.path)) : dst.path;
    plan.files.push_back({local, src.path, -1});
    return plan;
  }
  // "bucket/dir" lists "bucket/dir/": dir2/ is not part of dir.
  const std::string dir = src.is_dir ? src.path : src.path + "/";
  FERRY_ASSIGN_OR_RETURN(std::vector<RemoteObject> objects, remote.List(dir));
  if (objects.empty()) return absl::NotFoundError(absl::StrCat("no objects under ", remote.Label(dir)));
  for (RemoteObject& o : objects) {
    plan.files.push_back({JoinPath(dst.path, o.path), JoinPath(dir, o.path), o.size});
  }
  return plan;
}

// ---------------------------------------------------------------------------
// Progress: one bar for every file of the run

// Bytes done across all files, drawn on stderr at most every 100 ms as
// "[#####...]  42%  108.0/256.0 MiB  312.5 MiB/s  3/10 files".
// Thread-safe: the copy workers report into it concurrently.
class ProgressBar {
 public:
  ProgressBar(bool enabled, const Plan& plan)
      : enabled_(enabled), files_(static_cast<int>(plan.files.size())) {
    for (const FileCopy& f : plan.files) {
      size_by_file_.push_back(f.size);
      total_bytes_ += std::max<int64_t>(f.size, 0);
    }
    done_by_file_.assign(plan.files.size(), 0);
  }

  // File `index` has `done` bytes written (of `total`, -1 if unknown).
  void Update(size_t index, int64_t done, int64_t total) {
    ferry::MutexLock lock(&mu_);
    if (size_by_file_[index] < 0 && total >= 0) {  // a download's size, learnt now
      size_by_file_[index] = total;
      total_bytes_ += total;
    }
    done_bytes_ += done - done_by_file_[index];
    done_by_file_[index] = done;
    DrawLocked(/*force=*/false);
  }

  void FileFinished() {
    ferry::MutexLock lock(&mu_);
    ++files_done_;
    DrawLocked(/*force=*/files_done_ == files_);
  }

  // Ends the bar's line so later output starts on a fresh one.
  void End() {
    ferry::MutexLock lock(&mu_);
    if (drawn_) std::fputc('\n', stderr);
  }

 private:
  void DrawLocked(bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!enabled_) return;
    const absl::Time now = absl::Now();
    // 10 redraws a second: smooth to the eye, nothing next to the copy.
    if (!force && now - last_draw_ < absl::Milliseconds(100)) return;
    last_draw_ = now;
    drawn_ = true;
    const double secs = std::max(absl::ToDoubleSeconds(now - start_), 1e-3);
    const int64_t total = std::max(total_bytes_, done_bytes_);
    const double fraction =
        files_done_ == files_ ? 1.0 : total > 0 ? static_cast<double>(done_bytes_) / total : 0.0;
    constexpr int kWidth = 24;
    std::string bar(kWidth, '.');
    std::fill_n(bar.begin(), static_cast<int>(fraction * kWidth), '#');
    std::fprintf(stderr, "\r[%s] %3d%%  %.1f/%.1f MiB  %.1f MiB/s  %d/%d files\033[K", bar.c_str(),
                 static_cast<int>(fraction * 100), static_cast<double>(done_bytes_) / kMiB,
                 static_cast<double>(total) / kMiB, static_cast<double>(done_bytes_) / kMiB / secs,
                 files_done_, files_);
    std::fflush(stderr);
  }

  const bool enabled_;
  const int files_;
  const absl::Time start_ = absl::Now();

  ferry::Mutex mu_;
  std::vector<int64_t> size_by_file_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> done_by_file_ ABSL_GUARDED_BY(mu_);
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t done_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int files_done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_draw_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool drawn_ ABSL_GUARDED_BY(mu_) = false;
};

// ---------------------------------------------------------------------------
// Running the plan

struct FileResult {
  absl::Status status;
  ferry::TransferStats stats;
};

FileResult CopyOne(Remote& remote, Direction direction, const FileCopy& file, size_t index,
                   ProgressBar& bar) {
  auto progress = [&bar, index](int64_t done, int64_t total) { bar.Update(index, done, total); };
  absl::StatusOr<ferry::TransferStats> stats;
  if (direction == Direction::kStore) {
    stats = remote.Store(file.local_path, file.remote_path, progress);
  } else {
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(file.local_path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    stats = ec ? LocalError("creating directory", parent.string(), ec)
               : remote.Fetch(file.remote_path, file.local_path, progress);
  }
  bar.FileFinished();
  if (!stats.ok()) return {stats.status(), {}};
  return {absl::OkStatus(), *stats};
}

// Copies every file of `plan`, `jobs` at a time. The transfer calls block
// their caller and must not run on the Runtime's threads (its I/O threads
// drive every file's requests), so the files run on `jobs` plain caller
// threads, each blocked in one transfer while the Runtime does the work.
std::vector<FileResult> RunPlan(Remote& remote, const Plan& plan, int jobs, ProgressBar& bar) {
  std::vector<FileResult> results(plan.files.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < plan.files.size(); i = next++) {
      results[i] = CopyOne(remote, plan.direction, plan.files[i], i, bar);
    }
  };
  const size_t threads = std::min(plan.files.size(), static_cast<size_t>(jobs));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(worker);
  worker();  // the main thread is one of them
  for (std::thread& t : workers) t.join();
  return results;
}

// ---------------------------------------------------------------------------
// Reporting

struct Summary {
  int files = 0;
  int failed = 0;
  double seconds = 0;
  ferry::TransferStats totals;  // summed; elapsed unused
  int64_t peak_memory_bytes = 0;
  int64_t memory_budget_bytes = 0;
  int64_t peak_rss_bytes = 0;
};

Summary Summarize(const std::vector<FileResult>& results, absl::Duration elapsed,
                  ferry::Runtime& runtime) {
  Summary s;
  s.files = static_cast<int>(results.size());
  s.seconds = std::max(absl::ToDoubleSeconds(elapsed), 1e-9);
  for (const FileResult& r : results) {
    if (!r.status.ok()) {
      ++s.failed;
      continue;
    }
    s.totals.bytes += r.stats.bytes;
    s.totals.bytes_fetched += r.stats.bytes_fetched;
    s.totals.bytes_uploaded += r.stats.bytes_uploaded;
    s.totals.requests += r.stats.requests;
    s.totals.parts += r.stats.parts;
    s.totals.retries += r.stats.retries;
    s.peak_memory_bytes = std::max(s.peak_memory_bytes, r.stats.peak_memory_bytes);
  }
  // Files run in parallel under one budget: its own peak is the true one.
  s.peak_memory_bytes = std::max(s.peak_memory_bytes, runtime.memory_budget().peak());
  s.memory_budget_bytes = runtime.memory_budget().capacity();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.peak_rss_bytes = int64_t{ru.ru_maxrss} * 1024;  // Linux reports KiB
  return s;
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ErrorText(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

void PrintErrors(Remote& remote, const Plan& plan, const std::vector<FileResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].status.ok()) continue;
    const FileCopy& f = plan.files[i];
    const bool store = plan.direction == Direction::kStore;
    std::fprintf(stderr, "ferry-cp: %s -> %s: %s\n",
                 (store ? f.local_path : remote.Label(f.remote_path)).c_str(),
                 (store ? remote.Label(f.remote_path) : f.local_path).c_str(),
                 ErrorText(results[i].status).c_str());
  }
}

void PrintText(const Summary& s) {
  const ferry::TransferStats& t = s.totals;
  std::printf(
      "copied %d of %d file%s, %lld bytes in %.3f s (%.1f MiB/s); %lld requests, %d parts, "
      "%lld retries, peak memory %.1f of %.0f MiB, peak RSS %.1f MiB\n",
      s.files - s.failed, s.files, s.files == 1 ? "" : "s", static_cast<long long>(t.bytes),
      s.seconds, static_cast<double>(t.bytes) / kMiB / s.seconds,
      static_cast<long long>(t.requests), t.parts, static_cast<long long>(t.retries),
      static_cast<double>(s.peak_memory_bytes) / kMiB,
      static_cast<double>(s.memory_budget_bytes) / kMiB,
      static_cast<double>(s.peak_rss_bytes) / kMiB);
}

void PrintJson(Remote& remote, const Plan& plan, const std::vector<FileResult>& results,
               const Summary& s) {
  const ferry::TransferStats& t = s.totals;
  std::string errors;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].status.ok()) continue;
    const FileCopy& f = plan.files[i];
    absl::StrAppend(&errors, errors.empty() ? "" : ",", "{\"local\":", JsonString(f.local_path),
                    ",\"remote\":", JsonString(remote.Label(f.remote_path)),
                    ",\"code\":", JsonString(absl::StatusCodeToString(results[i].status.code())),
                    ",\"message\":", JsonString(std::string(results[i].status.message())), "}");
  }
  std::printf(
      "{\"direction\":\"%s\",\"files\":%d,\"files_failed\":%d,\"bytes\":%lld,\"seconds\":%.4f,"
      "\"mib_s\":%.1f,\"requests\":%lld,\"retries\":%lld,\"parts\":%d,\"bytes_fetched\":%lld,"
      "\"bytes_uploaded\":%lld,\"peak_memory_bytes\":%lld,\"memory_budget_bytes\":%lld,"
      "\"peak_rss_bytes\":%lld,\"errors\":[%s]}\n",
      plan.direction == Direction::kStore ? "upload" : "download", s.files, s.failed,
      static_cast<long long>(t.bytes), s.seconds, static_cast<double>(t.bytes) / kMiB / s.seconds,
      static_cast<long long>(t.requests), static_cast<long long>(t.retries), t.parts,
      static_cast<long long>(t.bytes_fetched), static_cast<long long>(t.bytes_uploaded),
      static_cast<long long>(s.peak_memory_bytes), static_cast<long long>(s.memory_budget_bytes),
      static_cast<long long>(s.peak_rss_bytes), errors.c_str());
}

// ---------------------------------------------------------------------------
// --range: a few bytes of one object

absl::Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Reads the range into `dst` ("-": stdout); the figures go to stderr then,
// else to stdout (as JSON with --json).
absl::Status RunRangeRead(Remote& remote, const Endpoint& src, const Endpoint& dst,
                          const CpOptions& options) {
  if (src.kind == Kind::kLocal) return absl::InvalidArgumentError("--range reads a remote object");
  const absl::Time start = absl::Now();
  FERRY_ASSIGN_OR_RETURN(RangeRead read, remote.ReadRange(src.path, *options.range));
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  const bool to_stdout = dst.text == "-";
  if (to_stdout) {
    FERRY_RETURN_IF_ERROR(WriteAll(STDOUT_FILENO, read.bytes));
  } else {
    const std::string path = dst.is_dir ? JoinPath(dst.path, BaseName(src.path)) : dst.path;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
    const absl::Status written = WriteAll(fd, read.bytes);
    ::close(fd);
    FERRY_RETURN_IF_ERROR(written);
  }
  if (options.progress == ProgressMode::kOff && !options.json) return absl::OkStatus();
  std::FILE* out = to_stdout ? stderr : stdout;
  if (options.json) {
    std::fprintf(out,
                 "{\"range_offset\":%lld,\"bytes\":%zu,\"object_bytes\":%lld,"
                 "\"bytes_from_store\":%lld,\"seconds\":%.4f}\n",
                 static_cast<long long>(options.range->offset), read.bytes.size(),
                 static_cast<long long>(read.object_size),
                 static_cast<long long>(read.bytes_from_store), secs);
  } else {
    std::fprintf(out,
                 "read %zu bytes at offset %lld of %s (%lld bytes) in %.3f s; "
                 "%lld bytes came from the store (%.6f%% of the object)\n",
                 read.bytes.size(), static_cast<long long>(options.range->offset),
                 remote.Label(src.path).c_str(), static_cast<long long>(read.object_size), secs,
                 static_cast<long long>(read.bytes_from_store),
                 read.object_size > 0 ? 100.0 * read.bytes_from_store / read.object_size : 0.0);
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------

int Fail(int exit_code, const absl::Status& status) {
  std::fprintf(stderr, "ferry-cp: %s\n", ErrorText(status).c_str());
  return exit_code;
}

bool ShowProgress(const CpOptions& options) {
  switch (options.progress) {
    case ProgressMode::kOn: return true;
    case ProgressMode::kOff: return false;
    case ProgressMode::kAuto: return ::isatty(STDERR_FILENO) == 1;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<CpOptions> options = ParseArgs(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "ferry-cp: %s\n%s", std::string(options.status().message()).c_str(), kUsage);
    return 2;
  }
  absl::StatusOr<Endpoint> src = ParseEndpoint(options->operands[0]);
  if (!src.ok()) return Fail(2, src.status());
  absl::StatusOr<Endpoint> dst = ParseEndpoint(options->operands[1]);
  if (!dst.ok()) return Fail(2, dst.status());
  // The pair: exactly one local side; the other one's kind does the work.
  if ((src->kind == Kind::kLocal) == (dst->kind == Kind::kLocal)) {
    std::fprintf(stderr, "ferry-cp: one of SRC and DST must be local, the other remote\n%s", kUsage);
    return 2;
  }
  const Endpoint& remote_end = src->kind == Kind::kLocal ? *dst : *src;
  if (options->recursive && remote_end.kind == Kind::kNfs) {
    return Fail(2, absl::UnimplementedError("-r over NFS is not supported yet (single files only)"));
  }

  // NFS copies run each chunk on a blocking-pool thread (see nfs_copy.h);
  // S3 needs the pool only for disk writes.
  ferry::Runtime runtime({.blocking_threads = remote_end.kind == Kind::kNfs
                                                  ? options->nfs_parallelism
                                                  : std::max(4, options->jobs),
                          .memory_budget_bytes = options->memory_budget_bytes,
                          .idle_buffer_bytes = options->idle_buffer_bytes});
  absl::StatusOr<std::unique_ptr<Remote>> remote = OpenRemote(runtime, remote_end, *options);
  if (!remote.ok()) return Fail(1, remote.status());

  if (options->range) {
    const absl::Status read = RunRangeRead(**remote, *src, *dst, *options);
    return read.ok() ? 0 : Fail(1, read);
  }
  absl::StatusOr<Plan> plan = src->kind == Kind::kLocal
                                  ? PlanStore(*src, *dst, options->recursive)
                                  : PlanFetch(*src, *dst, options->recursive, **remote);
  if (!plan.ok()) return Fail(1, plan.status());
  if (plan->direction == Direction::kStore) {
    const absl::Status ready = (*remote)->PrepareTarget(dst->path);
    if (!ready.ok()) return Fail(1, ready);
  }

  const absl::Time start = absl::Now();
  ProgressBar bar(ShowProgress(*options), *plan);
  const std::vector<FileResult> results = RunPlan(**remote, *plan, options->jobs, bar);
  bar.End();
  const Summary summary = Summarize(results, absl::Now() - start, runtime);
  PrintErrors(**remote, *plan, results);
  if (options->json) {
    PrintJson(**remote, *plan, results, summary);
  } else if (options->progress != ProgressMode::kOff) {
    PrintText(summary);
  }
  return summary.failed == 0 ? 0 : 1;
}
