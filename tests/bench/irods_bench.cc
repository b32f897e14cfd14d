// ferry's side of scripts/bench irods: against an iRODS server (the test
// peer), in one process after one login, prints one JSON object of seconds:
//   list_uncached_s   List of COLLECTION through a fresh client (no cache)
//   list_cached_s     the same listing from IrodsCacheSet, warm
//   put_small_s / get_small_s   the tree SMALL_DIR up and back (CopyTree)
//   put_big_s / get_big_s       the file BIG up and back (CopyFile)
//   list_uncached_cpu_s, put_small_cpu_s / get_small_cpu_s,
//   put_big_cpu_s / get_big_cpu_s   this process's CPU (user + system, every
//                                   thread) for each
// Each is the median of RUNS runs.
//   ferry_irods_bench PORT COLLECTION SMALL_DIR BIG_FILE WORK_DIR RUNS
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "ferry/fs/local_file_system.h"
#include "ferry/irods/irods_cache.h"
#include "ferry/irods/irods_file_system.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// This process's CPU seconds (user + system, every thread) so far.
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int Fail(const absl::Status& s, const char* what) {
  std::fprintf(stderr, "irods_bench: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: ferry_irods_bench PORT COLLECTION SMALL_DIR BIG_FILE WORK_DIR RUNS\n");
    return 2;
  }
  using namespace ferry;
  irods::IrodsAccount a;
  a.host = "127.0.0.1";
  a.port = static_cast<uint16_t>(std::atoi(argv[1]));
  a.zone = "tempZone";
  a.user = "rods";
  a.password = "rods";
  const std::string coll = argv[2], small = argv[3], big = argv[4], work = argv[5];
  const int runs = std::max(1, std::atoi(argv[6]));
  Runtime runtime;
  fs::LocalFileSystem local;
  auto fs = irods::IrodsFileSystem::Connect(a);
  if (!fs.ok()) return Fail(fs.status(), "connect");
  const std::string irods_root = coll.substr(1, coll.rfind('/') - 1);  // the bench's parent collection

  std::vector<double> uncached, cached, put_small, get_small, put_big, get_big;
  std::vector<double> uncached_cpu, put_small_cpu, get_small_cpu, put_big_cpu, get_big_cpu;
  size_t listed = 0;
  irods::IrodsCacheSet cache((*fs)->client());
  for (int r = 0; r < runs; ++r) {
    absl::Time t = absl::Now();
    double cpu = CpuSeconds();
    size_t n = 0;
    absl::Status s = (*fs)->client().List(coll, [&](std::vector<irods::IrodsEntry>& b) {
      n += b.size();
      return true;
    });
    if (!s.ok()) return Fail(s, "list");
    uncached.push_back(absl::ToDoubleSeconds(absl::Now() - t));
    uncached_cpu.push_back(CpuSeconds() - cpu);
    listed = n;
  }
  if (!cache.List("rods", coll).ok()) return Fail(absl::UnknownError("warm"), "cache warm-up");
  for (int r = 0; r < std::max(runs, 20); ++r) {
    absl::Time t = absl::Now();
    auto l = cache.List("rods", coll);
    cached.push_back(absl::ToDoubleSeconds(absl::Now() - t));
    if (!l.ok() || (*l)->size() != listed) return Fail(l.status(), "cached list");
  }
  for (int r = 0; r < runs; ++r) {
    const std::string dst = absl::StrCat(irods_root, "/ferry-small-", r);
    const std::string back = absl::StrCat(work, "/ferry-small-back-", r);
    absl::Time t = absl::Now();
    double cpu = CpuSeconds();
    auto up = CopyTree(runtime, local, fs::LocalPathToFsPath(small), **fs, dst, {.jobs = 16});
    if (!up.ok() || up->files_failed > 0) return Fail(up.status(), "put small");
    put_small.push_back(absl::ToDoubleSeconds(absl::Now() - t));
    put_small_cpu.push_back(CpuSeconds() - cpu);
    t = absl::Now();
    cpu = CpuSeconds();
    auto down = CopyTree(runtime, **fs, dst, local, fs::LocalPathToFsPath(back), {.jobs = 16});
    if (!down.ok() || down->files_failed > 0) return Fail(down.status(), "get small");
    get_small.push_back(absl::ToDoubleSeconds(absl::Now() - t));
    get_small_cpu.push_back(CpuSeconds() - cpu);
    std::filesystem::remove_all(back);
  }
  for (int r = 0; r < runs; ++r) {
    const std::string dst = absl::StrCat(irods_root, "/ferry-big-", r);
    const std::string back = absl::StrCat(work, "/ferry-big-back");
    absl::Time t = absl::Now();
    double cpu = CpuSeconds();
    auto up = CopyFile(runtime, local, fs::LocalPathToFsPath(big), **fs, dst);
    if (!up.ok()) return Fail(up.status(), "put big");
    put_big.push_back(absl::ToDoubleSeconds(absl::Now() - t));
    put_big_cpu.push_back(CpuSeconds() - cpu);
    t = absl::Now();
    cpu = CpuSeconds();
    auto down = CopyFile(runtime, **fs, dst, local, fs::LocalPathToFsPath(back));
    if (!down.ok()) return Fail(down.status(), "get big");
    get_big.push_back(absl::ToDoubleSeconds(absl::Now() - t));
    get_big_cpu.push_back(CpuSeconds() - cpu);
    std::filesystem::remove(back);
    (void)(*fs)->Remove(dst);
  }
  std::printf(
      "{\"listed\": %zu, \"list_uncached_s\": %.6f, \"list_cached_s\": %.9f, \"put_small_s\": %.4f, "
      "\"get_small_s\": %.4f, \"put_big_s\": %.4f, \"get_big_s\": %.4f, \"put_big_cpu_s\": %.4f, "
      "\"get_big_cpu_s\": %.4f, \"list_uncached_cpu_s\": %.6f, \"put_small_cpu_s\": %.4f, "
      "\"get_small_cpu_s\": %.4f}\n",
      listed, Median(uncached), Median(cached), Median(put_small), Median(get_small), Median(put_big),
      Median(get_big), Median(put_big_cpu), Median(get_big_cpu), Median(uncached_cpu), Median(put_small_cpu),
      Median(get_small_cpu));
  return 0;
}
