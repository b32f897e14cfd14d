// What the fuzz targets share: a check that aborts (libFuzzer reports an
// abort as a crash with its input), and the test that a view lies inside
// the bytes it was read from.
#ifndef FERRY_TESTS_FUZZ_FUZZ_CHECK_H_
#define FERRY_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdlib>
#include <string_view>

namespace ferry::fuzz {

inline void Check(bool ok) {
  if (!ok) std::abort();
}

inline void CheckInside(std::string_view input, std::string_view v) {
  if (v.empty()) return;
  Check(v.data() >= input.data() && v.data() + v.size() <= input.data() + input.size());
}

}  // namespace ferry::fuzz

#endif  // FERRY_TESTS_FUZZ_FUZZ_CHECK_H_
