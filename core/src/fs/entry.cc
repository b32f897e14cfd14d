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

}  // namespace ferry::fs
