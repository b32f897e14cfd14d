// Internals of ferry::Crc32c (ferry/transfer/checksum.h). Users must not
// touch anything here: call ferry::Crc32c, which picks the fastest of these
// that the CPU runs. They are declared for tests that check both agree.
#ifndef FERRY_TRANSFER_INTERNAL_CRC32C_H_
#define FERRY_TRANSFER_INTERNAL_CRC32C_H_

#include <cstdint>
#include <span>

namespace ferry {
namespace crc32c_internal {

// Table-driven (slicing by 8), any CPU. Same contract as ferry::Crc32c.
uint32_t Portable(std::span<const char> bytes, uint32_t crc);

// True if this CPU has SSE4.2's crc32 instruction (x86-64 only).
bool HardwareAvailable();

// The SSE4.2 crc32 instruction, 8 bytes per step. Same contract as
// ferry::Crc32c. REQUIRES: HardwareAvailable().
uint32_t Hardware(std::span<const char> bytes, uint32_t crc);

}  // namespace crc32c_internal
}  // namespace ferry

#endif  // FERRY_TRANSFER_INTERNAL_CRC32C_H_
