// Random numbers for the few places ferry needs them: temporary file
// names, the first RPC xid, back-off jitter.
//
//   const double unit = ferry::RandomUnit();      // [0, 1)
//   const uint64_t tag = ferry::RandomUint64();
//
// Drawn from the operating system (getrandom) on every call. Not from
// std::random_device, which runs several CPUIDs each time one is built (a
// VM exit each), nor from absl::BitGen: Debian's abseil seeds each BitGen
// from a process-wide pool behind a spinlock that is not built with
// ThreadSanitizer, so threads seeding at once are reported as racing. None
// of the callers is hot (at most one draw per retry or file), so a system
// call per draw costs nothing measurable.
//
// Thread-safety: thread-safe; no shared state.
#ifndef FERRY_BASE_RANDOM_H_
#define FERRY_BASE_RANDOM_H_

#include <cstdint>

namespace ferry {

// 64 uniformly random bits.
uint64_t RandomUint64();

// A uniformly random double in [0, 1).
double RandomUnit();

}  // namespace ferry

#endif  // FERRY_BASE_RANDOM_H_
