// WalkGuard: the rules every walk applies to what a server lists, so that a
// hostile or corrupt listing can neither make a walk run forever nor lose
// an entry in silence.
//
// A listed name must be one non-empty component: no '/', not "." or "..",
// no NUL (CheckListedName). A name that breaks the rule is refused: it
// becomes a WalkError with `refused` set, naming the parent and the raw
// name, and is neither reported as an entry nor descended into. A
// directory is walked at most once: by its stable id where the protocol
// has one (NFS fileid, iRODS collection id), else by its path; a second
// sighting (a directory listing itself or an ancestor, an alias) is
// refused likewise. A directory deeper than WalkOptions::max_depth is
// refused. So every entry a server lists ends up in exactly one place:
// reported, refused with a reason, or under a directory that failed.
//
//   ferry::fs::WalkGuard guard(options);
//   guard.VisitRoot(root.id);
//   for (Entry& e : listed) {
//     if (absl::Status why = guard.Admit(parent, e, depth); !why.ok()) {
//       batch.errors.push_back(ferry::fs::RefusedEntry(parent, e.path, why));
//       continue;
//     }
//     ...  // e.path is a safe name; descend into it if it is a directory
//   }
//
// The generic walk (FileSystem::Walk), the NFS tree walker, the S3 walk and
// the bindings' one-level List all use it.
//
// Thread-safety: not thread-safe (one walk's state; a parallel walker
// calls it under its own lock). The free functions are pure.
#ifndef FERRY_FS_WALK_GUARD_H_
#define FERRY_FS_WALK_GUARD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "ferry/fs/entry.h"

namespace ferry::fs {

// OK if `name` is one component a walk may report; otherwise
// InvalidArgument saying why (empty, '/' inside, ".", "..", a NUL byte).
absl::Status CheckListedName(std::string_view name);

// OK if every component of `rel` (a path relative to a walk's root, as a
// flat object-store listing gives it) is one CheckListedName accepts.
absl::Status CheckListedPath(std::string_view rel);

// The WalkError for an entry named `name` (raw, as listed) in directory
// `parent` (relative to the walk's root) that a walk refused for `why`.
// Its message quotes both, unprintable bytes escaped.
WalkError RefusedEntry(std::string_view parent, std::string_view name, const absl::Status& why);

// Moves the entries of `entries` whose names CheckListedName refuses out to
// `refused` (as RefusedEntry of `parent`); keeps the others in order.
// Returns how many it moved.
size_t SplitRefusedNames(std::string_view parent, std::vector<Entry>& entries,
                         std::vector<WalkError>& refused);

class WalkGuard {
 public:
  explicit WalkGuard(const WalkOptions& options) : max_depth_(options.max_depth) {}

  // The root is walked: a listing that names it again is refused.
  void VisitRoot(uint64_t id) { VisitDirectory(id, ""); }

  // OK if `e`, listed in directory `parent` at `depth` (the root's entries
  // are at depth 1), may be reported; for a directory, also that it is
  // walked now (remembered, so a second sighting is refused). Otherwise
  // why not. `e.path` is the raw listed name.
  absl::Status Admit(std::string_view parent, const Entry& e, int depth);

  // As Admit's directory half alone: the directory at `path` (`id`, 0 if
  // the protocol has none) is walked now. False if it already was.
  bool VisitDirectory(uint64_t id, std::string_view path);

 private:
  const int max_depth_;
  absl::flat_hash_set<uint64_t> ids_;
  absl::flat_hash_set<std::string> paths_;
};

}  // namespace ferry::fs

#endif  // FERRY_FS_WALK_GUARD_H_
