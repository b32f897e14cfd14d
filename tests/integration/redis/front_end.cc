// ferry_redis_front_end: one front end of the shared cache tier's tests and
// bench, run as its own process: a TtlCache of directory listings whose
// origin is a real directory (readdir, counted), behind a RedisTier through
// SharedLoader, as an NFSRODS-style front end would put its iRODS listings.
//
//   ferry_redis_front_end --port=P --root=DIR [--ns=N] [--ttl-ms=30000]
//       [--origin-delay-ms=0] [--shared=1] [--retry-ms=200]
//
// Commands on stdin, one reply line each on stdout:
//   list KEY            -> "ok <entries>"      (KEY: a folder below DIR, "/a")
//   has KEY NAME        -> "yes" | "no"        (from the cache, loading on a miss)
//   rename KEY FROM TO  -> "ok"                (rename(2) in the origin, then
//                                               invalidate here and everywhere)
//   stats               -> "origin_loads N tier_hits N waits N tier_failures N resyncs N
//                           peak_rss_kb N"
//   quit
// Invalidation messages are the KEY; a subscriber drops that listing.
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "ferry/cache/shared_loader.h"
#include "ferry/cache/ttl_cache.h"
#include "ferry/redis/redis_tier.h"
#include "testing/flags.h"

namespace {

using Names = std::vector<std::string>;
struct Timed {
  Names names;
  absl::Duration ttl;
};

using ferry::testing::Flag;
using ferry::testing::IntFlag;

// VmHWM from /proc/self/status.
long PeakRssKb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = Flag(argc, argv, "root", "");
  const absl::Duration ttl = absl::Milliseconds(IntFlag(argc, argv, "ttl-ms", 30000));
  const absl::Duration delay = absl::Milliseconds(IntFlag(argc, argv, "origin-delay-ms", 0));
  const bool shared = IntFlag(argc, argv, "shared", 1) != 0;
  if (root.empty()) {
    std::fprintf(stderr, "usage: ferry_redis_front_end --port=P --root=DIR ...\n");
    return 2;
  }
  ferry::redis::RedisTier tier({.port = IntFlag(argc, argv, "port", 16379),
                                .name_space = Flag(argc, argv, "ns", "ferry-test"),
                                .retry_after = absl::Milliseconds(IntFlag(argc, argv, "retry-ms", 200))});
  ferry::SharedLoader loader(tier);
  std::atomic<int64_t> origin_loads{0}, resyncs{0};

  using Cache = ferry::TtlCache<std::string, Timed>;
  Cache cache(Cache::Options{
      .refresh_time = ttl,
      .refresh_time_for = [](const std::string&, const Timed& t) { return t.ttl; },
  });
  auto origin = [&](const std::string& key) -> absl::StatusOr<Names> {
    ++origin_loads;
    absl::SleepFor(delay);  // the origin server's own time (a GenQuery)
    Names out;
    DIR* d = opendir((root + key).c_str());
    if (d == nullptr) return absl::NotFoundError("no such folder: " + key);
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(std::move(n));
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  };
  auto get = [&](const std::string& key) {
    return cache.Get(key, [&](const std::string& k) -> absl::StatusOr<Timed> {
      if (!shared) {
        auto names = origin(k);
        if (!names.ok()) return names.status();
        return Timed{*std::move(names), ttl};
      }
      auto got = loader.Load<Names>(
          k, ttl, [&] { return origin(k); },
          [](const Names& n) { return absl::StrJoin(n, "\n"); },
          [](std::string_view b) -> absl::StatusOr<Names> {
            if (b.empty()) return Names{};
            return Names(absl::StrSplit(absl::string_view(b.data(), b.size()), '\n'));
          });
      if (!got.ok()) return got.status();
      return Timed{std::move(got->value), got->ttl};
    });
  };
  // Declared after the cache: destroyed (and its thread joined) first.
  std::unique_ptr<ferry::SharedTierSubscription> sub;
  if (shared) {
    sub = tier.Subscribe([&](const ferry::SharedTierEvent& e) {
      if (e.kind == ferry::SharedTierEvent::Kind::kResync) {
        ++resyncs;
        cache.InvalidateAll();
      } else {
        cache.InvalidatePrefix(std::string(e.message));
      }
    });
  }

  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (w.empty()) continue;
    if (w[0] == "quit") break;
    if (w[0] == "list" && w.size() == 2) {
      auto r = get(w[1]);
      std::cout << (r.ok() ? "ok " + std::to_string((*r)->names.size()) : "error " + r.status().ToString())
                << std::endl;
    } else if (w[0] == "has" && w.size() == 3) {
      auto r = get(w[1]);
      bool has = r.ok() && std::binary_search((*r)->names.begin(), (*r)->names.end(), w[2]);
      std::cout << (has ? "yes" : "no") << std::endl;
    } else if (w[0] == "rename" && w.size() == 4) {
      const std::string dir = root + w[1] + "/";
      if (std::rename((dir + w[2]).c_str(), (dir + w[3]).c_str()) != 0) {
        std::cout << "error rename" << std::endl;
        continue;
      }
      cache.InvalidatePrefix(w[1]);
      // The listing itself, and (byte prefix) the listings below it.
      if (shared) loader.Invalidate({w[1]}, {w[1] + "/"}, w[1]);
      std::cout << "ok" << std::endl;
    } else if (w[0] == "stats") {
      auto s = loader.stats();
      std::cout << "origin_loads " << origin_loads << " tier_hits " << s.tier_hits << " waits " << s.waits
                << " tier_failures " << s.tier_failures << " resyncs " << resyncs << " peak_rss_kb "
                << PeakRssKb() << std::endl;
    } else {
      std::cout << "error unknown command" << std::endl;
    }
  }
  return 0;
}
