// cache_bench: TtlCache figures (`scripts/bench cache`).
//
// Measures, each as the median of several runs:
//   - hits/s on 1 thread and on 2 threads (each thread its own keys), small
//     keys (uint64_t; short path strings shown beside), real clock;
//   - beside it, the naive baseline a cache replaces in the same run: one
//     std::mutex around a std::unordered_map copying the value out;
//   - how many loads 64 concurrent misses on one key cause (target: 1);
//   - the cost of handing out a cached 10,000-entry listing (one Get that
//     returns the shared_ptr), beside the cost of copying that listing,
//     which is what a cache storing values by copy would pay per hit;
//   - FdTable ops/s from tests/bench/fd_table_ops.h when that file exists.
// Ends with one line `RESULT {json}`.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ferry/cache/ttl_cache.h"

#if __has_include("bench/fd_table_ops.h")
#include "bench/fd_table_ops.h"
#define FERRY_BENCH_HAVE_FD_TABLE_OPS 1
#endif

namespace ferry::bench {
namespace {

constexpr int kRuns = 5;                   // medians of 5: one noisy run cannot move them
constexpr int kKeysPerThread = 1024;       // a working set that stays in L2
constexpr int64_t kGetsPerRun = 4'000'000;  // ~0.2-0.4 s per run at the target rate
constexpr int kListingEntries = 10'000;    // the NFSRODS paper's largest listing
constexpr int kConcurrentMisses = 64;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Keeps results observable so the loops are not optimised away.
std::atomic<uint64_t> g_sink{0};

using U64Cache = TtlCache<uint64_t, uint64_t>;

// CPU seconds used by the calling thread.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A rate two ways: over wall time (what the process got, on a machine other
// work may share) and per CPU-second of each thread, summed over threads
// (what each core does when it is ours: robust to other load).
struct Rate {
  double wall = 0;
  double per_cpu = 0;
};

// Runs body(t) (kGetsPerRun operations) on `threads` threads started
// together; wall time runs from the common start to the last thread's end.
template <typename Body>
Rate RunThreads(int threads, Body body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> cpu(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const double cpu_start = ThreadCpuSeconds();
      body(t);
      cpu[t] = ThreadCpuSeconds() - cpu_start;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& w : workers) w.join();
  Rate r;
  r.wall = static_cast<double>(kGetsPerRun) * threads / SecondsSince(start);
  for (double c : cpu) r.per_cpu += static_cast<double>(kGetsPerRun) / c;
  return r;
}

Rate MedianRate(const std::vector<Rate>& rates) {
  std::vector<double> wall, per_cpu;
  for (const Rate& r : rates) {
    wall.push_back(r.wall);
    per_cpu.push_back(r.per_cpu);
  }
  return {Median(wall), Median(per_cpu)};
}

absl::StatusOr<uint64_t> LoadU64(uint64_t k) { return k * 3; }

// Gets/s of `threads` threads, each over its own kKeysPerThread keys (all
// cached beforehand, so every Get is a hit).
template <typename Cache, typename MakeKey, typename Loader>
Rate HitsPerSecond(Cache& cache, int threads, MakeKey make_key, Loader loader) {
  std::vector<std::vector<decltype(make_key(0))>> keys(threads);
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < kKeysPerThread; ++i) {
      keys[t].push_back(make_key(t * kKeysPerThread + i));
      (void)cache.Get(keys[t].back(), loader);
    }
  }
  std::vector<Rate> rates;
  for (int run = 0; run < kRuns; ++run) {
    rates.push_back(RunThreads(threads, [&](int t) {
      const auto& my_keys = keys[t];
      uint64_t sum = 0;
      for (int64_t i = 0; i < kGetsPerRun; ++i) {
        auto r = cache.Get(my_keys[static_cast<size_t>(i) & (kKeysPerThread - 1)], loader);
        sum += r.ok() ? static_cast<uint64_t>(**r != 0) : 1;
      }
      g_sink.fetch_add(sum);
    }));
  }
  return MedianRate(rates);
}

// The baseline: one mutex, one unordered_map, the value copied out.
Rate BaselineHitsPerSecond(int threads) {
  std::mutex mu;
  std::unordered_map<uint64_t, uint64_t> map;
  for (uint64_t k = 0; k < uint64_t{kKeysPerThread} * threads; ++k) map[k] = k * 3;
  std::vector<Rate> rates;
  for (int run = 0; run < kRuns; ++run) {
    rates.push_back(RunThreads(threads, [&](int t) {
      uint64_t sum = 0;
      const uint64_t base = uint64_t{kKeysPerThread} * static_cast<uint64_t>(t);
      for (int64_t i = 0; i < kGetsPerRun; ++i) {
        std::lock_guard<std::mutex> l(mu);
        sum += map.find(base + (static_cast<uint64_t>(i) & (kKeysPerThread - 1)))->second;
      }
      g_sink.fetch_add(sum);
    }));
  }
  return MedianRate(rates);
}

// Loads caused by kConcurrentMisses threads missing one key at once; the
// largest count over the runs (each run a fresh key).
int LoadsForConcurrentMisses() {
  U64Cache cache;
  int worst = 0;
  for (int run = 0; run < kRuns; ++run) {
    std::atomic<int> loads{0};
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    const uint64_t key = 1'000'000 + static_cast<uint64_t>(run);
    std::vector<std::thread> threads;
    for (int i = 0; i < kConcurrentMisses; ++i) {
      threads.emplace_back([&] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        auto r = cache.Get(key, [&](uint64_t k) -> absl::StatusOr<uint64_t> {
          loads.fetch_add(1);
          // A server round trip's worth of time, so that every thread misses
          // while the load is in flight (a listing takes far longer).
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return k;
        });
        g_sink.fetch_add(r.ok() ? **r : 0);
      });
    }
    while (ready.load() < kConcurrentMisses) std::this_thread::yield();
    go.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
    worst = std::max(worst, loads.load());
  }
  return worst;
}

struct DirEntry {
  std::string name;
  uint64_t size;
  uint32_t mode;
  int64_t mtime;
};
using Listing = std::vector<DirEntry>;

Listing MakeListing() {
  Listing l;
  l.reserve(kListingEntries);
  for (int i = 0; i < kListingEntries; ++i) {
    l.push_back({absl::StrCat("data_object_", i, ".dat"), uint64_t{4096} * i, 0100644,
                 1'700'000'000 + i});
  }
  return l;
}

// ns per Get of a cached 10,000-entry listing (the shared_ptr handed out and
// dropped), and ns per copy of that listing.
void ListingHandout(double* handout_ns, double* copy_ns) {
  TtlCache<std::string, Listing> cache;
  const std::string key = "alice#/tempZone/home/alice/big_collection";
  auto loader = [](const std::string&) -> absl::StatusOr<Listing> { return MakeListing(); };
  (void)cache.Get(key, loader);
  constexpr int64_t kGets = 2'000'000;
  std::vector<double> handouts;
  for (int run = 0; run < kRuns; ++run) {
    uint64_t sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < kGets; ++i) {
      auto r = cache.Get(key, loader);
      sum += r.ok() ? (*r)->size() : 0;
    }
    handouts.push_back(SecondsSince(start) * 1e9 / kGets);
    g_sink.fetch_add(sum);
  }
  *handout_ns = Median(handouts);

  auto shared = *cache.Get(key, loader);
  constexpr int kCopies = 50;
  std::vector<double> copies;
  for (int run = 0; run < kRuns; ++run) {
    uint64_t sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCopies; ++i) {
      Listing copy = *shared;
      sum += copy.size() + copy[static_cast<size_t>(i)].name.size();
    }
    copies.push_back(SecondsSince(start) * 1e9 / kCopies);
    g_sink.fetch_add(sum);
  }
  *copy_ns = Median(copies);
}

std::string JsonNumber(double v) { return absl::StrFormat("%.0f", v); }

std::string JsonRate(double v) { return JsonNumber(v); }

int Main() {
  double load1 = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load1) != 1) load1 = 0;
    std::fclose(f);
  }
  std::printf("TtlCache benchmark (median of %d runs; %d cores; load average %.1f)\n", kRuns,
              static_cast<int>(std::thread::hardware_concurrency()), load1);
  std::printf("  hits/s (wall | per CPU-second summed over threads)\n");

  U64Cache u64_cache;
  const Rate hits_1t = HitsPerSecond(u64_cache, 1, [](int i) { return uint64_t(i); }, LoadU64);
  U64Cache u64_cache_2t;
  const Rate hits_2t = HitsPerSecond(u64_cache_2t, 2, [](int i) { return uint64_t(i); }, LoadU64);
  std::printf("  uint64 keys (%2d shards):      1 thread %5.1f | %5.1f M   2 threads %5.1f | %5.1f M\n",
              u64_cache.shard_count(), hits_1t.wall / 1e6, hits_1t.per_cpu / 1e6,
              hits_2t.wall / 1e6, hits_2t.per_cpu / 1e6);

  TtlCache<std::string, uint64_t> str_cache;
  auto str_loader = [](const std::string& k) -> absl::StatusOr<uint64_t> { return k.size(); };
  auto path_key = [](int i) { return absl::StrCat("/zone/home/u/f", i); };
  const Rate str_1t = HitsPerSecond(str_cache, 1, path_key, str_loader);
  TtlCache<std::string, uint64_t> str_cache_2t;
  const Rate str_2t = HitsPerSecond(str_cache_2t, 2, path_key, str_loader);
  std::printf("  short path keys:              1 thread %5.1f | %5.1f M   2 threads %5.1f | %5.1f M\n",
              str_1t.wall / 1e6, str_1t.per_cpu / 1e6, str_2t.wall / 1e6, str_2t.per_cpu / 1e6);

  const Rate base_1t = BaselineHitsPerSecond(1);
  const Rate base_2t = BaselineHitsPerSecond(2);
  std::printf("  baseline mutex+unordered_map: 1 thread %5.1f | %5.1f M   2 threads %5.1f | %5.1f M"
              "  (uint64, value copied; no TTL, LRU, stats, sharing)\n",
              base_1t.wall / 1e6, base_1t.per_cpu / 1e6, base_2t.wall / 1e6, base_2t.per_cpu / 1e6);

  const int loads_64 = LoadsForConcurrentMisses();
  std::printf("  loads for %d concurrent misses on one key: %d (worst of %d runs)\n",
              kConcurrentMisses, loads_64, kRuns);

  double handout_ns = 0, copy_ns = 0;
  ListingHandout(&handout_ns, &copy_ns);
  std::printf("  10,000-entry listing: handout %.1f ns per Get; copying it would cost %.0f us\n",
              handout_ns, copy_ns / 1e3);

  std::string fd_ops = "null";
#ifdef FERRY_BENCH_HAVE_FD_TABLE_OPS
  const double fd_ops_per_s = FdTableOpsPerSecond();
  std::printf("  fd table: %.1f M ops/s (tests/bench/fd_table_ops.h)\n", fd_ops_per_s / 1e6);
  fd_ops = JsonNumber(fd_ops_per_s);
#else
  std::printf("  fd table: tests/bench/fd_table_ops.h not present\n");
#endif

  std::printf(
      "RESULT {\"hits_per_s_1t\": %s, \"hits_per_s_2t\": %s, \"hits_per_cpu_s_1t\": %s, "
      "\"hits_per_cpu_s_2t\": %s, \"string_hits_per_s_1t\": %s, \"string_hits_per_s_2t\": %s, "
      "\"baseline_hits_per_s_1t\": %s, \"baseline_hits_per_s_2t\": %s, "
      "\"loads_for_64_misses\": %d, \"listing_handout_ns\": %.1f, \"listing_copy_ns\": %s, "
      "\"fd_ops_per_s\": %s, \"load_average\": %.2f}\n",
      JsonRate(hits_1t.wall).c_str(), JsonRate(hits_2t.wall).c_str(),
      JsonRate(hits_1t.per_cpu).c_str(), JsonRate(hits_2t.per_cpu).c_str(),
      JsonRate(str_1t.wall).c_str(), JsonRate(str_2t.wall).c_str(), JsonRate(base_1t.wall).c_str(),
      JsonRate(base_2t.wall).c_str(), loads_64, handout_ns, JsonNumber(copy_ns).c_str(),
      fd_ops.c_str(), load1);
  return g_sink.load() == 0 ? 1 : 0;
}

}  // namespace
}  // namespace ferry::bench

int main() { return ferry::bench::Main(); }
