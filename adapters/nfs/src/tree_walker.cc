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
#include "ferry/base/clock.h"
#include "ferry/base/mutex.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/nfs/nfs3_xdr.h"
#include "ferry/nfs/nfs_error.h"

namespace ferry::nfs {
namespace {

// One directory being listed.
struct Listing {
  FileHandle handle;
  std::string path;  // relative to the walk root; "" = the root
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
};

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

WalkEntry MakeEntry(std::string path, const Fattr3& a) {
  WalkEntry e;
  e.path = std::move(path);
  e.type = a.type;
  e.size = a.size;
  e.mode = a.mode & 07777;
  e.uid = a.uid;
  e.gid = a.gid;
  e.mtime = a.mtime;
  e.fileid = a.fileid;
  return e;
}

class WalkState : public std::enable_shared_from_this<WalkState> {
 public:
  WalkState(NfsClient& client, std::string root, const WalkOptions& options)
      : client_(client), root_(std::move(root)), options_(options) {}

  void Start(Listing root) {
    MutexLock l(&mu_);
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
    std::vector<Listing> subdirs;
    std::vector<PendingLookup> lookups;
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
      entries.reserve(r.entries.size());
      for (const DirEntryPlus& d : r.entries) {
        listing.cookie = d.cookie;
        if (d.name == "." || d.name == "..") continue;
        if (listing.skip > 0) {
          --listing.skip;
          continue;
        }
        ++listing.reported;
        std::string child = ChildPath(listing.path, d.name);
        if (!d.attributes ||
            (d.attributes->type == FileType::kDirectory && !d.handle)) {
          lookups.push_back(PendingLookup{listing.handle, std::string(d.name), std::move(child)});
          continue;
        }
        if (d.attributes->type == FileType::kDirectory) {
          subdirs.push_back(Listing{FileHandle(*d.handle), child});
        }
        entries.push_back(MakeEntry(std::move(child), *d.attributes));
      }
      listing.cookieverf = r.cookieverf;
      if (r.eof) {
        finished = true;
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
      AddEntriesLocked(std::move(entries));
      if (error) {
        ++stats_.errors;
        current_.errors.push_back(std::move(*error));
      }
      if (!stopped_) {
        for (Listing& s : subdirs) stack_.push_back(std::move(s));
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
      if (o->attributes->type == FileType::kDirectory) subdir = Listing{o->handle, p.path};
      entry = MakeEntry(p.path, *o->attributes);
    }
    {
      MutexLock l(&mu_);
      --in_flight_;
      ++stats_.requests;
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
    return absl::FailedPreconditionError(absl::StrCat(
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
  state->Start(Listing{root_object.handle, ""});
  state->Run(on_batch);
  WalkStats stats = state->stats();
  stats.retries += client.metrics().retries - pool_retries_before;
  stats.elapsed = MonotonicNow() - start;
  return stats;
}

}  // namespace ferry::nfs
