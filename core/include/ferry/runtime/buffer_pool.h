// BufferPool: chunk and part buffers kept between transfers, so a new
// chunk reuses memory the process has already touched.
//
//   ferry::BufferPool& pool = runtime.buffer_pool();
//   FERRY_ASSIGN_OR_RETURN(ferry::LargeBuffer buf, pool.Take(12 << 20));
//   ... fill and send buf.span().first(12 << 20) ...
//   pool.Give(std::move(buf));   // the next Take of that size reuses it
//
// Why: fresh memory is the dearest thing a transfer touches on a VM. Each
// new page costs a fault and the kernel's zeroing (and perhaps the host's
// fault behind it); a 256 MiB download's new huge-page chunk buffers were
// a third of its CPU samples, and an upload allocated every part anew.
// MemoryBudget still decides how much transfers may hold; the pool only
// recycles what they give back, outside the budget and within its own cap
// (`max_idle_bytes`, a quarter of the budget by default: one transfer's
// requests in flight). Idle buffers are marked MADV_FREE: the kernel may
// take their pages back under memory pressure (a later use then faults
// them in again, zeroed) and otherwise they are reused with no fault.
//
// Buffers of at least LargeBuffer::kHugePageBytes are pooled by size class
// (the size rounded up to a multiple of 2 MiB, so equal chunks and a
// shorter last one share few classes); smaller ones come from the heap
// and are not pooled. A buffer from Take may be up to 2 MiB - 1 byte
// longer than asked.
//
// Thread-safe. Take and Give never block on I/O; Give may unmap a buffer
// (a system call) when the pool is full, so callers give outside their
// own locks where they can.
#ifndef FERRY_RUNTIME_BUFFER_POOL_H_
#define FERRY_RUNTIME_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/base/large_buffer.h"
#include "ferry/base/mutex.h"
#include "ferry/runtime/memory_budget.h"

namespace ferry {

// A pooled buffer and the ticket that counts its bytes against a bound.
struct BoundedBuffer {
  LargeBuffer buffer;
  MemoryBudget::Ticket ticket;
};

class BufferPool {
 public:
  struct Stats {
    int64_t allocations = 0;  // Takes that allocated a new buffer
    int64_t reuses = 0;       // Takes served by an idle buffer
    int64_t idle_bytes = 0;   // held now, waiting for a Take
  };

  // Keeps at most `max_idle_bytes` of idle buffers (0: none, every Give frees).
  explicit BufferPool(int64_t max_idle_bytes);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `size` bytes, contents unspecified: an idle one of
  // its size class, else a new one (ResourceExhausted if none can be mapped).
  absl::StatusOr<LargeBuffer> Take(size_t size);
  // The bytes a Take(size) buffer has: its size class, or `size` itself
  // below 2 MiB. What a caller counting the buffer against a bound counts.
  static size_t TakenBytes(size_t size);
  // A Take(size) buffer with its whole size class counted against `bound`,
  // for memory that only speeds things up (read-ahead): only if the bound
  // has room now (TryAcquire, never waited for) and the buffer can be had;
  // nullopt, holding nothing, otherwise.
  std::optional<BoundedBuffer> TryTakeWithin(MemoryBudget& bound, size_t size);

  // Returns `buffer` for a later Take, or frees it when it is too small to
  // pool or the idle buffers would exceed max_idle_bytes.
  void Give(LargeBuffer buffer);
  // Gives `b`'s buffer back (as Give) and its bytes to its bound.
  void Give(BoundedBuffer b);

  int64_t max_idle_bytes() const { return max_idle_bytes_; }
  Stats stats() const;

 private:
  const int64_t max_idle_bytes_;
  mutable Mutex mu_;
  std::map<size_t, std::vector<LargeBuffer>> idle_ ABSL_GUARDED_BY(mu_);  // by size class
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ferry

#endif  // FERRY_RUNTIME_BUFFER_POOL_H_
