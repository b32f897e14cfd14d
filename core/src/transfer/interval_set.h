// IntervalSet: byte ranges [begin, end) already covered, kept sorted and
// merged. Private to the transfer code: tracks which bytes of a chunk were
// copied to readers, which bytes of a part were written, and how far a
// resumable local temporary is written without a gap. Not
// thread-safe (its owner's lock guards it).
#ifndef FERRY_SRC_TRANSFER_INTERVAL_SET_H_
#define FERRY_SRC_TRANSFER_INTERVAL_SET_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ferry::internal {

class IntervalSet {
 public:
  // Adds [begin, end), merging with touching or overlapping ranges.
  void Add(int64_t begin, int64_t end) {
    if (begin >= end) return;
    std::vector<std::pair<int64_t, int64_t>> out;
    out.reserve(spans_.size() + 1);
    bool placed = false;
    for (const auto& s : spans_) {
      if (s.second < begin) {
        out.push_back(s);
      } else if (end < s.first) {
        if (!placed) {
          out.emplace_back(begin, end);
          placed = true;
        }
        out.push_back(s);
      } else {
        begin = std::min(begin, s.first);
        end = std::max(end, s.second);
      }
    }
    if (!placed) out.emplace_back(begin, end);
    std::sort(out.begin(), out.end());
    spans_ = std::move(out);
  }

  // True if every byte of [begin, end) was added.
  bool Covers(int64_t begin, int64_t end) const {
    if (begin >= end) return true;
    for (const auto& s : spans_) {
      if (s.first <= begin && end <= s.second) return true;
    }
    return false;
  }

  // The sub-ranges of [begin, end) not added, in order.
  std::vector<std::pair<int64_t, int64_t>> Gaps(int64_t begin, int64_t end) const {
    std::vector<std::pair<int64_t, int64_t>> gaps;
    int64_t at = begin;
    for (const auto& s : spans_) {
      if (s.second <= at) continue;
      if (s.first >= end) break;
      if (s.first > at) gaps.emplace_back(at, s.first);
      at = std::max(at, s.second);
    }
    if (at < end) gaps.emplace_back(at, end);
    return gaps;
  }

  // Where the range added from 0 on ends: every byte before it was added
  // (0 if byte 0 was not).
  int64_t PrefixEnd() const {
    return !spans_.empty() && spans_.front().first <= 0 ? spans_.front().second : 0;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> spans_;
};

}  // namespace ferry::internal

#endif  // FERRY_SRC_TRANSFER_INTERVAL_SET_H_
