// Entry: what a listing, a walk or a stat says about one object, whatever
// the protocol (an NFS file, an S3 key or common prefix, an iRODS data
// object or collection, a local file).
//
//   FERRY_ASSIGN_OR_RETURN(ferry::fs::Entry e, fs.Stat("dir/big.bin"));
//   if (e.kind == ferry::fs::EntryKind::kFile) Use(e.size, e.mtime);
//
// Walks stream entries in batches (WalkBatch) to a callback on the caller's
// thread; WalkStats sums up a walk. See file_system.h.
//
// Thread-safety: plain values.
#ifndef FERRY_FS_ENTRY_H_
#define FERRY_FS_ENTRY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ferry::fs {

// What an entry is. Protocols with fewer kinds use fewer values: S3 and
// iRODS have only kFile (an object) and kDirectory (a common prefix, a
// collection).
enum class EntryKind {
  kUnknown = 0,
  kFile,       // bytes that can be read (regular file, object, data object)
  kDirectory,  // holds entries (directory, prefix, collection, bucket)
  kSymlink,    // reported, never followed
  kOther,      // device, socket, FIFO: listed, never copied
};

// "file", "directory", "symlink", "other" or "unknown", for messages.
std::string_view EntryKindName(EntryKind kind);

struct Entry {
  // '/'-separated. Relative to the walk's root for walks and listings;
  // the path asked for for Stat. Bytes as the server sent them (any byte
  // but '/' and NUL on NFS; S3 keys may hold anything): see safe_path.h
  // before using one as a local path.
  std::string path;
  EntryKind kind = EntryKind::kUnknown;
  // Bytes for a file; for other kinds what the protocol reports (NFS and
  // the local disk: the directory's or link's own size; S3: 0).
  int64_t size = 0;
  absl::Time mtime = absl::InfinitePast();   // InfinitePast: not known
  uint32_t mode = 0;                         // permission bits; 0: none
  uint32_t uid = 0;                          // numeric owner where the
  uint32_t gid = 0;                          // protocol has one, else 0
  // A stable identity for the object while it exists (NFS fileid, iRODS
  // data or collection id); 0 where the protocol has none (S3).
  uint64_t id = 0;
  // The version a listing reported, where the protocol lists one (S3's
  // ETag); empty otherwise. FileSystem::OpenReadListed pins reads to it.
  std::string version;
  // For a file, the adapter's own way back to it without looking its path
  // up, where it has one (NFS: the file handle from Stat, or from a Walk
  // that asked for WalkOptions::with_handles); empty otherwise. Opaque
  // bytes, meaningful only to the FileSystem instance that made the entry:
  // its OpenReadListed opens the file by them (no LOOKUP per path
  // component); any other instance ignores them and opens by path.
  std::string handle;
};

// What a caller found at a path when it last looked (a Stat, a listing of
// the path's directory), handed on so the next step does not ask the
// server again: on NFS each look is a LOOKUP round trip.
struct PathSeen {
  enum class State {
    kUnknown,  // nobody looked: whoever needs to know looks
    kMissing,  // nothing was there
    kFound,    // `entry` was there
  };
  State state = State::kUnknown;
  Entry entry;  // kFound only

  static PathSeen Missing() { return {State::kMissing, {}}; }
  static PathSeen Found(Entry e) { return {State::kFound, std::move(e)}; }
  // What a Stat's answer says: NotFound is kMissing, an entry kFound, any
  // other error kUnknown (nothing was learnt).
  static PathSeen Of(const absl::StatusOr<Entry>& stat);
};

// A directory a walk could not read, or an entry it refused (walk_guard.h);
// the walk carries on past either.
struct WalkError {
  std::string path;  // the directory ("" = the walk's root); for a refused
                     // entry, the directory that listed it
  absl::Status status;
  // A refused entry: its name is not one safe component, or it is a
  // directory the walk has already walked (or too deep). `name` is the raw
  // name as listed (print it escaped: fs::EscapeForMessage).
  bool refused = false;
  std::string name;
};

struct WalkBatch {
  std::vector<Entry> entries;
  std::vector<WalkError> errors;
};

struct WalkStats {
  uint64_t directories = 0;  // directories listed to the end (the root included)
  uint64_t entries = 0;      // entries handed to the callback
  uint64_t bytes = 0;        // sum of the files' sizes among them
  uint64_t errors = 0;       // WalkErrors reported (refused entries included)
  uint64_t entries_refused = 0;  // of those, entries refused (walk_guard.h)
  uint64_t requests = 0;     // listing calls the protocol made
  uint64_t retries = 0;
  absl::Duration elapsed;
  bool stopped_early = false;  // the callback returned false
};

struct WalkOptions {
  // Listing calls in flight at once (directories read in parallel). 256
  // keeps a 2-core NFS server busy and covers a few ms of latency.
  int max_in_flight = 256;
  // Entries per batch handed to the callback.
  size_t batch_entries = 4096;
  // While the callback waits, a batch goes out once it holds this many
  // entries (1: at once; batch_entries: only full batches, for callers with
  // a cost per batch such as a binding). Clamped to [1, batch_entries].
  size_t min_batch_entries = 1;
  // Full batches waiting for the callback before listing pauses (bounded
  // memory: about (max_queued_batches + 1) x batch_entries entries).
  int max_queued_batches = 8;
  // Entries the first listing request asks for, where a request names its
  // page size (S3's max-keys); 0: a full page. A caller that acts on each
  // entry as it comes (a tree copy) sets it low to start after a short
  // first reply; the pages after it are full.
  size_t first_page_entries = 0;
  // Directories deeper than this below the root are refused, not walked:
  // a server that lists a new subdirectory in every directory (a loop
  // without stable ids) still ends. 1,000 is far past any real tree
  // (PATH_MAX allows 2,048 levels of one-byte names).
  int max_depth = 1000;
  // Files' entries carry Entry::handle where the adapter has one: for a
  // caller that opens what it walks (a tree copy). Off, a walk that only
  // lists keeps its CPU and memory per entry.
  bool with_handles = false;
};

}  // namespace ferry::fs

#endif  // FERRY_FS_ENTRY_H_
