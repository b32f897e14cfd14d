// The FileSystem defaults: what a protocol lacks answers Unimplemented,
// and Walk reads one directory at a time with List (adapters with a
// parallel listing override it).
#include "ferry/fs/file_system.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ferry/base/clock.h"
#include "ferry/base/directory_errors.h"
#include "ferry/base/status_macros.h"
#include "ferry/base/strings.h"
#include "ferry/fs/walk_guard.h"
#include "ferry/transfer/checksum.h"

namespace ferry::fs {
namespace {

absl::Status NotOffered(const FileSystem& fs, std::string_view what, std::string_view path) {
  return absl::UnimplementedError(absl::StrCat(ToAbsl(what), " ", fs.Url(path), ": ",
                                               ToAbsl(fs.scheme()), ":// does not offer it"));
}

}  // namespace

absl::StatusOr<size_t> File::ReadAt(int64_t /*offset*/, absl::Span<char> /*buf*/) {
  return absl::FailedPreconditionError("read: the file is open for writing only");
}

absl::StatusOr<size_t> File::WriteAt(int64_t /*offset*/, absl::Span<const char> /*data*/) {
  return absl::FailedPreconditionError("write: the file is open for reading only");
}

absl::StatusOr<size_t> File::WriteFromDescriptor(int64_t /*offset*/, int /*fd*/, int64_t /*fd_offset*/,
                                                 size_t /*n*/) {
  return absl::UnimplementedError("write from a descriptor: not by this file (write the bytes)");
}

absl::StatusOr<size_t> File::ReadIntoDescriptor(int64_t /*offset*/, size_t /*n*/, int /*fd*/,
                                                int64_t /*fd_offset*/, Mutex* /*write_lock*/) {
  return absl::UnimplementedError("read into a descriptor: not by this file (read the bytes)");
}

absl::StatusOr<size_t> File::WriteThroughDescriptor(int64_t /*offset*/, size_t /*n*/,
                                                    DescriptorFill /*fill*/) {
  return absl::UnimplementedError("write through a descriptor: not by this file (write the bytes)");
}

absl::Status FileSystem::CreateDir(std::string_view path, bool /*parents*/) {
  return NotOffered(*this, "mkdir", path);
}

absl::Status FileSystem::Remove(std::string_view path) { return NotOffered(*this, "remove", path); }

absl::Status FileSystem::RemoveDir(std::string_view path) {
  return NotOffered(*this, "rmdir", path);
}

absl::Status FileSystem::Rename(std::string_view from, std::string_view /*to*/) {
  return NotOffered(*this, "rename", from);
}

absl::Status FileSystem::CopyWithin(std::string_view from, std::string_view /*to*/) {
  return NotOffered(*this, "server-side copy of", from);
}

absl::Status FileSystem::SetModTime(std::string_view path, absl::Time /*mtime*/) {
  return NotOffered(*this, "set the modification time of", path);
}

absl::StatusOr<std::string> FileSystem::Md5(std::string_view path, const Entry& listed,
                                            bool read_if_needed) {
  if (!read_if_needed) return NotOffered(*this, "a stored MD5 of", path);
  return HashByReading(path, listed, HashKind::kMd5);
}

absl::StatusOr<std::string> FileSystem::ContentHash(std::string_view path, const Entry& listed,
                                                    HashKind kind, bool read_if_needed) {
  if (kind == HashKind::kMd5) return Md5(path, listed, read_if_needed);
  if (!read_if_needed) {
    return NotOffered(*this, absl::StrCat("a stored ", HashKindName(kind), " of"), path);
  }
  return HashByReading(path, listed, kind);
}

absl::StatusOr<std::string> FileSystem::HashByReading(std::string_view path, const Entry& listed,
                                                      HashKind kind) {
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<File> file, OpenReadListed(path, listed));
  FERRY_ASSIGN_OR_RETURN(const int64_t size, file->Size());
  // Reads of up to 1 MiB: a hash needs the bytes in order, so one reader
  // streams them. A small file gets a small buffer (zeroing 1 MiB per 4 KiB
  // file was half of a 10,000-file sync's CPU).
  std::string buf(static_cast<size_t>(std::clamp<int64_t>(size, 1, int64_t{1} << 20)), '\0');
  FERRY_ASSIGN_OR_RETURN(ContentHasher hasher, ContentHasher::Create(kind));
  int64_t offset = 0;
  while (offset < size) {
    FERRY_ASSIGN_OR_RETURN(const size_t n, file->ReadAt(offset, absl::MakeSpan(buf)));
    if (n == 0) {
      return absl::DataLossError(absl::StrCat("hash ", Url(path), ": the file ended at ", offset,
                                              " of ", size, " bytes"));
    }
    hasher.Update(std::span<const char>(buf.data(), n));
    offset += static_cast<int64_t>(n);
  }
  FERRY_RETURN_IF_ERROR(file->Close());
  return hasher.Finish();
}

absl::StatusOr<WalkStats> FileSystem::Walk(std::string_view root, const WalkOptions& options,
                                           absl::FunctionRef<bool(WalkBatch&)> on_batch) {
  const absl::Time start = MonotonicNow();
  WalkStats stats;
  const std::string base = NormalizePath(root);
  WalkGuard guard(options);
  {
    // The root must exist and be a directory: a walk of a typo is an error,
    // not an empty result.
    absl::StatusOr<Entry> top = Stat(base);
    if (!top.ok()) return top.status();
    if (top->kind != EntryKind::kDirectory) {
      return NotADirectoryStatus(
          absl::StrCat("walk ", Url(base), ": not a directory (", ToAbsl(EntryKindName(top->kind)), ")"));
    }
    guard.VisitRoot(top->id);
  }
  const size_t batch_limit = std::max<size_t>(options.batch_entries, 1);
  WalkBatch batch;
  bool stop = false;
  auto flush = [&](bool force) {
    if (stop || (batch.entries.empty() && batch.errors.empty())) return;
    if (!force && batch.entries.size() + batch.errors.size() < batch_limit) return;
    stats.entries += batch.entries.size();
    stats.errors += batch.errors.size();
    for (const WalkError& e : batch.errors) stats.entries_refused += e.refused ? 1 : 0;
    if (!on_batch(batch)) {
      stop = true;
      stats.stopped_early = true;
    }
    batch = WalkBatch();
  };
  struct Pending {
    std::string rel;  // relative to base
    int depth;        // of its entries: the root's are at 1
  };
  std::deque<Pending> pending;
  pending.push_back({"", 1});
  while (!pending.empty() && !stop) {
    const Pending dir = std::move(pending.front());
    pending.pop_front();
    ++stats.requests;
    absl::Status listed = List(JoinPath(base, dir.rel), [&](std::vector<Entry>& entries) {
      for (Entry& e : entries) {
        // Checked before the name is joined: JoinPath would turn "" into
        // the parent itself and "/x" into "x".
        if (absl::Status why = guard.Admit(dir.rel, e, dir.depth); !why.ok()) {
          batch.errors.push_back(RefusedEntry(dir.rel, e.path, why));
          flush(/*force=*/false);
          if (stop) return false;
          continue;
        }
        e.path = dir.rel.empty() ? std::move(e.path) : absl::StrCat(dir.rel, "/", e.path);
        if (e.kind == EntryKind::kDirectory) pending.push_back({e.path, dir.depth + 1});
        if (e.kind == EntryKind::kFile) stats.bytes += static_cast<uint64_t>(e.size);
        batch.entries.push_back(std::move(e));
        flush(/*force=*/false);
        if (stop) return false;
      }
      return true;
    });
    if (listed.ok()) {
      ++stats.directories;
    } else {
      batch.errors.push_back({dir.rel, std::move(listed)});
    }
  }
  flush(/*force=*/true);
  stats.elapsed = MonotonicNow() - start;
  return stats;
}

absl::StatusOr<LeftoverStats> FileSystem::RemoveLeftovers(std::string_view dir, absl::Time before) {
  const std::string base = NormalizePath(dir);
  LeftoverStats stats;
  absl::Status failure;
  absl::StatusOr<WalkStats> walked = Walk(base, WalkOptions(), [&](WalkBatch& batch) {
    for (const Entry& e : batch.entries) {
      if (e.kind != EntryKind::kFile || !IsFerryTemporaryName(BaseName(e.path))) continue;
      // Unknown times count as recent: never remove what may be live.
      if (e.mtime == absl::InfinitePast() || e.mtime >= before) {
        ++stats.kept_recent;
        continue;
      }
      const std::string path = JoinPath(base, e.path);
      absl::Status s = Remove(path);
      if (absl::IsNotFound(s)) continue;  // another clean-up, or its writer, was first
      if (!s.ok()) {
        failure = s;
        return false;
      }
      ++stats.removed;
      stats.bytes += e.size;
      stats.removed_urls.push_back(Url(path));
    }
    return true;
  });
  FERRY_RETURN_IF_ERROR(walked.status());
  FERRY_RETURN_IF_ERROR(failure);
  return stats;
}

bool IsFerryTemporaryName(std::string_view name) {
  // ".<name>.ferry-<16 hex>" or ".ferry-<16 hex>"
  constexpr std::string_view kTag = ".ferry-";
  constexpr size_t kHex = 16;
  if (name.size() < kTag.size() + kHex || name.front() != '.') return false;
  const std::string_view hex = name.substr(name.size() - kHex);
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  const std::string_view head = name.substr(0, name.size() - kHex);
  if (head.size() < kTag.size() || head.substr(head.size() - kTag.size()) != kTag) return false;
  // Either the bare form, or "." + a non-empty name + ".ferry-".
  return head.size() == kTag.size() || head.size() > kTag.size() + 1;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  while (!dir.empty() && dir.back() == '/') dir.remove_suffix(1);
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  if (dir.empty()) return std::string(name);
  if (name.empty()) return std::string(dir);
  return absl::StrCat(ToAbsl(dir), "/", ToAbsl(name));
}

std::string_view BaseName(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view DirName(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {};
  path = path.substr(0, slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return path;
}

std::string NormalizePath(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '/' && (out.empty() || out.back() == '/')) continue;
    out.push_back(c);
  }
  if (!out.empty() && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace ferry::fs
