// Fuzzes the generic walk (FileSystem::Walk over List, with its WalkGuard)
// over a filesystem whose listings come from the input: a graph of up to
// 32 directories, each listing up to 15 entries of any name bytes ('/',
// NUL, ".", "..", empty included), any kind, pointing at any directory of
// the graph (itself, an ancestor, one already listed: loops and aliases).
// Every directory has a stable id, as NFS and iRODS give them (several
// directories may share one: aliases).
//
// Whatever the input: the walk ends, walks each directory id at most once
// (List calls <= distinct ids), reports only paths whose every component is
// a safe name, and accounts for every entry of every listing it made:
// reported or refused, nothing else.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/fs/file_system.h"
#include "ferry/fs/walk_guard.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;
namespace fs = ferry::fs;

struct Node {
  uint64_t id = 0;
  std::vector<fs::Entry> entries;
  std::vector<int> targets;  // per entry: the node a directory entry opens, else -1
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint8_t Byte() {
    if (in_.empty()) return 0;
    const auto b = static_cast<uint8_t>(in_.front());
    in_.remove_prefix(1);
    return b;
  }
  std::string Bytes(size_t n) {
    n = std::min(n, in_.size());
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }

 private:
  std::string_view in_;
};

class GraphFileSystem final : public fs::FileSystem {
 public:
  explicit GraphFileSystem(std::string_view input) {
    Reader r(input);
    const int nodes = 1 + r.Byte() % 32;
    nodes_.resize(nodes);
    // Ids 1..nodes first (an entry may point at any node), some shared: an
    // alias lists as the same directory.
    for (int i = 0; i < nodes; ++i) {
      const uint8_t alias = r.Byte();
      nodes_[i].id = alias % 4 == 0 ? 1 + alias / 4 % nodes : i + 1;
    }
    for (int i = 0; i < nodes; ++i) {
      const int count = r.Byte() % 16;
      for (int j = 0; j < count; ++j) {
        const uint8_t kind = r.Byte();
        const int target = r.Byte() % nodes;
        fs::Entry e;
        e.path = r.Bytes(r.Byte() % 9);
        e.kind = kind % 3 == 0 ? fs::EntryKind::kDirectory
                 : kind % 3 == 1 ? fs::EntryKind::kFile
                                 : fs::EntryKind::kSymlink;
        const bool dir = e.kind == fs::EntryKind::kDirectory;
        e.id = dir ? nodes_[target].id : 1000 + j;
        nodes_[i].entries.push_back(std::move(e));
        nodes_[i].targets.push_back(dir ? target : -1);
      }
    }
    at_[""] = 0;
  }

  std::string_view scheme() const override { return "graph"; }
  std::string Url(std::string_view p) const override { return absl::StrCat("graph:/", ferry::ToAbsl(p)); }
  absl::StatusOr<fs::Entry> Stat(std::string_view) override {
    fs::Entry e;
    e.kind = fs::EntryKind::kDirectory;
    e.id = nodes_[0].id;
    return e;
  }
  absl::Status List(std::string_view dir,
                    absl::FunctionRef<bool(std::vector<fs::Entry>&)> on_batch) override {
    auto it = at_.find(std::string(dir));
    Check(it != at_.end());  // the walk asks only for paths it was given
    const Node& n = nodes_[it->second];
    ++lists;
    listed_entries += n.entries.size();
    for (size_t j = 0; j < n.entries.size(); ++j) {
      if (n.targets[j] < 0) continue;
      at_[dir.empty() ? n.entries[j].path : absl::StrCat(ferry::ToAbsl(dir), "/", n.entries[j].path)] = n.targets[j];
    }
    // In two batches, as a paged protocol would hand them.
    std::vector<fs::Entry> first(n.entries.begin(), n.entries.begin() + n.entries.size() / 2);
    std::vector<fs::Entry> second(n.entries.begin() + n.entries.size() / 2, n.entries.end());
    if (!first.empty() && !on_batch(first)) return absl::OkStatus();
    if (!second.empty()) on_batch(second);
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<fs::File>> OpenRead(std::string_view) override {
    return absl::UnimplementedError("graph");
  }
  absl::StatusOr<std::unique_ptr<fs::File>> OpenWrite(std::string_view, const fs::WriteOptions&) override {
    return absl::UnimplementedError("graph");
  }

  size_t distinct_ids() const {
    std::set<uint64_t> ids;
    for (const Node& n : nodes_) ids.insert(n.id);
    return ids.size();
  }

  int lists = 0;
  uint64_t listed_entries = 0;

 private:
  std::vector<Node> nodes_;
  std::map<std::string, int> at_;  // path -> node, as the listings name them
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string copy(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  GraphFileSystem graph(copy);
  fs::WalkOptions options;
  options.batch_entries = 7;
  uint64_t reported = 0;
  uint64_t refused = 0;
  absl::StatusOr<fs::WalkStats> stats = graph.Walk("", options, [&](fs::WalkBatch& b) {
    for (const fs::Entry& e : b.entries) {
      ++reported;
      Check(fs::CheckListedPath(e.path).ok());
    }
    for (const fs::WalkError& e : b.errors) {
      Check(e.refused);  // no listing fails here: every error is a refusal
      ++refused;
    }
    return true;
  });
  Check(stats.ok());
  // Each directory id walked once: no more listings than ids (the root's
  // included), whatever loops and aliases the graph has.
  Check(static_cast<size_t>(graph.lists) <= graph.distinct_ids());
  // Every listed entry is reported or refused.
  Check(reported + refused == graph.listed_entries);
  Check(stats->entries == reported && stats->entries_refused == refused);
  return 0;
}
