#include "ferry/fs/entry.h"

namespace ferry::fs {

std::string_view EntryKindName(EntryKind kind) {
  switch (kind) {
    case EntryKind::kFile: return "file";
    case EntryKind::kDirectory: return "directory";
    case EntryKind::kSymlink: return "symlink";
    case EntryKind::kOther: return "other";
    case EntryKind::kUnknown: break;
  }
  return "unknown";
}

PathSeen PathSeen::Of(const absl::StatusOr<Entry>& stat) {
  if (stat.ok()) return Found(*stat);
  return absl::IsNotFound(stat.status()) ? Missing() : PathSeen{};
}

}  // namespace ferry::fs
