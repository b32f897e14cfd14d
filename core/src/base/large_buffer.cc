// A large buffer is mapped with 2 MiB - 4 KiB to spare, then the unaligned
// head and the tail beyond the buffer are unmapped, leaving a mapping that
// starts on a huge-page boundary (mmap only promises page alignment, and a
// huge page can back only an aligned 2 MiB range).
#include "ferry/base/large_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "ferry/base/sanitizers.h"

namespace ferry {

absl::StatusOr<LargeBuffer> LargeBuffer::Allocate(size_t size) {
  LargeBuffer b;
  if (size == 0) return b;
  // Under AddressSanitizer every buffer comes from the heap, where ASan
  // puts red zones around it: an overrun of a chunk buffer is then
  // reported, not silently written into the mapping's slack.
  if (size < kHugePageBytes || kAddressSanitizer) {
    b.data_ = new (std::nothrow) char[size];
    if (b.data_ == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("allocating a ", size, "-byte buffer"));
    }
    b.size_ = size;
    return b;
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t length = (size + page - 1) / page * page;
  const size_t spare = kHugePageBytes - page;
  void* p = ::mmap(nullptr, length + spare, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mapping a ", size, "-byte buffer: ", std::strerror(errno)));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (aligned > start) ::munmap(p, aligned - start);
  const uintptr_t end = start + length + spare;
  if (end > aligned + length) ::munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  // Advice only: without transparent huge pages the buffer still works.
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  b.mapping_ = reinterpret_cast<void*>(aligned);
  b.mapping_size_ = length;
  b.data_ = static_cast<char*>(b.mapping_);
  b.size_ = size;
  return b;
}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapping_ = std::exchange(o.mapping_, nullptr);
    mapping_size_ = std::exchange(o.mapping_size_, 0);
  }
  return *this;
}

void LargeBuffer::Free() {
  if (mapping_ != nullptr) {
    ::munmap(mapping_, mapping_size_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
  size_ = 0;
  mapping_ = nullptr;
  mapping_size_ = 0;
}

}  // namespace ferry
