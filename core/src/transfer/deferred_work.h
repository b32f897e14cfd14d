// DeferredWork: what a transfer finds to do while holding its lock but must
// do after dropping it: freeing chunk buffers (munmap is a system call),
// returning memory tickets (a release may run another
// transfer's budget callback) and running completion callbacks (which may
// call back into the transfer). Private to the transfer code. Declare it
// before the MutexLock so it runs after the lock is released. Not
// thread-safe; one per locked section.
#ifndef FERRY_SRC_TRANSFER_DEFERRED_WORK_H_
#define FERRY_SRC_TRANSFER_DEFERRED_WORK_H_

#include <vector>

#include "absl/functional/any_invocable.h"
#include "ferry/base/large_buffer.h"
#include "ferry/runtime/memory_budget.h"

namespace ferry::internal {

struct DeferredWork {
  std::vector<LargeBuffer> buffers;  // freed before their tickets are returned
  std::vector<MemoryBudget::Ticket> tickets;
  std::vector<absl::AnyInvocable<void()>> calls;
  ~DeferredWork() {
    buffers.clear();
    tickets.clear();
    for (auto& c : calls) c();
  }
};

}  // namespace ferry::internal

#endif  // FERRY_SRC_TRANSFER_DEFERRED_WORK_H_
