#include "ferry/bindings/copy_urls.h"

#include <utility>

#include "ferry/base/directory_errors.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/records/fs_records.h"

namespace ferry::bindings {

absl::StatusOr<std::string> CopyUrls(Runtime& runtime, fs::FileSystemRegistry& registry,
                                     std::string_view src_url, std::string_view dst_url,
                                     bool recursive, CopyOptions options) {
  FERRY_ASSIGN_OR_RETURN(fs::Location src, registry.Resolve(src_url));
  FERRY_ASSIGN_OR_RETURN(fs::Location dst, registry.Resolve(dst_url));
  const bool src_local = src.fs->scheme() == "file";
  const bool dst_local = dst.fs->scheme() == "file";
  records::TransferRecordContext context{
      .operation = src_local && !dst_local   ? records::TransferOperation::kUpload
                   : !src_local && dst_local ? records::TransferOperation::kDownload
                                             : records::TransferOperation::kCopy,
      .source = std::string(src_url),
      .destination = std::string(dst_url)};
  if (!recursive) {
    absl::StatusOr<TransferStats> stats =
        CopyFile(runtime, *src.fs, src.path, *dst.fs, dst.path, std::move(options));
    if (!stats.ok()) {
      // A directory without `recursive` is the caller's slip, said as such
      // (IsADirectoryError); asked only on failure, so a copy costs no Stat.
      absl::StatusOr<fs::Entry> top = src.fs->Stat(src.path);
      if (top.ok() && top->kind == fs::EntryKind::kDirectory) {
        return IsADirectoryStatus(Cat("copy ", src_url, " to ", dst_url, ": ", src_url,
                                      " is a directory (copy a tree with recursive)"));
      }
      return stats.status();
    }
    return records::SerializeTransferStats(context, *stats);
  }
  FERRY_ASSIGN_OR_RETURN(TreeCopyResult tree,
                         CopyTree(runtime, *src.fs, src.path, *dst.fs, dst.path, std::move(options)));
  if (!tree.failures.empty()) {
    const FileCopyFailure& f = tree.failures.front();
    return absl::Status(f.status.code(), Cat("copy ", src_url, " to ", dst_url, ": ", tree.files_failed,
                                             " file(s) failed; first: ", f.source, ": ", f.status.message()));
  }
  // Refused and skipped entries are not failures: the stats count them and
  // carry one line for each (a binding shows them as warnings).
  context.entries_refused = tree.entries_refused;
  context.files_skipped = tree.files_skipped;
  context.warnings = std::move(tree.warnings);
  return records::SerializeTransferStats(context, tree.totals);
}

}  // namespace ferry::bindings
