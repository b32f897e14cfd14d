// Runtime: the only place ferry's threads come from.
//
// A Runtime owns the asio io_context and its I/O threads, a small pool for
// blocking work (disk, user loaders), the process's MemoryBudget and the
// BufferPool that recycles transfer buffers. Users
// create one and pass it to every pool, client and transfer; nothing in
// ferry is global and nothing starts threads on its own.
//
//   ferry::Runtime rt({.io_threads = 1, .memory_budget_bytes = 512 << 20});
//   auto pool = ferry::RpcPool::Create(rt, ...);
//
// Completion callbacks run on I/O threads and must not block; hand blocking
// work to PostBlocking.
#ifndef FERRY_RUNTIME_RUNTIME_H_
#define FERRY_RUNTIME_RUNTIME_H_

#include <cstdint>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "ferry/runtime/buffer_pool.h"
#include "ferry/runtime/memory_budget.h"

namespace asio {
class io_context;
}  // namespace asio

namespace ferry {

struct RuntimeOptions {
  // Threads running the io_context. One thread drives >300k small calls/s
  // (0.65 us of CPU per pipelined call); a second mostly adds cross-thread
  // hand-offs: against nfs-ganesha on 2 cores, 1 thread cost 9.7 us of
  // client CPU per NULL call and gave 20 % more calls/s than 2 threads
  // (18.9 us), because the server got the CPU back. Raise it for many busy
  // connections on a many-core client.
  int io_threads = 1;
  // Threads for blocking work (file I/O, user-supplied loaders).
  int blocking_threads = 4;
  // Bytes all transfers of this Runtime may hold at once.
  int64_t memory_budget_bytes = int64_t{512} << 20;
  // Most bytes of idle chunk and part buffers kept for reuse (BufferPool),
  // outside the budget. -1: a quarter of memory_budget_bytes, one
  // transfer's requests in flight with the S3 defaults; 0: none kept.
  int64_t idle_buffer_bytes = -1;
  // Most bytes that read-ahead (the windows an NFS file fills before a
  // sequential reader asks, in 2 MiB buffers, so under 2 MiB means none)
  // may hold at once, over all open files. Taken only when free and never
  // waited for, so it cannot stall a transfer: a file that finds none
  // reads from the server as asked. An idle open file keeps its windows
  // until its next read or its close. iRODS streams of filesystems made
  // through the registry keep their read-ahead buffer (8 MiB, more for a
  // larger reply asked ahead) under this bound too, while they have bytes
  // read ahead; S3 downloads are under the budget instead. -1: a quarter
  // of memory_budget_bytes; 0: no read-ahead into buffers (iRODS still
  // asks for large pieces ahead, each landing in its reader's memory).
  int64_t read_ahead_bytes = -1;
};

// Thread-safe. REQUIRES: everything created with a Runtime (pools, clients,
// transfers) is destroyed before it.
class Runtime {
 public:
  explicit Runtime(const RuntimeOptions& options = {});
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  // Stops the I/O threads and joins every thread. Work still queued is
  // dropped, not run.
  ~Runtime();

  // The event loop; sockets and timers of ferry's clients live here.
  asio::io_context& io_context();

  // Runs `fn` on an I/O thread. `fn` must not block.
  void Post(absl::AnyInvocable<void()> fn);
  // Runs `fn` on the blocking pool.
  void PostBlocking(absl::AnyInvocable<void()> fn);
  // True on one of this Runtime's I/O threads (blocking there would stall I/O).
  bool InIoThread() const;

  MemoryBudget& memory_budget();
  // RuntimeOptions::read_ahead_bytes; only ever TryAcquire'd.
  MemoryBudget& read_ahead_budget();
  BufferPool& buffer_pool();
  const RuntimeOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry

#endif  // FERRY_RUNTIME_RUNTIME_H_
