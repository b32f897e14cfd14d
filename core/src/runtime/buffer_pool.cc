// Idle buffers wait in one vector per size class, most recently given
// last, so a Take gets the buffer whose pages are likeliest still resident.
// MADV_FREE is applied as a buffer goes idle, outside the lock; a buffer
// taken again is simply written (a write to a lazily freed page that the
// kernel has not reclaimed keeps the page; one it has reclaimed faults in
// a zeroed page, like fresh memory).
#include "ferry/runtime/buffer_pool.h"

#include <sys/mman.h>

#include <utility>

namespace ferry {
namespace {

constexpr size_t kClassBytes = LargeBuffer::kHugePageBytes;

size_t SizeClass(size_t size) { return (size + kClassBytes - 1) / kClassBytes * kClassBytes; }

}  // namespace

BufferPool::BufferPool(int64_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}

size_t BufferPool::TakenBytes(size_t size) { return size < kClassBytes ? size : SizeClass(size); }

absl::StatusOr<LargeBuffer> BufferPool::Take(size_t size) {
  if (size < kClassBytes) return LargeBuffer::Allocate(size);
  const size_t cls = SizeClass(size);
  {
    MutexLock l(&mu_);
    auto it = idle_.find(cls);
    if (it != idle_.end() && !it->second.empty()) {
      LargeBuffer b = std::move(it->second.back());
      it->second.pop_back();
      stats_.idle_bytes -= static_cast<int64_t>(cls);
      ++stats_.reuses;
      return b;
    }
    ++stats_.allocations;
  }
  return LargeBuffer::Allocate(cls);
}

std::optional<BoundedBuffer> BufferPool::TryTakeWithin(MemoryBudget& bound, size_t size) {
  std::optional<MemoryBudget::Ticket> ticket = bound.TryAcquire(static_cast<int64_t>(TakenBytes(size)));
  if (!ticket) return std::nullopt;
  absl::StatusOr<LargeBuffer> buffer = Take(size);
  if (!buffer.ok()) return std::nullopt;  // the ticket goes back with it
  return BoundedBuffer{*std::move(buffer), *std::move(ticket)};
}

void BufferPool::Give(BoundedBuffer b) {
  Give(std::move(b.buffer));
  b.ticket.Release();
}

void BufferPool::Give(LargeBuffer buffer) {
  const size_t cls = buffer.size();
  if (cls < kClassBytes || cls != SizeClass(cls)) return;  // not one of ours: freed
  if (buffer.mapped()) ::madvise(buffer.data(), cls, MADV_FREE);  // advice only
  MutexLock l(&mu_);
  if (stats_.idle_bytes + static_cast<int64_t>(cls) > max_idle_bytes_) return;  // freed
  stats_.idle_bytes += static_cast<int64_t>(cls);
  idle_[cls].push_back(std::move(buffer));
}

BufferPool::Stats BufferPool::stats() const {
  MutexLock l(&mu_);
  return stats_;
}

}  // namespace ferry
