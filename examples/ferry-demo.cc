// ferry-demo: a cached listing service, then parallel readers on descriptors.
//
// Part 1 puts a TtlCache in front of a simulated slow catalog (every listing
// costs a 2 ms round trip, standing in for an iRODS GenQuery) and lets
// several threads list collections with a skewed, Zipf-like popularity, the
// way NFSRODS 2.0 serves READDIR. It runs the same workload straight against
// the catalog and through the cache and prints the difference.
//
// Part 2 opens objects through an FdTable as the iRODS S3 plugin's cacheless
// mode does: two concurrent readers of one object, then two writers of
// another, each descriptor with its own offset, and the "second reader
// appeared" and "last close" signals the multipart downloader and uploader
// act on.
//
// Run by scripts/demo. Takes a few seconds; exits 0 unless a check fails.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/cache/ttl_cache.h"
#include "ferry/io/fd_table.h"
#include "ferry/runtime/future.h"
#include "ferry/runtime/runtime.h"

namespace {

constexpr int kCollections = 200;
constexpr int kMaxEntries = 10'000;
constexpr absl::Duration kQueryLatency = absl::Milliseconds(2);  // one GenQuery round trip
constexpr int kWorkers = 8;
constexpr int kListingsPerWorker = 500;
constexpr double kZipfExponent = 1.1;     // web-like skew: a few hot collections
constexpr double kMissingPathShare = 0.02;  // lookups of paths that do not exist

struct DirEntry { std::string name; int64_t size; };
using Listing = std::vector<DirEntry>;

std::string CollectionPath(int i) { return absl::StrCat("/tempZone/home/demo/coll-", i); }

// The catalog: collection i holds kMaxEntries / (i+1)^0.7 entries (10,000
// down to a few hundred). Every List call pays kQueryLatency. Thread-safe.
class SlowCatalog {
 public:
  absl::StatusOr<Listing> List(const std::string& path) {
    queries_.fetch_add(1, std::memory_order_relaxed);
    absl::SleepFor(kQueryLatency);
    for (int i = 0; i < kCollections; ++i) {
      if (path != CollectionPath(i)) continue;
      Listing listing(EntriesIn(i));
      for (size_t e = 0; e < listing.size(); ++e) {
        listing[e] = {absl::StrCat("file-", e, ".dat"), static_cast<int64_t>(e * 4096 + i)};
      }
      return listing;
    }
    return absl::NotFoundError(absl::StrCat("list ", path, ": no such collection"));
  }
  static size_t EntriesIn(int i) {
    return static_cast<size_t>(kMaxEntries / std::pow(i + 1.0, 0.7));
  }
  int64_t queries() const { return queries_.load(); }

 private:
  std::atomic<int64_t> queries_{0};
};

// Runs fn(worker) on `workers` threads of the runtime's blocking pool; waits.
template <typename Fn>
void RunWorkers(ferry::Runtime& rt, int workers, Fn fn) {
  std::vector<ferry::Future<bool>> done;
  for (int w = 0; w < workers; ++w) {
    ferry::Promise<bool> p;
    done.push_back(p.GetFuture());
    rt.PostBlocking([w, &fn, p = std::move(p)]() mutable { fn(w); p.Set(true); });
  }
  for (auto& f : done) (void)std::move(f).Get();
}

// Wall time, and mean latency of all listings / those that went to the
// catalog (cold) / those served from memory (warm).
struct Figures { double wall_s, mean_ms, cold_mean_ms, warm_mean_ms; };

// kWorkers threads each list kListingsPerWorker paths through `list`, which
// returns whether the listing went to the catalog. Same seeds every run, so
// both runs see the same sequence of paths.
template <typename ListFn>
Figures RunWorkload(ferry::Runtime& rt, ListFn list) {
  std::vector<double> weights;
  for (int rank = 1; rank <= kCollections; ++rank) weights.push_back(1 / std::pow(rank, kZipfExponent));
  ferry::Mutex mu;
  double cold_ms = 0, warm_ms = 0;
  int cold = 0, warm = 0;
  const absl::Time start = ferry::MonotonicNow();
  RunWorkers(rt, kWorkers, [&](int worker) {
    std::mt19937 rng(worker);
    std::discrete_distribution<int> zipf(weights.begin(), weights.end());
    std::bernoulli_distribution missing(kMissingPathShare);
    for (int n = 0; n < kListingsPerWorker; ++n) {
      // Rank r is collection 37r mod 200, so the hot ones are not all the biggest.
      const std::string path = missing(rng) ? absl::StrCat("/tempZone/home/demo/gone-", n % 10)
                                            : CollectionPath(zipf(rng) * 37 % kCollections);
      const absl::Time t0 = ferry::MonotonicNow();
      const bool went_to_catalog = list(path);
      const double ms = absl::ToDoubleMilliseconds(ferry::MonotonicNow() - t0);
      ferry::MutexLock l(&mu);
      (went_to_catalog ? cold_ms : warm_ms) += ms;
      ++(went_to_catalog ? cold : warm);
    }
  });
  ferry::MutexLock l(&mu);
  return {absl::ToDoubleSeconds(ferry::MonotonicNow() - start), (cold_ms + warm_ms) / (cold + warm),
          cold > 0 ? cold_ms / cold : 0, warm > 0 ? warm_ms / warm : 0};
}

void ListingService(ferry::Runtime& rt) {
  size_t total_entries = 0;
  for (int i = 0; i < kCollections; ++i) total_entries += SlowCatalog::EntriesIn(i);
  absl::PrintF("== Part 1: a cached listing service (TtlCache)\n");
  absl::PrintF("catalog: %d collections, %d entries, %s per listing query\n", kCollections,
               total_entries, absl::FormatDuration(kQueryLatency));
  absl::PrintF("workload: %d threads x %d listings, Zipf(s=%.1f) popularity, %.0f%% missing paths\n\n",
               kWorkers, kListingsPerWorker, kZipfExponent, kMissingPathShare * 100);

  SlowCatalog direct;
  const Figures uncached = RunWorkload(rt, [&](const std::string& path) {
    (void)direct.List(path);
    return true;
  });

  SlowCatalog catalog;
  using ListingCache = ferry::TtlCache<std::string, Listing>;
  ListingCache cache(ListingCache::Options{
      .refresh_time = absl::Seconds(30),          // NFSRODS's listing refresh time
      .negative_refresh_time = absl::Seconds(1),  // a created path shows up quickly
      .max_weight = 2'000'000,                    // listing entries across the cache
      .weigher = [](const std::string&, const Listing& l) { return static_cast<int64_t>(l.size()) + 1; },
      .executor = [&rt](absl::AnyInvocable<void()> fn) { rt.PostBlocking(std::move(fn)); },
  });
  const Figures cached = RunWorkload(rt, [&](const std::string& path) {
    bool loaded = false;
    (void)cache.Get(path, [&](const std::string& p) { loaded = true; return catalog.List(p); });
    return loaded;
  });

  const int listings = kWorkers * kListingsPerWorker;
  absl::PrintF("                    listings    wall   mean latency   catalog queries\n");
  absl::PrintF("  uncached            %6d  %6.2f s  %9.3f ms   %8d\n", listings, uncached.wall_s,
               uncached.mean_ms, direct.queries());
  absl::PrintF("  through TtlCache    %6d  %6.2f s  %9.3f ms   %8d\n", listings, cached.wall_s,
               cached.mean_ms, catalog.queries());
  absl::PrintF("  speedup: %.0fx wall time, %.0fx mean latency (NFSRODS 2.0's cache: 9.3 s -> 0.058 s)\n",
               uncached.wall_s / cached.wall_s, uncached.mean_ms / cached.mean_ms);
  absl::PrintF("  through the cache: cold (loaded) %.3f ms vs cached %.4f ms mean\n",
               cached.cold_mean_ms, cached.warm_mean_ms);
  const ferry::TtlCacheStats s = cache.stats();
  absl::PrintF("  cache: %d hits, %d negative hits, %d misses, %d loads; %d entries holding %d "
               "listing entries\n\n", s.hits, s.negative_hits, s.misses, s.loads, cache.size(),
               cache.weight());
}

// An object held in memory, standing in for an S3 object. Thread-safe.
class MemoryObject {
 public:
  explicit MemoryObject(std::string bytes) : bytes_(std::move(bytes)) {}
  absl::StatusOr<size_t> ReadAt(int64_t offset, absl::Span<char> buf) {
    ferry::MutexLock l(&mu_);
    if (offset >= static_cast<int64_t>(bytes_.size())) return size_t{0};  // EOF
    const size_t n = std::min(buf.size(), bytes_.size() - static_cast<size_t>(offset));
    std::memcpy(buf.data(), bytes_.data() + offset, n);
    return n;
  }
  absl::StatusOr<size_t> WriteAt(int64_t offset, absl::Span<const char> data) {
    ferry::MutexLock l(&mu_);
    const size_t end = static_cast<size_t>(offset) + data.size();
    if (bytes_.size() < end) bytes_.resize(end);
    std::memcpy(bytes_.data() + offset, data.data(), data.size());
    return data.size();
  }
  absl::StatusOr<int64_t> Size() {
    ferry::MutexLock l(&mu_);
    return static_cast<int64_t>(bytes_.size());
  }

 private:
  ferry::Mutex mu_;
  std::string bytes_ ABSL_GUARDED_BY(mu_);
};

// Two descriptors split one object in halves, as a parallel iget or iput
// does: each seeks to its half and reads (or writes) it in 64 KiB calls.
bool TwoDescriptors(ferry::Runtime& rt, ferry::FdTable<MemoryObject>& table, const std::string& key,
                    std::shared_ptr<MemoryObject> object, int64_t size, ferry::OpenMode mode) {
  const bool upload = mode == ferry::OpenMode::kWrite;
  int fds[2];
  for (int r = 0; r < 2; ++r) {
    auto opened = table.Open(key, object, mode);
    if (!opened.ok()) return false;
    fds[r] = opened->fd;
    absl::PrintF("  open %s -> fd %d (opens %d, readers %d, writers %d)%s\n", key,
                opened->fd, opened->opens, opened->readers, opened->writers,
                opened->readers == 2 ? "  <- 2nd reader: start a multipart download" : "");
  }
  std::atomic<int64_t> moved{0};
  RunWorkers(rt, 2, [&](int r) {
    const int64_t begin = r * size / 2, end = (r + 1) * size / 2;
    (void)table.Lseek(fds[r], begin, SEEK_SET);
    std::vector<char> buf(64 << 10, 'u');  // an iRODS-sized buffer slice
    for (int64_t at = begin; at < end;) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(buf.size(), end - at));
      auto n = upload ? table.Write(fds[r], absl::MakeConstSpan(buf.data(), want))
                      : table.Read(fds[r], absl::MakeSpan(buf.data(), want));
      if (!n.ok() || *n == 0) break;
      at += static_cast<int64_t>(*n);
      moved.fetch_add(static_cast<int64_t>(*n));
    }
  });
  for (int r = 0; r < 2; ++r) {
    absl::PrintF("  fd %d %s its half, offset now %d\n", fds[r], upload ? "wrote" : "read",
                 *table.Lseek(fds[r], 0, SEEK_CUR));
  }
  for (int r = 0; r < 2; ++r) {
    auto closed = table.Close(fds[r]);
    if (!closed.ok()) return false;
    if (!closed->last_close) {
      absl::PrintF("  close fd %d: %d still open\n", fds[r], closed->opens);
    } else if (upload) {
      absl::PrintF("  close fd %d: last close -> complete the upload of %d bytes (handle handed back)\n",
                   fds[r], *closed->handle->Size());
    } else {
      absl::PrintF("  close fd %d: last close -> drop the download's chunks\n", fds[r]);
    }
  }
  return moved.load() == size;
}

bool Descriptors(ferry::Runtime& rt) {
  absl::PrintF("== Part 2: descriptors with their own offsets (FdTable)\n");
  ferry::FdTable<MemoryObject> table;
  const int64_t size = (int64_t{2} << 20) + 123;  // 2 MiB and an odd tail
  bool ok = TwoDescriptors(rt, table, CollectionPath(0) + "/file-0.dat",
                           std::make_shared<MemoryObject>(std::string(size, 'd')), size,
                           ferry::OpenMode::kRead);
  ok &= TwoDescriptors(rt, table, CollectionPath(1) + "/upload.dat",
                       std::make_shared<MemoryObject>(""), 3 << 20, ferry::OpenMode::kWrite);
  char byte;
  absl::Status after_close = table.Read(3, absl::MakeSpan(&byte, 1)).status();
  absl::PrintF("  read on a closed descriptor: %s\n", after_close.ToString());
  return ok && table.size() == 0 && !after_close.ok();
}

}  // namespace

int main() {
  ferry::Runtime rt({.io_threads = 1, .blocking_threads = kWorkers});
  ListingService(rt);
  if (!Descriptors(rt)) {
    std::fprintf(stderr, "ferry-demo: a descriptor check failed\n");
    return 1;
  }
  return 0;
}
