// DestinationIndex: what a sync's destination holds, learnt one directory
// listing at a time instead of one Stat per file: a tree of 10,000 files
// in one S3 prefix is 10 ListObjectsV2 pages, not 10,000 HEADs; an NFS
// directory one READDIRPLUS stream, not a LOOKUP per name. The copy
// engine asks it for each file it is about to copy; the first file of a
// directory lists that directory, and every other file of it is answered
// as soon as a page lists it (a missing one once the listing is whole),
// so the checks overlap the listing.
//
// Memory is bounded: at most kMaxDirectories listings are kept (the least
// recently used goes), and a directory listing more than kMaxEntries is
// not kept: its files are then looked up one by one (Lookup answers
// unknown), as is everything when a listing fails.
//
// Thread-safety: thread-safe; Lookup blocks (it may list).
#ifndef FERRY_TRANSFER_INTERNAL_DESTINATION_INDEX_H_
#define FERRY_TRANSFER_INTERNAL_DESTINATION_INDEX_H_

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "ferry/base/mutex.h"
#include "ferry/fs/file_system.h"

namespace ferry::transfer_internal {

class DestinationIndex {
 public:
  static constexpr size_t kMaxDirectories = 64;
  static constexpr size_t kMaxEntries = 100'000;

  explicit DestinationIndex(fs::FileSystem& dst) : dst_(dst) {}

  enum class Found { kUnknown, kMissing, kPresent };
  struct Answer {
    Found found = Found::kUnknown;
    fs::Entry entry;  // kPresent: as the directory's listing had it
  };

  // What the destination lists at `path` (its directory's listing).
  Answer Lookup(std::string_view path);

  // Listings made so far (for tests and figures).
  int64_t listings() const;

 private:
  // Guarded by mu_ (each field), kept alive by a shared_ptr while listed.
  struct Directory {
    bool complete = false;  // the listing has ended
    bool usable = true;     // it did not fail and held at most kMaxEntries
    absl::flat_hash_map<std::string, fs::Entry> entries;
    std::list<std::string>::iterator lru;
  };

  void List(const std::string& dir, Directory& d);
  void EvictLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  fs::FileSystem& dst_;
  mutable Mutex mu_;
  CondVar listed_;
  absl::flat_hash_map<std::string, std::shared_ptr<Directory>> dirs_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // front: most recent
  int64_t listings_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ferry::transfer_internal

#endif  // FERRY_TRANSFER_INTERNAL_DESTINATION_INDEX_H_
