// RpcPool's calls: one Call record from acceptance to completion, and the
// containers that hold them without allocating per call: an intrusive
// list (the wait queue, a connection's pending calls), an indexed deadline
// heap, and the slab that recycles the records. Private to RpcPool
// (rpc_pool_core.h); every field is guarded by PoolCore::mu_.
#ifndef FERRY_SRC_RPC_RPC_CALL_H_
#define FERRY_SRC_RPC_RPC_CALL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ferry/rpc/rpc_pool.h"

namespace ferry::rpc_pool_internal {

using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;
constexpr SteadyTime kNoDeadline = SteadyTime::max();

inline SteadyTime DeadlineAfter(SteadyTime now, absl::Duration timeout) {
  // Anything over ~10 years (or infinite) means no deadline, and keeps the
  // addition below from overflowing.
  if (timeout >= absl::Hours(24 * 365 * 10)) return kNoDeadline;
  if (timeout < absl::ZeroDuration()) timeout = absl::ZeroDuration();
  return now + std::chrono::duration_cast<SteadyClock::duration>(absl::ToChronoNanoseconds(timeout));
}

// kHeld: its reply came while a write of its payload was still in
// progress; it ends when that write does (Call::writing).
enum class CallState : uint8_t { kFree, kQueued, kPending, kInFlight, kHeld };

// Connections to start writing, collected under the lock and kicked after.
// Inline storage: a call's hot path allocates nothing for it.
using Kicks = absl::InlinedVector<int, 8>;
// Connections to recycle (index, session generation), collected under the
// lock and reset on their strands after.
using Resets = std::vector<std::pair<int, uint64_t>>;

// One call, from acceptance to completion. Lives in PoolCore's slab; every
// field is guarded by PoolCore::mu_ (not annotated: reached by pointer).
struct Call {
  Call* prev = nullptr;  // intrusive links: the queue or a pending list
  Call* next = nullptr;
  uint32_t slot = 0;
  uint32_t generation = 0;  // bumped on each reuse; with slot forms the RpcCallId
  CallState state = CallState::kFree;
  bool idempotent = false;
  bool has_xid = false;
  uint32_t xid = 0;
  int attempts = 0;      // sends so far
  int max_attempts = 1;
  int heap_index = -1;   // in the deadline heap, or -1
  int conn = -1;         // connection index while pending or in flight
  size_t bytes = 0;      // request size, for the queue's byte bound
  // While queued: accepted (or re-queued) + timeout; once written: sent +
  // timeout, so time spent queued behind a busy connection is not taken
  // from the server's time to answer.
  SteadyTime deadline = kNoDeadline;
  absl::Duration timeout;
  SteadyTime sent_steady{};  // the last write of the call
  // Went unanswered past a deadline once and was sent again; the next
  // deadline ends it.
  bool resent_after_timeout = false;
  absl::Time accepted_at;
  absl::Time sent_at;
  std::string request;
  // A large request that must be kept for a resend (see rpc_wire.cc): its
  // bytes move here at the first send and writes share them instead of
  // copying. Then `request` is empty.
  std::shared_ptr<std::string> shared_request;
  Callback<std::string> done;
  RpcReplyPlacer placer;  // optional
  // Sent inside the record at payload_at of the request, from the caller's
  // memory (RpcCallOptions::payload).
  std::string_view payload;
  size_t payload_at = 0;
  // Or from a file (RpcCallOptions::payload_file; fd -1: none).
  RpcCallOptions::FilePayload payload_file;
  // The caller's memory is in the connection's I/O, so only that
  // connection's strand may end the call: its reply is being placed into
  // it (Session::placing_call), or a write of its payload is in progress
  // (Session::writing_calls).
  bool placing = false;
  bool writing = false;
  bool pinned() const { return placing || writing; }
  // Set when it was cancelled or timed out while pinned: the status it
  // ends with once its connection has closed.
  absl::Status abandoned;
  std::string held_reply;  // kHeld
};

// A doubly linked list threaded through Call::prev/next.
class CallList {
 public:
  bool empty() const { return head_ == nullptr; }
  size_t size() const { return size_; }
  Call* front() const { return head_; }
  void PushBack(Call* c) { InsertBefore(c, nullptr); }
  void PushFront(Call* c) { InsertBefore(c, head_); }
  // Links `c` in before `at` (at the back when `at` is null).
  void InsertBefore(Call* c, Call* at) {
    c->next = at;
    c->prev = at ? at->prev : tail_;
    (c->prev ? c->prev->next : head_) = c;
    (at ? at->prev : tail_) = c;
    ++size_;
  }
  void Remove(Call* c) {
    (c->prev ? c->prev->next : head_) = c->next;
    (c->next ? c->next->prev : tail_) = c->prev;
    c->prev = c->next = nullptr;
    --size_;
  }
  Call* PopFront() {
    Call* c = head_;
    if (c != nullptr) Remove(c);
    return c;
  }
  // Moves every call of `other` to the back of this list, keeping order.
  void SpliceBack(CallList* other) {
    while (Call* c = other->PopFront()) PushBack(c);
  }
  // Moves every call of `other` to the front of this list, keeping order.
  void SpliceFront(CallList* other) {
    while (Call* c = other->tail_) {
      other->Remove(c);
      PushFront(c);
    }
  }

 private:
  Call* head_ = nullptr;
  Call* tail_ = nullptr;
  size_t size_ = 0;
};

// A binary min-heap of calls by deadline; each call knows its index, so a
// call that completes early leaves in O(log n) without a search.
class DeadlineHeap {
 public:
  bool empty() const { return heap_.empty(); }
  Call* top() const { return heap_.front(); }
  void Push(Call* c) {
    c->heap_index = static_cast<int>(heap_.size());
    heap_.push_back(c);
    SiftUp(c->heap_index);
  }
  void Remove(Call* c) {
    const int i = c->heap_index;
    if (i < 0) return;
    c->heap_index = -1;
    Call* last = heap_.back();
    heap_.pop_back();
    if (last == c) return;
    heap_[i] = last;
    last->heap_index = i;
    SiftDown(i);
    SiftUp(last->heap_index);
  }
  // After `c`'s deadline moved later (it was sent): restores the order.
  void Postponed(Call* c) {
    if (c->heap_index >= 0) SiftDown(c->heap_index);
  }

 private:
  void Place(int i, Call* c) {
    heap_[i] = c;
    c->heap_index = i;
  }
  void SiftUp(int i) {
    Call* c = heap_[i];
    while (i > 0) {
      const int parent = (i - 1) / 2;
      if (heap_[parent]->deadline <= c->deadline) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, c);
  }
  void SiftDown(int i) {
    const int n = static_cast<int>(heap_.size());
    Call* c = heap_[i];
    for (;;) {
      int child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1]->deadline < heap_[child]->deadline) ++child;
      if (c->deadline <= heap_[child]->deadline) break;
      Place(i, heap_[child]);
      i = child;
    }
    Place(i, c);
  }
  std::vector<Call*> heap_;
};

// Recycles Call records: chunks are never freed before the pool, so a slot
// index stays valid for Cancel's lookup. A chunk's records are constructed
// one at a time, when first needed, so its pages are touched only as far
// as calls are used: constructing all 256 up front faulted in ~10 pages
// per pool, ~20 of a 1-byte get's page faults, which makes three calls on
// each of its two pools (#33).
class CallSlab {
 public:
  CallSlab() = default;
  CallSlab(const CallSlab&) = delete;
  CallSlab& operator=(const CallSlab&) = delete;
  ~CallSlab() {
    for (uint32_t slot = 0; slot < constructed_; ++slot) At(slot)->~Call();
    for (Call* chunk : chunks_) std::allocator<Call>().deallocate(chunk, kChunk);
  }

  Call* Alloc() {
    Call* c = free_;
    if (c != nullptr) {
      free_ = c->next;
      c->next = nullptr;
    } else {
      c = Construct();
    }
    if (++c->generation == 0) c->generation = 1;  // 0 would make a 0 RpcCallId
    return c;
  }
  void Free(Call* c) {
    c->state = CallState::kFree;
    c->request = std::string();  // release the bytes now, not at reuse
    c->shared_request.reset();
    c->done = nullptr;
    c->placer = nullptr;
    c->payload = {};
    c->payload_at = 0;
    c->payload_file = {};
    c->placing = false;
    c->writing = false;
    c->abandoned = absl::OkStatus();
    c->held_reply = std::string();
    c->heap_index = -1;
    c->conn = -1;
    c->has_xid = false;
    c->attempts = 0;
    c->resent_after_timeout = false;
    c->prev = nullptr;
    c->next = free_;
    free_ = c;
  }
  // The call in `slot`, or null if there is no such slot.
  Call* Find(uint32_t slot) const { return slot < constructed_ ? At(slot) : nullptr; }

 private:
  // 256 calls (~40 KiB) per chunk: few chunks for thousands in flight.
  static constexpr uint32_t kChunk = 256;
  Call* At(uint32_t slot) const { return chunks_[slot / kChunk] + slot % kChunk; }
  Call* Construct() {
    // Uninitialised storage: malloc touches none of it.
    if (constructed_ % kChunk == 0) chunks_.push_back(std::allocator<Call>().allocate(kChunk));
    Call* c = new (At(constructed_)) Call();
    c->slot = constructed_++;
    return c;
  }
  std::vector<Call*> chunks_;
  uint32_t constructed_ = 0;
  Call* free_ = nullptr;
};

// A callback and its result, run after the lock is dropped.
struct Completion {
  Callback<std::string> done;
  absl::StatusOr<std::string> result;
};

inline void RunCompletions(std::vector<Completion>* completions) {
  for (Completion& c : *completions) c.done(std::move(c.result));
  completions->clear();
}

}  // namespace ferry::rpc_pool_internal

#endif  // FERRY_SRC_RPC_RPC_CALL_H_
