#include "ferry/transfer/internal/destination_index.h"

#include <utility>
#include <vector>

#include "ferry/base/strings.h"

namespace ferry::transfer_internal {

DestinationIndex::Answer DestinationIndex::Lookup(std::string_view path) {
  const std::string dir(fs::DirName(path));
  const std::string_view name = fs::BaseName(path);
  std::shared_ptr<Directory> d;
  bool mine = false;
  {
    MutexLock lock(&mu_);
    auto it = dirs_.find(dir);
    if (it == dirs_.end()) {
      d = std::make_shared<Directory>();
      lru_.push_front(dir);
      d->lru = lru_.begin();
      dirs_.emplace(dir, d);
      mine = true;
      ++listings_;
      EvictLocked();
    } else {
      d = it->second;
      lru_.splice(lru_.begin(), lru_, d->lru);  // most recent
    }
  }
  if (mine) List(dir, *d);  // pages land in `d` as they come
  MutexLock lock(&mu_);
  for (;;) {
    if (!d->usable) return {};
    auto e = d->entries.find(ToAbsl(name));
    if (e != d->entries.end()) return {Found::kPresent, e->second};
    if (d->complete) return {Found::kMissing, {}};
    listed_.Wait(&mu_);
  }
}

void DestinationIndex::List(const std::string& dir, Directory& d) {
  absl::Status s = dst_.List(dir, [&](std::vector<fs::Entry>& batch) {
    MutexLock lock(&mu_);
    for (fs::Entry& e : batch) {
      std::string name = e.path;
      d.entries.emplace(std::move(name), std::move(e));
    }
    if (d.entries.size() > kMaxEntries) d.usable = false;
    listed_.SignalAll();
    return d.usable;
  });
  MutexLock lock(&mu_);
  // No directory yet: nothing in it. Any other failure: ask file by file.
  if (!s.ok() && !absl::IsNotFound(s)) d.usable = false;
  if (absl::IsNotFound(s)) d.entries.clear();
  if (!d.usable) d.entries.clear();
  d.complete = true;
  listed_.SignalAll();
}

void DestinationIndex::EvictLocked() {
  while (lru_.size() > kMaxDirectories) {
    const std::string& oldest = lru_.back();
    auto it = dirs_.find(oldest);
    // One still being listed stays (its lister and waiters hold it anyway).
    if (it != dirs_.end() && !it->second->complete) break;
    if (it != dirs_.end()) dirs_.erase(it);
    lru_.pop_back();
  }
}

int64_t DestinationIndex::listings() const {
  MutexLock lock(&mu_);
  return listings_;
}

}  // namespace ferry::transfer_internal
