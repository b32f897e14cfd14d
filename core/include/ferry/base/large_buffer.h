// LargeBuffer: memory for transfer chunks and parts (megabytes each,
// allocated and freed at the pace of requests).
//
//   FERRY_ASSIGN_OR_RETURN(ferry::LargeBuffer buf, ferry::LargeBuffer::Allocate(12 << 20));
//   store.GetRangeInto(key, offset, buf.span(), etag, done);
//
// Why not new char[]: on a virtual machine the first touch of every fresh
// 4 KiB page is a fault, and chunk-sized allocations are fresh pages each
// time (glibc maps them, or trims them back to the kernel). Measured here:
// filling 256 MiB of new 12 MiB buffers took 170-210 ms of CPU, against
// ~20 ms when the buffers were reused or came as transparent huge pages;
// a 256 MiB S3 download took 30,000-60,000 page faults. So a buffer of at
// least kHugePageBytes is its own anonymous mapping, aligned to 2 MiB and
// advised MADV_HUGEPAGE (512 times fewer faults; where THP is disabled
// the advice is ignored and it costs what new[] costs); smaller ones come
// from the heap. Callers that allocate repeatedly still reuse buffers
// where they can (MultipartDownloader keeps spares).
//
// Contents start unspecified. Thread-compatible: a move-only value.
#ifndef FERRY_BASE_LARGE_BUFFER_H_
#define FERRY_BASE_LARGE_BUFFER_H_

#include <cstddef>
#include <span>
#include <utility>

#include "absl/status/statusor.h"

namespace ferry {

class LargeBuffer {
 public:
  // Buffers this long or longer get a huge-page-advised mapping.
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  // `size` bytes; ResourceExhausted (naming the size and errno) when the
  // system has no memory to map. Allocate(0) is an empty buffer.
  static absl::StatusOr<LargeBuffer> Allocate(size_t size);

  LargeBuffer() = default;
  LargeBuffer(LargeBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        mapping_(std::exchange(o.mapping_, nullptr)),
        mapping_size_(std::exchange(o.mapping_size_, 0)) {}
  LargeBuffer& operator=(LargeBuffer&& o) noexcept;
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;
  ~LargeBuffer() { Free(); }

  char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // True if the buffer is its own anonymous mapping (not heap memory), so
  // page-level advice such as MADV_FREE may be applied to it.
  bool mapped() const { return mapping_ != nullptr; }
  // The whole buffer. Moving the buffer keeps its memory where it is, so
  // a span taken before a move stays valid.
  std::span<char> span() const { return {data_, size_}; }

 private:
  void Free();

  char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // null: data_ came from new[]
  size_t mapping_size_ = 0;
};

}  // namespace ferry

#endif  // FERRY_BASE_LARGE_BUFFER_H_
