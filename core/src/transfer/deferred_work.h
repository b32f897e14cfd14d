// DeferredWork: what a transfer finds to do while holding its lock but must
// do after dropping it: giving buffers back to the pool (which may unmap
// them, a system call),
// returning memory tickets (a release may run another
// transfer's budget callback) and running completion callbacks (which may
// call back into the transfer). Private to the transfer code. Declare it
// before the MutexLock so it runs after the lock is released. Not
// thread-safe; one per locked section.
#ifndef FERRY_SRC_TRANSFER_DEFERRED_WORK_H_
#define FERRY_SRC_TRANSFER_DEFERRED_WORK_H_

#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "ferry/base/large_buffer.h"
#include "ferry/runtime/buffer_pool.h"
#include "ferry/runtime/memory_budget.h"

namespace ferry::internal {

struct DeferredWork {
  // A buffer to give back to its pool.
  struct Buffer {
    BufferPool* pool;
    LargeBuffer bytes;
  };
  // Given back before the tickets are returned, so that whoever the
  // returned budget wakes finds the buffer in the pool.
  std::vector<Buffer> buffers;
  std::vector<MemoryBudget::Ticket> tickets;
  std::vector<absl::AnyInvocable<void()>> calls;
  ~DeferredWork() {
    for (Buffer& b : buffers) b.pool->Give(std::move(b.bytes));
    buffers.clear();
    tickets.clear();
    for (auto& c : calls) c();
  }
};

}  // namespace ferry::internal

#endif  // FERRY_SRC_TRANSFER_DEFERRED_WORK_H_
