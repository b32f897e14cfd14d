// ferry-walk: walks a tree anywhere ferry reaches (nfs://, s3://, a local
// path, every registered scheme) with the filesystem's own parallel walk.
//
//   ferry-walk 'nfs://127.0.0.1/export?nfsport=2049&mountport=20048'
//   ferry-walk s3://bucket/prefix/
//   ferry-walk URL --list            every entry: kind, size, path (TSV)
//   ferry-walk URL --list --json     every entry as a JSON line
//   ferry-walk URL --json            the summary as one JSON object
//   ferry-walk s3://bucket/ --endpoint-url http://127.0.0.1:7070
//
// `ferry-walk --help` lists the options (--in-flight N: listing calls in
// flight; --timeout S: a call without an answer for S seconds fails,
// default 60; --endpoint-url, --profile, --region: as the AWS CLI's, they
// set AWS_ENDPOINT_URL / AWS_PROFILE / AWS_REGION for this run).
//
// Prints a summary (entries, directories, bytes, entries/s, listing calls)
// on stdout and, when the walk runs longer than a second, a progress line on
// stderr. Unreadable directories and refused names (a listed name that is
// not one safe component, a directory listed twice: never walked into) are
// reported on stderr and the walk carries on; the exit status is then 1 (2
// if the walk could not start, or for a usage error; with --json the walk
// that could not start also prints {"error":{"code":...,"message":...}}
// on stdout).
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "ferry/adapters/builtin.h"
#include "ferry/base/clock.h"
#include "ferry/base/strings.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/runtime.h"
#include "tool_flags.h"

namespace {

// JSON string body: escapes quotes, backslashes and control bytes; other
// bytes (UTF-8 or not) pass through as the server sent them.
std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      out += absl::StrFormat("\\u%04x", u);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// "NOT_FOUND: NFS3 LOOKUP ...", without payloads.
std::string Describe(const absl::Status& s) {
  return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message());
}

// The walk could not start: the stderr line, and with --json one object
// on stdout where the summary would have been.
int FailWhole(bool json, const absl::Status& status) {
  if (json) {
    std::printf("{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n",
                JsonEscape(absl::StatusCodeToString(status.code())).c_str(),
                JsonEscape(ferry::ToStd(status.message())).c_str());
    std::fflush(stdout);
  }
  std::fprintf(stderr, "ferry-walk: %s\n", Describe(status).c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  bool list = false;
  bool json = false;
  ferry::fs::WalkOptions walk_options;
  ferry::BuiltinFileSystemOptions fs_options;
  ferry_tools::CommandLine cl(
      "ferry-walk",
      "Walks a tree with the filesystem's own parallel walk and prints a summary.\n"
      "URL: nfs://HOST/EXPORT[/PATH][?nfsport=&mountport=&uid=&gid=], s3://BUCKET[/PREFIX],\n"
      "irods://[USER@]HOST[:PORT]/ZONE/PATH, or a local path.\n"
      "Exit status: 0 walked, 1 some entries unreadable or refused, 2 could not start.");
  cl.SetVersion("ferry-walk " FERRY_VERSION);
  cl.Flag("--list", &list, "every entry: kind, size, path (TSV; a JSON line each with --json)");
  cl.Flag("--json", &json, "the summary as one JSON object (and --list as JSON lines)");
  cl.Option("--in-flight", &walk_options.max_in_flight, "listing calls in flight (default 256)")
      .TypeName("N")
      .Range(1, std::numeric_limits<int>::max());
  int timeout_seconds = 0;
  cl.Option("--timeout", &timeout_seconds,
            "a call without an answer for S seconds fails (default 60)")
      .TypeName("S")
      .Range(1, std::numeric_limits<int>::max());
  ferry_tools::AwsFlags aws;
  ferry_tools::AddAwsFlags(cl, aws);
  cl.Positional("URL", &url, "where to walk").Required();
  if (std::optional<int> exit = cl.ParseOrExit(argc, argv)) return *exit;
  if (timeout_seconds > 0) fs_options.io_timeout = absl::Seconds(timeout_seconds);
  ferry_tools::ApplyAwsFlags(aws, fs_options);

  ferry::Runtime runtime;
  ferry::fs::FileSystemRegistry registry(runtime);
  absl::Status registered = ferry::RegisterBuiltinFileSystems(registry, fs_options);
  absl::StatusOr<ferry::fs::Location> root =
      registered.ok() ? registry.Resolve(url) : absl::StatusOr<ferry::fs::Location>(registered);
  if (!root.ok()) return FailWhole(json, root.status());

  const absl::Time start = ferry::MonotonicNow();
  absl::Time last_progress = start;
  bool progress_shown = false;
  uint64_t entries = 0;
  uint64_t errors = 0;
  std::string out;
  absl::StatusOr<ferry::fs::WalkStats> stats = root->fs->Walk(
      root->path, walk_options, [&](ferry::fs::WalkBatch& batch) {
        entries += batch.entries.size();
        if (list) {
          out.clear();
          for (const ferry::fs::Entry& e : batch.entries) {
            const std::string_view kind = ferry::fs::EntryKindName(e.kind);
            if (json) {
              absl::StrAppend(&out, "{\"path\":\"", JsonEscape(e.path), "\",\"type\":\"",
                              ferry::ToAbsl(kind), "\",\"size\":", e.size,
                              ",\"mode\":", e.mode, ",\"uid\":", e.uid, ",\"gid\":", e.gid,
                              ",\"mtime\":", absl::ToUnixSeconds(e.mtime), ",\"id\":", e.id,
                              "}\n");
            } else {
              absl::StrAppend(&out, ferry::ToAbsl(kind), "\t", e.size, "\t", e.path, "\n");
            }
          }
          std::fwrite(out.data(), 1, out.size(), stdout);
        }
        for (const ferry::fs::WalkError& e : batch.errors) {
          ++errors;
          if (e.refused) {
            // Named where it was listed; the message quotes the raw name.
            std::fprintf(stderr, "%sferry-walk: warning: %s: %s\n", progress_shown ? "\n" : "",
                         root->fs->Url(ferry::fs::JoinPath(root->path, e.path)).c_str(),
                         std::string(e.status.message()).c_str());
          } else {
            std::fprintf(stderr, "%sferry-walk: %s\n", progress_shown ? "\n" : "",
                         Describe(e.status).c_str());
          }
        }
        // A progress line once the walk has run for a second, then each second.
        const absl::Time now = ferry::MonotonicNow();
        if (now - start >= absl::Seconds(1) && now - last_progress >= absl::Seconds(1)) {
          last_progress = now;
          progress_shown = true;
          const double secs = absl::ToDoubleSeconds(now - start);
          std::fprintf(stderr, "\rferry-walk: %llu entries in %.1f s (%.0f/s)  ",
                       static_cast<unsigned long long>(entries), secs, entries / secs);
        }
        return true;
      });
  if (progress_shown) std::fprintf(stderr, "\n");
  if (!stats.ok()) return FailWhole(json, stats.status());
  const double secs = std::max(absl::ToDoubleSeconds(stats->elapsed), 1e-9);
  if (json) {
    std::printf(
        "{\"url\":\"%s\",\"entries\":%llu,\"directories\":%llu,\"bytes\":%llu,\"errors\":%llu,"
        "\"entries_refused\":%llu,"
        "\"requests\":%llu,\"retries\":%llu,\"seconds\":%.6f,\"entries_per_second\":%.0f}\n",
        JsonEscape(url).c_str(), static_cast<unsigned long long>(stats->entries),
        static_cast<unsigned long long>(stats->directories),
        static_cast<unsigned long long>(stats->bytes),
        static_cast<unsigned long long>(stats->errors),
        static_cast<unsigned long long>(stats->entries_refused),
        static_cast<unsigned long long>(stats->requests),
        static_cast<unsigned long long>(stats->retries), secs, stats->entries / secs);
  } else if (!list) {
    std::printf("walked %s\n", root->fs->Url(root->path).c_str());
    std::printf("  entries      %llu\n", static_cast<unsigned long long>(stats->entries));
    std::printf("  directories  %llu\n", static_cast<unsigned long long>(stats->directories));
    std::printf("  bytes        %llu\n", static_cast<unsigned long long>(stats->bytes));
    std::printf("  errors       %llu (%llu names refused)\n",
                static_cast<unsigned long long>(stats->errors),
                static_cast<unsigned long long>(stats->entries_refused));
    std::printf("  requests     %llu (retries %llu)\n",
                static_cast<unsigned long long>(stats->requests),
                static_cast<unsigned long long>(stats->retries));
    std::printf("  time         %.3f s (%.0f files/s)\n", secs, stats->entries / secs);
  }
  return errors > 0 ? 1 : 0;
}
