// Readers for the read-ahead tests of a protocol's files: one going
// through a file in pieces, and two threads each going through one half.
// `File` is any file with ReadAt(int64_t offset, absl::Span<char>)
// returning absl::StatusOr<size_t> (fs::File, nfs::NfsFile).
#ifndef FERRY_TESTS_TESTING_SEQUENTIAL_READS_H_
#define FERRY_TESTS_TESTING_SEQUENTIAL_READS_H_

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace ferry::testing {

// The file from offset 0 in pieces of `piece` bytes, until a short read.
template <typename File>
absl::StatusOr<std::string> ReadInPieces(File& file, size_t piece) {
  std::string out, buf(piece, '\0');
  for (;;) {
    absl::StatusOr<size_t> n = file.ReadAt(static_cast<int64_t>(out.size()), absl::MakeSpan(buf));
    if (!n.ok()) return n.status();
    out.append(buf, 0, *n);
    if (*n < piece) return out;
  }
}

// Bytes [0, half) and [half, 2 * half), each read in order in pieces of
// `piece` bytes by a thread of its own, at the same time; an error (or a
// short read) of either is returned instead.
template <typename File>
absl::StatusOr<std::pair<std::string, std::string>> ReadHalvesAtOnce(File& file, size_t half,
                                                                     size_t piece) {
  std::string got[2];
  absl::Status failed[2];
  auto read_half = [&](int i) {
    std::string buf(piece, '\0');
    for (size_t done = 0; done < half;) {
      const size_t want = std::min(piece, half - done);
      absl::StatusOr<size_t> n = file.ReadAt(static_cast<int64_t>(i * half + done), absl::MakeSpan(buf.data(), want));
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

// Reads of `piece` bytes at each of `offsets` in turn, and one at the end
// of `data`: OK if each gives `data`'s bytes there (fewer only at the end,
// none past it), else what the first wrong one gave.
template <typename File>
absl::Status CheckReadsAt(File& file, const std::string& data, std::initializer_list<int64_t> offsets,
                          size_t piece) {
  std::string buf(piece, '\0');
  std::vector<int64_t> all(offsets);
  all.push_back(static_cast<int64_t>(data.size()));
  for (int64_t at : all) {
    absl::StatusOr<size_t> n = file.ReadAt(at, absl::MakeSpan(buf));
    if (!n.ok()) return n.status();
    const size_t want = std::min(piece, data.size() - static_cast<size_t>(at));
    if (*n != want || buf.compare(0, want, data, static_cast<size_t>(at), want) != 0) {
      return absl::DataLossError(absl::StrCat("read of ", piece, " at ", at, ": ", *n, " bytes, ",
                                              *n == want ? "not the file's" : absl::StrCat("expected ", want)));
    }
  }
  return absl::OkStatus();
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_TESTING_SEQUENTIAL_READS_H_
