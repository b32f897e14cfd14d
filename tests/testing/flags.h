// "--name=value" flags for the test and bench helper programs (the Redis
// front end and its bench), without a flags library.
//
//   const int n = ferry::testing::IntFlag(argc, argv, "fronts", 4);
#ifndef FERRY_TESTING_FLAGS_H_
#define FERRY_TESTING_FLAGS_H_

#include <string>

#include "absl/strings/numbers.h"

namespace ferry::testing {

// The value of the first "--name=value" in argv, or `dflt`.
inline std::string Flag(int argc, char** argv, const std::string& name, const std::string& dflt) {
  const std::string p = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind(p, 0) == 0) return a.substr(p.size());
  }
  return dflt;
}

// As Flag, as an int; `dflt` when absent or not a number.
inline int IntFlag(int argc, char** argv, const std::string& name, int dflt) {
  int v = dflt;
  (void)absl::SimpleAtoi(Flag(argc, argv, name, std::to_string(dflt)), &v);
  return v;
}

}  // namespace ferry::testing

#endif  // FERRY_TESTING_FLAGS_H_
