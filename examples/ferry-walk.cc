// ferry-walk: walks a tree anywhere ferry reaches (nfs://, s3://, a local
// path, every registered scheme) with the filesystem's own parallel walk.
//
//   ferry-walk 'nfs://127.0.0.1/export?nfsport=2049&mountport=20048'
//   ferry-walk s3://bucket/prefix/
//   ferry-walk URL --list            every entry: kind, size, path (TSV)
//   ferry-walk URL --list --json     every entry as a JSON line
//   ferry-walk URL --json            the summary as one JSON object
//   options: --in-flight=N (listing calls in flight), --timeout=S (a call
//   without an answer for S seconds fails; default 60)
//
// Prints a summary (entries, directories, bytes, entries/s, listing calls)
// on stdout and, when the walk runs longer than a second, a progress line on
// stderr. Unreadable directories and refused names (a listed name that is
// not one safe component, a directory listed twice: never walked into) are
// reported on stderr and the walk carries on; the exit status is then 1 (2
// if the walk could not start).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "ferry/adapters/builtin.h"
#include "ferry/base/clock.h"
#include "ferry/base/strings.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/runtime.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "usage: ferry-walk URL [--list] [--json] [--in-flight=N] [--timeout=SECONDS]\n"
               "  URL: nfs://HOST/EXPORT[/PATH][?nfsport=&mountport=&uid=&gid=], "
               "s3://BUCKET[/PREFIX], irods://[USER@]HOST[:PORT]/ZONE/PATH, a local path\n");
}

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

bool FlagValue(std::string_view arg, std::string_view name, int* out) {
  if (arg.substr(0, name.size()) != name) return false;
  return absl::SimpleAtoi(absl::string_view(arg.data() + name.size(), arg.size() - name.size()),
                          out);
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  bool list = false;
  bool json = false;
  ferry::fs::WalkOptions walk_options;
  ferry::BuiltinFileSystemOptions fs_options;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    int v = 0;
    if (a == "--list") {
      list = true;
    } else if (a == "--json") {
      json = true;
    } else if (FlagValue(a, "--in-flight=", &v) && v > 0) {
      walk_options.max_in_flight = v;
    } else if (FlagValue(a, "--timeout=", &v) && v > 0) {
      fs_options.io_timeout = absl::Seconds(v);
    } else if (a == "-h" || a == "--help") {
      Usage();
      return 0;
    } else if (url.empty() && a.substr(0, 2) != "--") {
      url = std::string(a);
    } else {
      Usage();
      return 2;
    }
  }
  if (url.empty()) {
    Usage();
    return 2;
  }

  ferry::Runtime runtime;
  ferry::fs::FileSystemRegistry registry(runtime);
  absl::Status registered = ferry::RegisterBuiltinFileSystems(registry, fs_options);
  absl::StatusOr<ferry::fs::Location> root =
      registered.ok() ? registry.Resolve(url) : absl::StatusOr<ferry::fs::Location>(registered);
  if (!root.ok()) {
    std::fprintf(stderr, "ferry-walk: %s\n", Describe(root.status()).c_str());
    return 2;
  }

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
  if (!stats.ok()) {
    std::fprintf(stderr, "ferry-walk: %s\n", Describe(stats.status()).c_str());
    return 2;
  }
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
