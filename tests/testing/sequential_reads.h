// Readers for the read-ahead tests of a protocol's files: one going
// through a file in pieces, and two threads each going through one half.
// `read_at(offset, span)` is the file's ReadAt.
#ifndef FERRY_TESTS_TESTING_SEQUENTIAL_READS_H_
#define FERRY_TESTS_TESTING_SEQUENTIAL_READS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ferry::testing {

// The file from offset 0 in pieces of `piece` bytes, until a short read.
template <typename ReadAt>
absl::StatusOr<std::string> ReadInPieces(ReadAt&& read_at, size_t piece) {
  std::string out, buf(piece, '\0');
  for (;;) {
    absl::StatusOr<size_t> n = read_at(static_cast<int64_t>(out.size()), absl::MakeSpan(buf));
    if (!n.ok()) return n.status();
    out.append(buf, 0, *n);
    if (*n < piece) return out;
  }
}

// Bytes [0, half) and [half, 2 * half), each read in order in pieces of
// `piece` bytes by a thread of its own, at the same time; an error (or a
// short read) of either is returned instead.
template <typename ReadAt>
absl::StatusOr<std::pair<std::string, std::string>> ReadHalvesAtOnce(ReadAt&& read_at, size_t half,
                                                                     size_t piece) {
  std::string got[2];
  absl::Status failed[2];
  auto read_half = [&](int i) {
    std::string buf(piece, '\0');
    for (size_t done = 0; done < half;) {
      const size_t want = std::min(piece, half - done);
      absl::StatusOr<size_t> n = read_at(static_cast<int64_t>(i * half + done), absl::MakeSpan(buf.data(), want));
      if (!n.ok() || *n != want) {
        failed[i] = n.ok() ? absl::DataLossError("a short read before the end") : n.status();
        return;
      }
      got[i].append(buf, 0, *n);
      done += *n;
    }
  };
  std::thread first(read_half, 0), second(read_half, 1);
  first.join();
  second.join();
  for (const absl::Status& s : failed) {
    if (!s.ok()) return s;
  }
  return std::make_pair(std::move(got[0]), std::move(got[1]));
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_TESTING_SEQUENTIAL_READS_H_
