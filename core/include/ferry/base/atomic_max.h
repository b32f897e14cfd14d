// AtomicMax: raises an atomic to `value` if `value` is larger, from any
// number of threads at once (a high-water mark: the end of the furthest
// write, the most calls seen in flight).
//
//   std::atomic<int64_t> written_end{0};
//   ferry::AtomicMax(written_end, offset + n);
//
// Thread-safety: lock-free; concurrent calls keep the largest value.
#ifndef FERRY_BASE_ATOMIC_MAX_H_
#define FERRY_BASE_ATOMIC_MAX_H_

#include <atomic>

namespace ferry {

template <typename T>
void AtomicMax(std::atomic<T>& target, T value) {
  T seen = target.load(std::memory_order_relaxed);
  while (value > seen && !target.compare_exchange_weak(seen, value)) {
  }
}

}  // namespace ferry

#endif  // FERRY_BASE_ATOMIC_MAX_H_
