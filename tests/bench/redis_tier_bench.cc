// scripts/bench redis-tier: origin loads of N front-end processes listing
// the same 10,000-entry collection, without and with the shared tier
// (RedisTier + SharedLoader), and how soon a rename through one front end
// shows in the others' listings.
//
//   ferry_redis_tier_bench --front-end=PATH --port=P [--fronts=4]
//       [--entries=10000] [--ttl-ms=1000] [--periods=5] [--origin-delay-ms=50]
//       [--renames=100]
//
// The front ends are tests/integration/redis/front_end.cc processes; the
// origin is a real folder of `entries` empty files that each front end
// lists with readdir, plus origin-delay-ms of simulated server time (an
// iRODS GenQuery of 10,000 rows takes about that on the test peer). Each
// front end lists the collection continuously for `periods` TTLs;
// origin_loads_per_ttl_* is the origin loads of all front ends together
// per TTL. invalidation_ms_*: from a rename's "ok" (rename(2) done, local
// and shared tiers invalidated, message published) to the moment each
// other front end's listing shows the new name, over `renames` renames
// and every other front end, with no origin delay: delivery, the local
// drop, and one shared reload of the 10,000 entries.
//
// Ends with one line `RESULT {json}`.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "ferry/base/random.h"
#include "integration/redis/front_end_driver.h"
#include "testing/flags.h"

namespace {

namespace fs = std::filesystem;
using ferry::testing::FrontEndProcess;

using ferry::testing::Flag;
using ferry::testing::IntFlag;

struct Fleet {
  std::vector<std::unique_ptr<FrontEndProcess>> fronts;
  long OriginLoads() {
    long n = 0;
    for (auto& f : fronts) n += f->Stat("origin_loads");
    return n;
  }
  long PeakRssKb() {
    long m = 0;
    for (auto& f : fronts) m = std::max(m, f->Stat("peak_rss_kb"));
    return m;
  }
};

Fleet Start(const std::string& binary, int n, const std::vector<std::string>& args) {
  Fleet fleet;
  for (int i = 0; i < n; ++i) {
    fleet.fronts.push_back(std::make_unique<FrontEndProcess>(binary, args));
    if (!fleet.fronts.back()->ok()) {
      std::fprintf(stderr, "redis_tier_bench: cannot start %s\n", binary.c_str());
      std::exit(1);
    }
  }
  absl::SleepFor(absl::Milliseconds(200));  // subscribers connected
  return fleet;
}

// Every front end lists `key` over and over for `d`; returns origin loads.
long ListFor(Fleet& fleet, absl::Duration d) {
  const absl::Time end = absl::Now() + d;
  while (absl::Now() < end) {
    for (auto& f : fleet.fronts) f->Send("list /list");
    for (auto& f : fleet.fronts) {
      const std::string r = f->Reply();
      if (r.rfind("ok ", 0) != 0) {
        std::fprintf(stderr, "redis_tier_bench: list failed: %s\n", r.c_str());
        std::exit(1);
      }
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  return fleet.OriginLoads();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string binary = Flag(argc, argv, "front-end", "");
  const std::string port = Flag(argc, argv, "port", "16379");
  const int n = IntFlag(argc, argv, "fronts", 4);
  const int entries = IntFlag(argc, argv, "entries", 10000);
  const int ttl_ms = IntFlag(argc, argv, "ttl-ms", 1000);
  const int periods = IntFlag(argc, argv, "periods", 5);
  const int delay_ms = IntFlag(argc, argv, "origin-delay-ms", 50);
  const int renames = IntFlag(argc, argv, "renames", 100);
  if (binary.empty()) {
    std::fprintf(stderr, "usage: ferry_redis_tier_bench --front-end=PATH --port=P ...\n");
    return 2;
  }
  const fs::path root = fs::temp_directory_path() / absl::StrFormat("ferry-redis-bench-%016x", ferry::RandomUint64());
  fs::create_directories(root / "list");
  for (int i = 0; i < entries; ++i) std::ofstream(root / "list" / absl::StrFormat("e%05d", i));

  auto args = [&](bool shared, int ttl, int delay) {
    return std::vector<std::string>{
        absl::StrCat("--port=", port), absl::StrCat("--root=", root.string()),
        absl::StrFormat("--ns=bench%016x", ferry::RandomUint64()), absl::StrCat("--ttl-ms=", ttl),
        absl::StrCat("--origin-delay-ms=", delay), absl::StrCat("--shared=", shared ? 1 : 0)};
  };
  const absl::Duration run = absl::Milliseconds(static_cast<int64_t>(ttl_ms) * periods);

  double per_ttl[2];
  long peak_rss_kb = 0;
  for (int shared = 0; shared < 2; ++shared) {
    Fleet fleet = Start(binary, n, args(shared != 0, ttl_ms, delay_ms));
    const long loads = ListFor(fleet, run);
    per_ttl[shared] = static_cast<double>(loads) / periods;
    peak_rss_kb = std::max(peak_rss_kb, fleet.PeakRssKb());
    std::fprintf(stderr, "%s: %d front ends, %d TTLs of %d ms: %ld origin loads (%.2f per TTL)\n",
                 shared ? "shared" : "unshared", n, periods, ttl_ms, loads, per_ttl[shared]);
  }

  // Invalidation: long TTL (only invalidations make listings change), no
  // origin delay.
  std::vector<double> ms;
  {
    Fleet fleet = Start(binary, n, args(true, 600000, 0));
    ListFor(fleet, absl::Milliseconds(1));
    std::string name = "e00000";
    for (int r = 0; r < renames; ++r) {
      const std::string next = absl::StrFormat("r%05d", r);
      FrontEndProcess& writer = *fleet.fronts[r % n];
      if (writer.Call(absl::StrCat("rename /list ", name, " ", next)) != "ok") {
        std::fprintf(stderr, "redis_tier_bench: rename failed\n");
        return 1;
      }
      const absl::Time renamed = absl::Now();
      std::vector<FrontEndProcess*> waiting;
      for (int i = 0; i < n; ++i) {
        if (i != r % n) waiting.push_back(fleet.fronts[i].get());
      }
      while (!waiting.empty() && absl::Now() - renamed < absl::Seconds(10)) {
        for (auto* f : waiting) f->Send(absl::StrCat("has /list ", next));
        std::vector<FrontEndProcess*> still;
        for (auto* f : waiting) {
          if (f->Reply() == "yes") {
            ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - renamed));
          } else {
            still.push_back(f);
          }
        }
        waiting.swap(still);
      }
      for (size_t i = 0; i < waiting.size(); ++i) ms.push_back(10000);  // never seen: counts as 10 s
      name = next;
    }
  }
  fs::remove_all(root);
  std::fprintf(stderr, "invalidation: %zu samples, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", ms.size(),
               Percentile(ms, 0.5), Percentile(ms, 0.99), Percentile(ms, 1.0));
  std::printf(
      "RESULT {\"origin_loads_per_ttl_shared\": %.2f, \"origin_loads_per_ttl_unshared\": %.2f, "
      "\"invalidation_ms_p99\": %.2f, \"invalidation_ms_p50\": %.2f, \"front_ends\": %d, "
      "\"entries\": %d, \"ttl_ms\": %d, \"periods\": %d, \"origin_delay_ms\": %d, "
      "\"front_end_peak_rss_bytes\": %ld}\n",
      per_ttl[1], per_ttl[0], Percentile(ms, 0.99), Percentile(ms, 0.5), n, entries, ttl_ms, periods,
      delay_ms, peak_rss_kb * 1024);
  return 0;
}
