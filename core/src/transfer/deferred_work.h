// DeferredWork: what a transfer finds to do while holding its lock but must
// do after dropping it: returning memory tickets (a release may run another
// transfer's budget callback) and running completion callbacks (which may
// call back into the transfer). Private to the transfer code. Declare it
// before the MutexLock so it runs after the lock is released. Not
// thread-safe; one per locked section.
#ifndef FERRY_SRC_TRANSFER_DEFERRED_WORK_H_
#define FERRY_SRC_TRANSFER_DEFERRED_WORK_H_

#include <vector>

#include "absl/functional/any_invocable.h"
#include "ferry/runtime/memory_budget.h"

namespace ferry::internal {

struct DeferredWork {
  std::vector<MemoryBudget::Ticket> tickets;
  std::vector<absl::AnyInvocable<void()>> calls;
  ~DeferredWork() {
    tickets.clear();
    for (auto& c : calls) c();
  }
};

}  // namespace ferry::internal

#endif  // FERRY_SRC_TRANSFER_DEFERRED_WORK_H_
