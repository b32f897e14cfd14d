// MemoryBudget keeps a FIFO queue of waiters. A release grants bytes to the
// head of the queue for as long as the head fits, so a large request at the
// head holds back smaller ones behind it (no starvation). Callbacks of
// async waiters run after the lock is dropped, on the releasing thread.
#include "ferry/runtime/memory_budget.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ferry {

MemoryBudget::Ticket& MemoryBudget::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    Release();
    budget_ = o.budget_;
    bytes_ = o.bytes_;
    o.budget_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void MemoryBudget::Ticket::Release() {
  if (budget_ != nullptr) {
    budget_->Release(bytes_);
    budget_ = nullptr;
    bytes_ = 0;
  }
}

MemoryBudget::MemoryBudget(int64_t capacity_bytes) : capacity_(std::max<int64_t>(capacity_bytes, 0)) {}

MemoryBudget::~MemoryBudget() {
  // A Ticket outliving its budget would later release into freed memory;
  // catch the broken REQUIRES here, in debug and sanitizer builds.
  MutexLock l(&mu_);
  assert(in_use_ == 0 && "MemoryBudget destroyed while Tickets are outstanding");
  assert(queue_.empty() && "MemoryBudget destroyed with waiters queued");
}

absl::Status MemoryBudget::Check(int64_t bytes) const {
  if (bytes < 0 || bytes > capacity_) {
    return absl::InvalidArgumentError(absl::StrCat("memory budget: request for ", bytes,
                                                   " bytes can never fit a budget of ",
                                                   capacity_, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<MemoryBudget::Ticket> MemoryBudget::Acquire(int64_t bytes, absl::Time deadline) {
  if (absl::Status s = Check(bytes); !s.ok()) return s;
  MutexLock l(&mu_);
  if (queue_.empty() && in_use_ + bytes <= capacity_) {
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
    return Ticket(this, bytes);
  }
  Waiter w{bytes};
  auto it = queue_.insert(queue_.end(), &w);
  while (!w.granted) {
    if (!cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  if (w.granted) return Ticket(this, bytes);
  queue_.erase(it);
  // Our leaving may let the waiters behind us through.
  std::list<std::pair<absl::AnyInvocable<void(absl::StatusOr<Ticket>)>, int64_t>> ready;
  GrantLocked(&ready);
  mu_.Unlock();
  for (auto& [cb, n] : ready) cb(Ticket(this, n));
  mu_.Lock();
  return absl::DeadlineExceededError(absl::StrCat("memory budget: ", bytes,
                                                  " bytes not free before the deadline (",
                                                  in_use_, " of ", capacity_, " in use)"));
}

std::optional<MemoryBudget::Ticket> MemoryBudget::TryAcquire(int64_t bytes) {
  if (!Check(bytes).ok()) return std::nullopt;
  MutexLock l(&mu_);
  if (!queue_.empty() || in_use_ + bytes > capacity_) return std::nullopt;
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return Ticket(this, bytes);
}

void MemoryBudget::AcquireAsync(int64_t bytes,
                                absl::AnyInvocable<void(absl::StatusOr<Ticket>)> done) {
  if (absl::Status s = Check(bytes); !s.ok()) {
    done(s);
    return;
  }
  {
    MutexLock l(&mu_);
    if (!(queue_.empty() && in_use_ + bytes <= capacity_)) {
      queue_.push_back(new Waiter{bytes, false, std::move(done)});
      return;
    }
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
  }
  done(Ticket(this, bytes));
}

void MemoryBudget::GrantLocked(
    std::list<std::pair<absl::AnyInvocable<void(absl::StatusOr<Ticket>)>, int64_t>>* ready) {
  bool woke = false;
  while (!queue_.empty() && in_use_ + queue_.front()->bytes <= capacity_) {
    Waiter* w = queue_.front();
    queue_.pop_front();
    in_use_ += w->bytes;
    peak_ = std::max(peak_, in_use_);
    if (w->done) {
      ready->emplace_back(std::move(w->done), w->bytes);
      delete w;
    } else {
      w->granted = true;
      woke = true;
    }
  }
  if (woke) cv_.SignalAll();
}

void MemoryBudget::Release(int64_t bytes) {
  std::list<std::pair<absl::AnyInvocable<void(absl::StatusOr<Ticket>)>, int64_t>> ready;
  {
    MutexLock l(&mu_);
    in_use_ -= bytes;
    GrantLocked(&ready);
  }
  for (auto& [cb, n] : ready) cb(Ticket(this, n));
}

int64_t MemoryBudget::in_use() const {
  MutexLock l(&mu_);
  return in_use_;
}

int64_t MemoryBudget::peak() const {
  MutexLock l(&mu_);
  return peak_;
}

int MemoryBudget::waiters() const {
  MutexLock l(&mu_);
  return static_cast<int>(queue_.size());
}

}  // namespace ferry
