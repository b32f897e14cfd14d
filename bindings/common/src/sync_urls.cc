#include "ferry/bindings/sync_urls.h"

#include <utility>

#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"

namespace ferry::bindings {

absl::StatusOr<SyncReport> SyncUrls(Runtime& runtime, fs::FileSystemRegistry& registry,
                                    std::string_view src_url, std::string_view dst_url,
                                    SyncRequest request) {
  FERRY_ASSIGN_OR_RETURN(fs::PathFilter filter, fs::PathFilter::Create(request.filter));
  FERRY_ASSIGN_OR_RETURN(fs::Location src, registry.Resolve(src_url));
  FERRY_ASSIGN_OR_RETURN(fs::Location dst, registry.Resolve(dst_url));
  SyncReport report;
  report.files.max_listed = request.max_listed;
  CopyOptions& o = request.options;
  o.filter = &filter;
  o.on_file = [&report](const FileEvent& e) { report.files.Add(e); };
  // A file is synced on its own (as ferry-cp FILE DST compares it): the
  // same rules, no walk, nothing deleted; filters are for trees.
  FERRY_ASSIGN_OR_RETURN(const fs::Entry source, src.fs->Stat(src.path));
  if (source.kind == fs::EntryKind::kFile) {
    TreeCopyResult& r = report.result;
    o.filter = nullptr;
    o.delete_extraneous = false;
    r.dry_run = o.dry_run;
    // The entry just stat'ed: the copy does not ask for it again.
    FERRY_ASSIGN_OR_RETURN(
        r.totals, CopyFile(runtime, *src.fs, src.path, source, *dst.fs, dst.path, std::move(o)));
    r.files_up_to_date = report.files.up_to_date;
    r.times_updated = report.files.times_updated;
    return report;
  }
  FERRY_ASSIGN_OR_RETURN(report.result,
                         CopyTree(runtime, *src.fs, src.path, *dst.fs, dst.path, std::move(o)));
  if (!report.result.failures.empty()) {
    const FileCopyFailure& f = report.result.failures.front();
    return absl::Status(f.status.code(),
                        Cat("sync ", src_url, " to ", dst_url, ": ", report.result.files_failed,
                            " file(s) failed; first: ", DescribeFailure(f)));
  }
  return report;
}

}  // namespace ferry::bindings
