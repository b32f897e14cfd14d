// ferry-cp: copies files and trees between any two places ferry knows
// (a local path, s3://bucket/key, nfs://host/export/path?..., and every
// scheme an adapter registers), with many chunks in flight per file and
// several files at once. Remote to remote goes straight through, never
// through a local file; within one S3 endpoint the copy is server-side.
//
//   ferry-cp /tmp/big.bin s3://bucket/dir/              upload (key dir/big.bin)
//   ferry-cp s3://bucket/dir/big.bin /tmp/              download
//   ferry-cp -r /data/tree s3://bucket/tree/ --jobs=8   a tree, 8 files at once
//   ferry-cp -r s3://bucket/tree/ 'nfs://h/export/copy?nfsport=2049&mountport=20048'
//   ferry-cp --range=1048576:1024 s3://bucket/big.bin -  1 KiB from the middle
//
// Options:
//   -r, --recursive     copy a directory (or S3 prefix): its contents go
//                       under DST, as with `aws s3 cp --recursive`
//   --jobs=N            files copied at once (default 16)
//   --chunk-mib=N       bytes per chunk / S3 part (default: the sides'
//                       preference, 8 for S3, 1 for NFS)
//   --concurrency=N     S3 requests in flight per file (default 10)
//   --parallelism=N     chunks in flight (default: the sides' preference)
//   --memory-mib=N      the Runtime's memory budget (default 512)
//   --idle-buffer-mib=N transfer buffers kept for reuse (default: a
//                       quarter of the budget; 0: none)
//   --range=OFF:LEN     read LEN bytes at OFF of one file (DST may be -)
//   --make-bucket       create the destination bucket if it is missing
//   --timeout=S         a request that makes no progress for S seconds
//                       fails (retried where safe; default 60)
//   --progress          a progress bar on stderr even when it is no tty
//   --quiet             no progress bar, no summary (errors only)
//   --json              one JSON summary line on stdout instead of the text
//
// S3 credentials, region and endpoint come from the AWS environment, as the
// AWS CLI reads them. A destination ending in '/' (or an existing
// directory) gets the source's file name. Exit status: 0 if every file was
// copied, 1 if any failed or had a name refused as unsafe (one line each on
// stderr, as it happens), 2 for a usage error. The library does the work (ferry::CopyFile / CopyTree over
// the filesystems of a FileSystemRegistry): this program parses, presents
// the progress and prints the figures.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/adapters/builtin.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/memory_budget.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// ---------------------------------------------------------------------------
// Command line

enum class ProgressMode { kAuto, kOn, kOff };

struct ByteRange {
  int64_t offset = 0;
  int64_t length = 0;
};

struct CpOptions {
  bool recursive = false;
  // Files at once: 4 keeps a tree of small files busy without multiplying
  // the requests in flight past what one server answers well.
  int jobs = ferry::CopyOptions{}.jobs;
  int64_t chunk_bytes = 0;
  int concurrency = 0;
  int parallelism = 0;
  int64_t memory_budget_bytes = 512 * kMiB;
  int64_t idle_buffer_bytes = -1;  // RuntimeOptions' default
  std::optional<ByteRange> range;
  bool make_bucket = false;
  int timeout_seconds = 0;  // 0: the adapters' default
  ProgressMode progress = ProgressMode::kAuto;
  bool json = false;
  std::vector<std::string> operands;
};

constexpr char kUsage[] =
    "usage: ferry-cp [-r] [--jobs=N] [--chunk-mib=N] [--concurrency=N] [--parallelism=N]\n"
    "                [--memory-mib=N] [--idle-buffer-mib=N] [--range=OFF:LEN] [--make-bucket]\n"
    "                [--timeout=SECONDS] [--progress|--quiet] [--json] SRC DST\n"
    "  SRC/DST: a local path or a URL (s3://bucket/key, nfs://host/export/path?...,\n"
    "           irods://[user@]host[:port]/zone/path; password from IRODS_PASSWORD)\n";

// "--name=VALUE" -> VALUE if `arg` starts with "--name=".
std::optional<std::string_view> FlagValue(std::string_view arg, std::string_view name) {
  if (arg.size() <= name.size() + 3 || arg.substr(0, 2) != "--" ||
      arg.substr(2, name.size()) != name || arg[2 + name.size()] != '=') {
    return std::nullopt;
  }
  return arg.substr(name.size() + 3);
}

// A whole number of at least `min`, times `scale`.
template <typename Int>
absl::Status ParseAtLeast(std::string_view flag, std::string_view text, int64_t min, Int* out,
                          int64_t scale = 1) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(ferry::ToAbsl(text), &v) || v < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", ferry::ToAbsl(flag), " wants ",
                     min > 0 ? "a positive number" : "a number >= 0", ", got '",
                     ferry::ToAbsl(text), "'"));
  }
  *out = static_cast<Int>(v * scale);
  return absl::OkStatus();
}

absl::StatusOr<ByteRange> ParseRange(std::string_view text) {
  const size_t colon = text.find(':');
  ByteRange r;
  if (colon == std::string_view::npos ||
      !absl::SimpleAtoi(ferry::ToAbsl(text.substr(0, colon)), &r.offset) ||
      !absl::SimpleAtoi(ferry::ToAbsl(text.substr(colon + 1)), &r.length) || r.offset < 0 ||
      r.length <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--range wants OFFSET:LENGTH (LENGTH > 0), got '", ferry::ToAbsl(text), "'"));
  }
  return r;
}

absl::StatusOr<CpOptions> ParseArgs(int argc, char** argv) {
  CpOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::optional<std::string_view> v;
    if (a == "-r" || a == "-R" || a == "--recursive") {
      o.recursive = true;
    } else if (a == "--progress") {
      o.progress = ProgressMode::kOn;
    } else if (a == "--quiet" || a == "-q") {
      o.progress = ProgressMode::kOff;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--make-bucket") {
      o.make_bucket = true;
    } else if ((v = FlagValue(a, "jobs"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("jobs", *v, 1, &o.jobs));
    } else if ((v = FlagValue(a, "chunk-mib"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("chunk-mib", *v, 1, &o.chunk_bytes, kMiB));
    } else if ((v = FlagValue(a, "concurrency"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("concurrency", *v, 1, &o.concurrency));
    } else if ((v = FlagValue(a, "parallelism"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("parallelism", *v, 1, &o.parallelism));
    } else if ((v = FlagValue(a, "memory-mib"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("memory-mib", *v, 1, &o.memory_budget_bytes, kMiB));
    } else if ((v = FlagValue(a, "idle-buffer-mib"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("idle-buffer-mib", *v, 0, &o.idle_buffer_bytes, kMiB));
    } else if ((v = FlagValue(a, "timeout"))) {
      FERRY_RETURN_IF_ERROR(ParseAtLeast("timeout", *v, 1, &o.timeout_seconds));
    } else if ((v = FlagValue(a, "range"))) {
      FERRY_ASSIGN_OR_RETURN(o.range, ParseRange(*v));
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", ferry::ToAbsl(a)));
    } else {
      o.operands.emplace_back(a);
    }
  }
  if (o.operands.size() != 2) {
    return absl::InvalidArgumentError("expected exactly two operands, SRC and DST");
  }
  if (o.range && o.recursive) return absl::InvalidArgumentError("--range reads one file, not -r");
  return o;
}

// ---------------------------------------------------------------------------
// Progress: one bar for the whole run, drawn by the engine's callback

// "[#####...]  42%  108.0/256.0 MiB  312.5 MiB/s  3/10 files" on stderr,
// at most every 100 ms (the engine's progress interval); while a tree is
// still listed, "listing" and the files found so far stand for the total.
void DrawBar(const ferry::TransferProgress& p) {
  const double secs = std::max(absl::ToDoubleSeconds(p.elapsed), 1e-3);
  const double mib_s = static_cast<double>(p.bytes_done) / kMiB / secs;
  if (p.bytes_total < 0) {
    std::fprintf(stderr, "\r[listing] %.1f MiB  %.1f MiB/s  %lld/%lld+ files\033[K",
                 static_cast<double>(p.bytes_done) / kMiB, mib_s,
                 static_cast<long long>(p.files_done), static_cast<long long>(p.files_total));
    std::fflush(stderr);
    return;
  }
  const int64_t total = std::max(p.bytes_total, p.bytes_done);
  const double fraction = total > 0 ? static_cast<double>(p.bytes_done) / total
                          : p.files_total > 0 ? static_cast<double>(p.files_done) / p.files_total
                                              : 0.0;
  constexpr int kWidth = 24;
  std::string bar(kWidth, '.');
  std::fill_n(bar.begin(), static_cast<int>(fraction * kWidth), '#');
  std::fprintf(stderr, "\r[%s] %3d%%  %.1f/%.1f MiB  %.1f MiB/s  %lld/%lld files\033[K",
               bar.c_str(), static_cast<int>(fraction * 100),
               static_cast<double>(p.bytes_done) / kMiB, static_cast<double>(total) / kMiB,
               mib_s, static_cast<long long>(p.files_done),
               static_cast<long long>(p.files_total));
  std::fflush(stderr);
}

bool ShowProgress(const CpOptions& options) {
  switch (options.progress) {
    case ProgressMode::kOn: return true;
    case ProgressMode::kOff: return false;
    case ProgressMode::kAuto: return ::isatty(STDERR_FILENO) == 1;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Reporting

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ErrorText(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

// What the run did, whatever it copied.
struct Summary {
  std::string direction;  // upload, download, copy
  ferry::TreeCopyResult result;
  double seconds = 0;
  int64_t memory_budget_bytes = 0;
  int64_t peak_rss_bytes = 0;
};

void PrintText(const Summary& s) {
  const ferry::TransferStats& t = s.result.totals;
  const int64_t files = t.files + s.result.files_failed;
  // Parts are a multipart upload's; a download or a single PUT has none to tell.
  const std::string parts = t.parts > 0 ? absl::StrCat(t.parts, " parts, ") : "";
  std::printf(
      "copied %lld of %lld file%s, %lld bytes in %.3f s (%.1f MiB/s); %lld requests, %s"
      "%lld retries, peak memory %.1f of %.0f MiB, peak RSS %.1f MiB\n",
      static_cast<long long>(t.files), static_cast<long long>(files), files == 1 ? "" : "s",
      static_cast<long long>(t.bytes), s.seconds,
      static_cast<double>(t.bytes) / kMiB / s.seconds, static_cast<long long>(t.requests),
      parts.c_str(), static_cast<long long>(t.retries),
      static_cast<double>(t.peak_memory_bytes) / kMiB,
      static_cast<double>(s.memory_budget_bytes) / kMiB,
      static_cast<double>(s.peak_rss_bytes) / kMiB);
  if (s.result.entries_refused > 0 || s.result.files_skipped > 0) {
    std::printf("not copied: %lld name%s refused as unsafe, %lld skipped (symlinks, special files)\n",
                static_cast<long long>(s.result.entries_refused),
                s.result.entries_refused == 1 ? "" : "s",
                static_cast<long long>(s.result.files_skipped));
  }
}

void PrintJson(const Summary& s) {
  const ferry::TransferStats& t = s.result.totals;
  std::string errors;
  for (const ferry::FileCopyFailure& f : s.result.failures) {
    absl::StrAppend(&errors, errors.empty() ? "" : ",", "{\"source\":", JsonString(f.source),
                    ",\"destination\":", JsonString(f.destination),
                    ",\"code\":", JsonString(absl::StatusCodeToString(f.status.code())),
                    ",\"message\":", JsonString(ferry::ToStd(f.status.message())), "}");
  }
  std::string warnings;
  for (const std::string& w : s.result.warnings) {
    absl::StrAppend(&warnings, warnings.empty() ? "" : ",", JsonString(w));
  }
  std::printf(
      "{\"direction\":\"%s\",\"files\":%lld,\"files_failed\":%lld,\"files_skipped\":%lld,"
      "\"entries_refused\":%lld,"
      "\"bytes\":%lld,\"seconds\":%.4f,\"mib_s\":%.1f,\"requests\":%lld,\"retries\":%lld,"
      "\"parts\":%d,\"bytes_fetched\":%lld,\"bytes_uploaded\":%lld,\"peak_memory_bytes\":%lld,"
      "\"memory_budget_bytes\":%lld,\"peak_rss_bytes\":%lld,\"errors\":[%s],\"warnings\":[%s]}\n",
      s.direction.c_str(), static_cast<long long>(t.files + s.result.files_failed),
      static_cast<long long>(s.result.files_failed),
      static_cast<long long>(s.result.files_skipped),
      static_cast<long long>(s.result.entries_refused), static_cast<long long>(t.bytes), s.seconds,
      static_cast<double>(t.bytes) / kMiB / s.seconds, static_cast<long long>(t.requests),
      static_cast<long long>(t.retries), t.parts, static_cast<long long>(t.bytes_fetched),
      static_cast<long long>(t.bytes_uploaded), static_cast<long long>(t.peak_memory_bytes),
      static_cast<long long>(s.memory_budget_bytes), static_cast<long long>(s.peak_rss_bytes),
      errors.c_str(), warnings.c_str());
}

// ---------------------------------------------------------------------------
// The copies

// One file: DST naming a directory gets SRC's name; its parent is made.
absl::StatusOr<ferry::TreeCopyResult> CopyOneFile(ferry::Runtime& runtime,
                                                  const ferry::fs::Location& src,
                                                  const ferry::fs::Location& dst,
                                                  ferry::CopyOptions options) {
  FERRY_ASSIGN_OR_RETURN(ferry::fs::Entry e, src.fs->Stat(src.path));
  if (e.kind == ferry::fs::EntryKind::kDirectory) {
    return absl::InvalidArgumentError(absl::StrCat(src.url, " is a directory (use -r)"));
  }
  std::string target = dst.path;
  absl::StatusOr<ferry::fs::Entry> existing = dst.fs->Stat(dst.path);
  if (dst.names_directory ||
      (existing.ok() && existing->kind == ferry::fs::EntryKind::kDirectory)) {
    target = ferry::fs::JoinPath(dst.path, ferry::fs::BaseName(src.path));
  }
  FERRY_RETURN_IF_ERROR(dst.fs->CreateDir(ferry::fs::DirName(target), /*parents=*/true));
  ferry::TreeCopyResult result;
  absl::StatusOr<ferry::TransferStats> stats =
      ferry::CopyFile(runtime, *src.fs, src.path, *dst.fs, target, std::move(options));
  if (stats.ok()) {
    result.totals = *stats;
  } else {
    result.files_failed = 1;
    result.failures.push_back({src.fs->Url(src.path), dst.fs->Url(target), stats.status()});
  }
  return result;
}

absl::Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// --range: the bytes [offset, offset+length) of one file, read positionally
// (one reader moves only the bytes it reads), to a local file or stdout.
absl::Status RunRangeRead(const ferry::fs::Location& src, const std::string& dst,
                          const CpOptions& options) {
  const absl::Time start = absl::Now();
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::fs::File> file, src.fs->OpenRead(src.path));
  FERRY_ASSIGN_OR_RETURN(int64_t size, file->Size());
  std::string bytes(static_cast<size_t>(options.range->length), '\0');
  FERRY_ASSIGN_OR_RETURN(size_t n, file->ReadAt(options.range->offset, absl::MakeSpan(bytes)));
  bytes.resize(n);
  FERRY_RETURN_IF_ERROR(file->Close());
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  const bool to_stdout = dst == "-";
  if (to_stdout) {
    FERRY_RETURN_IF_ERROR(WriteAll(STDOUT_FILENO, bytes));
  } else {
    const int fd = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", dst));
    const absl::Status written = WriteAll(fd, bytes);
    ::close(fd);
    FERRY_RETURN_IF_ERROR(written);
  }
  if (options.progress == ProgressMode::kOff && !options.json) return absl::OkStatus();
  std::FILE* out = to_stdout ? stderr : stdout;
  if (options.json) {
    std::fprintf(out, "{\"range_offset\":%lld,\"bytes\":%zu,\"object_bytes\":%lld,\"seconds\":%.4f}\n",
                 static_cast<long long>(options.range->offset), bytes.size(),
                 static_cast<long long>(size), secs);
  } else {
    std::fprintf(out, "read %zu bytes at offset %lld of %s (%lld bytes) in %.3f s\n", bytes.size(),
                 static_cast<long long>(options.range->offset), src.url.c_str(),
                 static_cast<long long>(size), secs);
  }
  return absl::OkStatus();
}

int Fail(int exit_code, const absl::Status& status) {
  std::fprintf(stderr, "ferry-cp: %s\n", ErrorText(status).c_str());
  return exit_code;
}

// A bad URL or option is the user's (2); anything else is the copy's (1).
int ExitCodeFor(const absl::Status& status) {
  return absl::IsInvalidArgument(status) ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<CpOptions> options = ParseArgs(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "ferry-cp: %s\n%s", std::string(options.status().message()).c_str(),
                 kUsage);
    return 2;
  }
  // Each chunk in flight is a blocking-pool worker of the engine.
  ferry::Runtime runtime({.blocking_threads = std::max({16, options->jobs, options->parallelism}),
                          .memory_budget_bytes = options->memory_budget_bytes,
                          .idle_buffer_bytes = options->idle_buffer_bytes});
  ferry::fs::FileSystemRegistry registry(runtime);
  absl::Status registered = ferry::RegisterBuiltinFileSystems(
      registry, {.s3_chunks = {.chunk_bytes = options->chunk_bytes,
                               .parallelism = options->concurrency},
                 .s3_make_bucket = options->make_bucket,
                 .nfs_parallelism = options->parallelism,
                 .io_timeout = absl::Seconds(options->timeout_seconds)});
  if (!registered.ok()) return Fail(1, registered);

  absl::StatusOr<ferry::fs::Location> src = registry.Resolve(options->operands[0]);
  if (!src.ok()) return Fail(ExitCodeFor(src.status()), src.status());
  if (options->range) {
    const absl::Status read = RunRangeRead(*src, options->operands[1], *options);
    return read.ok() ? 0 : Fail(1, read);
  }
  absl::StatusOr<ferry::fs::Location> dst = registry.Resolve(options->operands[1]);
  if (!dst.ok()) return Fail(ExitCodeFor(dst.status()), dst.status());

  const bool show = ShowProgress(*options);
  ferry::CopyOptions copy;
  copy.chunk_bytes = options->chunk_bytes;
  copy.parallelism = options->parallelism;
  copy.jobs = options->jobs;
  if (show) {
    copy.progress = [](const ferry::TransferProgress& p) {
      DrawBar(p);
      return absl::OkStatus();
    };
  }
  // Trouble is told as it happens (a long copy shows it while it runs),
  // each once; the summary below only counts it.
  copy.on_notice = [show](const ferry::CopyNotice& n) {
    std::fprintf(stderr, "%sferry-cp: %s%s\n", show ? "\r\033[K" : "",
                 n.kind == ferry::CopyNotice::Kind::kFailed ? "" : "warning: ", n.text.c_str());
  };
  const absl::Time start = absl::Now();
  absl::StatusOr<ferry::TreeCopyResult> result =
      options->recursive
          ? ferry::CopyTree(runtime, *src->fs, src->path, *dst->fs, dst->path, std::move(copy))
          : CopyOneFile(runtime, *src, *dst, std::move(copy));
  if (show) std::fputc('\n', stderr);
  if (!result.ok()) return Fail(ExitCodeFor(result.status()), result.status());

  Summary s;
  const bool src_local = src->fs->scheme() == "file";
  const bool dst_local = dst->fs->scheme() == "file";
  s.direction = src_local && !dst_local ? "upload" : !src_local && dst_local ? "download" : "copy";
  s.result = *std::move(result);
  s.seconds = std::max(absl::ToDoubleSeconds(absl::Now() - start), 1e-9);
  s.memory_budget_bytes = runtime.memory_budget().capacity();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.peak_rss_bytes = int64_t{ru.ru_maxrss} * 1024;  // Linux reports KiB
  if (!options->recursive) {  // a tree's were told as they happened
    for (const ferry::FileCopyFailure& f : s.result.failures) {
      std::fprintf(stderr, "ferry-cp: %s\n", ferry::DescribeFailure(f).c_str());
    }
  }
  if (options->json) {
    PrintJson(s);
  } else if (options->progress != ProgressMode::kOff) {
    PrintText(s);
  }
  return s.result.files_failed == 0 && s.result.entries_refused == 0 ? 0 : 1;
}
