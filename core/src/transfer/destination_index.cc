#include "ferry/transfer/internal/destination_index.h"

#include <utility>

#include "ferry/base/strings.h"
#include <vector>

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
      while (!d->ready) listed_.Wait(&mu_);
    }
  }
  if (mine) {
    // Listed without the lock: others wait for this directory only.
    Directory listing;
    ListInto(dir, listing);
    MutexLock lock(&mu_);
    d->usable = listing.usable;
    d->entries = std::move(listing.entries);
    d->ready = true;
    listed_.SignalAll();
  }
  // Read-only once ready; the shared_ptr keeps it alive if evicted.
  if (!d->usable) return {};
  auto e = d->entries.find(ToAbsl(name));
  if (e == d->entries.end()) return {Found::kMissing, {}};
  return {Found::kPresent, e->second};
}

void DestinationIndex::ListInto(const std::string& dir, Directory& out) {
  bool too_many = false;
  absl::Status s = dst_.List(dir, [&](std::vector<fs::Entry>& batch) {
    for (fs::Entry& e : batch) {
      std::string name = e.path;
      out.entries.emplace(std::move(name), std::move(e));
    }
    too_many = out.entries.size() > kMaxEntries;
    return !too_many;
  });
  if (absl::IsNotFound(s)) {  // no directory yet: nothing in it
    out.entries.clear();
    out.usable = true;
    return;
  }
  out.usable = s.ok() && !too_many;
  if (!out.usable) out.entries.clear();
}

void DestinationIndex::EvictLocked() {
  while (lru_.size() > kMaxDirectories) {
    const std::string& oldest = lru_.back();
    auto it = dirs_.find(oldest);
    // One still being listed stays (its lister and waiters hold it anyway).
    if (it != dirs_.end() && !it->second->ready) break;
    if (it != dirs_.end()) dirs_.erase(it);
    lru_.pop_back();
  }
}

int64_t DestinationIndex::listings() const {
  MutexLock lock(&mu_);
  return listings_;
}

}  // namespace ferry::transfer_internal
