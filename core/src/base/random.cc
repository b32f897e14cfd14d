// getrandom(2) per call: its state is the call's own, so nothing is shared
// between threads (see random.h for why not absl::BitGen), and no CPUID:
// std::random_device probes the CPU for RDRAND with several CPUIDs each
// time one is built, and a CPUID is a VM exit (~4.5 us on the 2-core VM;
// a 1-byte NFS get drew four times, #33's start-up).
#include "ferry/base/random.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstddef>

namespace ferry {

uint64_t RandomUint64() {
  uint64_t value = 0;
  auto* out = reinterpret_cast<char*>(&value);
  size_t got = 0;
  while (got < sizeof(value)) {
    const ssize_t n = getrandom(out + got, sizeof(value) - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      // No getrandom (a kernel before 3.17, or a seccomp filter): the clock
      // still gives distinct xids and names, which is all the callers need.
      return value ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) *
                         0x9E3779B97F4A7C15ull;
    }
  }
  return value;
}

double RandomUnit() {
  // The top 53 bits fill a double's mantissa exactly: uniform in [0, 1).
  return static_cast<double>(RandomUint64() >> 11) * 0x1.0p-53;
}

}  // namespace ferry
