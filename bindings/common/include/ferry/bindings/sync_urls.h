// A sync by URL, once for every binding: the tree at `src_url` made the
// tree at `dst_url` by the core engine's sync (CopyTree with a SkipRule,
// rclone's filter rules, dry_run, delete_extraneous), with the paths it
// copied and deleted listed for the caller (the first `max_listed` of
// each, and how many more). A file at `src_url` is synced to the file
// `dst_url` by the same rules (CopyFile: no filter, nothing deleted).
//
//   SyncRequest req{.filter = {.exclude = {"*.tmp"}}};
//   req.options.delete_extraneous = true;
//   absl::StatusOr<SyncReport> r = ferry::bindings::SyncUrls(runtime, registry, src, dst, std::move(req));
//
// Files that failed are an error (the first failure's code, how many
// failed, the first one), as CopyUrls says; then nothing was deleted.
//
// Thread-safety: as the registry and the engine (thread-safe); blocking.
#ifndef FERRY_BINDINGS_SYNC_URLS_H_
#define FERRY_BINDINGS_SYNC_URLS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/fs/path_filter.h"
#include "ferry/fs/registry.h"
#include "ferry/transfer/copy_engine.h"

namespace ferry::bindings {

struct SyncRequest {
  // skip defaults to rclone's size and modification time; on_file and
  // filter are SyncUrls' own.
  CopyOptions options = [] {
    CopyOptions o;
    o.skip = SkipRule::kSizeAndTime;
    return o;
  }();
  fs::FilterRules filter;
  size_t max_listed = 10000;
};

struct SyncReport {
  TreeCopyResult result;
  // Relative paths copied and deleted (dry run: would be), max_listed of each.
  FileEventLists files{0};
};

absl::StatusOr<SyncReport> SyncUrls(Runtime& runtime, fs::FileSystemRegistry& registry,
                                    std::string_view src_url, std::string_view dst_url,
                                    SyncRequest request);

}  // namespace ferry::bindings

#endif  // FERRY_BINDINGS_SYNC_URLS_H_
