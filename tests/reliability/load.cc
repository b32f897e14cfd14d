// ferry_load: the load test of docs/reliability.md. Many transfers and walks
// at once on one Runtime with a small memory budget; checks that the budget
// holds, that every transfer completes or fails with a message, that every
// byte downloaded is right, and that no file descriptor or thread outlives
// the filesystems that made it.
//
//   ferry_load --local=DIR --nfs=NFS_DIR_URL --s3=S3_PREFIX_URL --files=N
//              [--transfers=1000] [--walks=64] [--memory-mib=64]
//
// DIR/src holds files f0000..f{N-1}; the NFS directory and the S3 prefix
// hold the same files (scripts/load prepares them). Transfer i copies file
// i % N: NFS -> local, S3 -> local, local -> NFS, local -> S3 in turn, each
// on its own thread (they all wait on the one budget); walk j walks the NFS
// directory or the S3 prefix. Ends with one line `RESULT {json}`; exit 1 if
// a check failed.
#include <dirent.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "ferry/adapters/builtin.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"

namespace {

struct Args {
  std::string local, nfs, s3;
  int files = 0;
  int transfers = 1000;
  int walks = 64;
  int64_t memory_mib = 64;
};

std::optional<std::string> Flag(const std::string& arg, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  if (arg.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return arg.substr(prefix.size());
}

bool ParseArgs(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    std::optional<std::string> v;
    if ((v = Flag(s, "local"))) {
      a.local = *v;
    } else if ((v = Flag(s, "nfs"))) {
      a.nfs = *v;
    } else if ((v = Flag(s, "s3"))) {
      a.s3 = *v;
    } else if ((v = Flag(s, "files"))) {
      if (!absl::SimpleAtoi(*v, &a.files)) return false;
    } else if ((v = Flag(s, "transfers"))) {
      if (!absl::SimpleAtoi(*v, &a.transfers)) return false;
    } else if ((v = Flag(s, "walks"))) {
      if (!absl::SimpleAtoi(*v, &a.walks)) return false;
    } else if ((v = Flag(s, "memory-mib"))) {
      if (!absl::SimpleAtoi(*v, &a.memory_mib)) return false;
    } else {
      return false;
    }
  }
  return !a.local.empty() && !a.nfs.empty() && !a.s3.empty() && a.files > 0;
}

// Entries of a /proc folder: the process's open descriptors or threads.
int CountEntries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string Join(const std::string& dir_url, const std::string& name) {
  // NFS URLs carry their ports after '?': the name goes before it.
  const size_t q = dir_url.find('?');
  const std::string base = dir_url.substr(0, q);
  const std::string query = q == std::string::npos ? "" : dir_url.substr(q);
  return base + (base.empty() || base.back() == '/' ? "" : "/") + name + query;
}

}  // namespace

// What one round of transfers and walks did.
struct Round {
  int transfers_ok = 0, transfers_failed = 0, walks_ok = 0, walks_failed = 0;
  int64_t bytes = 0;
  int fds_peak = 0, threads_peak = 0;
  std::vector<std::string> failures;  // one line per failed or wrong operation
};

// `transfers` copies and `walks` walks at once, each on its own thread,
// through a registry made for the round and destroyed at its end.
Round RunRound(ferry::Runtime& runtime, const Args& args, int transfers, int walks) {
  Round r;
  absl::Mutex mu;
  std::atomic<int> transfers_ok{0}, transfers_failed{0}, walks_ok{0}, walks_failed{0};
  std::atomic<int64_t> bytes{0};
  {
    ferry::fs::FileSystemRegistry registry(runtime);
    if (absl::Status s = ferry::RegisterBuiltinFileSystems(registry); !s.ok()) {
      r.failures.push_back(s.ToString());
      return r;
    }
    auto fail = [&](std::string what) {
      absl::MutexLock lock(&mu);
      r.failures.push_back(std::move(what));
    };
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(transfers + walks));
    for (int i = 0; i < transfers; ++i) {
      threads.emplace_back([&, i] {
        const std::string name = absl::StrFormat("f%04d", i % args.files);
        const std::string local_src = absl::StrCat(args.local, "/src/", name);
        std::string from, to;
        const std::string out = absl::StrFormat("%s/out/t%04d", args.local, i);
        switch (i % 4) {
          case 0: from = Join(args.nfs, name); to = out; break;
          case 1: from = Join(args.s3, name); to = out; break;
          case 2: from = local_src; to = Join(args.nfs, absl::StrFormat("up/t%04d", i)); break;
          default: from = local_src; to = Join(args.s3, absl::StrFormat("up/t%04d", i)); break;
        }
        absl::StatusOr<ferry::fs::Location> src = registry.Resolve(from);
        absl::StatusOr<ferry::fs::Location> dst =
            src.ok() ? registry.Resolve(to) : absl::StatusOr<ferry::fs::Location>(src.status());
        absl::StatusOr<ferry::TransferStats> copied =
            dst.ok() ? ferry::CopyFile(runtime, *src->fs, src->path, *dst->fs, dst->path)
                     : absl::StatusOr<ferry::TransferStats>(dst.status());
        if (!copied.ok()) {
          ++transfers_failed;
          if (copied.status().message().empty()) fail(absl::StrCat(from, ": an error without a message"));
          fail(absl::StrCat(from, " -> ", to, ": ", copied.status().ToString()));
          return;
        }
        bytes += copied->bytes;
        if (i % 4 < 2 && ReadFile(out) != ReadFile(local_src)) {
          ++transfers_failed;
          fail(absl::StrCat(from, " -> ", to, ": WRONG bytes after a successful copy"));
          return;
        }
        ++transfers_ok;
      });
    }
    for (int j = 0; j < walks; ++j) {
      threads.emplace_back([&, j] {
        const std::string url = j % 2 == 0 ? args.nfs : args.s3;
        absl::StatusOr<ferry::fs::Location> root = registry.Resolve(url);
        int64_t files = 0;
        absl::StatusOr<ferry::fs::WalkStats> walked =
            root.ok() ? root->fs->Walk(root->path, {}, [&](ferry::fs::WalkBatch& b) {
              for (const ferry::fs::Entry& e : b.entries) {
                // The top level's files only: uploads land in up/ meanwhile.
                files += e.kind == ferry::fs::EntryKind::kFile && e.path.find('/') == std::string::npos;
              }
              return true;
            })
                      : absl::StatusOr<ferry::fs::WalkStats>(root.status());
        if (!walked.ok()) {
          ++walks_failed;
          fail(absl::StrCat("walk ", url, ": ", walked.status().ToString()));
        } else if (files != args.files) {
          ++walks_failed;
          fail(absl::StrCat("walk ", url, ": WRONG: ", files, " files, not ", args.files));
        } else {
          ++walks_ok;
        }
      });
    }
    r.fds_peak = CountEntries("/proc/self/fd");
    r.threads_peak = CountEntries("/proc/self/task");
    for (std::thread& t : threads) t.join();
  }  // the registry and every filesystem it made are gone here
  r.transfers_ok = transfers_ok;
  r.transfers_failed = transfers_failed;
  r.walks_ok = walks_ok;
  r.walks_failed = walks_failed;
  r.bytes = bytes;
  return r;
}

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: ferry_load --local=DIR --nfs=URL --s3=URL --files=N [--transfers=N] "
                 "[--walks=N] [--memory-mib=N]\n");
    return 2;
  }
  ferry::Runtime runtime({.blocking_threads = 16, .memory_budget_bytes = args.memory_mib << 20});
  // A small round first: the Runtime's reactor (epoll, eventfd, timerfd) and
  // its pools start at their first use and live as long as it does, so the
  // counts that tell a leak are taken after it, around the full round.
  (void)RunRound(runtime, args, 4, 2);
  const int fds_before = CountEntries("/proc/self/fd");
  const int threads_before = CountEntries("/proc/self/task");
  const absl::Time start = absl::Now();
  const Round r = RunRound(runtime, args, args.transfers, args.walks);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const int fds_after = CountEntries("/proc/self/fd");
  const int threads_after = CountEntries("/proc/self/task");
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const int64_t peak_budget = runtime.memory_budget().peak();
  const int64_t capacity = runtime.memory_budget().capacity();

  for (const std::string& f : r.failures) std::fprintf(stderr, "%s\n", f.c_str());
  const bool wrong = absl::c_any_of(r.failures, [](const std::string& f) {
    return f.find("WRONG") != std::string::npos || f.find("without a message") != std::string::npos;
  });
  const bool ok = !wrong && peak_budget <= capacity && fds_after <= fds_before &&
                  threads_after <= threads_before &&
                  r.transfers_ok + r.transfers_failed == args.transfers &&
                  r.walks_ok + r.walks_failed == args.walks;
  std::printf(
      "RESULT {\"transfers\":%d,\"transfers_ok\":%d,\"transfers_failed\":%d,\"walks\":%d,"
      "\"walks_ok\":%d,\"walks_failed\":%d,\"wrong\":%s,\"seconds\":%.2f,\"mib\":%.1f,"
      "\"budget_mib\":%lld,\"budget_peak_mib\":%.1f,\"peak_rss_mib\":%.1f,"
      "\"fds_before\":%d,\"fds_peak\":%d,\"fds_after\":%d,\"threads_before\":%d,"
      "\"threads_peak\":%d,\"threads_after\":%d,\"ok\":%s}\n",
      args.transfers, r.transfers_ok, r.transfers_failed, args.walks, r.walks_ok, r.walks_failed,
      wrong ? "true" : "false", seconds, static_cast<double>(r.bytes) / (1 << 20), static_cast<long long>(args.memory_mib),
      static_cast<double>(peak_budget) / (1 << 20), static_cast<double>(ru.ru_maxrss) / 1024,
      fds_before, r.fds_peak, fds_after, threads_before, r.threads_peak, threads_after,
      ok ? "true" : "false");
  return ok ? 0 : 1;
}
