// MemFileSystem: a test-only, in-memory ferry::fs::FileSystem registered as
// mem://NAME/path, so the copy engine's own tests run on something that is
// neither NFS nor S3 shaped (the interface must not lean on either).
//
//   ferry::testing::MemFileSystem mem;
//   mem.PutFile("src/a.bin", "bytes");
//   ferry::CopyFile(runtime, mem, "src/a.bin", local, "/tmp/a.bin");
//
// Directories are explicit (CreateDir) as on a disk; files written through
// OpenWrite appear only at Close (atomic publish, like the real ones).
// Faults for tests: fail_read_at (a ReadAt covering that offset fails
// once per setting), abort_first_close (a Close says Aborted once, as an
// NFS server that lost unstable writes), read_delay (each ReadAt takes that
// long, as over a network), keeps_leftovers (a discarded writer of a
// resumable file leaves its gap-free prefix for the next writer of the
// same path and WriteOptions::resume_source, as a killed local copy's
// temporary does), and counters of calls in flight.
//
// Thread-safety: thread-safe (one lock; tests, not speed).
#ifndef FERRY_TESTING_MEM_FILE_SYSTEM_H_
#define FERRY_TESTING_MEM_FILE_SYSTEM_H_

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/atomic_max.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"

namespace ferry::testing {

class MemFileSystem : public fs::FileSystem {
 public:
  explicit MemFileSystem(std::string name = "test") : name_(std::move(name)) {
    nodes_[""] = Node{fs::EntryKind::kDirectory, nullptr, absl::InfinitePast()};
  }

  std::string_view scheme() const override { return "mem"; }
  std::string Url(std::string_view path) const override {
    return absl::StrCat("mem://", name_, "/", ToAbsl(path));
  }

  // Test set-up: a file with `bytes` (parents created).
  void PutFile(std::string_view path, std::string bytes) {
    PutFile(path, std::move(bytes), absl::Now());
  }
  // ... modified at `mtime`.
  void PutFile(std::string_view path, std::string bytes, absl::Time mtime) {
    MutexLock lock(&mu_);
    const std::string p(path);
    MakeParentsLocked(p);
    nodes_[p] = Node{fs::EntryKind::kFile, std::make_shared<std::string>(std::move(bytes)), mtime};
  }
  // A file stored under exactly `path`, no parents made: how an object
  // store holds a key such as "t/../../x", listed under "t" as it is.
  void PutRawFile(std::string_view path, std::string bytes) {
    MutexLock lock(&mu_);
    nodes_[std::string(path)] =
        Node{fs::EntryKind::kFile, std::make_shared<std::string>(std::move(bytes)), absl::Now()};
  }
  // A hostile or corrupt listing: List(dir) also lists `e` exactly as given
  // (any name, any kind, any id), after the real entries.
  void AddListedEntry(std::string_view dir, fs::Entry e) {
    MutexLock lock(&mu_);
    extra_listed_[std::string(dir)].push_back(std::move(e));
  }
  void PutSymlink(std::string_view path) {
    MutexLock lock(&mu_);
    MakeParentsLocked(std::string(path));
    nodes_[std::string(path)] = Node{fs::EntryKind::kSymlink, nullptr, absl::InfinitePast()};
  }
  // The bytes of a published file, or nullopt.
  std::optional<std::string> GetFile(std::string_view path) const {
    MutexLock lock(&mu_);
    auto it = nodes_.find(std::string(path));
    if (it == nodes_.end() || it->second.kind != fs::EntryKind::kFile) return std::nullopt;
    return *it->second.bytes;
  }
  std::vector<std::string> Paths() const {
    MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& [p, n] : nodes_) out.push_back(p);
    return out;
  }

  // Faults and counters.
  std::atomic<int64_t> fail_read_at{-1};
  std::atomic<bool> abort_first_close{false};
  absl::Duration read_delay = absl::ZeroDuration();
  std::atomic<int> reads_in_flight{0};
  std::atomic<int> max_reads_in_flight{0};
  std::atomic<int> open_writers{0};
  std::atomic<int> max_open_writers{0};
  std::atomic<int> closes{0};
  int64_t chunk_preference = 0;
  int parallelism_preference = 0;
  std::atomic<int> copy_within_calls{0};
  std::atomic<int> md5_calls{0};
  std::atomic<int> stat_calls{0};
  std::atomic<int> list_calls{0};
  // Listings report no kept times (as S3's report upload times).
  bool listings_lack_kept_mtime = false;
  bool lists_kept_mtime() const override { return !listings_lack_kept_mtime; }
  std::atomic<int> set_mtime_calls{0};
  std::atomic<int> removes{0};
  bool offers_copy_within = false;
  std::atomic<bool> keeps_leftovers{false};
  // Called (on the listing thread, no lock held) before each List lists
  // `dir`: a test can hold the walk there.
  std::function<void(std::string_view dir)> on_list;

  int64_t preferred_chunk_bytes() const override { return chunk_preference; }
  int preferred_parallelism() const override { return parallelism_preference; }

  absl::StatusOr<fs::Entry> Stat(std::string_view path) override {
    ++stat_calls;
    MutexLock lock(&mu_);
    const std::string p = fs::NormalizePath(path);
    auto it = nodes_.find(p);
    if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("stat ", Url(p), ": no such file"));
    return EntryOf(p, p, it->second);
  }

  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<fs::Entry>&)> on_batch) override {
    if (on_list) on_list(dir);
    ++list_calls;
    std::vector<fs::Entry> out;
    {
      MutexLock lock(&mu_);
      const std::string d = fs::NormalizePath(dir);
      FERRY_RETURN_IF_ERROR(FindLocked("list", d, fs::EntryKind::kDirectory).status());
      const std::string prefix = d.empty() ? "" : d + "/";
      for (auto c = nodes_.lower_bound(prefix); c != nodes_.end(); ++c) {
        if (c->first.compare(0, prefix.size(), prefix) != 0) break;
        if (c->first.size() == prefix.size()) continue;
        const std::string name = c->first.substr(prefix.size());
        // Only direct children: a name with '/' beyond the prefix is deeper,
        // unless its parent is not a node (then the store holds odd names,
        // such as "a/../x", and they are listed as they are).
        const size_t slash = name.find('/');
        if (slash != std::string::npos && nodes_.count(prefix + name.substr(0, slash))) continue;
        out.push_back(EntryOf(name, c->first, c->second));
      }
      if (auto extra = extra_listed_.find(d); extra != extra_listed_.end()) {
        out.insert(out.end(), extra->second.begin(), extra->second.end());
      }
    }
    if (!out.empty()) on_batch(out);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenRead(std::string_view path) override {
    MutexLock lock(&mu_);
    FERRY_ASSIGN_OR_RETURN(const Node* file,
                           FindLocked("open", fs::NormalizePath(path), fs::EntryKind::kFile));
    return std::unique_ptr<fs::File>(new Reader(this, file->bytes));
  }

  absl::StatusOr<std::unique_ptr<fs::File>> OpenWrite(std::string_view path,
                                                      const fs::WriteOptions& options) override {
    MutexLock lock(&mu_);
    const std::string p = fs::NormalizePath(path);
    auto parent = nodes_.find(std::string(fs::DirName(p)));
    if (parent == nodes_.end() || parent->second.kind != fs::EntryKind::kDirectory) {
      return absl::NotFoundError(absl::StrCat("open ", Url(p), ": no parent directory"));
    }
    auto it = nodes_.find(p);
    if (it != nodes_.end() && it->second.kind == fs::EntryKind::kDirectory) {
      return absl::FailedPreconditionError(absl::StrCat("open ", Url(p), ": a directory"));
    }
    AtomicMax(max_open_writers, ++open_writers);
    auto writer = std::make_unique<Writer>(this, p, std::max<int64_t>(options.size, 0),
                                           options.mtime, options.resume_source);
    auto left = leftovers_.find(p);
    if (left != leftovers_.end()) {
      // Not through Keep: a writer's lock is taken before this one (Close
      // publishes under it), never after.
      if (!options.resume_source.empty() && left->second.first == options.resume_source) {
        writer->KeepUnshared(left->second.second);
      }
      leftovers_.erase(left);
    }
    return std::unique_ptr<fs::File>(std::move(writer));
  }

  absl::Status CreateDir(std::string_view path, bool parents) override {
    MutexLock lock(&mu_);
    const std::string p = fs::NormalizePath(path);
    auto it = nodes_.find(p);
    if (it != nodes_.end()) {
      return it->second.kind == fs::EntryKind::kDirectory
                 ? absl::OkStatus()
                 : absl::AlreadyExistsError(absl::StrCat("mkdir ", Url(p), ": a file"));
    }
    if (!nodes_.count(std::string(fs::DirName(p)))) {
      if (!parents) return absl::NotFoundError(absl::StrCat("mkdir ", Url(p), ": no parent"));
      MakeParentsLocked(p);
    }
    nodes_[p] = Node{fs::EntryKind::kDirectory, nullptr, absl::InfinitePast()};
    return absl::OkStatus();
  }

  absl::Status Remove(std::string_view path) override {
    ++removes;
    MutexLock lock(&mu_);
    if (nodes_.erase(fs::NormalizePath(path)) == 0) return absl::NotFoundError("remove: no such file");
    return absl::OkStatus();
  }

  absl::Status RemoveDir(std::string_view path) override {
    MutexLock lock(&mu_);
    const std::string p = fs::NormalizePath(path);
    FERRY_RETURN_IF_ERROR(FindLocked("rmdir", p, fs::EntryKind::kDirectory).status());
    auto next = nodes_.upper_bound(p);
    if (next != nodes_.end() && next->first.compare(0, p.size() + 1, p + "/") == 0) {
      return absl::FailedPreconditionError(absl::StrCat("rmdir ", Url(p), ": not empty"));
    }
    nodes_.erase(p);
    return absl::OkStatus();
  }

  absl::Status SetModTime(std::string_view path, absl::Time mtime) override {
    ++set_mtime_calls;
    MutexLock lock(&mu_);
    auto it = nodes_.find(fs::NormalizePath(path));
    if (it == nodes_.end()) return absl::NotFoundError("set mtime: no such file");
    it->second.mtime = mtime;
    return absl::OkStatus();
  }

  // Hashes as the local disk does: in process, always.
  absl::StatusOr<std::string> Md5(std::string_view path, const fs::Entry& listed,
                                  bool /*read_if_needed*/) override {
    ++md5_calls;
    return fs::FileSystem::Md5(path, listed, /*read_if_needed=*/true);
  }

  absl::Status CopyWithin(std::string_view from, std::string_view to) override {
    if (!offers_copy_within) return fs::FileSystem::CopyWithin(from, to);
    ++copy_within_calls;
    MutexLock lock(&mu_);
    auto it = nodes_.find(fs::NormalizePath(from));
    if (it == nodes_.end()) return absl::NotFoundError("copy: no such file");
    nodes_[fs::NormalizePath(to)] = it->second;
    return absl::OkStatus();
  }

 private:
  struct Node {
    fs::EntryKind kind = fs::EntryKind::kUnknown;
    std::shared_ptr<const std::string> bytes;  // files only; replaced, never changed
    absl::Time mtime = absl::InfinitePast();
  };

  class Reader final : public fs::File {
   public:
    Reader(MemFileSystem* fs, std::shared_ptr<const std::string> bytes)
        : fs_(fs), bytes_(std::move(bytes)) {}
    absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
      AtomicMax(fs_->max_reads_in_flight, ++fs_->reads_in_flight);
      struct Leave {
        MemFileSystem* fs;
        ~Leave() { --fs->reads_in_flight; }
      } leave{fs_};
      int64_t fail = fs_->fail_read_at.load();
      if (fail >= offset && fail < offset + static_cast<int64_t>(buf.size()) &&
          fs_->fail_read_at.compare_exchange_strong(fail, -1)) {
        return absl::UnavailableError(absl::StrCat("read at ", offset, ": injected failure"));
      }
      if (fs_->read_delay > absl::ZeroDuration()) absl::SleepFor(fs_->read_delay);
      if (offset >= static_cast<int64_t>(bytes_->size())) return 0;
      const size_t n = std::min(buf.size(), bytes_->size() - static_cast<size_t>(offset));
      std::memcpy(buf.data(), bytes_->data() + offset, n);
      return n;
    }
    absl::StatusOr<int64_t> Size() override { return static_cast<int64_t>(bytes_->size()); }

   private:
    MemFileSystem* fs_;
    std::shared_ptr<const std::string> bytes_;
  };

  class Writer final : public fs::File {
   public:
    Writer(MemFileSystem* fs, std::string path, int64_t size, absl::Time mtime,
           std::string resume_source)
        : fs_(fs),
          path_(std::move(path)),
          mtime_(mtime),
          resume_source_(std::move(resume_source)),
          bytes_(static_cast<size_t>(size), '\0'),
          written_(static_cast<size_t>(size), false) {}
    ~Writer() override {
      --fs_->open_writers;
      if (!closed_) Discard().IgnoreError();
    }
    // Takes `kept` as the first bytes an interrupted writer left. Only
    // before the writer is handed out (no other thread can see it yet).
    void KeepUnshared(const std::string& kept) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      resumed_ = static_cast<int64_t>(std::min(kept.size(), bytes_.size()));
      std::memcpy(bytes_.data(), kept.data(), static_cast<size_t>(resumed_));
      std::fill(written_.begin(), written_.begin() + resumed_, true);
    }
    absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) override {
      MutexLock lock(&mu_);
      if (offset >= static_cast<int64_t>(bytes_.size())) return 0;
      const size_t n = std::min(buf.size(), bytes_.size() - static_cast<size_t>(offset));
      std::memcpy(buf.data(), bytes_.data() + offset, n);
      return n;
    }
    absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) override {
      MutexLock lock(&mu_);
      const size_t end = static_cast<size_t>(offset) + data.size();
      if (end > bytes_.size()) {
        bytes_.resize(end);
        written_.resize(end, false);
      }
      std::memcpy(bytes_.data() + offset, data.data(), data.size());
      std::fill(written_.begin() + offset, written_.begin() + static_cast<int64_t>(end), true);
      return data.size();
    }
    absl::StatusOr<int64_t> Size() override {
      MutexLock lock(&mu_);
      return static_cast<int64_t>(bytes_.size());
    }
    int64_t resumed_bytes() const override {
      MutexLock lock(&mu_);
      return resumed_;
    }
    absl::Status ForgetResumed() override {
      MutexLock lock(&mu_);
      resumed_ = 0;
      std::fill(written_.begin(), written_.end(), false);
      return absl::OkStatus();
    }
    absl::Status Close() override {
      ++fs_->closes;
      if (fs_->abort_first_close.exchange(false)) {
        return absl::AbortedError("close: injected lost writes (write every byte again)");
      }
      MutexLock lock(&mu_);
      closed_ = true;
      fs_->PutFile(path_, bytes_, mtime_ == absl::InfinitePast() ? absl::Now() : mtime_);
      return absl::OkStatus();
    }
    absl::Status Discard() override {
      std::string kept;
      {
        MutexLock lock(&mu_);
        if (closed_) return absl::OkStatus();
        closed_ = true;
        if (!fs_->keeps_leftovers || resume_source_.empty()) return absl::OkStatus();
        kept = bytes_.substr(0, static_cast<size_t>(std::find(written_.begin(), written_.end(),
                                                              false) - written_.begin()));
      }
      MutexLock fs_lock(&fs_->mu_);
      fs_->leftovers_[path_] = {resume_source_, std::move(kept)};
      return absl::OkStatus();
    }

   private:
    MemFileSystem* fs_;
    const std::string path_;
    const absl::Time mtime_;
    const std::string resume_source_;
    mutable Mutex mu_;
    std::string bytes_ ABSL_GUARDED_BY(mu_);
    std::vector<bool> written_ ABSL_GUARDED_BY(mu_);
    int64_t resumed_ ABSL_GUARDED_BY(mu_) = 0;
    bool closed_ ABSL_GUARDED_BY(mu_) = false;
  };

  fs::Entry EntryOf(std::string name, const std::string& /*full*/, const Node& n) const {
    fs::Entry e;
    e.path = std::move(name);
    e.kind = n.kind;
    e.size = n.bytes ? static_cast<int64_t>(n.bytes->size()) : 0;
    e.mtime = n.mtime;
    return e;
  }

  // The node at normalized path `p`, which must be a `kind` (file or
  // directory); the errors name `op` and the path.
  absl::StatusOr<const Node*> FindLocked(std::string_view op, const std::string& p,
                                         fs::EntryKind kind) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::string_view noun = kind == fs::EntryKind::kDirectory ? "directory" : "file";
    auto it = nodes_.find(p);
    if (it == nodes_.end()) {
      return absl::NotFoundError(Cat(op, " ", Url(p), ": no such ", noun));
    }
    if (it->second.kind != kind) {
      return absl::FailedPreconditionError(Cat(op, " ", Url(p), ": not a ", noun));
    }
    return &it->second;
  }

  void MakeParentsLocked(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (std::string_view d = fs::DirName(path); !d.empty(); d = fs::DirName(d)) {
      nodes_.try_emplace(std::string(d), Node{fs::EntryKind::kDirectory, nullptr, absl::InfinitePast()});
    }
  }

  const std::string name_;
  mutable Mutex mu_;
  std::map<std::string, Node> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<fs::Entry>> extra_listed_ ABSL_GUARDED_BY(mu_);
  // keeps_leftovers: path -> (resume_source, the gap-free prefix written).
  std::map<std::string, std::pair<std::string, std::string>> leftovers_ ABSL_GUARDED_BY(mu_);
};

// mem://NAME/path -> the MemFileSystem called NAME (made at first use).
class MemProvider final : public fs::FileSystemProvider {
 public:
  absl::StatusOr<fs::Location> Resolve(Runtime& /*runtime*/, std::string_view url) override {
    std::string_view rest = url.substr(6);  // "mem://"
    const size_t slash = rest.find('/');
    const std::string name(rest.substr(0, slash));
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("mem URL ", ToAbsl(url), ": no name"));
    fs::Location out;
    {
      MutexLock lock(&mu_);
      auto& slot = filesystems_[name];
      if (slot == nullptr) slot = std::make_shared<MemFileSystem>(name);
      out.fs = slot;
    }
    const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    out.path = fs::NormalizePath(path);
    out.names_directory = path.empty() || path.back() == '/';
    out.url = std::string(url);
    return out;
  }

 private:
  Mutex mu_;
  std::map<std::string, std::shared_ptr<MemFileSystem>> filesystems_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ferry::testing

#endif  // FERRY_TESTING_MEM_FILE_SYSTEM_H_
