// MemoryBudget: one bound on the bytes held by all transfers of a Runtime.
//
// Downloads, uploads and walk batches take a Ticket for every buffer before
// they allocate it and give it back when the buffer is freed. Work that
// cannot get budget waits (blocking, with a deadline, or through a callback);
// nothing allocates past the budget. This is the "buffer ticket" idea of
// aws-c-s3: one budget for the process, not one per handle, because running
// out of memory is the commonest complaint about S3 mounts.
//
//   ferry::MemoryBudget budget(256 << 20);
//   FERRY_ASSIGN_OR_RETURN(ferry::MemoryBudget::Ticket t, budget.Acquire(8 << 20));
//   std::string chunk(8 << 20, '\0');      // covered by t until t is destroyed
//
// Waiters are served first come, first served, so one large request is not
// starved by a stream of small ones.
#ifndef FERRY_RUNTIME_MEMORY_BUDGET_H_
#define FERRY_RUNTIME_MEMORY_BUDGET_H_

#include <cstdint>
#include <list>
#include <optional>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/base/mutex.h"

namespace ferry {

// Thread-safe. REQUIRES: every Ticket is destroyed before its MemoryBudget.
class MemoryBudget {
 public:
  // Bytes held under the budget; released on destruction or Release().
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr; o.bytes_ = 0; }
    Ticket& operator=(Ticket&& o) noexcept;
    ~Ticket() { Release(); }
    int64_t bytes() const { return bytes_; }
    // Gives the bytes back now (idempotent).
    void Release();

   private:
    friend class MemoryBudget;
    Ticket(MemoryBudget* b, int64_t n) : budget_(b), bytes_(n) {}
    MemoryBudget* budget_ = nullptr;
    int64_t bytes_ = 0;
  };

  explicit MemoryBudget(int64_t capacity_bytes);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;
  ~MemoryBudget();

  // Blocks until `bytes` are available (after earlier waiters), or until
  // `deadline` (DeadlineExceeded). A request larger than the whole budget,
  // or negative, is InvalidArgument: it could never be served.
  absl::StatusOr<Ticket> Acquire(int64_t bytes, absl::Time deadline = absl::InfiniteFuture());

  // Takes `bytes` now if they are free and nobody is waiting; else nullopt.
  std::optional<Ticket> TryAcquire(int64_t bytes);

  // Calls `done` with a ticket once `bytes` are available: at once on this
  // thread if they are, otherwise on the thread whose release frees them.
  // `done` must not block. Errors as for Acquire.
  void AcquireAsync(int64_t bytes, absl::AnyInvocable<void(absl::StatusOr<Ticket>)> done);

  int64_t capacity() const { return capacity_; }
  int64_t in_use() const;
  // The most bytes ever held at once.
  int64_t peak() const;
  int waiters() const;

 private:
  struct Waiter {
    int64_t bytes;
    bool granted = false;
    absl::AnyInvocable<void(absl::StatusOr<Ticket>)> done;  // empty for blocking waiters
  };
  void Release(int64_t bytes);
  // Grants to the head of the queue while it fits; returns callbacks to run
  // (with their tickets) after the lock is dropped.
  void GrantLocked(std::list<std::pair<absl::AnyInvocable<void(absl::StatusOr<Ticket>)>, int64_t>>* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Check(int64_t bytes) const;

  const int64_t capacity_;
  mutable Mutex mu_;
  CondVar cv_;
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
  std::list<Waiter*> queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ferry

#endif  // FERRY_RUNTIME_MEMORY_BUDGET_H_
