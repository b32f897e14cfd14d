// WalkTree design.
//
// A shared WalkState holds, under one mutex: a stack of directory listings
// waiting to be sent (a listing is a directory plus where its next page
// starts), the count of calls in flight, the batch being filled, the full
// batches waiting for the caller, and the statistics. Pump() moves listings
// from the stack into flight while there is room (walk.max_in_flight)
// and the caller is not behind (max_queued_batches); it runs on the caller's
// thread after each batch and on the I/O thread of each reply.
//
// A reply is turned into WalkEntries outside the lock (the per-entry work:
// building paths), then merged under it: the entries go into the batch, the
// subdirectories onto the stack, and an unfinished directory's next page on
// top of them, so it is sent first: finishing directories before starting
// new ones keeps the stack, and memory, small. Only one page of a directory
// is ever in flight, so a listing's cookie and skip count need no lock.
//
// The caller's thread waits on a condition variable for a batch (or the
// end), runs the callback without the lock, and pumps again. A reply wakes
// it only when there is something to take (a full batch, min_batch_entries
// in the partial one, an error, or the end): waking it per page to find too
// little would cost a context switch per directory. The state is
// shared with the callbacks (shared_ptr), and WalkTree returns only once no
// call is in flight, also after an early stop.
#include "ferry/nfs/tree_walker.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ferry/base/clock.h"
#include "ferry/base/directory_errors.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/walk_guard.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_error.h"

namespace ferry::nfs {
namespace {

// One directory being listed.
struct Listing {
  FileHandle handle;
  std::string path;  // relative to the walk root; "" = the root
  int depth = 1;     // of its entries: the root's are at 1
  uint64_t cookie = 0;
  uint64_t cookieverf = 0;
  uint64_t reported = 0;  // entries of this directory reported so far
  uint64_t skip = 0;      // after a BAD_COOKIE restart: entries to pass over
  int restarts = 0;
};

// An entry READDIRPLUS sent without attributes (or a directory without a
// handle): resolved by LOOKUP, the only per-entry call the walker ever makes,
// and only for servers that leave those optional fields out.
struct PendingLookup {
  FileHandle dir;
  std::string name;
  std::string path;
  std::string parent;  // the listing directory's path
  int depth = 1;
};

// A subdirectory found in a page: its entry's index in the page's entries,
// what the guard judges, and its listing if admitted.
struct SubDir {
  size_t index;
  fs::Entry judged;
  Listing listing;
};

// The key a directory is walked once by: its fileid, which is unique only
// within one filesystem (fsid), so both. 0 is never a key (the guard would
// fall back to paths).
uint64_t DirectoryKey(const Fattr3& a) {
  const uint64_t key = a.fileid ^ (a.fsid * 0x9E3779B97F4A7C15ULL);
  return key == 0 ? 1 : key;
}

// The entry the guard judges: the raw name, its kind and key.
fs::Entry GuardEntry(std::string_view name, const Fattr3& a) {
  fs::Entry e;
  e.path = std::string(name);
  e.kind = a.type == FileType::kDirectory ? fs::EntryKind::kDirectory : fs::EntryKind::kFile;
  e.id = DirectoryKey(a);
  return e;
}

std::string ChildPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  if (name.empty()) return std::string(dir);
  std::string p;
  p.reserve(dir.size() + 1 + name.size());
  p.append(dir);
  p.push_back('/');
  p.append(name);
  return p;
}

WalkEntry MakeEntry(std::string path, const Fattr3& a,
                    std::optional<std::string_view> handle) {
  WalkEntry e;
  e.path = std::move(path);
  e.type = a.type;
  e.size = a.size;
  e.mode = a.mode & 07777;
  e.uid = a.uid;
  e.gid = a.gid;
  e.mtime = a.mtime;
  e.fileid = a.fileid;
  if (a.type == FileType::kRegular && handle && !handle->empty()) e.handle = FileHandle(*handle);
  return e;
}

class WalkState : public std::enable_shared_from_this<WalkState> {
 public:
  WalkState(NfsClient& client, std::string root, const WalkOptions& options)
      : client_(client), root_(std::move(root)), options_(options), guard_(options.walk) {}

  void Start(Listing root, const std::optional<Fattr3>& attributes) {
    MutexLock l(&mu_);
    if (attributes) guard_.VisitRoot(DirectoryKey(*attributes));
    stack_.push_back(std::move(root));
  }

  // Sends what may be sent now.
  void Pump() {
    std::vector<Listing> to_send;
    {
      MutexLock l(&mu_);
      while (!stopped_ && !stack_.empty() && in_flight_ < options_.walk.max_in_flight &&
             static_cast<int>(ready_.size()) < options_.walk.max_queued_batches) {
        to_send.push_back(std::move(stack_.back()));
        stack_.pop_back();
        ++in_flight_;
      }
    }
    for (Listing& l : to_send) Send(std::move(l));
  }

  // The caller's loop: waits for batches, hands them over, until the walk
  // is done or stopped; then waits for the calls still in flight.
  void Run(absl::FunctionRef<bool(WalkBatch&)> on_batch) {
    Pump();
    for (;;) {
      WalkBatch batch;
      {
        MutexLock l(&mu_);
        while (!TakeableLocked() && !DoneLocked()) cv_.Wait(&mu_);
        if (!ready_.empty()) {
          batch = std::move(ready_.front());
          ready_.pop_front();
        } else if (!current_.entries.empty() || !current_.errors.empty()) {
          batch = std::move(current_);
          current_ = WalkBatch();
        } else {
          break;  // done
        }
        // Counted as handed over, so an early stop reports what the caller saw.
        stats_.entries += batch.entries.size();
        for (const WalkEntry& e : batch.entries) {
          if (e.type == FileType::kRegular) stats_.bytes += e.size;
        }
      }
      const bool go_on = on_batch(batch);
      if (!go_on) {
        MutexLock l(&mu_);
        stopped_ = true;
        stats_.stopped_early = true;
        break;
      }
      Pump();
    }
    MutexLock l(&mu_);
    while (in_flight_ > 0) cv_.Wait(&mu_);
  }

  WalkStats stats() {
    MutexLock l(&mu_);
    return stats_;
  }

 private:
  bool DoneLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_flight_ == 0 && (stack_.empty() || stopped_);
  }

  // A batch the caller may take before the walk ends. (Nothing is lost by
  // leaving a small one: while calls are in flight more replies come, and
  // once none is, the walk is done or the caller is behind -- ready_ full.)
  bool TakeableLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !ready_.empty() || !current_.errors.empty() ||
           (!current_.entries.empty() && current_.entries.size() >= options_.walk.min_batch_entries);
  }

  // After a reply changed the state: wakes the caller if it has a reason to.
  void SignalIfUsefulLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (TakeableLocked() || DoneLocked()) cv_.Signal();
  }

  // The completion of the call made for `request`: `(this->*on)(request,
  // result)`, the walk kept alive until then.
  template <typename Request, typename Result>
  auto Then(void (WalkState::*on)(Request, absl::StatusOr<Result>), Request request) {
    return [self = shared_from_this(), on, request = std::move(request)](
               absl::StatusOr<Result> result) mutable {
      ((*self).*on)(std::move(request), std::move(result));
    };
  }

  void Send(Listing listing) {
    const FileHandle handle = listing.handle;
    const uint64_t cookie = listing.cookie;
    const uint64_t verf = listing.cookieverf;
    std::string path = UrlRelative(listing.path);
    client_.ReaddirplusAsync(handle, cookie, verf, options_.dircount, options_.maxcount,
                             std::move(path), Then(&WalkState::OnPage, std::move(listing)));
  }

  void OnPage(Listing listing, absl::StatusOr<ReaddirplusPage> page) {
    std::vector<WalkEntry> entries;
    // Subdirectories to walk (the guard may yet refuse them, under the lock).
    std::vector<SubDir> subdirs;
    const std::string parent = listing.path;
    std::vector<PendingLookup> lookups;
    std::vector<WalkError> refused;
    std::optional<WalkError> error;
    std::optional<Listing> next;  // the rest of this directory
    bool finished = false;
    uint64_t restarts = 0;

    if (!page.ok()) {
      if (GetNfs3Status(page.status()) == Nfs3Status::kBadCookie &&
          listing.restarts < options_.max_bad_cookie_restarts) {
        listing.skip = listing.reported;
        listing.cookie = 0;
        listing.cookieverf = 0;
        ++listing.restarts;
        ++restarts;
        next = std::move(listing);
      } else {
        error = WalkError{listing.path, page.status()};
      }
    } else {
      const ReaddirplusResult& r = page->result;
      // A page that ends where it was asked to start would come back the
      // same forever: its entries are not taken, and the directory ends.
      const bool stuck = !r.eof && !r.entries.empty() && r.entries.back().cookie == listing.cookie;
      entries.reserve(r.entries.size());
      const absl::Span<const DirEntryPlus> taken =
          stuck ? absl::Span<const DirEntryPlus>() : absl::MakeConstSpan(r.entries);
      for (const DirEntryPlus& d : taken) {
        listing.cookie = d.cookie;
        // Every server lists these two; they are the protocol's, not entries.
        if (d.name == "." || d.name == "..") continue;
        if (listing.skip > 0) {
          --listing.skip;
          continue;
        }
        ++listing.reported;
        // Judged before the name is joined: "" would name the directory
        // itself, "a/b" a place the server never listed.
        if (absl::Status why = fs::CheckListedName(d.name); !why.ok()) {
          refused.push_back(fs::RefusedEntry(listing.path, d.name, why));
          continue;
        }
        std::string child = ChildPath(listing.path, d.name);
        if (!d.attributes ||
            (d.attributes->type == FileType::kDirectory && !d.handle)) {
          lookups.push_back(PendingLookup{listing.handle, std::string(d.name), std::move(child),
                                          listing.path, listing.depth});
          continue;
        }
        if (d.attributes->type == FileType::kDirectory) {
          subdirs.push_back(SubDir{entries.size(), GuardEntry(d.name, *d.attributes),
                                   Listing{FileHandle(*d.handle), child, listing.depth + 1}});
        }
        entries.push_back(MakeEntry(std::move(child), *d.attributes, HandleToKeep(d.handle)));
      }
      listing.cookieverf = r.cookieverf;
      if (r.eof) {
        finished = true;
      } else if (stuck) {
        error = WalkError{listing.path,
                          absl::DataLossError(absl::StrCat(
                              "NFS3 READDIRPLUS ", client_.DisplayPath(UrlRelative(listing.path)),
                              ": the server's next cookie (", listing.cookie,
                              ") is the one asked with: the listing does not advance"))};
      } else if (r.entries.empty()) {
        // Not at the end and no progress: the server will never get there.
        error = WalkError{listing.path,
                          absl::DataLossError(absl::StrCat(
                              "NFS3 READDIRPLUS ", client_.DisplayPath(UrlRelative(listing.path)),
                              ": the server returned no entries and no eof"))};
      } else {
        next = std::move(listing);
      }
    }

    {
      MutexLock l(&mu_);
      --in_flight_;
      ++stats_.requests;
      stats_.retries += restarts;
      if (finished) ++stats_.directories;
      // Each directory is walked once (a server may list a directory as its
      // own child, or an ancestor), and no deeper than max_depth.
      std::vector<Listing> to_walk;
      to_walk.reserve(subdirs.size());
      std::vector<bool> drop;
      for (SubDir& sub : subdirs) {
        if (absl::Status why = guard_.Admit(parent, sub.judged, sub.listing.depth - 1); !why.ok()) {
          refused.push_back(fs::RefusedEntry(parent, sub.judged.path, why));
          if (drop.empty()) drop.resize(entries.size(), false);
          drop[sub.index] = true;
          continue;
        }
        to_walk.push_back(std::move(sub.listing));
      }
      if (!drop.empty()) {
        size_t kept = 0;
        for (size_t i = 0; i < entries.size(); ++i) {
          if (drop[i]) continue;
          if (kept != i) entries[kept] = std::move(entries[i]);
          ++kept;
        }
        entries.resize(kept);
      }
      AddEntriesLocked(std::move(entries));
      AddRefusedLocked(std::move(refused));
      if (error) {
        ++stats_.errors;
        current_.errors.push_back(std::move(*error));
      }
      if (!stopped_) {
        for (Listing& s : to_walk) stack_.push_back(std::move(s));
        // On top: the unfinished directory goes next.
        if (next) stack_.push_back(std::move(*next));
      }
      if (stopped_) {
        lookups.clear();
      } else {
        in_flight_ += static_cast<int>(lookups.size());
      }
      SignalIfUsefulLocked();
    }
    for (PendingLookup& p : lookups) SendLookup(std::move(p));
    Pump();
  }

  // What a file's entry keeps of `handle`: all of it when the walk asked
  // for handles (fs::WalkOptions::with_handles), else nothing.
  std::optional<std::string_view> HandleToKeep(std::optional<std::string_view> handle) const {
    return options_.walk.with_handles ? handle : std::nullopt;
  }

  void SendLookup(PendingLookup p) {
    const FileHandle dir = p.dir;
    const std::string name = p.name;
    std::string path = UrlRelative(p.path);
    client_.LookupAsync(dir, name, std::move(path), Then(&WalkState::OnLookup, std::move(p)));
  }

  void OnLookup(PendingLookup p, absl::StatusOr<NfsObject> o) {
    std::optional<WalkEntry> entry;
    std::optional<Listing> subdir;
    std::optional<WalkError> error;
    if (!o.ok()) {
      error = WalkError{p.path, o.status()};
    } else if (!o->attributes) {
      error = WalkError{p.path, absl::DataLossError(absl::StrCat(
                                    "NFS3 LOOKUP ", client_.DisplayPath(UrlRelative(p.path)),
                                    ": the server sent no attributes"))};
    } else {
      if (o->attributes->type == FileType::kDirectory) {
        subdir = Listing{o->handle, p.path, p.depth + 1};
      }
      entry = MakeEntry(p.path, *o->attributes, HandleToKeep(o->handle));
    }
    {
      MutexLock l(&mu_);
      --in_flight_;
      ++stats_.requests;
      if (subdir) {
        if (absl::Status why = guard_.Admit(p.parent, GuardEntry(p.name, *o->attributes), p.depth);
            !why.ok()) {
          std::vector<WalkError> refused;
          refused.push_back(fs::RefusedEntry(p.parent, p.name, why));
          AddRefusedLocked(std::move(refused));
          subdir.reset();
          entry.reset();
        }
      }
      if (entry) {
        std::vector<WalkEntry> one;
        one.push_back(std::move(*entry));
        AddEntriesLocked(std::move(one));
      }
      if (error) {
        ++stats_.errors;
        current_.errors.push_back(std::move(*error));
      }
      if (subdir && !stopped_) stack_.push_back(std::move(*subdir));
      SignalIfUsefulLocked();
    }
    Pump();
  }

  void AddRefusedLocked(std::vector<WalkError> refused) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    stats_.errors += refused.size();
    stats_.entries_refused += refused.size();
    for (WalkError& e : refused) current_.errors.push_back(std::move(e));
  }

  void AddEntriesLocked(std::vector<WalkEntry> entries) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (WalkEntry& e : entries) {
      if (current_.entries.empty()) current_.entries.reserve(options_.walk.batch_entries);
      current_.entries.push_back(std::move(e));
      if (current_.entries.size() >= options_.walk.batch_entries) {
        ready_.push_back(std::move(current_));
        current_ = WalkBatch();
      }
    }
  }

  // `path` (relative to the walk root) relative to the client's URL path,
  // for the client's error messages.
  std::string UrlRelative(std::string_view path) const { return ChildPath(root_, path); }

  NfsClient& client_;
  const std::string root_;
  const WalkOptions options_;

  Mutex mu_;
  CondVar cv_;
  std::vector<Listing> stack_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  WalkBatch current_ ABSL_GUARDED_BY(mu_);
  std::deque<WalkBatch> ready_ ABSL_GUARDED_BY(mu_);
  WalkStats stats_ ABSL_GUARDED_BY(mu_);
  fs::WalkGuard guard_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<WalkStats> WalkTree(NfsClient& client, std::string_view root,
                                   const WalkOptions& options,
                                   absl::FunctionRef<bool(WalkBatch&)> on_batch) {
  const absl::Time start = MonotonicNow();
  const uint64_t pool_retries_before = client.metrics().retries;
  NfsObject root_object{client.root_handle(), client.root_attributes()};
  if (!root.empty()) {
    FERRY_ASSIGN_OR_RETURN(root_object, client.LookupPath(root));
  }
  if (root_object.attributes && root_object.attributes->type != FileType::kDirectory) {
    return NotADirectoryStatus(absl::StrCat(
        "walk ", client.DisplayPath(root), ": not a directory (",
        FileTypeName(root_object.attributes->type), ")"));
  }
  WalkOptions o = options;
  fs::WalkOptions& w = o.walk;
  if (w.max_in_flight < 1) w.max_in_flight = 1;
  if (w.batch_entries < 1) w.batch_entries = 1;
  if (w.max_queued_batches < 1) w.max_queued_batches = 1;
  w.min_batch_entries = std::clamp<size_t>(w.min_batch_entries, 1, w.batch_entries);

  auto state = std::make_shared<WalkState>(client, std::string(root), o);
  state->Start(Listing{root_object.handle, ""}, root_object.attributes);
  state->Run(on_batch);
  WalkStats stats = state->stats();
  stats.retries += client.metrics().retries - pool_retries_before;
  stats.elapsed = MonotonicNow() - start;
  return stats;
}

}  // namespace ferry::nfs
