#include "ferry/irods/irods_file_system.h"

#include <fcntl.h>

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/io/internal/positional_io.h"
#include "ferry/io/internal/temp_file.h"
#include "ferry/runtime/runtime.h"

namespace ferry::irods {
namespace {

constexpr int64_t kDefaultChunkBytes = int64_t{8} << 20;
constexpr int kDefaultParallelism = 4;

fs::Entry ToEntry(std::string path, IrodsObjectType type, int64_t size, int64_t id, int64_t mtime) {
  fs::Entry e;
  e.path = std::move(path);
  e.kind = type == IrodsObjectType::kCollection ? fs::EntryKind::kDirectory : fs::EntryKind::kFile;
  e.size = type == IrodsObjectType::kCollection ? 0 : size;
  e.id = static_cast<uint64_t>(id);
  if (mtime > 0) e.mtime = absl::FromUnixSeconds(mtime);
  return e;
}

// One write call per 32 MiB at most (iRODS's single-buffer limit).
constexpr size_t kMaxCall = size_t{32} << 20;

// One data object open for reading or writing on up to `max_streams`
// streams: the primary, and streams joined to its replica by token as
// concurrent calls need them.
class IrodsFile final : public fs::File {
 public:
  IrodsFile(IrodsFileSystem* fs, std::unique_ptr<IrodsStream> primary, std::string token, int flags,
            int max_streams, int64_t size, std::string temp_path, std::string final_path,
            absl::Time mtime = absl::InfinitePast())
      : fs_(fs),
        mtime_(mtime),
        flags_(flags),
        max_streams_(std::max(1, max_streams)),
        token_(std::move(token)),
        size_(size),
        temp_path_(std::move(temp_path)),
        final_path_(std::move(final_path)) {
    idle_.push_back(std::move(primary));
    total_ = 1;
  }

  ~IrodsFile() override {
    if (writer()) {
      (void)Discard();
    } else {
      (void)Close();
    }
  }

  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
    if (writer()) return absl::FailedPreconditionError("ReadAt on an iRODS file opened for writing");
    return ReadWith([&](IrodsStream& s) { return ReadOnce(s, offset, buf); });
  }

  // Into a local file: the reply's bytes are spliced from the session's
  // socket into `fd` (IrodsStream::ReadIntoFile), on this thread.
  absl::StatusOr<size_t> ReadIntoDescriptor(int64_t offset, size_t n, int fd, int64_t fd_offset,
                                            Mutex* write_lock) override {
    if (writer()) return absl::FailedPreconditionError("read of an iRODS file opened for writing");
    FERRY_RETURN_IF_ERROR(io_internal::CheckFillDescriptor(fd, fd_offset, Cat("read ", final_path_)));
    return ReadWith([&](IrodsStream& s) -> absl::StatusOr<size_t> {
      FERRY_RETURN_IF_ERROR(s.Seek(offset));
      size_t done = 0;
      while (done < n) {
        FERRY_ASSIGN_OR_RETURN(size_t got, s.ReadIntoFile({.fd = fd,
                                                           .offset = fd_offset + static_cast<int64_t>(done),
                                                           .size = n - done,
                                                           .write_lock = write_lock}));
        if (got == 0) break;
        done += got;
      }
      return done;
    });
  }

  // A read by `once` on a borrowed stream, retried on a fresh one as
  // ReadAt's comment says.
  absl::StatusOr<size_t> ReadWith(absl::FunctionRef<absl::StatusOr<size_t>(IrodsStream&)> once) {
    {
      MutexLock lock(&mu_);
      ++readers_;
    }
    absl::Cleanup done_reading = [this] {
      MutexLock lock(&mu_);
      --readers_;
    };
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<IrodsStream> s, Borrow());
    // Read-ahead serves one reader going through the file. With several,
    // each stream's reads are scattered through the file (chunks taken in
    // turn), and a window it asked for would mostly be dropped unread.
    auto allow_read_ahead = [&] {
      MutexLock lock(&mu_);
      s->AllowReadAhead(readers_ == 1 && total_ == 1 ? size_ : 0);
    };
    allow_read_ahead();
    // A stream whose connection failed lost its descriptor with it: the
    // object is opened again (read-only, on a new connection) and the read
    // runs again, while the client's retry policy allows. Writes are not
    // retried: what a lost write call did to the replica is unknown.
    absl::StatusOr<size_t> got =
        RetryBlocking(fs_->client().retry_policy(), [&](int) -> absl::StatusOr<size_t> {
          if (s == nullptr) {
            FERRY_ASSIGN_OR_RETURN(s, fs_->client().Open(final_path_, O_RDONLY));
            allow_read_ahead();
          }
          absl::StatusOr<size_t> r = once(*s);
          if (!r.ok() && s->broken()) {
            s->Abandon();
            s.reset();
            // Joining by the old replica token may no longer work (a
            // restarted server): go on with the streams this file has.
            MutexLock lock(&mu_);
            no_more_sessions_ = true;
          }
          return r;
        });
    if (s != nullptr) {
      Return(std::move(s));
    } else {
      MutexLock lock(&mu_);
      --total_;
      returned_.SignalAll();  // Borrow may reopen, CloseStreams may finish
    }
    return got;
  }

  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) override {
    return WriteInCalls(offset, data.size(),
                        [&](IrodsStream& s, size_t done, size_t len) -> absl::StatusOr<size_t> {
                          FERRY_RETURN_IF_ERROR(s.Write(std::string_view(data.data() + done, len)));
                          return len;
                        });
  }

  absl::StatusOr<size_t> WriteFromDescriptor(int64_t offset, int fd, int64_t fd_offset,
                                             size_t n) override {
    return WriteInCalls(offset, n, [&](IrodsStream& s, size_t done, size_t len) {
      return s.WriteFromFile(fd, fd_offset + static_cast<int64_t>(done), len);
    });
  }

  absl::StatusOr<int64_t> Size() override {
    MutexLock lock(&mu_);
    return size_;
  }

  absl::Status Close() override {
    FERRY_RETURN_IF_ERROR(CloseStreams());
    if (!writer() || finished_) return absl::OkStatus();
    finished_ = true;
    IrodsClient& c = fs_->client();
    // Into place: the target is replaced only by a complete object.
    absl::Status s = c.Rename(temp_path_, final_path_, false);
    if (absl::IsAlreadyExists(s)) {
      FERRY_RETURN_IF_ERROR(c.RemoveDataObject(final_path_));
      s = c.Rename(temp_path_, final_path_, false);
    }
    if (!s.ok()) (void)c.RemoveDataObject(temp_path_);
    // The source's time, once in place (iRODS keeps seconds). A server
    // without touch (before 4.3) keeps the upload's time: a later sync
    // then compares content instead.
    if (s.ok() && mtime_ != absl::InfinitePast()) {
      absl::Status touched = c.SetModifyTime(final_path_, mtime_);
      if (!touched.ok() && !absl::IsUnimplemented(touched)) s = touched;
    }
    fs_->NoteChanged(final_path_);
    return s;
  }

  absl::Status Discard() override {
    absl::Status s = CloseStreams(/*abandon_broken=*/true);
    if (writer() && !finished_) {
      finished_ = true;
      absl::Status r = fs_->client().RemoveDataObject(temp_path_);
      if (s.ok() && !absl::IsNotFound(r)) s = r;
    }
    return s;
  }

 private:
  bool writer() const { return !temp_path_.empty(); }
  // The object the streams have open: a writer's temporary, else the file.
  const std::string& open_path() const { return writer() ? temp_path_ : final_path_; }

  static absl::StatusOr<size_t> ReadOnce(IrodsStream& s, int64_t offset, absl::Span<char> buf) {
    FERRY_RETURN_IF_ERROR(s.Seek(offset));
    size_t done = 0;
    while (done < buf.size()) {
      FERRY_ASSIGN_OR_RETURN(size_t n, s.Read(buf.data() + done, buf.size() - done));
      if (n == 0) break;
      done += n;
    }
    return done;
  }

  absl::StatusOr<std::unique_ptr<IrodsStream>> Borrow() {
    bool reopen = false;
    {
      MutexLock lock(&mu_);
      for (;;) {
        if (closed_) return absl::FailedPreconditionError(Cat(final_path_, " is closed"));
        if (!idle_.empty()) {
          std::unique_ptr<IrodsStream> s = std::move(idle_.back());
          idle_.pop_back();
          return s;
        }
        if (total_ == 0) {  // every stream was lost with its connection
          ++total_;
          reopen = true;
          break;
        }
        if (total_ < max_streams_ && !token_.empty() && !no_more_sessions_) {
          ++total_;
          break;
        }
        returned_.Wait(&mu_);
      }
    }
    absl::StatusOr<std::unique_ptr<IrodsStream>> joined =
        reopen ? fs_->client().Open(final_path_, O_RDONLY)
               : fs_->client().Join(open_path(), token_, flags_);
    if (joined.ok()) return joined;
    MutexLock lock(&mu_);
    --total_;
    returned_.SignalAll();
    if (reopen || !absl::IsResourceExhausted(joined.status())) return joined.status();
    // Every session is leased: go on with the streams this file has.
    no_more_sessions_ = true;
    while (idle_.empty() && total_ > 0) returned_.Wait(&mu_);
    if (idle_.empty()) {
      return absl::UnavailableError(Cat(final_path_, ": every stream was lost with its connection"));
    }
    std::unique_ptr<IrodsStream> s = std::move(idle_.back());
    idle_.pop_back();
    return s;
  }

  void Return(std::unique_ptr<IrodsStream> s) {
    MutexLock lock(&mu_);
    idle_.push_back(std::move(s));
    returned_.Signal();
  }

  // `n` bytes at `offset` on a borrowed stream, in calls of at most
  // kMaxCall, each made by `write(stream, done, len)`, which returns the
  // bytes it wrote: fewer than `len` only when its source ended (the
  // stream is broken then, and the file to be discarded), which stops here
  // without counting them.
  absl::StatusOr<size_t> WriteInCalls(
      int64_t offset, size_t n,
      absl::FunctionRef<absl::StatusOr<size_t>(IrodsStream& s, size_t done, size_t len)> write) {
    if (!writer()) return absl::FailedPreconditionError("WriteAt on an iRODS file opened for reading");
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<IrodsStream> s, Borrow());
    absl::Status st = s->Seek(offset);
    size_t done = 0;
    bool ended = false;
    while (st.ok() && done < n) {
      const size_t len = std::min(kMaxCall, n - done);
      absl::StatusOr<size_t> wrote = write(*s, done, len);
      if (!wrote.ok()) {
        st = wrote.status();
      } else {
        done += *wrote;
        ended = *wrote < len;
        if (ended) break;
      }
    }
    Return(std::move(s));
    if (!st.ok()) return st;
    if (ended) return done;
    MutexLock lock(&mu_);
    size_ = std::max(size_, offset + static_cast<int64_t>(done));
    return done;
  }

  // Joined streams first, then the primary, which finalizes the replica.
  // With `abandon_broken` (a discard: the object goes anyway), a stream
  // whose connection failed is let go without a close, which could only
  // fail: its descriptor died with the connection.
  absl::Status CloseStreams(bool abandon_broken = false) {
    std::vector<std::unique_ptr<IrodsStream>> streams;
    {
      MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      while (static_cast<int>(idle_.size()) < total_) returned_.Wait(&mu_);
      closed_ = true;
      streams.swap(idle_);
    }
    std::stable_partition(streams.begin(), streams.end(),
                          [](const std::unique_ptr<IrodsStream>& s) { return !s->primary(); });
    absl::Status first;
    for (auto& s : streams) {
      if (abandon_broken && s->broken()) {
        s->Abandon();
        continue;
      }
      absl::Status st = s->Close();
      if (first.ok()) first = st;
    }
    return first;
  }

  IrodsFileSystem* const fs_;
  const absl::Time mtime_;  // writers: the published object's, if set
  const int flags_;
  const int max_streams_;
  const std::string token_;
  Mutex mu_;
  CondVar returned_;
  std::vector<std::unique_ptr<IrodsStream>> idle_ ABSL_GUARDED_BY(mu_);
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  int readers_ ABSL_GUARDED_BY(mu_) = 0;  // ReadWith calls under way
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool no_more_sessions_ ABSL_GUARDED_BY(mu_) = false;
  int64_t size_ ABSL_GUARDED_BY(mu_);
  const std::string temp_path_;  // writers only
  const std::string final_path_;
  bool finished_ = false;  // Close/Discard: one caller at a time
};

}  // namespace

std::string LogicalPath(std::string_view path) {
  std::string out(1, '/');
  out.append(path);
  return out;
}

namespace {

// One client (and its caches) as a filesystem: what the header's
// IrodsFileSystem promises, call by call.
class ClientFileSystem final : public IrodsFileSystem {
 public:
  ClientFileSystem(std::unique_ptr<IrodsClient> client, int64_t chunk_bytes, int parallelism,
                   const std::optional<IrodsCacheOptions>& cache)
      : client_(std::move(client)),
        caches_(cache ? std::make_unique<IrodsCacheSet>(*client_, *cache) : nullptr),
        chunk_bytes_(chunk_bytes),
        parallelism_(parallelism) {}

  IrodsClient& client() override { return *client_; }
  IrodsCacheSet* caches() override { return caches_.get(); }
  void NoteChanged(std::string_view logical_path) override {
    if (caches_ != nullptr) caches_->Changed(logical_path);
  }

  std::string_view scheme() const override { return "irods"; }
  std::string Url(std::string_view path) const override {
    const IrodsAccount& a = client_->account();
    return Cat("irods://", a.user, "@", a.host, ":", a.port, LogicalPath(path));
  }

  absl::StatusOr<fs::Entry> Stat(std::string_view path) override {
    IrodsStat st;
    if (caches_ != nullptr) {
      FERRY_ASSIGN_OR_RETURN(auto cached, caches_->Stat(client_->account().user, LogicalPath(path)));
      st = *cached;
    } else {
      FERRY_ASSIGN_OR_RETURN(st, client_->Stat(LogicalPath(path)));
    }
    fs::Entry e = ToEntry(std::string(path), st.type, st.size, st.id, st.modify_time);
    e.mode = st.mode;
    return e;
  }

  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<fs::Entry>&)> on_batch) override {
    if (caches_ != nullptr) {
      FERRY_ASSIGN_OR_RETURN(auto listing, caches_->List(client_->account().user, LogicalPath(dir)));
      constexpr size_t kBatch = 1000;
      for (size_t i = 0; i < listing->size(); i += kBatch) {
        std::vector<fs::Entry> out;
        out.reserve(std::min(kBatch, listing->size() - i));
        for (size_t j = i; j < std::min(i + kBatch, listing->size()); ++j) {
          const IrodsEntry& e = (*listing)[j];
          out.push_back(ToEntry(e.name, e.type, e.size, e.id, e.modify_time));
        }
        if (!on_batch(out)) break;
      }
      return absl::OkStatus();
    }
    return client_->List(LogicalPath(dir), [&](std::vector<IrodsEntry>& batch) {
      std::vector<fs::Entry> out;
      out.reserve(batch.size());
      for (IrodsEntry& e : batch) {
        out.push_back(ToEntry(std::move(e.name), e.type, e.size, e.id, e.modify_time));
      }
      return on_batch(out);
    });
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenRead(std::string_view path) override {
    const std::string logical = LogicalPath(path);
    FERRY_ASSIGN_OR_RETURN(IrodsStat st, client_->Stat(logical));
    if (st.type != IrodsObjectType::kDataObject) {
      return absl::FailedPreconditionError(Cat(logical, " is a collection, not a data object"));
    }
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<IrodsStream> primary, client_->Open(logical, O_RDONLY));
    std::string token;
    if (parallelism_ > 1 && st.size > chunk_bytes_) {
      FERRY_ASSIGN_OR_RETURN(token, primary->ReplicaToken());
    }
    return std::unique_ptr<fs::File>(new IrodsFile(this, std::move(primary), std::move(token), O_RDONLY,
                                                   parallelism_, st.size, "", logical));
  }

  // Creates the temporary a write of `logical` goes to, beside it, named
  // as local and NFS temporaries are (io_internal). The target's slot (the
  // same name in every run) first, exclusively: a slot a killed run left,
  // unchanged since `reclaim_before`, is removed and taken; one in use
  // sends us to a random name, as does any other failure to open the slot
  // (iRODS 4.3 ignores O_EXCL and overwrites a dead run's slot, but
  // refuses one a live writer holds open with a lock error).
  absl::StatusOr<std::unique_ptr<IrodsStream>> CreateTemporary(const std::string& logical,
                                                               absl::Time reclaim_before, int64_t size,
                                                               std::string* temp) {
    const std::string_view parent = fs::DirName(logical);
    const std::string dir = Cat(parent, parent == "/" ? "" : "/");
    const std::string_view name = fs::BaseName(logical);
    *temp = Cat(dir, io_internal::TempSlotFor(name));
    absl::StatusOr<std::unique_ptr<IrodsStream>> slot =
        client_->Open(*temp, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC, size);
    if (absl::IsAlreadyExists(slot.status()) && reclaim_before != absl::InfinitePast()) {
      absl::StatusOr<IrodsStat> st = client_->Stat(*temp);
      if (st.ok() && st->type == IrodsObjectType::kDataObject &&
          absl::FromUnixSeconds(st->modify_time) < reclaim_before &&
          client_->RemoveDataObject(*temp).ok()) {
        slot = client_->Open(*temp, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC, size);
      }
    }
    if (slot.ok()) return slot;
    *temp = Cat(dir, io_internal::TempNameFor(name));
    return client_->Open(*temp, O_WRONLY | O_CREAT | O_TRUNC, size);
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenWrite(std::string_view path,
                                                      const fs::WriteOptions& options) override {
    const std::string logical = LogicalPath(path);
    std::string temp;
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<IrodsStream> primary,
                           CreateTemporary(logical, options.reclaim_before, options.size, &temp));
    const int flags = O_WRONLY | O_CREAT | O_TRUNC;
    std::string token;
    if (parallelism_ > 1 && (options.size < 0 || options.size > chunk_bytes_)) {
      absl::StatusOr<std::string> t = primary->ReplicaToken();
      if (!t.ok()) {
        (void)primary->Close();
        (void)client_->RemoveDataObject(temp);
        return t.status();
      }
      token = *std::move(t);
    }
    return std::unique_ptr<fs::File>(new IrodsFile(this, std::move(primary), std::move(token), flags,
                                                   parallelism_, 0, temp, logical, options.mtime));
  }

  absl::Status CreateDir(std::string_view path, bool parents) override {
    absl::Status s = client_->CreateCollection(LogicalPath(path), parents);
    NoteChanged(LogicalPath(path));
    if (absl::IsAlreadyExists(s) && parents) return absl::OkStatus();
    return s;
  }

  absl::Status Remove(std::string_view path) override {
    absl::Status s = client_->RemoveDataObject(LogicalPath(path));
    NoteChanged(LogicalPath(path));
    return s;
  }

  absl::Status RemoveDir(std::string_view path) override {
    absl::Status s = client_->RemoveCollection(LogicalPath(path), /*recursive=*/false);
    NoteChanged(LogicalPath(path));
    return s;
  }

  absl::Status Rename(std::string_view from, std::string_view to) override {
    FERRY_ASSIGN_OR_RETURN(IrodsStat st, client_->Stat(LogicalPath(from)));
    absl::Status s = client_->Rename(LogicalPath(from), LogicalPath(to), st.type == IrodsObjectType::kCollection);
    if (caches_ != nullptr) caches_->Renamed(LogicalPath(from), LogicalPath(to));
    return s;
  }

  absl::Status AddMetadata(std::string_view path, const IrodsAvu& avu) override {
    FERRY_ASSIGN_OR_RETURN(bool collection, IsCollection(path));
    return client_->AddMetadata(LogicalPath(path), collection, avu);
  }

  absl::Status RemoveMetadata(std::string_view path, const IrodsAvu& avu) override {
    FERRY_ASSIGN_OR_RETURN(bool collection, IsCollection(path));
    return client_->RemoveMetadata(LogicalPath(path), collection, avu);
  }

  absl::StatusOr<std::vector<IrodsAvu>> ListMetadata(std::string_view path) override {
    FERRY_ASSIGN_OR_RETURN(bool collection, IsCollection(path));
    return client_->ListMetadata(LogicalPath(path), collection);
  }

  absl::Status SetAccess(std::string_view path, std::string_view user, std::string_view level,
                         bool recursive) override {
    absl::Status s = client_->SetAccess(LogicalPath(path), user, level, recursive);
    // Also after a failure: the server may have applied part of a recursive change.
    if (caches_ != nullptr) caches_->AclChanged(LogicalPath(path), recursive);
    return s;
  }

  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GetAccess(std::string_view path) override {
    FERRY_ASSIGN_OR_RETURN(bool collection, IsCollection(path));
    if (caches_ == nullptr) return client_->GetAccess(LogicalPath(path), collection);
    FERRY_ASSIGN_OR_RETURN(auto cached, caches_->Permissions(LogicalPath(path), collection));
    return *cached;
  }

  absl::Status SetModTime(std::string_view path, absl::Time mtime) override {
    const std::string logical = LogicalPath(path);
    absl::Status s = client_->SetModifyTime(logical, mtime);
    NoteChanged(logical);
    return s;
  }

  // iRODS keeps modification times in whole seconds.
  absl::Duration mtime_precision() const override { return absl::Seconds(1); }

  // The server hashes a replica itself (DATA_OBJ_CHKSUM), SHA-256 under
  // iRODS' default scheme: what python-irodsclient's chksum() and ichksum
  // show, and what a sync compares against a local file's SHA-256.
  std::optional<HashKind> server_hash() const override { return HashKind::kSha256; }

  absl::StatusOr<std::string> ContentHash(std::string_view path, const fs::Entry& listed,
                                          HashKind kind, bool read_if_needed) override {
    if (kind == HashKind::kSha256) {
      FERRY_ASSIGN_OR_RETURN(const std::string sum, client_->Checksum(LogicalPath(path)));
      std::string digest;
      if (absl::StartsWith(sum, "sha2:") && absl::Base64Unescape(sum.substr(5), &digest) &&
          digest.size() == 32) {
        return digest;
      }
      // Another scheme (MD5 servers answer hex): read instead.
    }
    return fs::FileSystem::ContentHash(path, listed, kind, read_if_needed);
  }

  int64_t preferred_chunk_bytes() const override { return chunk_bytes_; }
  int preferred_parallelism() const override { return parallelism_; }

 private:
  // Metadata and ACL calls name the object's kind; a stat (cached when the
  // caches are on) tells it. NotFound for a missing path.
  absl::StatusOr<bool> IsCollection(std::string_view path) {
    FERRY_ASSIGN_OR_RETURN(fs::Entry e, Stat(path));
    return e.kind == fs::EntryKind::kDirectory;
  }

  const std::unique_ptr<IrodsClient> client_;
  const std::unique_ptr<IrodsCacheSet> caches_;
  const int64_t chunk_bytes_;
  const int parallelism_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<IrodsFileSystem>> IrodsFileSystem::Connect(
    IrodsAccount account, const IrodsFileSystemOptions& options) {
  const int parallelism =
      options.chunks.parallelism > 0 ? options.chunks.parallelism : kDefaultParallelism;
  IrodsClientOptions co = options.client;
  // A file's streams and the engine's other files need sessions of their own.
  co.connections = std::max(co.connections, parallelism + 2);
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<IrodsClient> client, IrodsClient::Connect(std::move(account), co));
  return std::make_shared<ClientFileSystem>(
      std::move(client), options.chunks.chunk_bytes > 0 ? options.chunks.chunk_bytes : kDefaultChunkBytes, parallelism,
      options.cache);
}

absl::StatusOr<IrodsUrl> ParseIrodsUrl(std::string_view url) {
  std::string_view rest = url;
  if (rest.substr(0, 8) != "irods://") {
    return absl::InvalidArgumentError(Cat("not an irods:// URL: ", url));
  }
  rest.remove_prefix(8);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
  FERRY_ASSIGN_OR_RETURN(IrodsAccount account, LoadIrodsAccount());
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    account.user = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }
  if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    int port = 0;
    if (!absl::SimpleAtoi(ToAbsl(authority.substr(colon + 1)), &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(Cat("bad port in ", url));
    }
    account.port = static_cast<uint16_t>(port);
    authority = authority.substr(0, colon);
  }
  if (!authority.empty()) account.host = std::string(authority);
  std::string normalized = fs::NormalizePath(path);
  if (account.zone.empty()) account.zone = std::string(normalized.substr(0, normalized.find('/')));
  if (account.host.empty() || account.zone.empty()) {
    return absl::InvalidArgumentError(
        Cat(url, ": no host or zone (irods://[user@]host[:port]/zone/path)"));
  }
  return IrodsUrl{std::move(account), std::move(normalized)};
}

namespace {

class IrodsProvider final : public fs::FileSystemProvider {
 public:
  explicit IrodsProvider(const IrodsFileSystemOptions& options) : options_(options) {}

  absl::StatusOr<fs::Location> Resolve(Runtime& runtime, std::string_view url) override {
    FERRY_ASSIGN_OR_RETURN(IrodsUrl parsed, ParseIrodsUrl(url));
    IrodsAccount& account = parsed.account;
    if (!options_.client_user.empty()) account.client_user = options_.client_user;
    if (!options_.password.empty()) {
      account.password = options_.password;
      account.password_source = "the password given to the client";
    }
    const std::string key = Cat(account.host, "|", account.port, "|", account.user);
    std::shared_ptr<IrodsFileSystem> fs = Find(key);
    if (fs == nullptr) {
      // One connect (handshake, login) at a time, outside mu_: URLs
      // resolved at once wait for the first and share its connections.
      MutexLock connecting(&connect_mu_);
      fs = Find(key);
      if (fs == nullptr) {
        IrodsFileSystemOptions o = options_;
        // Read-ahead under the Runtime's bound, with NFS's (the
        // filesystem is the first resolving Runtime's, as NFS's mounts).
        if (o.client.read_ahead_budget == nullptr) o.client.read_ahead_budget = &runtime.read_ahead_budget();
        FERRY_ASSIGN_OR_RETURN(fs, IrodsFileSystem::Connect(std::move(account), o));
        MutexLock lock(&mu_);
        made_.emplace(key, fs);
      }
    }
    const bool names_directory = parsed.path.empty() || url.back() == '/';
    return fs::Location{std::move(fs), std::move(parsed.path), names_directory, std::string(url)};
  }

 private:
  std::shared_ptr<IrodsFileSystem> Find(const std::string& key) {
    MutexLock lock(&mu_);
    auto it = made_.find(key);
    return it == made_.end() ? nullptr : it->second;
  }

  const IrodsFileSystemOptions options_;
  Mutex connect_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<IrodsFileSystem>> made_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<fs::FileSystemProvider> NewIrodsProvider(const IrodsFileSystemOptions& options) {
  return std::make_unique<IrodsProvider>(options);
}

}  // namespace ferry::irods
