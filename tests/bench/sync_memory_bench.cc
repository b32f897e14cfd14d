// ferry_sync_memory_bench: the copy engine's memory in a sync of millions.
// Two synthetic filesystems hold the same tree of --files files (4 KiB,
// one time) in directories of 1,000, made up as they are listed, so the
// process's peak RSS is the engine's own: the walk, the queue of files,
// each file checked against the destination (all up to date), and, with
// --delete (default on), the source's names kept for the destination's
// walk. Prints "peak_rss_mib N", the time, the CPU, and the counts.
//   ferry_sync_memory_bench [--files N] [--no-delete]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/fs/file_system.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"

namespace {

constexpr int64_t kFilesPerDir = 1000;
constexpr int64_t kFileBytes = 4096;
const absl::Time kMtime = absl::FromUnixSeconds(1'700'000'000);

// "d0001/f0001234": a file of the synthetic tree; "d0001": a directory.
// Thread-safe: holds nothing but its size.
class SyntheticFileSystem final : public ferry::fs::FileSystem {
 public:
  explicit SyntheticFileSystem(int64_t files) : files_(files) {}

  std::string_view scheme() const override { return "synthetic"; }
  std::string Url(std::string_view path) const override {
    return absl::StrCat("synthetic://", ferry::ToAbsl(path));
  }

  absl::StatusOr<ferry::fs::Entry> Stat(std::string_view path) override {
    ferry::fs::Entry e;
    e.path = std::string(path);
    if (path.empty() || path.find('/') == std::string_view::npos) {
      e.kind = ferry::fs::EntryKind::kDirectory;
      return e;
    }
    e.kind = ferry::fs::EntryKind::kFile;
    e.size = kFileBytes;
    e.mtime = kMtime;
    return e;
  }

  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<ferry::fs::Entry>&)> on_batch) override {
    std::vector<ferry::fs::Entry> batch;
    if (dir.empty()) {
      for (int64_t d = 0; d * kFilesPerDir < files_; ++d) {
        ferry::fs::Entry e;
        e.path = absl::StrFormat("d%04d", d);
        e.kind = ferry::fs::EntryKind::kDirectory;
        batch.push_back(std::move(e));
      }
      on_batch(batch);
      return absl::OkStatus();
    }
    int64_t d = 0;
    if (!absl::SimpleAtoi(ferry::ToAbsl(dir.substr(1)), &d)) {
      return absl::NotFoundError(absl::StrCat("no directory ", ferry::ToAbsl(dir)));
    }
    for (int64_t i = d * kFilesPerDir; i < std::min(files_, (d + 1) * kFilesPerDir); ++i) {
      ferry::fs::Entry e;
      e.path = absl::StrFormat("f%07d", i);
      e.kind = ferry::fs::EntryKind::kFile;
      e.size = kFileBytes;
      e.mtime = kMtime;
      batch.push_back(std::move(e));
    }
    on_batch(batch);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<ferry::fs::File>> OpenRead(std::string_view path) override {
    return absl::UnimplementedError(absl::StrCat("read ", ferry::ToAbsl(path), ": synthetic"));
  }
  absl::StatusOr<std::unique_ptr<ferry::fs::File>> OpenWrite(
      std::string_view path, const ferry::fs::WriteOptions&) override {
    return absl::UnimplementedError(absl::StrCat("write ", ferry::ToAbsl(path), ": synthetic"));
  }
  absl::Status CreateDir(std::string_view, bool) override { return absl::OkStatus(); }

 private:
  const int64_t files_;
};

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t files = 1'000'000;
  bool del = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--files") == 0 && i + 1 < argc) {
      files = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--no-delete") == 0) {
      del = false;
    } else {
      std::fprintf(stderr, "usage: ferry_sync_memory_bench [--files N] [--no-delete]\n");
      return 2;
    }
  }
  ferry::Runtime runtime({.blocking_threads = 16});
  SyntheticFileSystem src(files), dst(files);
  ferry::CopyOptions o;
  o.skip = ferry::SkipRule::kSizeAndTime;
  o.delete_extraneous = del;
  const absl::Time start = absl::Now();
  const double cpu0 = CpuSeconds();
  absl::StatusOr<ferry::TreeCopyResult> r = ferry::CopyTree(runtime, src, "", dst, "", std::move(o));
  if (!r.ok()) {
    std::fprintf(stderr, "sync failed: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("files %lld up_to_date %lld copied %lld deleted %lld\n",
              static_cast<long long>(files), static_cast<long long>(r->files_up_to_date),
              static_cast<long long>(r->totals.files), static_cast<long long>(r->files_deleted));
  std::printf("seconds %.3f cpu_seconds %.3f\n", absl::ToDoubleSeconds(absl::Now() - start),
              CpuSeconds() - cpu0);
  std::printf("peak_rss_mib %.1f\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  return r->files_up_to_date == files ? 0 : 1;
}
