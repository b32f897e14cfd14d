// S3FileSystem: the fs::FileSystem calls as S3 requests through one
// S3Client. Blocking calls wait on the store's callbacks with a Promise;
// files are descriptors of the client's ObjectFileTable.
#include "ferry/s3/s3_file_system.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/atomic_max.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/walk_guard.h"
#include "ferry/runtime/future.h"
#include "ferry/s3/s3_read_stream.h"
#include "ferry/transfer/object_file_table.h"

namespace ferry::s3 {
namespace {

constexpr int64_t kDefaultChunkBytes = int64_t{8} << 20;
constexpr int kDefaultConcurrency = 10;
// S3 copies at most 5 GiB in one CopyObject request.
constexpr int64_t kMaxCopyObjectBytes = int64_t{5} << 30;
// UploadPartCopy parts: large, since no byte passes through the client
// (fewer requests; a 1 TiB copy is 2,048 parts).
constexpr int64_t kDefaultCopyPartBytes = int64_t{512} << 20;

// "bucket/a/b" -> {"bucket", "a/b"}.
struct BucketKey {
  std::string bucket;
  std::string key;
};

BucketKey Split(std::string_view path) {
  const std::string p = fs::NormalizePath(path);
  const size_t slash = p.find('/');
  if (slash == std::string::npos) return {p, ""};
  return {p.substr(0, slash), p.substr(slash + 1)};
}

// Runs `start(done)` (an async store call); its result comes as the future's.
template <typename T, typename Start>
Future<T> Started(Start start) {
  Promise<T> promise;
  Future<T> future = promise.GetFuture();
  start([promise = std::move(promise)](absl::StatusOr<T> r) mutable { promise.Set(std::move(r)); });
  return future;
}

// As Started, waiting for the result.
template <typename T, typename Start>
absl::StatusOr<T> Wait(Start start) {
  return Started<T>(std::move(start)).Get();
}

absl::Status WaitStatus(absl::AnyInvocable<void(StatusCallback)> start) {
  Promise<bool> promise;
  Future<bool> future = promise.GetFuture();
  start([&promise](absl::Status s) {
    if (s.ok()) {
      promise.Set(true);
    } else {
      promise.Set(std::move(s));
    }
  });
  return std::move(future).Get().status();
}

// S3's smallest part: an object below it is never a multipart upload.
constexpr int64_t kMinPartBytes = int64_t{5} << 20;

// Where rclone keeps an object's source modification time and, for a
// multipart upload (whose ETag is no MD5), its content MD5: ferry writes
// and reads the same, so either tool's uploads compare equal in the other.
constexpr std::string_view kMtimeMeta = "mtime";      // "SECONDS.NANOSECONDS"
constexpr std::string_view kMd5Meta = "md5chksum";    // base64 of the 16 bytes

const std::string* FindMeta(const ObjectMetadata& metadata, std::string_view name) {
  for (const auto& [k, v] : metadata) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::string MtimeMetaValue(absl::Time t) {
  const int64_t ns = absl::ToUnixNanos(t);
  const int64_t s = ns >= 0 ? ns / 1000000000 : (ns - 999999999) / 1000000000;
  return absl::StrFormat("%d.%09d", s, ns - s * 1000000000);
}

// "SECONDS[.FRACTION]" (up to nanoseconds) as a time; InfinitePast if it
// is not one.
absl::Time ParseMtimeMeta(std::string_view v) {
  const size_t dot = v.find('.');
  int64_t seconds = 0;
  if (!absl::SimpleAtoi(ToAbsl(v.substr(0, dot)), &seconds)) return absl::InfinitePast();
  int64_t nanos = 0;
  if (dot != std::string_view::npos) {
    std::string frac(v.substr(dot + 1, 9));
    if (frac.empty() || frac.find_first_not_of("0123456789") != std::string::npos) {
      return absl::InfinitePast();
    }
    frac.resize(9, '0');
    (void)absl::SimpleAtoi(frac, &nanos);
  }
  return absl::FromUnixSeconds(seconds) + absl::Nanoseconds(seconds < 0 ? -nanos : nanos);
}

absl::Status NeedsBucket(std::string_view what, const BucketKey& at, std::string_view path) {
  if (!at.bucket.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(ToAbsl(what), " s3://", ToAbsl(path), ": no bucket in the path"));
}

// A descriptor of the client's ObjectFileTable, ended once: Close closes
// it (a writer's completes the upload); a writer's Discard aborts it.
class S3File : public fs::File {
 public:
  absl::Status Close() override {
    if (End()) return absl::OkStatus();
    return files_.Close(fd_);
  }

 protected:
  S3File(ObjectFileTable& files, int fd) : files_(files), fd_(fd) {}
  // Marks the descriptor ended; true if it already was (closed or aborted).
  bool End() { return ended_.exchange(true); }

  ObjectFileTable& files_;
  const int fd_;

 private:
  std::atomic<bool> ended_{false};
};

// A lone sequential reader (each read starting where the one before
// ended, no other read of this file running, no other descriptor of the
// key) is served from one open GET (S3ReadStream) from its second read on;
// any other read is the table's (a ranged GET, or the shared parallel
// download when the key has several readers), and ends the stream. A
// stream that fails ends streaming for the file: the read is asked again
// of the table, whose ranged GET retries and reports its own error (a
// server that closed a connection paused by a slow reader costs one
// request, not the read).
//
// Thread-safety: as fs::File. Reads that overlap in time take the table's
// path (the one that holds `mu_` may stream); `mu_` is held across a
// streamed read.
class S3ReadFile final : public S3File {
 public:
  // `store` null: never streams.
  S3ReadFile(ObjectFileTable& files, int fd, int64_t size, S3ObjectStore* store, std::string key,
             std::string etag)
      : S3File(files, fd), size_(size), store_(store), key_(std::move(key)), etag_(std::move(etag)) {}
  ~S3ReadFile() override { (void)Close(); }

  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
    if (store_ == nullptr || buf.empty()) return files_.PRead(fd_, offset, buf);
    if (!mu_.TryLock()) {
      // Another read of this file is running: not a lone sequential reader.
      no_stream_.store(true, std::memory_order_relaxed);
      return files_.PRead(fd_, offset, buf);
    }
    absl::StatusOr<size_t> n = ReadLocked(offset, buf);
    mu_.Unlock();
    return n;
  }
  absl::StatusOr<int64_t> Size() override { return size_; }
  absl::Status Close() override {
    {
      MutexLock l(&mu_);
      stream_.reset();  // stops the transfer
    }
    return S3File::Close();
  }

 private:
  absl::StatusOr<size_t> ReadLocked(int64_t offset, absl::Span<char> buf)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool follows = offset == next_offset_;
    next_offset_ = offset + static_cast<int64_t>(buf.size());
    if (!follows || offset >= size_ || no_stream_.load(std::memory_order_relaxed) ||
        !files_.SoleReader(fd_)) {
      stream_.reset();
      return files_.PRead(fd_, offset, buf);
    }
    if (stream_ == nullptr || stream_->position() != offset) {
      stream_.reset();
      stream_ = std::make_unique<S3ReadStream>(*store_, key_, etag_, offset, size_);
    }
    absl::StatusOr<size_t> n = stream_->Read(buf);
    if (n.ok()) return n;
    stream_.reset();
    no_stream_.store(true, std::memory_order_relaxed);
    return files_.PRead(fd_, offset, buf);
  }

  const int64_t size_;
  S3ObjectStore* const store_;
  const std::string key_;   // "bucket/key"
  const std::string etag_;  // the reads' If-Match
  // Set for good once reads overlapped or a stream failed.
  std::atomic<bool> no_stream_{false};
  Mutex mu_;
  // Where the last read ended (-1: no read yet): a read starting there
  // follows it.
  int64_t next_offset_ ABSL_GUARDED_BY(mu_) = -1;
  std::unique_ptr<S3ReadStream> stream_ ABSL_GUARDED_BY(mu_);
};

// Close completes the upload, Discard aborts it.
class S3WriteFile final : public S3File {
 public:
  S3WriteFile(ObjectFileTable& files, int fd) : S3File(files, fd) {}
  ~S3WriteFile() override { (void)Discard(); }

  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) override {
    FERRY_ASSIGN_OR_RETURN(size_t n, files_.PWrite(fd_, offset, data));
    AtomicMax(high_water_, offset + static_cast<int64_t>(n));
    return n;
  }
  absl::StatusOr<int64_t> Size() override { return high_water_.load(); }
  absl::Status Close() override {
    if (End()) return absl::OkStatus();
    UploadStats upload;
    absl::Status s = files_.Close(fd_, &upload);
    counters_ = {.parts = upload.single_put ? 0 : upload.parts_uploaded, .retries = upload.retries};
    return s;
  }
  absl::Status Discard() override {
    if (End()) return absl::OkStatus();
    return files_.Abort(fd_);
  }
  Counters counters() const override { return counters_; }

 private:
  std::atomic<int64_t> high_water_{0};
  Counters counters_;  // set by Close, read after it (File: Close does not race)
};

// One endpoint's client as a filesystem: what the header's S3FileSystem
// promises, call by call.
class ClientFileSystem final : public S3FileSystem {
 public:
  ClientFileSystem(std::unique_ptr<S3Client> client, const S3FileSystemOptions& options,
                   int64_t chunk_bytes, int concurrency)
      : client_(std::move(client)),
        make_bucket_(options.make_bucket),
        chunk_bytes_(chunk_bytes),
        concurrency_(concurrency),
        copy_object_max_bytes_(options.copy_object_max_bytes > 0 ? options.copy_object_max_bytes
                                                                : kMaxCopyObjectBytes),
        copy_part_bytes_(options.copy_part_bytes > 0 ? options.copy_part_bytes
                                                     : kDefaultCopyPartBytes) {}

  S3Client& client() override { return *client_; }

  std::string_view scheme() const override { return "s3"; }
  std::string Url(std::string_view path) const override {
    return absl::StrCat("s3://", ToAbsl(path));
  }

  absl::StatusOr<fs::Entry> Stat(std::string_view path) override {
    const BucketKey at = Split(path);
    FERRY_RETURN_IF_ERROR(NeedsBucket("stat", at, path));
    const std::string p = fs::NormalizePath(path);
    fs::Entry e;
    e.path = p;
    if (!at.key.empty()) {
      absl::StatusOr<ObjectInfo> info =
          Wait<ObjectInfo>([&](Callback<ObjectInfo> done) { client_->store().Head(p, std::move(done)); });
      if (info.ok()) {
        e.kind = fs::EntryKind::kFile;
        e.size = info->size;
        // The source's time a copy kept, else the upload's.
        const std::string* kept = FindMeta(info->metadata, kMtimeMeta);
        e.mtime = kept != nullptr ? ParseMtimeMeta(*kept) : absl::InfinitePast();
        if (e.mtime == absl::InfinitePast()) e.mtime = info->last_modified;
        e.version = info->etag;
        return e;
      }
      if (!absl::IsNotFound(info.status())) return info.status();
    }
    // A bucket, or a prefix that holds at least one key.
    ListObjectsOptions o;
    if (!at.key.empty()) o.prefix = absl::StrCat(at.key, "/");
    o.max_keys = 1;
    FERRY_ASSIGN_OR_RETURN(ListObjectsPage page, Wait<ListObjectsPage>([&](auto done) {
                             client_->store().ListObjects(at.bucket, o, std::move(done));
                           }));
    if (at.key.empty() || !page.objects.empty() || !page.common_prefixes.empty()) {
      e.kind = fs::EntryKind::kDirectory;
      return e;
    }
    return absl::NotFoundError(absl::StrCat("stat ", Url(p), ": no such key or prefix"));
  }

  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<fs::Entry>&)> on_batch) override {
    const BucketKey at = Split(dir);
    FERRY_RETURN_IF_ERROR(NeedsBucket("list", at, dir));
    ListObjectsOptions o;
    if (!at.key.empty()) o.prefix = absl::StrCat(at.key, "/");
    o.delimiter.assign(1, '/');  // assign(): GCC 12 warns (-Wrestrict) on = "/" here
    bool any = false;
    for (;;) {
      FERRY_ASSIGN_OR_RETURN(ListObjectsPage page, Wait<ListObjectsPage>([&](auto done) {
                               client_->store().ListObjects(at.bucket, o, std::move(done));
                             }));
      std::vector<fs::Entry> batch;
      for (const std::string& prefix : page.common_prefixes) {
        std::string name = prefix.substr(o.prefix.size());
        if (!name.empty() && name.back() == '/') name.pop_back();
        fs::Entry e;
        e.path = std::move(name);
        e.kind = fs::EntryKind::kDirectory;
        batch.push_back(std::move(e));
      }
      for (ListedObject& obj : page.objects) {
        any = true;
        // A key ending in '/' is a console's "folder" marker: no data.
        if (obj.key.size() <= o.prefix.size() || obj.key.back() == '/') continue;
        fs::Entry e;
        e.path = obj.key.substr(o.prefix.size());
        e.kind = fs::EntryKind::kFile;
        e.size = obj.size;
        e.mtime = obj.last_modified;
        e.version = std::move(obj.etag);
        batch.push_back(std::move(e));
      }
      any = any || !batch.empty();
      if (!batch.empty() && !on_batch(batch)) return absl::OkStatus();
      if (page.next_continuation_token.empty()) break;
      FERRY_RETURN_IF_ERROR(NextToken("list", dir, o, std::move(page.next_continuation_token)));
    }
    if (!any && !at.key.empty()) {
      return absl::NotFoundError(absl::StrCat("list ", Url(dir), ": no such prefix"));
    }
    return absl::OkStatus();
  }

  // Moves a listing on to `token`. A store that hands back the token it was
  // asked with would list the same page forever: DataLoss.
  absl::Status NextToken(std::string_view op, std::string_view path, ListObjectsOptions& o,
                         std::string token) const {
    if (token == o.continuation_token) {
      return absl::DataLossError(absl::StrCat(
          ToAbsl(op), " ", Url(path), ": the store's next continuation token is the one asked with (",
          absl::CHexEscape(token.substr(0, 64)), "): the listing does not advance"));
    }
    o.continuation_token = std::move(token);
    return absl::OkStatus();
  }

  absl::StatusOr<fs::WalkStats> Walk(
      std::string_view root, const fs::WalkOptions& options,
      absl::FunctionRef<bool(fs::WalkBatch&)> on_batch) override {
    const absl::Time start = absl::Now();
    const BucketKey at = Split(root);
    FERRY_RETURN_IF_ERROR(NeedsBucket("walk", at, root));
    ListObjectsOptions o;
    if (!at.key.empty()) o.prefix = absl::StrCat(at.key, "/");
    if (options.first_page_entries > 0) {
      o.max_keys = static_cast<int>(std::min<size_t>(options.first_page_entries, o.max_keys));
    }
    const int full_page = ListObjectsOptions{}.max_keys;
    fs::WalkStats stats;
    std::set<std::string> dirs_seen;  // parent prefixes reported so far
    bool any = false;
    for (;;) {
      FERRY_ASSIGN_OR_RETURN(ListObjectsPage page, Wait<ListObjectsPage>([&](auto done) {
                               client_->store().ListObjects(at.bucket, o, std::move(done));
                             }));
      ++stats.requests;
      fs::WalkBatch batch;
      for (ListedObject& obj : page.objects) {
        any = true;
        if (obj.key.size() <= o.prefix.size() || obj.key.back() == '/') continue;
        std::string rel = obj.key.substr(o.prefix.size());
        // Keys are free text: one whose path has an empty, "." or ".."
        // component names no place in a tree (and "a//b" and "a/b" would
        // be one file); refused, with the key as it is.
        if (absl::Status why = fs::CheckListedPath(rel); !why.ok()) {
          batch.errors.push_back(fs::RefusedEntry(fs::DirName(rel), rel, why));
          ++stats.errors;
          ++stats.entries_refused;
          continue;
        }
        // Each parent prefix once, as a directory (object stores have none).
        for (size_t slash = rel.find('/'); slash != std::string::npos;
             slash = rel.find('/', slash + 1)) {
          std::string dir = rel.substr(0, slash);
          if (dir.empty() || !dirs_seen.insert(dir).second) continue;
          fs::Entry d;
          d.path = std::move(dir);
          d.kind = fs::EntryKind::kDirectory;
          batch.entries.push_back(std::move(d));
        }
        fs::Entry e;
        e.path = std::move(rel);
        e.kind = fs::EntryKind::kFile;
        e.size = obj.size;
        e.mtime = obj.last_modified;
        e.version = std::move(obj.etag);
        stats.bytes += static_cast<uint64_t>(obj.size);
        batch.entries.push_back(std::move(e));
      }
      stats.entries += batch.entries.size();
      if ((!batch.entries.empty() || !batch.errors.empty()) && !on_batch(batch)) {
        stats.stopped_early = true;
        break;
      }
      // One listing stream: S3 pages are sequential by token.
      if (page.next_continuation_token.empty()) break;
      FERRY_RETURN_IF_ERROR(NextToken("walk", root, o, std::move(page.next_continuation_token)));
      o.max_keys = full_page;
    }
    if (!any && !at.key.empty()) {
      return absl::NotFoundError(absl::StrCat("walk ", Url(root), ": no such prefix"));
    }
    stats.directories = dirs_seen.size() + 1;
    stats.elapsed = absl::Now() - start;
    return stats;
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenRead(std::string_view path) override {
    FERRY_ASSIGN_OR_RETURN(int fd, OpenReadFd(path, {}));
    ObjectFileTable& files = client_->files();
    absl::StatusOr<ObjectInfo> info = files.Stat(fd);
    if (!info.ok()) {
      (void)files.Close(fd);
      return info.status();
    }
    return std::unique_ptr<fs::File>(new S3ReadFile(files, fd, info->size, &client_->store(),
                                                    fs::NormalizePath(path), info->etag));
  }

  // A listed object opens without a HEAD (a tree of small objects is then
  // one GET per object, not two); its reads carry the listed ETag.
  absl::StatusOr<std::unique_ptr<fs::File>> OpenReadListed(std::string_view path,
                                                           const fs::Entry& listed) override {
    if (listed.kind != fs::EntryKind::kFile || listed.version.empty() || listed.size < 0) {
      return OpenRead(path);
    }
    FERRY_ASSIGN_OR_RETURN(int fd, OpenReadFd(path, {.listed = ObjectInfo{.size = listed.size,
                                                                          .etag = listed.version,
                                                                          .last_modified = listed.mtime}}));
    // The ETag the key's reads are pinned to (an earlier descriptor's, if
    // one was open).
    absl::StatusOr<ObjectInfo> info = client_->files().Stat(fd);
    return std::unique_ptr<fs::File>(
        new S3ReadFile(client_->files(), fd, listed.size, &client_->store(),
                       fs::NormalizePath(path), info.ok() ? info->etag : listed.version));
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenWrite(
      std::string_view path, const fs::WriteOptions& options) override {
    const BucketKey at = Split(path);
    FERRY_RETURN_IF_ERROR(NeedsBucket("open", at, path));
    if (at.key.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("open ", Url(path), " for writing: a bucket, not an object"));
    }
    ObjectOpenOptions open{.total_bytes = options.size};
    if (options.reclaim_before != absl::InfinitePast() &&
        (options.size < 0 || options.size >= kMinPartBytes)) {
      // Best effort: a write must not fail because the caller may not list
      // uploads (s3:ListBucketMultipartUploads) or their parts.
      open.resume = ResumeOrAbortLeftovers(at, options);
    }
    ObjectFileTable& files = client_->files();
    if (options.mtime != absl::InfinitePast()) {
      open.metadata.emplace_back(kMtimeMeta, MtimeMetaValue(options.mtime));
    }
    if (options.content_md5.size() == 16) {
      open.metadata.emplace_back(kMd5Meta, absl::Base64Escape(options.content_md5));
    }
    FERRY_ASSIGN_OR_RETURN(int fd, files.Open(fs::NormalizePath(path), OpenMode::kWrite, open));
    return std::unique_ptr<fs::File>(new S3WriteFile(files, fd));
  }

  bool lists_kept_mtime() const override { return false; }

  std::optional<HashKind> server_hash() const override { return HashKind::kMd5; }

  // A single-part upload's ETag is its MD5; a multipart one's stored
  // md5chksum (rclone's) is, if present. No read either way.
  absl::StatusOr<std::string> Md5(std::string_view path, const fs::Entry& listed,
                                  bool read_if_needed) override {
    std::string md5 = Md5OfEtag(listed.version);
    if (!md5.empty()) return md5;
    const std::string p = fs::NormalizePath(path);
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, Wait<ObjectInfo>([&](Callback<ObjectInfo> done) {
                             client_->store().Head(p, std::move(done));
                           }));
    md5 = Md5OfEtag(info.etag);
    if (!md5.empty()) return md5;
    if (const std::string* stored = FindMeta(info.metadata, kMd5Meta)) {
      std::string bytes;
      if (absl::Base64Unescape(*stored, &bytes) && bytes.size() == 16) return bytes;
    }
    return fs::FileSystem::Md5(path, listed, read_if_needed);
  }

  // S3 has no temporaries: what a killed write leaves is its unfinished
  // multipart upload, whose parts are stored (and billed) until aborted.
  absl::StatusOr<fs::LeftoverStats> RemoveLeftovers(std::string_view dir, absl::Time before) override {
    const BucketKey at = Split(dir);
    FERRY_RETURN_IF_ERROR(NeedsBucket("clean up", at, dir));
    const std::string prefix = at.key.empty() ? "" : absl::StrCat(at.key, "/");
    return AbortUploadsBefore(at.bucket, prefix, before);
  }

  absl::Status CreateDir(std::string_view path, bool /*parents*/) override {
    // Prefixes need no creating; a missing bucket does, when asked to.
    if (!make_bucket_) return absl::OkStatus();
    const BucketKey at = Split(path);
    FERRY_RETURN_IF_ERROR(NeedsBucket("mkdir", at, path));
    absl::Status s = WaitStatus([&](StatusCallback done) {
      client_->store().CreateBucket(at.bucket, std::move(done));
    });
    return absl::IsAlreadyExists(s) ? absl::OkStatus() : s;
  }

  absl::Status Remove(std::string_view path) override {
    const std::string p = fs::NormalizePath(path);
    return WaitStatus(
        [&](StatusCallback done) { client_->store().DeleteObject(p, std::move(done)); });
  }

  absl::Status RemoveDir(std::string_view /*path*/) override {
    return absl::OkStatus();  // a prefix goes with its last key
  }

  absl::Status Rename(std::string_view from, std::string_view to) override {
    FERRY_RETURN_IF_ERROR(CopyWithin(from, to));
    return Remove(from);
  }

  absl::Status CopyWithin(std::string_view from, std::string_view to) override {
    const std::string a = fs::NormalizePath(from);
    const std::string b = fs::NormalizePath(to);
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, Wait<ObjectInfo>([&](Callback<ObjectInfo> done) {
                             client_->store().Head(a, std::move(done));
                           }));
    if (info.size > copy_object_max_bytes_) return CopyInParts(a, b, info);
    return Wait<std::string>([&](Callback<std::string> done) {
             client_->store().CopyObject(a, b, std::move(done));
           })
        .status();
  }

  int64_t preferred_chunk_bytes() const override { return chunk_bytes_; }
  int preferred_parallelism() const override { return concurrency_; }

 private:
  // A read descriptor of the object `path` names in the client's table.
  absl::StatusOr<int> OpenReadFd(std::string_view path, const ObjectOpenOptions& options) {
    const BucketKey at = Split(path);
    FERRY_RETURN_IF_ERROR(NeedsBucket("open", at, path));
    return client_->files().Open(fs::NormalizePath(path), OpenMode::kRead, options);
  }

  // CopyWithin past one CopyObject: UploadPartCopy parts, the source held
  // to the ETag `info` has (a source replaced meanwhile fails the copy,
  // which aborts its upload).
  absl::Status CopyInParts(const std::string& from, const std::string& to,
                           const ObjectInfo& info) {
    S3ObjectStore& store = client_->store();
    const MultipartLimits limits = store.multipart_limits();
    int64_t part_bytes = std::max(copy_part_bytes_, (info.size + limits.max_parts - 1) / limits.max_parts);
    part_bytes = std::clamp(part_bytes, limits.min_part_bytes, limits.max_part_bytes);
    const int parts = static_cast<int>((info.size + part_bytes - 1) / part_bytes);
    FERRY_ASSIGN_OR_RETURN(std::string upload_id, Wait<std::string>([&](Callback<std::string> done) {
                             store.CreateMultipart(to, std::move(done));
                           }));
    // `concurrency_` parts in flight, each awaited in order (CompleteMultipart
    // lists them so); the first error stops new ones, and those in flight
    // are awaited before the upload is aborted.
    std::deque<std::pair<int, Future<std::string>>> in_flight;  // part number, its ETag
    std::vector<CompletedPart> completed;
    absl::Status failed;
    auto await_oldest = [&] {
      auto [n, future] = std::move(in_flight.front());
      in_flight.pop_front();
      absl::StatusOr<std::string> etag = std::move(future).Get();
      if (etag.ok()) {
        completed.push_back({n, *std::move(etag)});
      } else if (failed.ok()) {
        failed = std::move(etag).status();
      }
    };
    for (int n = 1; n <= parts && failed.ok(); ++n) {
      if (static_cast<int>(in_flight.size()) >= concurrency_) {
        await_oldest();
        if (!failed.ok()) break;
      }
      const int64_t first = (n - 1) * part_bytes;
      const int64_t last = std::min(info.size, first + part_bytes) - 1;
      in_flight.emplace_back(n, Started<std::string>([&](Callback<std::string> done) {
        store.UploadPartCopy(to, upload_id, n, from, first, last, info.etag, std::move(done));
      }));
    }
    while (!in_flight.empty()) await_oldest();
    if (failed.ok()) {
      failed = Wait<std::string>([&](Callback<std::string> done) {
                 store.CompleteMultipart(to, upload_id, completed, std::move(done));
               }).status();
    }
    if (!failed.ok()) {
      // No orphan upload: its parts would be billed and invisible. When the
      // abort fails too (the transport has retried it), the user is told
      // which upload is left, so it can be aborted by hand.
      const absl::Status aborted =
          WaitStatus([&](StatusCallback done) { store.AbortMultipart(to, upload_id, std::move(done)); });
      std::string message = absl::StrCat("server-side copy of ", Url(from), " to ", Url(to), " (",
                                         parts, " parts): ", failed.message());
      if (!aborted.ok()) {
        absl::StrAppend(&message, "; aborting its multipart upload ", upload_id,
                        " failed too, so its parts stay stored until it is aborted: ",
                        aborted.message());
      }
      return absl::Status(failed.code(), message);
    }
    return absl::OkStatus();
  }

  // The unfinished multipart uploads of `at`'s key that interrupted
  // writers left (started before options.reclaim_before): the newest one
  // started after the source last changed (options.mtime) is returned with
  // its parts, to be continued (MultipartUploader keeps each stored part
  // whose MD5 matches the new bytes, so changed bytes are always sent);
  // the rest are aborted. The time test keeps the metadata the upload was
  // created with (the source's mtime, md5chksum) true. (AWS dates an
  // upload at its creation; versitygw's posix backend at its last part, a
  // later time, which only weakens the test for the metadata.) A write of
  // unknown size or source time continues none. Nothing on any error: the
  // write then starts afresh.
  ResumableUpload ResumeOrAbortLeftovers(const BucketKey& at, const fs::WriteOptions& options) {
    S3ObjectStore& store = client_->store();
    absl::StatusOr<std::vector<MultipartUploadInfo>> uploads =
        Wait<std::vector<MultipartUploadInfo>>([&](auto done) {
          store.ListMultipartUploads(at.bucket, at.key, std::move(done));
        });
    if (!uploads.ok()) return {};
    const std::string key = absl::StrCat(at.bucket, "/", at.key);
    const MultipartUploadInfo* newest = nullptr;
    std::vector<const MultipartUploadInfo*> stale;
    for (const MultipartUploadInfo& u : *uploads) {
      if (u.key != at.key || u.initiated == absl::InfinitePast() ||
          u.initiated >= options.reclaim_before) {
        continue;  // another key under the prefix, or possibly a live writer's
      }
      const bool resumable = options.size >= kMinPartBytes &&
                             options.mtime != absl::InfinitePast() && u.initiated > options.mtime;
      if (resumable && (newest == nullptr || u.initiated > newest->initiated)) {
        if (newest != nullptr) stale.push_back(newest);
        newest = &u;
      } else {
        stale.push_back(&u);
      }
    }
    ResumableUpload resume;
    if (newest != nullptr) {
      absl::StatusOr<std::vector<UploadedPartInfo>> parts =
          Wait<std::vector<UploadedPartInfo>>([&](auto done) {
            store.ListParts(key, newest->upload_id, std::move(done));
          });
      if (parts.ok()) {
        resume.upload_id = newest->upload_id;
        for (UploadedPartInfo& p : *parts) {
          resume.parts.push_back({.part_number = p.part_number, .size = p.size,
                                  .etag = std::move(p.etag)});
        }
      } else {
        stale.push_back(newest);
      }
    }
    for (const MultipartUploadInfo* u : stale) {
      (void)WaitStatus([&](StatusCallback done) {
        store.AbortMultipart(key, u->upload_id, std::move(done));
      });
    }
    return resume;
  }

  // Aborts the unfinished multipart uploads of `bucket` under `prefix`
  // started before `before`.
  absl::StatusOr<fs::LeftoverStats> AbortUploadsBefore(const std::string& bucket,
                                                       const std::string& prefix,
                                                       absl::Time before) {
    S3ObjectStore& store = client_->store();
    FERRY_ASSIGN_OR_RETURN(std::vector<MultipartUploadInfo> uploads,
                           Wait<std::vector<MultipartUploadInfo>>([&](auto done) {
                             store.ListMultipartUploads(bucket, prefix, std::move(done));
                           }));
    fs::LeftoverStats stats;
    for (const MultipartUploadInfo& u : uploads) {
      if (u.initiated == absl::InfinitePast() || u.initiated >= before) {
        ++stats.kept_recent;
        continue;
      }
      const std::string key = absl::StrCat(bucket, "/", u.key);
      absl::Status s =
          WaitStatus([&](StatusCallback done) { store.AbortMultipart(key, u.upload_id, std::move(done)); });
      if (absl::IsNotFound(s)) continue;  // finished or aborted meanwhile
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("abort the unfinished upload ", u.upload_id, " of ",
                                                   Url(key), ": ", s.message()));
      }
      ++stats.removed;
      stats.removed_urls.push_back(absl::StrCat(Url(key), " (multipart upload ", u.upload_id, ")"));
    }
    return stats;
  }

  const std::unique_ptr<S3Client> client_;
  const bool make_bucket_;
  const int64_t chunk_bytes_;
  const int concurrency_;
  const int64_t copy_object_max_bytes_;
  const int64_t copy_part_bytes_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<S3FileSystem>> S3FileSystem::Create(
    Runtime& runtime, S3Config config, const S3FileSystemOptions& options) {
  const int64_t chunk =
      options.chunks.chunk_bytes > 0 ? options.chunks.chunk_bytes : kDefaultChunkBytes;
  const int concurrency =
      options.chunks.parallelism > 0 ? options.chunks.parallelism : kDefaultConcurrency;
  config.mpu_chunk_bytes = chunk;
  config.mpu_threads = concurrency;
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<S3Client> client, S3Client::Create(runtime, config));
  return std::make_shared<ClientFileSystem>(std::move(client), options, chunk, concurrency);
}

namespace {

// s3:// URLs: one S3FileSystem, made at the first one.
class S3Provider final : public fs::FileSystemProvider {
 public:
  explicit S3Provider(const S3FileSystemOptions& options) : options_(options) {}

  absl::StatusOr<fs::Location> Resolve(Runtime& runtime, std::string_view url) override {
    FERRY_ASSIGN_OR_RETURN(std::string key, S3UrlToKey(url));
    std::shared_ptr<S3FileSystem> fs;
    {
      MutexLock lock(&mu_);
      if (fs_ == nullptr) {
        FERRY_ASSIGN_OR_RETURN(S3Config config,
                               S3Config::FromEnvironment(S3Config::ProcessEnvironment(),
                                                         options_.config_overrides));
        if (options_.stall_timeout > absl::ZeroDuration()) {
          config.stall_timeout = options_.stall_timeout;
          // One timeout bounds connecting too.
          config.connect_timeout = std::min(config.connect_timeout, options_.stall_timeout);
        }
        FERRY_ASSIGN_OR_RETURN(fs_, S3FileSystem::Create(runtime, std::move(config), options_));
      }
      fs = fs_;
    }
    std::string path = fs::NormalizePath(key);
    // A bucket names a directory as a key ending in '/' does.
    const bool names_directory = key.empty() || key.back() == '/' || path.find('/') == std::string::npos;
    return fs::Location{std::move(fs), std::move(path), names_directory, std::string(url)};
  }

 private:
  const S3FileSystemOptions options_;
  Mutex mu_;
  std::shared_ptr<S3FileSystem> fs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<fs::FileSystemProvider> NewS3Provider(const S3FileSystemOptions& options) {
  return std::make_unique<S3Provider>(options);
}

}  // namespace ferry::s3
