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
//   ferry-cp s3://bucket/log.txt - | less               to stdout
//   producer | ferry-cp - s3://bucket/stream.bin        from stdin (multipart)
//
// `ferry-cp --help` lists the options (each takes `--opt N` or `--opt=N`);
// --endpoint-url, --profile and --region mean what they mean to the AWS CLI
// (they set AWS_ENDPOINT_URL / AWS_PROFILE / AWS_REGION for this run), and
// otherwise S3 credentials, region and endpoint come from the AWS
// environment. A destination ending in '/' (or an existing directory) gets
// the source's file name. `-` is stdin as SRC, stdout as DST (one file;
// a summary then goes to stderr). Exit status: 0 if every file was copied,
// 1 if any failed or had a name refused as unsafe (one line each on
// stderr, as it happens), 2 for a usage error, 130 when interrupted
// (SIGINT/SIGTERM: files in flight are discarded, so no temporary or
// unfinished multipart upload stays and an existing target is unchanged; a
// second signal exits at once). With --json, a copy that fails as a whole
// also prints {"error":{"code":...,"message":...}} on stdout. The library
// does the work (ferry::CopyFile / CopyTree over the filesystems of a
// FileSystemRegistry): this program parses, presents the progress and
// prints the figures.
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <limits>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/adapters/builtin.h"
#include "ferry/base/sanitizers.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/memory_budget.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/copy_engine.h"
#include "tool_flags.h"

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
  int64_t resume_min_bytes = ferry::CopyOptions{}.resume_min_bytes;
  int concurrency = 0;
  int parallelism = 0;
  int64_t memory_budget_bytes = 512 * kMiB;
  int64_t idle_buffer_bytes = -1;  // RuntimeOptions' default
  std::optional<ByteRange> range;
  bool make_bucket = false;
  int timeout_seconds = 0;  // 0: the adapters' default
  ProgressMode progress = ProgressMode::kAuto;
  bool json = false;
  ferry_tools::AwsFlags aws;
  std::vector<std::string> operands;
  // --clean-up URL: remove what interrupted copies left below URL instead
  // of copying; only what changed no later than `older_than` ago.
  std::string clean_up;
  absl::Duration older_than = absl::ZeroDuration();
  // Sync (rclone's flags and meanings). A file already at DST with the
  // same size and modification time is left alone unless --ignore-times.
  ferry::SkipRule skip = ferry::SkipRule::kSizeAndTime;
  bool dry_run = false;
  bool delete_extraneous = false;
  int64_t max_delete = -1;
  ferry::fs::FilterRules filter_rules;
  std::string filter_from;
  bool verify = false;
  int64_t bandwidth_limit = 0;  // bytes/s; 0: none
  // The name it runs as, for messages: ferry-cp or ferry-sync.
  const char* tool = "ferry-cp";
};

// ferry-sync is ferry-cp with a sync's defaults (a tree, mirrored), chosen
// by the name it is run as: one program, so the build compiles it once and
// the install ships a symbolic link.
bool RunAsSync(const char* argv0) {
  std::string_view name = argv0 == nullptr ? "" : argv0;
  if (const size_t slash = name.rfind('/'); slash != std::string_view::npos) {
    name = name.substr(slash + 1);
  }
  return name.substr(0, std::string_view("ferry-sync").size()) == "ferry-sync";
}

// Files listed by name in --json and the dry run's text, at most: a sync
// of millions says how many more.
constexpr size_t kMaxListedFiles = 10000;

// A whole number of MiB, as bytes.
int64_t MiB(int64_t mib) { return mib * kMiB; }

absl::StatusOr<ByteRange> ParseRange(std::string_view text) {
  const size_t colon = text.find(':');
  ByteRange r;
  if (colon == std::string_view::npos ||
      !absl::SimpleAtoi(ferry::ToAbsl(text.substr(0, colon)), &r.offset) ||
      !absl::SimpleAtoi(ferry::ToAbsl(text.substr(colon + 1)), &r.length) || r.offset < 0 ||
      r.length <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("wants OFFSET:LENGTH (LENGTH > 0), got '", ferry::ToAbsl(text), "'"));
  }
  return r;
}

// --bwlimit: "512" (KiB/s, rclone's unit), "100K", "10M", "1G", "4096B".
absl::StatusOr<int64_t> ParseRate(std::string_view text) {
  int64_t unit = 1024;
  std::string_view digits = text;
  if (!digits.empty() && !absl::ascii_isdigit(static_cast<unsigned char>(digits.back()))) {
    switch (absl::ascii_toupper(static_cast<unsigned char>(digits.back()))) {
      case 'B': unit = 1; break;
      case 'K': unit = int64_t{1} << 10; break;
      case 'M': unit = int64_t{1} << 20; break;
      case 'G': unit = int64_t{1} << 30; break;
      default: unit = 0;
    }
    digits.remove_suffix(1);
  }
  int64_t n = 0;
  if (unit == 0 || !absl::SimpleAtoi(ferry::ToAbsl(digits), &n) || n <= 0 ||
      n > std::numeric_limits<int64_t>::max() / unit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wants a rate such as 512 (KiB/s), 100K, 10M or 1G, got '", ferry::ToAbsl(text), "'"));
  }
  return n * unit;
}

// The whole of a small local file (--filter-from).
absl::Status ReadTextFile(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return absl::ErrnoToStatus(err, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return absl::OkStatus();
}

// Fills `o` from the command line; nullopt to go on, else the exit status
// (0 after --help / --version, 2 after a usage error).
std::optional<int> ParseArgs(int argc, char** argv, CpOptions& o) {
  const bool as_sync = RunAsSync(argc > 0 ? argv[0] : nullptr);
  const char* const tool = as_sync ? "ferry-sync" : "ferry-cp";
  o.tool = tool;
  ferry_tools::CommandLine cl(
      tool,
      as_sync ? "Makes DST a copy of the tree SRC: copies what is missing or changed (same size\n"
              "and modification time: up to date, as rclone decides), then deletes what SRC\n"
              "lacks, only if every copy succeeded. Any two of a local path, s3://bucket/prefix,\n"
              "nfs://host/export/path, irods://[user@]host[:port]/zone/path. --dry-run first\n"
              "shows what it would do. Exit status: 0 done, 1 a file failed, 2 usage error,\n"
              "130 interrupted."
            : "Copies files and trees between any two of a local path, s3://bucket/key,\n"
              "nfs://host/export/path?nfsport=&mountport=, irods://[user@]host[:port]/zone/path\n"
              "(password from IRODS_PASSWORD). A DST ending in '/' (or an existing directory)\n"
              "gets SRC's name; '-' is stdin as SRC, stdout as DST. A file already at DST with\n"
              "the same size and modification time is left as it is (rclone's rule; see\n"
              "--ignore-times). S3 credentials, region and endpoint come from the AWS\n"
              "environment unless the flags below say otherwise.\n"
              "Exit status: 0 all copied, 1 a file failed, 2 usage error, 130 interrupted.");
  cl.SetVersion(absl::StrCat(tool, " ", FERRY_VERSION));
  if (as_sync) {
    o.recursive = true;
    o.delete_extraneous = true;
  } else {
    cl.Flag("-r,-R,--recursive", &o.recursive,
            "copy a directory (or S3 prefix): its contents go under DST, as with "
            "`aws s3 cp --recursive`");
  }
  cl.Option("--jobs", &o.jobs, "files copied at once (default 16)")
      .TypeName("N")
      .Range(1, std::numeric_limits<int>::max());
  constexpr int64_t kMaxMiB = std::numeric_limits<int64_t>::max() / kMiB;
  int64_t chunk_mib = 0, memory_mib = 0, idle_mib = -1, resume_mib = -1;
  cl.Option("--chunk-mib", &chunk_mib,
            "bytes per chunk / S3 part (default: the sides' preference, 8 for S3, 1 for NFS)")
      .TypeName("N")
      .Range(int64_t{1}, kMaxMiB);
  cl.Option("--resume-min-mib", &resume_mib,
            "files this large are continued by a rerun after a kill, where the destination "
            "can (local disk; default 64; 0: never)")
      .TypeName("N")
      .Range(int64_t{0}, kMaxMiB);
  cl.Option("--concurrency", &o.concurrency, "S3 requests in flight per file (default 10)")
      .TypeName("N")
      .Range(1, std::numeric_limits<int>::max());
  cl.Option("--parallelism", &o.parallelism,
            "chunks in flight (default: the sides' preference)")
      .TypeName("N")
      .Range(1, std::numeric_limits<int>::max());
  cl.Option("--memory-mib", &memory_mib, "the Runtime's memory budget (default 512)")
      .TypeName("N")
      .Range(int64_t{1}, kMaxMiB);
  cl.Option("--idle-buffer-mib", &idle_mib,
            "transfer buffers kept for reuse (default: a quarter of the budget; 0: none)")
      .TypeName("N")
      .Range(int64_t{0}, kMaxMiB);
  std::string range;
  cl.Option("--range", &range, "read LEN bytes at OFF of one file (DST may be -)")
      .TypeName("OFF:LEN")
      .Check([](const std::string& text) {
        const absl::StatusOr<ByteRange> r = ParseRange(text);
        return r.ok() ? std::string() : std::string(r.status().message());
      });
  cl.Flag("--make-bucket", &o.make_bucket,
          "create the destination bucket if it is missing");
  cl.Option("--timeout", &o.timeout_seconds,
            "a request that makes no progress for S seconds fails (retried where safe; "
            "default 60)")
      .TypeName("S")
      .Range(1, std::numeric_limits<int>::max());
  bool progress = false, quiet = false;
  ferry_tools::CommandLine::Arg& progress_flag =
      cl.Flag("--progress", &progress, "a progress bar on stderr even when it is no tty");
  cl.Flag("-q,--quiet", &quiet, "no progress bar, no summary (errors only)")
      .Excludes(progress_flag);
  cl.Flag("--json", &o.json,
          "one JSON summary line on stdout instead of the text (on stderr when DST is -); "
          "a copy that fails as a whole prints {\"error\":{\"code\",\"message\"}}");
  std::string older_than;
  ferry_tools::CommandLine::Arg& clean_up =
      cl.Option("--clean-up", &o.clean_up,
                "copy nothing: remove what interrupted copies left below URL (ferry's "
                "temporaries; on S3 every unfinished multipart upload under the prefix), "
                "each printed; a copy also removes its own files' leftovers as it goes")
          .TypeName("URL");
  cl.Option("--older-than", &older_than,
            "with --clean-up, only leftovers unchanged for this long (e.g. 30m, 2h; "
            "default 0: anything from before the clean-up started)")
      .TypeName("DURATION")
      .Needs(clean_up);
  // Sync: rclone's flags, rclone's meanings.
  bool ignore_times = false, size_only = false, checksum = false, ignore_existing = false;
  ferry_tools::CommandLine::Arg& ignore_times_flag = cl.Flag(
      "-I,--ignore-times", &ignore_times,
      "copy every file, even one already at DST with the same size and modification time");
  ferry_tools::CommandLine::Arg& size_only_flag =
      cl.Flag("--size-only", &size_only, "a file at DST with the same size is up to date");
  ferry_tools::CommandLine::Arg& checksum_flag = cl.Flag(
      "-c,--checksum", &checksum,
      "a file at DST with the same size and content hash is up to date: MD5, or SHA-256 "
      "where iRODS is a side; hashes the servers keep (S3's ETag or md5chksum) or compute "
      "(iRODS' checksum) move no bytes, else both files are read");
  ferry_tools::CommandLine::Arg& ignore_existing_flag =
      cl.Flag("--ignore-existing", &ignore_existing, "leave every file already at DST as it is");
  ignore_times_flag.Excludes(size_only_flag).Excludes(checksum_flag).Excludes(ignore_existing_flag);
  size_only_flag.Excludes(checksum_flag).Excludes(ignore_existing_flag);
  checksum_flag.Excludes(ignore_existing_flag);
  cl.Flag("-n,--dry-run", &o.dry_run,
          "copy, set and delete nothing: print what would be copied and deleted");
  cl.Option("--include", &o.filter_rules.include,
            "take only files matching PATTERN (rclone's globs: * ** ? [..] {a,b}, / "
            "anchors at the root); repeatable")
      .TypeName("PATTERN");
  cl.Option("--exclude", &o.filter_rules.exclude,
            "leave out files matching PATTERN; repeatable")
      .TypeName("PATTERN");
  cl.Option("--filter", &o.filter_rules.filter,
            "a rule '+ PATTERN' (take) or '- PATTERN' (leave out), tried in order; "
            "repeatable")
      .TypeName("RULE");
  cl.Option("--filter-from", &o.filter_from,
            "read --filter rules from FILE, one per line ('#' comments)")
      .TypeName("FILE");
  if (!as_sync) {
    cl.Flag("--delete", &o.delete_extraneous,
            "with -r: after every file copied, delete files at DST that SRC lacks "
            "(never after a failure; excluded files are kept)");
  }
  cl.Flag("--verify", &o.verify,
          "after each file is copied, hash both sides (stored MD5s where the server keeps "
          "them, else read back) and fail the file if they differ");
  std::string bwlimit;
  cl.Option("--bwlimit", &bwlimit,
            "move at most RATE bytes per second, all files together: a number of KiB, or "
            "with a suffix B, K, M, G (binary, as rclone's)")
      .TypeName("RATE")
      .Check([](const std::string& text) {
        const absl::StatusOr<int64_t> r = ParseRate(text);
        return r.ok() ? std::string() : std::string(r.status().message());
      });
  cl.Option("--max-delete", &o.max_delete,
            "delete nothing (and fail) if more than N files would be deleted")
      .TypeName("N")
      .Range(int64_t{0}, std::numeric_limits<int64_t>::max());
  ferry_tools::AddAwsFlags(cl, o.aws);
  std::string src, dst;
  cl.Positional("SRC", &src, "a local path, a URL, or - for stdin");
  cl.Positional("DST", &dst, "a local path, a URL, or - for stdout");
  if (std::optional<int> exit = cl.ParseOrExit(argc, argv)) return exit;
  if (!older_than.empty() &&
      (!absl::ParseDuration(older_than, &o.older_than) || o.older_than < absl::ZeroDuration())) {
    return cl.UsageError(
        absl::StrCat("--older-than: not a duration: '", older_than, "' (e.g. 90s, 30m, 2h)"));
  }
  if (!o.clean_up.empty()) {
    if (!src.empty()) return cl.UsageError("--clean-up takes its URL, no SRC or DST");
    o.operands = {"", ""};
    return std::nullopt;
  }
  if (src.empty() || dst.empty()) return cl.UsageError("SRC and DST are required");
  o.skip = ignore_times      ? ferry::SkipRule::kNever
           : size_only       ? ferry::SkipRule::kSizeOnly
           : checksum        ? ferry::SkipRule::kChecksum
           : ignore_existing ? ferry::SkipRule::kExisting
                             : ferry::SkipRule::kSizeAndTime;
  if (o.delete_extraneous && !o.recursive) {
    return cl.UsageError("--delete mirrors a tree: it needs -r");
  }
  if (!bwlimit.empty()) o.bandwidth_limit = *ParseRate(bwlimit);
  if (!o.filter_from.empty()) {
    std::string text;
    absl::Status read = ReadTextFile(o.filter_from, &text);
    if (!read.ok()) return cl.UsageError(absl::StrCat("--filter-from: ", read.message()));
    for (std::string& rule : ferry::fs::ParseFilterLines(text)) o.filter_rules.filter.push_back(std::move(rule));
  }
  if (absl::StatusOr<ferry::fs::PathFilter> f = ferry::fs::PathFilter::Create(o.filter_rules); !f.ok()) {
    return cl.UsageError(std::string(f.status().message()));
  }

  if (chunk_mib > 0) o.chunk_bytes = MiB(chunk_mib);
  if (resume_mib >= 0) o.resume_min_bytes = MiB(resume_mib);
  if (memory_mib > 0) o.memory_budget_bytes = MiB(memory_mib);
  if (idle_mib >= 0) o.idle_buffer_bytes = MiB(idle_mib);
  if (!range.empty()) o.range = *ParseRange(range);
  o.progress = progress ? ProgressMode::kOn : quiet ? ProgressMode::kOff : ProgressMode::kAuto;
  o.operands = {src, dst};
  if (o.range && o.recursive) return cl.UsageError("--range reads one file, not -r");
  if (src == "-" && dst == "-") return cl.UsageError("SRC and DST cannot both be -");
  if ((src == "-" || dst == "-") && o.recursive) {
    return cl.UsageError("- (stdin/stdout) is one file, not a tree for -r");
  }
  if (src == "-" && o.range) return cl.UsageError("--range reads a file, not stdin");
  return std::nullopt;
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
  // Paths (relative to SRC/DST) copied and deleted, the first
  // kMaxListedFiles of each, and how many more there were.
  ferry::FileEventLists files{kMaxListedFiles};
  double seconds = 0;
  int64_t memory_budget_bytes = 0;
  int64_t peak_rss_bytes = 0;
};

void PrintText(std::FILE* out, const Summary& s) {
  const ferry::TransferStats& t = s.result.totals;
  const int64_t files = t.files + s.result.files_failed;
  // Parts are a multipart upload's; a download or a single PUT has none to tell.
  const std::string parts = t.parts > 0 ? absl::StrCat(t.parts, " parts, ") : "";
  std::fprintf(out,
      "copied %lld of %lld file%s, %lld bytes in %.3f s (%.1f MiB/s); %lld requests, %s"
      "%lld retries, peak memory %.1f of %.0f MiB, peak RSS %.1f MiB\n",
      static_cast<long long>(t.files), static_cast<long long>(files), files == 1 ? "" : "s",
      static_cast<long long>(t.bytes), s.seconds,
      static_cast<double>(t.bytes) / kMiB / s.seconds, static_cast<long long>(t.requests),
      parts.c_str(), static_cast<long long>(t.retries),
      static_cast<double>(t.peak_memory_bytes) / kMiB,
      static_cast<double>(s.memory_budget_bytes) / kMiB,
      static_cast<double>(s.peak_rss_bytes) / kMiB);
  const ferry::TreeCopyResult& r = s.result;
  if (r.files_up_to_date > 0 || r.files_excluded > 0 || r.files_deleted > 0 || r.dry_run) {
    std::string line = r.dry_run ? "dry run: nothing written; " : "";
    absl::StrAppend(&line, r.files_up_to_date, " up to date");
    if (r.times_updated > 0) absl::StrAppend(&line, " (", r.times_updated, " with only their time set)");
    if (r.files_excluded > 0) absl::StrAppend(&line, ", ", r.files_excluded, " excluded");
    absl::StrAppend(&line, ", ", r.files_deleted, r.dry_run ? " to delete" : " deleted");
    std::fprintf(out, "%s\n", line.c_str());
  }
  if (s.result.entries_refused > 0 || s.result.files_skipped > 0) {
    std::fprintf(out, "not copied: %lld name%s refused as unsafe, %lld skipped (symlinks, special files)\n",
                static_cast<long long>(s.result.entries_refused),
                s.result.entries_refused == 1 ? "" : "s",
                static_cast<long long>(s.result.files_skipped));
  }
}

void PrintJson(std::FILE* out, const Summary& s) {
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
  auto list = [](const std::vector<std::string>& paths) {
    std::string json;
    for (const std::string& p : paths) absl::StrAppend(&json, json.empty() ? "" : ",", JsonString(p));
    return json;
  };
  const ferry::TreeCopyResult& r = s.result;
  // The sync's figures (rclone's words), then the copy's as before.
  std::fprintf(out,
      "{\"dry_run\":%s,\"copied\":%lld,\"skipped\":%lld,\"times_updated\":%lld,"
      "\"deleted\":%lld,\"excluded\":%lld,\"refused\":%lld,\"failed\":%lld,"
      "\"copied_files\":[%s],\"copied_files_unlisted\":%lld,"
      "\"deleted_files\":[%s],\"deleted_files_unlisted\":%lld,\"bytes_deleted\":%lld,",
      r.dry_run ? "true" : "false", static_cast<long long>(t.files),
      static_cast<long long>(r.files_up_to_date), static_cast<long long>(r.times_updated),
      static_cast<long long>(r.files_deleted), static_cast<long long>(r.files_excluded),
      static_cast<long long>(r.entries_refused), static_cast<long long>(r.files_failed),
      list(s.files.copied).c_str(), static_cast<long long>(s.files.copied_unlisted),
      list(s.files.deleted).c_str(), static_cast<long long>(s.files.deleted_unlisted),
      static_cast<long long>(r.bytes_deleted));
  std::fprintf(out,
      "\"direction\":\"%s\",\"files\":%lld,\"files_failed\":%lld,\"files_skipped\":%lld,"
      "\"entries_refused\":%lld,"
      "\"bytes\":%lld,\"seconds\":%.4f,\"mib_s\":%.1f,\"requests\":%lld,\"retries\":%lld,"
      "\"parts\":%d,\"bytes_fetched\":%lld,\"bytes_uploaded\":%lld,\"bytes_resumed\":%lld,"
      "\"peak_memory_bytes\":%lld,"
      "\"memory_budget_bytes\":%lld,\"peak_rss_bytes\":%lld,\"errors\":[%s],\"warnings\":[%s]}\n",
      s.direction.c_str(), static_cast<long long>(t.files + s.result.files_failed),
      static_cast<long long>(s.result.files_failed),
      static_cast<long long>(s.result.files_skipped),
      static_cast<long long>(s.result.entries_refused), static_cast<long long>(t.bytes), s.seconds,
      static_cast<double>(t.bytes) / kMiB / s.seconds, static_cast<long long>(t.requests),
      static_cast<long long>(t.retries), t.parts, static_cast<long long>(t.bytes_fetched),
      static_cast<long long>(t.bytes_uploaded), static_cast<long long>(t.bytes_resumed),
      static_cast<long long>(t.peak_memory_bytes),
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
  // What is at the target, for the copy not to look again.
  ferry::fs::PathSeen seen = ferry::fs::PathSeen::Of(existing);
  if (dst.names_directory ||
      (existing.ok() && existing->kind == ferry::fs::EntryKind::kDirectory)) {
    target = ferry::fs::JoinPath(dst.path, ferry::fs::BaseName(src.path));
    seen = {};
  }
  if (!options.dry_run) {
    FERRY_RETURN_IF_ERROR(dst.fs->CreateDir(ferry::fs::DirName(target), /*parents=*/true));
  }
  ferry::TreeCopyResult result;
  absl::StatusOr<ferry::TransferStats> stats =
      ferry::CopyFile(runtime, *src.fs, src.path, e, *dst.fs, target, seen, std::move(options));
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

// Set by the first SIGINT/SIGTERM; the progress callback then stops the
// copy, which discards the files in flight (the engine's contract).
volatile std::sig_atomic_t g_interrupted = 0;

void OnInterrupt(int) {
  if (g_interrupted) ::_exit(130);  // a second Ctrl-C: the user wants out now
  g_interrupted = 1;
}

void InstallInterruptHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  // Restarted calls keep the library's threads free of EINTR; the flag is
  // polled by the progress callback and the stdin loop instead.
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

absl::Status CheckInterrupted() {
  return g_interrupted ? absl::CancelledError("interrupted") : absl::OkStatus();
}

constexpr int64_t kStdioChunk = 8 * kMiB;

// DST "-": SRC's bytes in order to stdout, one chunk in memory at a time.
absl::StatusOr<ferry::TreeCopyResult> CopyToStdout(const ferry::fs::Location& src,
                                                   int64_t chunk_bytes) {
  FERRY_ASSIGN_OR_RETURN(ferry::fs::Entry e, src.fs->Stat(src.path));
  if (e.kind == ferry::fs::EntryKind::kDirectory) {
    return absl::InvalidArgumentError(absl::StrCat(src.url, " is a directory (not for -)"));
  }
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::fs::File> file, src.fs->OpenRead(src.path));
  FERRY_ASSIGN_OR_RETURN(const int64_t size, file->Size());
  std::string buf(static_cast<size_t>(chunk_bytes > 0 ? chunk_bytes : kStdioChunk), '\0');
  ferry::TreeCopyResult result;
  int64_t offset = 0;
  while (offset < size) {
    FERRY_RETURN_IF_ERROR(CheckInterrupted());
    const size_t want = static_cast<size_t>(std::min<int64_t>(buf.size(), size - offset));
    FERRY_ASSIGN_OR_RETURN(const size_t n, file->ReadAt(offset, absl::MakeSpan(buf.data(), want)));
    if (n == 0) break;
    FERRY_RETURN_IF_ERROR(WriteAll(STDOUT_FILENO, std::string_view(buf.data(), n)));
    offset += static_cast<int64_t>(n);
    ++result.totals.requests;
  }
  FERRY_RETURN_IF_ERROR(file->Close());
  result.totals.files = 1;
  result.totals.bytes = result.totals.bytes_fetched = offset;
  return result;
}

// Up to buf.size() bytes of stdin (fewer only at its end), waking every
// 100 ms to see whether a signal asked to stop.
absl::StatusOr<size_t> ReadStdin(absl::Span<char> buf) {
  size_t filled = 0;
  while (filled < buf.size()) {
    FERRY_RETURN_IF_ERROR(CheckInterrupted());
    pollfd p = {.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 100) == 0) continue;
    const ssize_t n = ::read(STDIN_FILENO, buf.data() + filled, buf.size() - filled);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "read stdin");
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  return filled;
}

// SRC "-": stdin, of a size known only at its end, to DST: written with
// WriteOptions.size = -1 (S3 streams it as multipart parts), one chunk in
// memory at a time; discarded (the target unchanged) if anything fails.
absl::StatusOr<ferry::TreeCopyResult> CopyFromStdin(const ferry::fs::Location& dst,
                                                    int64_t chunk_bytes) {
  absl::StatusOr<ferry::fs::Entry> existing = dst.fs->Stat(dst.path);
  if (dst.names_directory ||
      (existing.ok() && existing->kind == ferry::fs::EntryKind::kDirectory)) {
    return absl::InvalidArgumentError(
        absl::StrCat(dst.url, " is a directory and stdin has no file name to give it"));
  }
  FERRY_RETURN_IF_ERROR(dst.fs->CreateDir(ferry::fs::DirName(dst.path), /*parents=*/true));
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ferry::fs::File> file,
                         dst.fs->OpenWrite(dst.path, {.size = -1}));
  std::string buf(static_cast<size_t>(chunk_bytes > 0 ? chunk_bytes : kStdioChunk), '\0');
  ferry::TreeCopyResult result;
  int64_t offset = 0;
  absl::Status status;
  while (status.ok()) {
    absl::StatusOr<size_t> n = ReadStdin(absl::MakeSpan(buf));
    if (!n.ok()) {
      status = n.status();
    } else if (*n > 0) {
      absl::StatusOr<size_t> written = file->WriteAt(offset, absl::MakeConstSpan(buf.data(), *n));
      status = written.status();
      offset += static_cast<int64_t>(*n);
      ++result.totals.requests;
    }
    if (!status.ok() || !n.ok() || *n < buf.size()) break;
  }
  if (status.ok()) status = CheckInterrupted();
  if (status.ok()) status = file->Close();
  if (!status.ok()) {
    (void)file->Discard();  // the status to tell is the one that stopped it
    return status;
  }
  result.totals.files = 1;
  result.totals.bytes = result.totals.bytes_uploaded = offset;
  result.totals.parts = static_cast<int>(file->counters().parts);
  result.totals.retries = file->counters().retries;
  return result;
}

// Ends the process once the work is done, told, and every filesystem is
// gone: the runtime's threads, pools and arenas are left to the kernel,
// which takes them back for less than a teardown (joining the I/O
// thread, unmapping its stack and the buffers): ~0.1 ms of CPU and 0.14
// ms of wall of a 2.6 ms one-file copy. Sanitizer builds return, so their
// checks see the whole teardown.
int ExitLeavingTheRuntime(int exit_code) {
  if (ferry::kAddressSanitizer || ferry::kThreadSanitizer) return exit_code;
  std::fflush(nullptr);
  std::_Exit(exit_code);
}

int Fail(const char* tool, int exit_code, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", tool, ErrorText(status).c_str());
  return exit_code;
}

// A bad URL or option is the user's (2); anything else is the copy's (1).
int ExitCodeFor(const absl::Status& status) {
  return absl::IsInvalidArgument(status) ? 2 : 1;
}

// A run that failed as a whole: the stderr line, and with --json one
// object a script can parse where the summary would have been.
int FailWhole(const CpOptions& options, std::FILE* report, int exit_code,
              const absl::Status& status) {
  if (options.json) {
    std::fprintf(report, "{\"error\":{\"code\":%s,\"message\":%s}}\n",
                 JsonString(absl::StatusCodeToString(status.code())).c_str(),
                 JsonString(ferry::ToStd(status.message())).c_str());
    std::fflush(report);
  }
  return Fail(options.tool, exit_code, status);
}

// --clean-up URL: what interrupted copies left below URL, removed; each
// on stdout, then a count (or one JSON object).
int CleanUp(ferry::fs::FileSystemRegistry& registry, const CpOptions& options) {
  absl::StatusOr<ferry::fs::Location> at = registry.Resolve(options.clean_up);
  if (!at.ok()) return FailWhole(options, stdout, ExitCodeFor(at.status()), at.status());
  absl::StatusOr<ferry::fs::LeftoverStats> left =
      at->fs->RemoveLeftovers(at->path, absl::Now() - options.older_than);
  if (!left.ok()) return FailWhole(options, stdout, 1, left.status());
  if (options.json) {
    std::string urls;
    for (const std::string& u : left->removed_urls) {
      absl::StrAppend(&urls, urls.empty() ? "" : ",", JsonString(u));
    }
    std::printf("{\"removed\":%lld,\"bytes\":%lld,\"kept_recent\":%lld,\"removed_urls\":[%s]}\n",
                static_cast<long long>(left->removed), static_cast<long long>(left->bytes),
                static_cast<long long>(left->kept_recent), urls.c_str());
    return 0;
  }
  for (const std::string& u : left->removed_urls) std::printf("removed %s\n", u.c_str());
  std::printf("ferry-cp: removed %lld leftover%s (%lld bytes)", static_cast<long long>(left->removed),
              left->removed == 1 ? "" : "s", static_cast<long long>(left->bytes));
  if (left->kept_recent > 0) {
    std::printf("; left %lld changed since %s (a copy may still be writing them)",
                static_cast<long long>(left->kept_recent),
                options.older_than > absl::ZeroDuration()
                    ? absl::StrCat(absl::FormatDuration(options.older_than), " ago").c_str()
                    : "the clean-up started");
  }
  std::printf("\n");
  return 0;
}

// The process is ferry-cp's: megabyte buffers freed (an NFS WRITE's
// request, an S3 part) stay in the heap for the next one instead of going
// back to the kernel, whose fresh pages the next one would fault in again.
// glibc's own sliding threshold still trims them: a 256 MiB NFS put took
// ~17 % more CPU without this (0.48 s against 0.40 s). One arena for every
// thread: each thread's first malloc otherwise maps, trims and grows an
// arena of its own (~60-100 us of a 1-byte NFS get's ~2.3 ms, #33), and
// the threads' small allocations come from their caches without the
// arena's lock. The library leaves the allocator alone: a process
// embedding it owns that choice.
void TuneTheAllocator() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  mallopt(M_ARENA_MAX, 1);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CpOptions o;
  if (std::optional<int> exit = ParseArgs(argc, argv, o)) return *exit;
  const CpOptions* options = &o;
  InstallInterruptHandlers();
  TuneTheAllocator();
  const bool from_stdin = options->operands[0] == "-";
  const bool to_stdout = options->operands[1] == "-";
  // Stdout carries the file's bytes when DST is -; reports go to stderr.
  std::FILE* report = to_stdout ? stderr : stdout;
  const auto fail = [&](int exit_code, const absl::Status& status) {
    return FailWhole(*options, report, exit_code, status);
  };
  // Each chunk in flight is a blocking-pool worker of the engine.
  ferry::Runtime runtime({.blocking_threads = std::max({16, options->jobs, options->parallelism}),
                          .memory_budget_bytes = options->memory_budget_bytes,
                          .idle_buffer_bytes = options->idle_buffer_bytes});
  // Held so that it can go before the runtime does (ExitLeavingTheRuntime).
  std::optional<ferry::fs::FileSystemRegistry> filesystems(std::in_place, runtime);
  ferry::fs::FileSystemRegistry& registry = *filesystems;
  ferry::BuiltinFileSystemOptions fs_options{
      .s3_chunks = {.chunk_bytes = options->chunk_bytes, .parallelism = options->concurrency},
      .s3_make_bucket = options->make_bucket,
      .nfs_parallelism = options->parallelism,
      .io_timeout = absl::Seconds(options->timeout_seconds)};
  ferry_tools::ApplyAwsFlags(options->aws, fs_options);
  absl::Status registered = ferry::RegisterBuiltinFileSystems(registry, fs_options);
  if (!registered.ok()) return fail(1, registered);

  if (!options->clean_up.empty()) return CleanUp(registry, *options);

  std::optional<ferry::fs::Location> src, dst;
  if (!from_stdin) {
    absl::StatusOr<ferry::fs::Location> s = registry.Resolve(options->operands[0]);
    if (!s.ok()) return fail(ExitCodeFor(s.status()), s.status());
    src = *std::move(s);
  }
  if (options->range) {
    const absl::Status read = RunRangeRead(*src, options->operands[1], *options);
    return read.ok() ? 0 : fail(1, read);
  }
  if (!to_stdout) {
    absl::StatusOr<ferry::fs::Location> d = registry.Resolve(options->operands[1]);
    if (!d.ok()) return fail(ExitCodeFor(d.status()), d.status());
    dst = *std::move(d);
  }

  // A tree whose root is a file (ferry-sync FILE DST, ferry-cp -r FILE DST)
  // is that one file, as cp -r and rclone take it: copied if missing or
  // changed; a sync's deletion has nothing else to look at. A URL ending
  // in '/' always names a tree.
  if (o.recursive && src && !src->names_directory) {
    absl::StatusOr<ferry::fs::Entry> root = src->fs->Stat(src->path);
    if (root.ok() && root->kind == ferry::fs::EntryKind::kFile) {
      o.recursive = false;
      o.delete_extraneous = false;
    }
  }

  const bool show = ShowProgress(*options);
  ferry::CopyOptions copy;
  copy.chunk_bytes = options->chunk_bytes;
  copy.resume_min_bytes = options->resume_min_bytes;
  copy.parallelism = options->parallelism;
  copy.jobs = options->jobs;
  copy.skip = options->skip;
  copy.dry_run = options->dry_run;
  copy.delete_extraneous = options->delete_extraneous;
  copy.max_delete = options->max_delete;
  copy.verify = options->verify;
  copy.bandwidth_limit = options->bandwidth_limit;
  // Checked when the flags were parsed.
  const ferry::fs::PathFilter filter = *ferry::fs::PathFilter::Create(options->filter_rules);
  copy.filter = &filter;
  // What each file came to: listed for --json and the dry run's lines.
  Summary s;
  copy.on_file = [&](const ferry::FileEvent& e) {
    const bool copied = e.kind == ferry::FileEvent::Kind::kCopied;
    const bool deleted = e.kind == ferry::FileEvent::Kind::kDeleted;
    if (options->dry_run && !options->json && (copied || deleted)) {
      std::fprintf(report, "%swould %s %s (%lld bytes)\n", show ? "\r\033[K" : "",
                   copied ? "copy" : "delete", e.path.c_str(), static_cast<long long>(e.bytes));
    }
    s.files.Add(e);
  };
  // Always installed, bar or not: it is how a signal stops the engine.
  copy.progress = [show](const ferry::TransferProgress& p) {
    FERRY_RETURN_IF_ERROR(CheckInterrupted());
    if (show) DrawBar(p);
    return absl::OkStatus();
  };
  // Trouble is told as it happens (a long copy shows it while it runs),
  // each once; the summary below only counts it.
  copy.on_notice = [show, tool = options->tool](const ferry::CopyNotice& n) {
    std::fprintf(stderr, "%s%s: %s%s\n", show ? "\r\033[K" : "", tool,
                 n.kind == ferry::CopyNotice::Kind::kFailed ? "" : "warning: ", n.text.c_str());
  };
  const absl::Time start = absl::Now();
  absl::StatusOr<ferry::TreeCopyResult> result =
      from_stdin  ? CopyFromStdin(*dst, options->chunk_bytes)
      : to_stdout ? CopyToStdout(*src, options->chunk_bytes)
      : options->recursive
          ? ferry::CopyTree(runtime, *src->fs, src->path, *dst->fs, dst->path, std::move(copy))
          : CopyOneFile(runtime, *src, *dst, std::move(copy));
  if (show) std::fputc('\n', stderr);
  // Whatever the copy made of it (a failed file, a stopped tree), a signal
  // ends the run as interrupted: 130, as a shell reports SIGINT.
  if (g_interrupted) return fail(130, absl::CancelledError("interrupted"));
  if (!result.ok()) return fail(ExitCodeFor(result.status()), result.status());

  const bool src_local = from_stdin || src->fs->scheme() == "file";
  const bool dst_local = to_stdout || dst->fs->scheme() == "file";
  s.direction = src_local && !dst_local ? "upload" : !src_local && dst_local ? "download" : "copy";
  s.result = *std::move(result);
  if (!options->recursive) {  // a tree's result counts these itself
    s.result.files_up_to_date = s.files.up_to_date;
    s.result.times_updated = s.files.times_updated;
    s.result.dry_run = options->dry_run;
  }
  s.seconds = std::max(absl::ToDoubleSeconds(absl::Now() - start), 1e-9);
  s.memory_budget_bytes = runtime.memory_budget().capacity();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.peak_rss_bytes = int64_t{ru.ru_maxrss} * 1024;  // Linux reports KiB
  if (!options->recursive) {  // a tree's were told as they happened
    for (const ferry::FileCopyFailure& f : s.result.failures) {
      std::fprintf(stderr, "%s: %s\n", options->tool, ferry::DescribeFailure(f).c_str());
    }
  }
  if (options->json) {
    PrintJson(report, s);
  } else if (options->progress != ProgressMode::kOff) {
    PrintText(report, s);
  }
  const int exit_code = s.result.files_failed == 0 && s.result.entries_refused == 0 ? 0 : 1;
  // The filesystems go first: an iRODS session says goodbye to its server.
  src.reset();
  dst.reset();
  filesystems.reset();
  return ExitLeavingTheRuntime(exit_code);
}
