// std::random_device per call: its state is the call's own, so nothing is
// shared between threads (see random.h for why not absl::BitGen).
#include "ferry/base/random.h"

#include <random>

namespace ferry {

uint64_t RandomUint64() {
  std::random_device device;
  // random_device yields 32 bits per call.
  return (static_cast<uint64_t>(device()) << 32) | static_cast<uint64_t>(device());
}

double RandomUnit() {
  // The top 53 bits fill a double's mantissa exactly: uniform in [0, 1).
  return static_cast<double>(RandomUint64() >> 11) * 0x1.0p-53;
}

}  // namespace ferry
