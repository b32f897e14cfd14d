#include "ferry/fs/walk_guard.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/safe_path.h"

namespace ferry::fs {

absl::Status CheckListedName(std::string_view name) {
  auto refuse = [](std::string_view why) { return absl::InvalidArgumentError(ToAbsl(why)); };
  if (name.empty()) return refuse("empty name");
  if (name == ".") return refuse("the name '.'");
  if (name == "..") return refuse("the name '..' (it would leave the tree)");
  if (name.find('/') != std::string_view::npos) {
    return refuse(name.front() == '/' ? "an absolute name" : "a name with '/' in it");
  }
  if (name.find('\0') != std::string_view::npos) return refuse("a name with a NUL byte");
  return absl::OkStatus();
}

absl::Status CheckListedPath(std::string_view rel) {
  if (rel.empty()) return CheckListedName(rel);
  if (rel.front() == '/') return absl::InvalidArgumentError("an absolute name");
  size_t start = 0;
  for (;;) {
    const size_t slash = rel.find('/', start);
    const std::string_view part =
        rel.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty()) {
      return absl::InvalidArgumentError(slash == std::string_view::npos
                                            ? "a name ending in '/'"
                                            : "a name with an empty component ('//')");
    }
    FERRY_RETURN_IF_ERROR(CheckListedName(part));
    if (slash == std::string_view::npos) return absl::OkStatus();
    start = slash + 1;
  }
}

WalkError RefusedEntry(std::string_view parent, std::string_view name, const absl::Status& why) {
  WalkError e;
  e.path = std::string(parent);
  e.name = std::string(name);
  e.refused = true;
  e.status = absl::Status(
      why.code(), absl::StrCat("refused \"", EscapeForMessage(name), "\" listed in ",
                               parent.empty() ? std::string("the walk's root")
                                              : absl::StrCat("\"", EscapeForMessage(parent), "\""),
                               ": ", why.message()));
  return e;
}

size_t SplitRefusedNames(std::string_view parent, std::vector<Entry>& entries,
                         std::vector<WalkError>& refused) {
  size_t kept = 0;
  size_t moved = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (absl::Status why = CheckListedName(entries[i].path); !why.ok()) {
      refused.push_back(RefusedEntry(parent, entries[i].path, why));
      ++moved;
      continue;
    }
    if (kept != i) entries[kept] = std::move(entries[i]);
    ++kept;
  }
  entries.resize(kept);
  return moved;
}

absl::Status WalkGuard::Admit(std::string_view parent, const Entry& e, int depth) {
  FERRY_RETURN_IF_ERROR(CheckListedName(e.path));
  if (e.kind != EntryKind::kDirectory) return absl::OkStatus();
  if (depth > max_depth_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a directory deeper than ", max_depth_, " levels (WalkOptions::max_depth)"));
  }
  // The path is the key only where the protocol gives no id: no string is
  // built per directory of an NFS or iRODS walk.
  const bool first = e.id != 0 ? VisitDirectory(e.id, {})
                     : VisitDirectory(0, parent.empty() ? e.path
                                                        : absl::StrCat(ToAbsl(parent), "/", e.path));
  if (!first) {
    return absl::FailedPreconditionError(
        e.id != 0 ? absl::StrCat("a directory already walked (the same id ", e.id,
                                 "): a loop or an alias, not walked twice")
                  : "a directory already walked (listed twice): not walked twice");
  }
  return absl::OkStatus();
}

bool WalkGuard::VisitDirectory(uint64_t id, std::string_view path) {
  if (id != 0) return ids_.insert(id).second;
  return paths_.emplace(path).second;
}

}  // namespace ferry::fs
