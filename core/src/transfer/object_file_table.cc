// Design. The descriptor bookkeeping (numbers, offsets, per-key open
// counts, close-waits-for-calls) is FdTable<ObjectHandle>'s. This file adds
// what is shared per key: one MultipartDownloader for every read-open of a
// key and one MultipartUploader for every write-open, each in a map entry
// that counts the descriptors using it. The table's mutex guards only those
// maps and the fd -> handle map (for Stat and the destructor); HEAD
// requests, reads, writes and Finish never run under it.
//
// Two first read-opens of one key racing each other both HEAD the object
// (the lock is not held across the request); the loser drops its
// downloader and uses the winner's, so every descriptor of a key still
// shares one. A key's entry is removed when its last descriptor closes, so
// a later open sees the object as it is then (a new HEAD, a new ETag).
//
// Each read-open tells the shared downloader FdTable's reader count for
// the key (OnReaderCountChanged): the second reader starts the multipart
// download. The last close of a written key (by the entry's own count,
// which excludes read descriptors) finishes the upload on the closing
// thread and returns its status.
#include "ferry/transfer/object_file_table.h"

#include <atomic>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/atomic_max.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"

namespace ferry {
namespace {

// A read key's shared downloader and how many descriptors use it.
struct ReadEntry {
  std::shared_ptr<MultipartDownloader> downloader;
  int descriptors = 0;
};

// A written key's shared uploader.
struct WriteEntry {
  std::shared_ptr<MultipartUploader> uploader;
  int64_t total_bytes = -1;
  int descriptors = 0;
};

// What a descriptor is opened with: a read or a write side of one key.
// Thread-safe (the downloader and uploader are).
class ObjectHandle {
 public:
  explicit ObjectHandle(std::shared_ptr<MultipartDownloader> d) : downloader_(std::move(d)) {}
  explicit ObjectHandle(std::shared_ptr<MultipartUploader> u) : uploader_(std::move(u)) {}

  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) {
    if (downloader_ == nullptr) {
      return absl::InvalidArgumentError("read on an object opened for writing");
    }
    return downloader_->Read(offset, std::span<char>(buf.data(), buf.size()));
  }

  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) {
    if (uploader_ == nullptr) {
      return absl::InvalidArgumentError("write on an object opened for reading");
    }
    FERRY_RETURN_IF_ERROR(uploader_->Write(offset, std::span<const char>(data.data(), data.size())));
    // The highest byte written is the size of an object of unknown length.
    AtomicMax(written_end_, offset + static_cast<int64_t>(data.size()));
    return data.size();
  }

  // Reads: the object's size at open. Writes: the declared size, else the
  // end of the highest write through this descriptor's key so far.
  absl::StatusOr<int64_t> Size() {
    if (downloader_ != nullptr) return downloader_->info().size;
    if (uploader_->layout().known_size()) return uploader_->layout().total_bytes();
    return written_end_.load(std::memory_order_relaxed);
  }

  MultipartDownloader* downloader() const { return downloader_.get(); }

 private:
  const std::shared_ptr<MultipartDownloader> downloader_;
  const std::shared_ptr<MultipartUploader> uploader_;
  std::atomic<int64_t> written_end_{0};
};

}  // namespace

struct ObjectFileTable::Impl {
  Impl(ObjectStore& s, Runtime& r, const ObjectFileTableOptions& o)
      : store(s), runtime(r), options(o), downloads(s, r, o.download) {}

  ObjectStore& store;
  Runtime& runtime;
  const ObjectFileTableOptions options;
  MultipartDownloadManager downloads;
  FdTable<ObjectHandle> fds;

  mutable Mutex mu;
  absl::flat_hash_map<std::string, ReadEntry> readers ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::string, WriteEntry> writers ABSL_GUARDED_BY(mu);
  // Every open descriptor's handle and whether it writes (for Stat, Close
  // and the destructor).
  struct Open {
    std::shared_ptr<ObjectHandle> handle;
    std::string key;
    bool writes = false;
  };
  absl::flat_hash_map<int, Open> open ABSL_GUARDED_BY(mu);

  absl::StatusOr<int> OpenRead(std::string key, const ObjectOpenOptions& o) {
    std::shared_ptr<MultipartDownloader> downloader;
    {
      MutexLock l(&mu);
      auto it = readers.find(key);
      if (it != readers.end()) {
        downloader = it->second.downloader;
        ++it->second.descriptors;
      }
    }
    if (downloader == nullptr) {
      FERRY_ASSIGN_OR_RETURN(std::unique_ptr<MultipartDownloader> fresh,
                             o.listed.has_value() && !o.listed->etag.empty()
                                 ? downloads.OpenWithInfo(key, *o.listed)
                                 : downloads.Open(key));
      MutexLock l(&mu);
      ReadEntry& e = readers[key];
      if (e.downloader == nullptr) e.downloader = std::move(fresh);  // else: lost the race
      downloader = e.downloader;
      ++e.descriptors;
    }
    auto handle = std::make_shared<ObjectHandle>(downloader);
    absl::StatusOr<FdTable<ObjectHandle>::OpenResult> r = fds.Open(key, handle, OpenMode::kRead);
    if (!r.ok()) {
      ReleaseRead(key);
      return r.status();
    }
    {
      MutexLock l(&mu);
      open[r->fd] = Open{handle, key, false};
    }
    downloader->OnReaderCountChanged(r->readers);
    return r->fd;
  }

  absl::StatusOr<int> OpenWrite(std::string key, const ObjectOpenOptions& o) {
    std::shared_ptr<MultipartUploader> uploader;
    {
      MutexLock l(&mu);
      auto it = writers.find(key);
      if (it != writers.end()) {
        if (it->second.total_bytes != o.total_bytes) {
          return absl::InvalidArgumentError(absl::StrCat(
              "Open '", key, "' for writing: total_bytes ", o.total_bytes,
              " differs from the ", it->second.total_bytes, " of the descriptors already open"));
        }
        uploader = it->second.uploader;
        ++it->second.descriptors;
      } else {
        MultipartUploaderOptions uo = options.upload;
        uo.total_bytes = o.total_bytes;
        uo.metadata = o.metadata;
        uo.resume = o.resume;
        // Create sends nothing: safe under the lock, and it keeps a second
        // opener from creating another upload of the key.
        FERRY_ASSIGN_OR_RETURN(std::unique_ptr<MultipartUploader> fresh,
                               MultipartUploader::Create(store, runtime, key, uo));
        uploader = std::move(fresh);
        writers[key] = WriteEntry{uploader, o.total_bytes, 1};
      }
    }
    auto handle = std::make_shared<ObjectHandle>(uploader);
    absl::StatusOr<FdTable<ObjectHandle>::OpenResult> r = fds.Open(key, handle, OpenMode::kWrite);
    if (!r.ok()) {
      ReleaseWrite(key).IgnoreError();  // nothing was written
      return r.status();
    }
    MutexLock l(&mu);
    open[r->fd] = Open{handle, key, true};
    return r->fd;
  }

  void ReleaseRead(const std::string& key) {
    std::shared_ptr<MultipartDownloader> last;  // destroyed after the lock
    MutexLock l(&mu);
    auto it = readers.find(key);
    if (it == readers.end()) return;
    if (--it->second.descriptors == 0) {
      last = std::move(it->second.downloader);
      readers.erase(it);
    }
  }

  // Drops one writer of `key`; the last one finishes the upload.
  absl::Status ReleaseWrite(const std::string& key, UploadStats* upload = nullptr) {
    std::shared_ptr<MultipartUploader> last;
    {
      MutexLock l(&mu);
      auto it = writers.find(key);
      if (it == writers.end()) return absl::OkStatus();
      if (--it->second.descriptors > 0) return absl::OkStatus();
      last = std::move(it->second.uploader);
      writers.erase(it);
    }
    absl::StatusOr<std::string> etag = last->Finish();
    if (upload != nullptr) *upload = last->stats();
    return etag.status();
  }

  absl::Status Close(int fd, UploadStats* upload = nullptr) {
    FERRY_ASSIGN_OR_RETURN(FdTable<ObjectHandle>::CloseResult closed, fds.Close(fd));
    Open o;
    {
      MutexLock l(&mu);
      auto it = open.find(fd);
      if (it != open.end()) {
        o = std::move(it->second);
        open.erase(it);
      }
    }
    if (o.handle == nullptr) return absl::OkStatus();  // raced with another Close
    if (!o.writes) {
      ReleaseRead(o.key);
      return absl::OkStatus();
    }
    absl::Status s = ReleaseWrite(o.key, upload);
    if (!s.ok()) return Annotate(s, absl::StrCat("Close: fd ", fd, " ('", o.key, "')"));
    return absl::OkStatus();
  }
};

ObjectFileTable::ObjectFileTable(ObjectStore& store, Runtime& runtime,
                                 const ObjectFileTableOptions& options)
    : impl_(std::make_unique<Impl>(store, runtime, options)) {}

ObjectFileTable::~ObjectFileTable() {
  // Descriptors still open are closed; a written key's upload is aborted
  // (and waited for, so no request outlives the store), not finished.
  std::vector<int> fds;
  std::vector<std::shared_ptr<MultipartUploader>> uploads;
  {
    MutexLock l(&impl_->mu);
    for (const auto& [fd, o] : impl_->open) fds.push_back(fd);
    for (auto& [key, w] : impl_->writers) uploads.push_back(w.uploader);
    impl_->writers.clear();
  }
  for (const auto& u : uploads) u->Abort().IgnoreError();
  for (int fd : fds) impl_->Close(fd).IgnoreError();
}

absl::StatusOr<int> ObjectFileTable::Open(std::string_view key, OpenMode mode,
                                          const ObjectOpenOptions& options) {
  switch (mode) {
    case OpenMode::kRead:
      return impl_->OpenRead(std::string(key), options);
    case OpenMode::kWrite:
      return impl_->OpenWrite(std::string(key), options);
    case OpenMode::kReadWrite:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("Open '", ToAbsl(key),
                   "': read-write opens are not supported (an object store cannot update an "
                   "object in place; open it for reading or for writing)"));
}

absl::StatusOr<size_t> ObjectFileTable::Read(int fd, absl::Span<char> buf) {
  return impl_->fds.Read(fd, buf);
}

absl::StatusOr<size_t> ObjectFileTable::Write(int fd, absl::Span<const char> data) {
  return impl_->fds.Write(fd, data);
}

absl::StatusOr<size_t> ObjectFileTable::PRead(int fd, int64_t offset, absl::Span<char> buf) {
  return impl_->fds.PRead(fd, offset, buf);
}

absl::StatusOr<size_t> ObjectFileTable::PWrite(int fd, int64_t offset,
                                               absl::Span<const char> data) {
  return impl_->fds.PWrite(fd, offset, data);
}

absl::StatusOr<int64_t> ObjectFileTable::Lseek(int fd, int64_t offset, int whence) {
  return impl_->fds.Lseek(fd, offset, whence);
}

absl::Status ObjectFileTable::Close(int fd, UploadStats* upload) {
  return impl_->Close(fd, upload);
}

absl::Status ObjectFileTable::Abort(int fd) {
  std::shared_ptr<MultipartUploader> uploader;
  std::string key;
  {
    MutexLock l(&impl_->mu);
    auto it = impl_->open.find(fd);
    if (it == impl_->open.end()) return fd_table_internal::NotOpenError("Abort", fd);
    if (!it->second.writes) {
      return absl::InvalidArgumentError(
          absl::StrCat("Abort: fd ", fd, " ('", it->second.key, "') is open for reading"));
    }
    key = it->second.key;
    auto w = impl_->writers.find(key);
    if (w != impl_->writers.end()) uploader = w->second.uploader;
  }
  absl::Status aborted = uploader != nullptr ? uploader->Abort() : absl::OkStatus();
  // The last Close of an aborted upload reports the abort, not a success.
  impl_->Close(fd).IgnoreError();
  return Annotate(aborted, absl::StrCat("Abort: fd ", fd, " ('", key, "')"));
}

absl::StatusOr<ObjectInfo> ObjectFileTable::Stat(int fd) {
  std::shared_ptr<ObjectHandle> handle;
  {
    MutexLock l(&impl_->mu);
    auto it = impl_->open.find(fd);
    if (it == impl_->open.end()) return fd_table_internal::NotOpenError("Stat", fd);
    if (it->second.writes) {
      return absl::InvalidArgumentError(
          absl::StrCat("Stat: fd ", fd, " ('", it->second.key, "') is open for writing"));
    }
    handle = it->second.handle;
  }
  return handle->downloader()->info();
}

bool ObjectFileTable::SoleReader(int fd) const {
  MutexLock l(&impl_->mu);
  auto it = impl_->open.find(fd);
  if (it == impl_->open.end() || it->second.writes) return false;
  auto r = impl_->readers.find(it->second.key);
  return r != impl_->readers.end() && r->second.descriptors == 1;
}

int ObjectFileTable::open_descriptors() const { return impl_->fds.size(); }

}  // namespace ferry
