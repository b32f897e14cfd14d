// A copy by URL, once for every binding: resolve both URLs, copy a file
// (or, `recursive`, a tree) on the core engine, and describe it as a
// records.proto TransferStats (operation inferred: local -> remote is an
// upload, remote -> local a download, anything else a copy), the bytes a
// binding decodes in its language.
//
//   CopyOptions options;
//   options.progress = bridge.Callback();             // the binding's listener
//   absl::StatusOr<std::string> stats =
//       ferry::bindings::CopyUrls(runtime, registry, src, dst, /*recursive=*/true, std::move(options));
//
// A tree with failed files is an error: the first failure's code, naming
// how many failed and the first one. Refused names and skipped entries are
// not: the stats count them (entries_refused, files_skipped) and hold one
// warning line for each.
//
// Thread-safety: as the registry and the engine (thread-safe); blocking.
#ifndef FERRY_BINDINGS_COPY_URLS_H_
#define FERRY_BINDINGS_COPY_URLS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ferry/fs/registry.h"
#include "ferry/transfer/copy_engine.h"

namespace ferry::bindings {

absl::StatusOr<std::string> CopyUrls(Runtime& runtime, fs::FileSystemRegistry& registry,
                                     std::string_view src_url, std::string_view dst_url,
                                     bool recursive, CopyOptions options);

}  // namespace ferry::bindings

#endif  // FERRY_BINDINGS_COPY_URLS_H_
