// InMemoryObjectStore: a fake ObjectStore for transfer logic tests and the
// transfer benchmark. NOT part of the library. Header-only, so tests need
// no CMake edit.
//
// Two ways to complete requests:
//  - manual (no scheduler): every request waits in a queue until the test
//    runs it (RunNext, RunMatching, RunAll) on the test's own thread, so a
//    test decides the exact order in which chunks land;
//  - scheduled: each request completes after `latency` plus its bytes over
//    `bytes_per_second` (per request, like one TCP stream), through a
//    DelayScheduler (RuntimeDelayScheduler for real timers).
// A request is served when it completes, not when it is issued: an object
// replaced meanwhile is what a late GET sees (and its If-Match fails).
//
// Faults: SetFault installs a function asked before each request is served;
// a non-OK status fails that request instead.
//
// Objects are real bytes (PutObject) or synthetic (PutSyntheticObject: any
// size, bytes computed from the offset), so a 100 GiB object costs nothing.
//
// Also here: ManualDelayScheduler (back-off waits run when the test says)
// and ImmediateDelayScheduler (waits recorded, then run at once on a
// Runtime I/O thread) for retry tests that must never sleep.
//
// Thread-safe.
#ifndef FERRY_TESTS_TESTING_IN_MEMORY_OBJECT_STORE_H_
#define FERRY_TESTS_TESTING_IN_MEMORY_OBJECT_STORE_H_

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/base/strings.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/checksum.h"
#include "ferry/transfer/multipart_uploader.h"
#include "ferry/transfer/object_store.h"
#include "ferry/runtime/retry_policy.h"

namespace ferry::testing {

class InMemoryObjectStore final : public ObjectStore {
 public:
  enum class Op { kHead, kGetRange, kPut, kCreateMultipart, kUploadPart, kComplete, kAbort };

  // What a request asked for (for faults and for picking what to run).
  struct Request {
    Op op = Op::kHead;
    std::string key;
    int64_t offset = 0;   // GetRange
    int64_t length = 0;   // GetRange; bytes for Put/UploadPart
    int part_number = 0;  // UploadPart
  };
  using FaultFn = std::function<absl::Status(const Request&)>;

  struct Options {
    // Null: manual completion (see above).
    DelayScheduler* scheduler = nullptr;
    absl::Duration latency = absl::ZeroDuration();
    int64_t bytes_per_second = 0;  // per request; 0 = no bandwidth limit
    // All requests share one link of this speed (0 = no limit): transfers
    // take turns on it, so parallel requests cannot beat the link.
    int64_t link_bytes_per_second = 0;
    MultipartLimits limits;
  };

  InMemoryObjectStore() : InMemoryObjectStore(Options()) {}
  explicit InMemoryObjectStore(const Options& o) : options_(o), life_(std::make_shared<Life>()) {}
  // Waits for scheduled requests being served; later ones are dropped, so
  // a store may die before the Runtime whose timers still hold requests.
  ~InMemoryObjectStore() override {
    MutexLock l(&life_->mu);
    life_->alive = false;
    while (life_->serving > 0) life_->cv.Wait(&life_->mu);
  }

  // The synthetic byte at `offset` of an object made with `seed`: eight
  // bytes per 64-bit mix, cheap enough to serve hundreds of MiB.
  static char SyntheticByte(uint64_t seed, int64_t offset) {
    return static_cast<char>(Mix(seed, static_cast<uint64_t>(offset) / 8) >> (8 * (offset % 8)));
  }
  static void FillSynthetic(uint64_t seed, int64_t offset, std::span<char> out) {
    size_t i = 0;
    while (i < out.size()) {
      const int64_t at = offset + static_cast<int64_t>(i);
      const uint64_t word = Mix(seed, static_cast<uint64_t>(at) / 8);
      for (int64_t b = at % 8; b < 8 && i < out.size(); ++b, ++i) {
        out[i] = static_cast<char>(word >> (8 * b));
      }
    }
  }

  // Stores `data` as `key` (a new version: new ETag).
  void PutObject(std::string_view key, std::string data) {
    MutexLock l(&mu_);
    Object& o = objects_[std::string(key)];
    o.size = static_cast<int64_t>(data.size());
    o.data = std::move(data);
    o.synthetic = false;
    o.etag = absl::StrCat("\"v", ++generation_, "\"");
  }
  void PutSyntheticObject(std::string_view key, int64_t size, uint64_t seed) {
    MutexLock l(&mu_);
    Object& o = objects_[std::string(key)];
    o.size = size;
    o.data.clear();
    o.synthetic = true;
    o.seed = seed;
    o.etag = absl::StrCat("\"v", ++generation_, "\"");
  }
  std::optional<std::string> ObjectData(std::string_view key) const {
    MutexLock l(&mu_);
    auto it = objects_.find(std::string(key));
    if (it == objects_.end()) return std::nullopt;
    return it->second.data;
  }

  void SetFault(FaultFn fn) {
    MutexLock l(&mu_);
    fault_ = std::move(fn);
  }

  // --- manual completion
  size_t pending() const {
    MutexLock l(&mu_);
    return pending_.size();
  }
  std::vector<Request> PendingRequests() const {
    MutexLock l(&mu_);
    std::vector<Request> out;
    for (const auto& p : pending_) out.push_back(p.request);
    return out;
  }
  // Runs the oldest waiting request; false if none.
  bool RunNext() {
    return RunMatching([](const Request&) { return true; });
  }
  // Runs the oldest waiting request `pred` accepts; false if none.
  bool RunMatching(const std::function<bool(const Request&)>& pred) {
    absl::AnyInvocable<void()> run;
    {
      MutexLock l(&mu_);
      auto it = std::find_if(pending_.begin(), pending_.end(),
                             [&](const Pending& p) { return pred(p.request); });
      if (it == pending_.end()) return false;
      run = std::move(it->run);
      pending_.erase(it);
    }
    run();
    return true;
  }
  // Runs requests until none waits (including ones issued meanwhile);
  // returns how many ran.
  int RunAll() {
    int n = 0;
    while (RunNext()) ++n;
    return n;
  }

  // --- counters
  int64_t bytes_served() const {
    MutexLock l(&mu_);
    return bytes_served_;
  }
  int requests(Op op) const {
    MutexLock l(&mu_);
    auto it = requests_.find(op);
    return it == requests_.end() ? 0 : it->second;
  }
  // An unfinished multipart upload of `key` holding `parts` (number ->
  // bytes), as an interrupted writer leaves one; returns its id.
  std::string SeedUpload(std::string_view key, const std::map<int, std::string>& parts) {
    MutexLock l(&mu_);
    const std::string id = absl::StrCat("upload-", ++generation_);
    Upload& u = uploads_[id];
    u.key = std::string(key);
    for (const auto& [n, bytes] : parts) u.parts[n] = {bytes, PartEtag(bytes)};
    return id;
  }
  // The parts upload `id` holds, as ListParts tells them.
  std::vector<StoredPart> StoredParts(const std::string& id) const {
    MutexLock l(&mu_);
    std::vector<StoredPart> out;
    auto it = uploads_.find(id);
    if (it == uploads_.end()) return out;
    for (const auto& [n, part] : it->second.parts) {
      out.push_back({n, static_cast<int64_t>(part.first.size()), part.second});
    }
    return out;
  }

  // Multipart uploads created and neither completed nor aborted: orphans.
  int open_uploads() const {
    MutexLock l(&mu_);
    return static_cast<int>(uploads_.size());
  }
  int aborted_uploads() const {
    MutexLock l(&mu_);
    return aborted_;
  }
  // Part numbers and sizes of the last completed multipart upload.
  std::vector<std::pair<int, int64_t>> last_completed_parts() const {
    MutexLock l(&mu_);
    return last_parts_;
  }
  // Checksums received with parts and Puts (algorithm of each).
  std::vector<ChecksumAlgorithm> checksums_seen() const {
    MutexLock l(&mu_);
    return checksums_seen_;
  }
  // Most GetRange requests waiting or in progress at once.
  int max_gets_in_flight() const {
    MutexLock l(&mu_);
    return max_gets_in_flight_;
  }

  // --- ObjectStore
  void Head(std::string_view key, Callback<ObjectInfo> done) override {
    Request r{Op::kHead, std::string(key)};
    Submit(r, 0, [this, r, done = std::move(done)]() mutable {
      absl::StatusOr<ObjectInfo> out;
      {
        MutexLock l(&mu_);
        out = ServeHeadLocked(r);
        if (out.ok()) out->metadata = metadata_[r.key];
      }
      done(std::move(out));
    });
  }

  void GetRange(std::string_view key, int64_t offset, int64_t length, std::string_view if_match,
                Callback<std::string> done) override {
    Request r{Op::kGetRange, std::string(key), offset, length};
    {
      MutexLock l(&mu_);
      max_gets_in_flight_ = std::max(max_gets_in_flight_, ++gets_in_flight_);
    }
    Submit(r, length, [this, r, etag = std::string(if_match), done = std::move(done)]() mutable {
      absl::StatusOr<std::string> out = ServeGet(r, etag);
      done(std::move(out));
    });
  }

  using ObjectStore::CreateMultipart;
  using ObjectStore::Put;
  void Put(std::string_view key, std::span<const char> bytes, const Checksum& checksum,
           const ObjectMetadata& metadata, Callback<std::string> done) override {
    {
      MutexLock l(&mu_);
      metadata_[std::string(key)] = metadata;
    }
    Request r{Op::kPut, std::string(key), 0, static_cast<int64_t>(bytes.size())};
    Submit(r, r.length, [this, r, bytes, checksum, done = std::move(done)]() mutable {
      absl::StatusOr<std::string> out;
      {
        MutexLock l(&mu_);
        out = FaultLocked(r);
        if (out.ok()) out = CheckChecksumLocked(r, bytes, checksum);
        if (out.ok()) {
          Object& o = objects_[r.key];
          o.data.assign(bytes.data(), bytes.size());
          o.size = static_cast<int64_t>(bytes.size());
          o.synthetic = false;
          o.etag = absl::StrCat("\"v", ++generation_, "\"");
          out = o.etag;
        }
      }
      done(std::move(out));
    });
  }

  // The fake keeps a key's metadata from its last Put or CreateMultipart.
  void CreateMultipart(std::string_view key, const ObjectMetadata& metadata,
                       Callback<std::string> done) override {
    {
      MutexLock l(&mu_);
      metadata_[std::string(key)] = metadata;
    }
    Request r{Op::kCreateMultipart, std::string(key)};
    Submit(r, 0, [this, r, done = std::move(done)]() mutable {
      absl::StatusOr<std::string> out;
      {
        MutexLock l(&mu_);
        out = FaultLocked(r);
        if (out.ok()) {
          const std::string id = absl::StrCat("upload-", ++generation_);
          uploads_[id].key = r.key;
          out = id;
        }
      }
      done(std::move(out));
    });
  }

  void UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                  std::span<const char> bytes, const Checksum& checksum,
                  Callback<std::string> done) override {
    Request r{Op::kUploadPart, std::string(key), 0, static_cast<int64_t>(bytes.size()), part_number};
    Submit(r, r.length,
           [this, r, id = std::string(upload_id), bytes, checksum, done = std::move(done)]() mutable {
             absl::StatusOr<std::string> out;
             {
               MutexLock l(&mu_);
               out = FaultLocked(r);
               auto it = uploads_.find(id);
               if (out.ok() && it == uploads_.end()) {
                 out = absl::NotFoundError(absl::StrCat("UploadPart: no upload ", id));
               }
               if (out.ok()) out = CheckChecksumLocked(r, bytes, checksum);
               if (out.ok()) {
                 auto& part = it->second.parts[r.part_number];
                 part.first.assign(bytes.data(), bytes.size());
                 part.second = PartEtag(bytes);
                 out = part.second;
               }
             }
             done(std::move(out));
           });
  }

  void CompleteMultipart(std::string_view key, std::string_view upload_id,
                         std::vector<CompletedPart> parts, Callback<std::string> done) override {
    Request r{Op::kComplete, std::string(key)};
    Submit(r, 0,
           [this, r, id = std::string(upload_id), parts = std::move(parts),
            done = std::move(done)]() mutable {
             absl::StatusOr<std::string> out;
             {
               MutexLock l(&mu_);
               out = FaultLocked(r);
               if (out.ok()) out = CompleteLocked(r.key, id, parts);
             }
             done(std::move(out));
           });
  }

  void AbortMultipart(std::string_view key, std::string_view upload_id,
                      StatusCallback done) override {
    Request r{Op::kAbort, std::string(key)};
    Submit(r, 0, [this, r, id = std::string(upload_id), done = std::move(done)]() mutable {
      absl::Status out;
      {
        MutexLock l(&mu_);
        out = FaultLocked(r).status();
        if (out.ok() && uploads_.erase(id) == 0) {
          out = absl::NotFoundError(absl::StrCat("AbortMultipart: no upload ", id));
        }
        if (out.ok()) ++aborted_;
      }
      done(out);
    });
  }

  MultipartLimits multipart_limits() const override { return options_.limits; }

 private:
  struct Object {
    int64_t size = 0;
    std::string data;
    bool synthetic = false;
    uint64_t seed = 0;
    std::string etag;
  };
  // S3's ETag of a part: its MD5, hex, quoted.
  static std::string PartEtag(std::span<const char> bytes) {
    return absl::StrCat("\"", absl::BytesToHexString(ToAbsl(Md5(bytes))), "\"");
  }
  struct Upload {
    std::string key;
    std::map<int, std::pair<std::string, std::string>> parts;  // data, etag
  };
  // Whether the store still exists, shared with scheduled requests.
  struct Life {
    Mutex mu;
    CondVar cv;
    bool alive ABSL_GUARDED_BY(mu) = true;
    int serving ABSL_GUARDED_BY(mu) = 0;
  };
  struct Pending {
    Request request;
    absl::AnyInvocable<void()> run;
  };

  static uint64_t Mix(uint64_t seed, uint64_t word) {
    uint64_t x = word * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull + 1;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return x;
  }

  void Submit(const Request& r, int64_t bytes, absl::AnyInvocable<void()> run) {
    {
      MutexLock l(&mu_);
      ++requests_[r.op];
      if (options_.scheduler == nullptr) {
        pending_.push_back({r, std::move(run)});
        return;
      }
    }
    absl::Duration delay = options_.latency;
    if (options_.bytes_per_second > 0) {
      delay += absl::Seconds(static_cast<double>(bytes) / static_cast<double>(options_.bytes_per_second));
    }
    if (options_.link_bytes_per_second > 0 && bytes > 0) {
      const absl::Time now = MonotonicNow();
      const absl::Duration on_link =
          absl::Seconds(static_cast<double>(bytes) / static_cast<double>(options_.link_bytes_per_second));
      MutexLock l(&mu_);
      const absl::Time start = std::max(now + options_.latency, link_free_at_);
      link_free_at_ = start + on_link;
      delay = std::max(delay, link_free_at_ - now);
    }
    options_.scheduler->RunAfter(delay, [life = life_, run = std::move(run)]() mutable {
      {
        MutexLock l(&life->mu);
        if (!life->alive) return;
        ++life->serving;
      }
      run();
      MutexLock l(&life->mu);
      if (--life->serving == 0) life->cv.SignalAll();
    });
  }

  absl::StatusOr<std::string> FaultLocked(const Request& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (fault_) {
      absl::Status s = fault_(r);
      if (!s.ok()) return s;
    }
    return std::string();
  }

  absl::StatusOr<std::string> CheckChecksumLocked(const Request& r, std::span<const char> bytes,
                                                  const Checksum& c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    checksums_seen_.push_back(c.algorithm);
    if (c.algorithm != ChecksumAlgorithm::kNone && ComputeChecksum(c.algorithm, bytes) != c) {
      return absl::InvalidArgumentError(absl::StrCat("BadDigest: ", ChecksumAlgorithmName(c.algorithm),
                                                     " of part ", r.part_number, " differs"));
    }
    return std::string();
  }

  absl::StatusOr<ObjectInfo> ServeHeadLocked(const Request& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto f = FaultLocked(r);
    if (!f.ok()) return f.status();
    auto it = objects_.find(r.key);
    if (it == objects_.end()) return absl::NotFoundError(absl::StrCat("HEAD ", r.key, ": NoSuchKey"));
    return ObjectInfo{it->second.size, it->second.etag, absl::UnixEpoch()};
  }

  absl::StatusOr<std::string> ServeGet(const Request& r, const std::string& if_match) {
    Object snapshot;
    {
      MutexLock l(&mu_);
      --gets_in_flight_;
      auto f = FaultLocked(r);
      if (!f.ok()) return f.status();
      auto it = objects_.find(r.key);
      if (it == objects_.end()) return absl::NotFoundError(absl::StrCat("GET ", r.key, ": NoSuchKey"));
      if (!if_match.empty() && it->second.etag != if_match) {
        return absl::FailedPreconditionError(absl::StrCat("GET ", r.key, ": PreconditionFailed (etag ",
                                                          it->second.etag, " != If-Match ", if_match, ")"));
      }
      if (r.offset < 0 || r.offset >= it->second.size || r.length < 1) {
        return absl::InvalidArgumentError(absl::StrCat("GET ", r.key, ": InvalidRange"));
      }
      const int64_t n = std::min(r.length, it->second.size - r.offset);
      bytes_served_ += n;
      if (!it->second.synthetic) return it->second.data.substr(static_cast<size_t>(r.offset), static_cast<size_t>(n));
      snapshot.seed = it->second.seed;
      snapshot.size = n;
    }
    std::string out(static_cast<size_t>(snapshot.size), '\0');
    FillSynthetic(snapshot.seed, r.offset, std::span<char>(out.data(), out.size()));
    return out;
  }

  absl::StatusOr<std::string> CompleteLocked(const std::string& key, const std::string& id,
                                             const std::vector<CompletedPart>& parts)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = uploads_.find(id);
    if (it == uploads_.end()) return absl::NotFoundError(absl::StrCat("Complete: NoSuchUpload ", id));
    if (parts.empty() || static_cast<int>(parts.size()) > options_.limits.max_parts) {
      return absl::InvalidArgumentError(absl::StrCat("Complete: ", parts.size(), " parts"));
    }
    std::string data;
    std::vector<std::pair<int, int64_t>> sizes;
    for (size_t i = 0; i < parts.size(); ++i) {
      const CompletedPart& p = parts[i];
      if (i > 0 && p.part_number <= parts[i - 1].part_number) {
        return absl::InvalidArgumentError("Complete: InvalidPartOrder");
      }
      auto pit = it->second.parts.find(p.part_number);
      if (pit == it->second.parts.end() || pit->second.second != p.etag) {
        return absl::InvalidArgumentError(absl::StrCat("Complete: InvalidPart ", p.part_number));
      }
      const int64_t size = static_cast<int64_t>(pit->second.first.size());
      if (i + 1 < parts.size() && size < options_.limits.min_part_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("Complete: EntityTooSmall part ", p.part_number, " of ", size));
      }
      sizes.emplace_back(p.part_number, size);
      data += pit->second.first;
    }
    uploads_.erase(it);
    last_parts_ = std::move(sizes);
    Object& o = objects_[key];
    o.size = static_cast<int64_t>(data.size());
    o.data = std::move(data);
    o.synthetic = false;
    o.etag = absl::StrCat("\"mp", ++generation_, "-", parts.size(), "\"");
    return o.etag;
  }

  const Options options_;
  const std::shared_ptr<Life> life_;
  mutable Mutex mu_;
  std::map<std::string, Object> objects_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Upload> uploads_ ABSL_GUARDED_BY(mu_);
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  FaultFn fault_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, ObjectMetadata> metadata_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_served_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<Op, int> requests_ ABSL_GUARDED_BY(mu_);
  int aborted_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<int, int64_t>> last_parts_ ABSL_GUARDED_BY(mu_);
  std::vector<ChecksumAlgorithm> checksums_seen_ ABSL_GUARDED_BY(mu_);
  int gets_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int max_gets_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time link_free_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// Back-off waits that run only when the test calls RunAll(), on its thread;
// the requested delays are recorded. Thread-safe.
class ManualDelayScheduler final : public DelayScheduler {
 public:
  void RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) override {
    MutexLock l(&mu_);
    delays_.push_back(delay);
    pending_.push_back(std::move(fn));
  }
  // Runs every waiting function (and ones added meanwhile); how many ran.
  int RunAll() {
    int n = 0;
    for (;;) {
      absl::AnyInvocable<void()> fn;
      {
        MutexLock l(&mu_);
        if (pending_.empty()) return n;
        fn = std::move(pending_.front());
        pending_.pop_front();
      }
      fn();
      ++n;
    }
  }
  std::vector<absl::Duration> delays() const {
    MutexLock l(&mu_);
    return delays_;
  }

 private:
  mutable Mutex mu_;
  std::vector<absl::Duration> delays_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::AnyInvocable<void()>> pending_ ABSL_GUARDED_BY(mu_);
};

// Records each requested delay, then runs the function at once on one of
// `runtime`'s I/O threads: retries without sleeping. Thread-safe.
class ImmediateDelayScheduler final : public DelayScheduler {
 public:
  explicit ImmediateDelayScheduler(Runtime& runtime) : runtime_(runtime) {}
  void RunAfter(absl::Duration delay, absl::AnyInvocable<void()> fn) override {
    {
      MutexLock l(&mu_);
      delays_.push_back(delay);
    }
    runtime_.Post(std::move(fn));
  }
  std::vector<absl::Duration> delays() const {
    MutexLock l(&mu_);
    return delays_;
  }

 private:
  Runtime& runtime_;
  mutable Mutex mu_;
  std::vector<absl::Duration> delays_ ABSL_GUARDED_BY(mu_);
};

// Runs store requests and back-off waits until neither has work left.
inline void Drain(InMemoryObjectStore& store, ManualDelayScheduler& timers) {
  while (store.RunAll() + timers.RunAll() > 0) {
  }
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_TESTING_IN_MEMORY_OBJECT_STORE_H_
