// The Runtime runs one io_context on `io_threads` threads (kept alive by a
// work guard) and a separate BlockingPool for blocking work, so a slow disk
// write or user loader never stalls socket I/O.
#include "ferry/runtime/runtime.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "asio/executor_work_guard.hpp"
#include "asio/io_context.hpp"
#include "asio/post.hpp"
#include "runtime/blocking_pool.h"

namespace ferry {

struct Runtime::Impl {
  explicit Impl(const RuntimeOptions& o)
      : options(o),
        budget(o.memory_budget_bytes),
        read_ahead(o.read_ahead_bytes >= 0 ? o.read_ahead_bytes : o.memory_budget_bytes / 4),
        buffers(o.idle_buffer_bytes >= 0 ? o.idle_buffer_bytes : o.memory_budget_bytes / 4),
        io(std::max(1, o.io_threads)),
        guard(asio::make_work_guard(io)),
        blocking(o.blocking_threads) {}

  RuntimeOptions options;
  // Declared before the executors so it is destroyed after them: handlers
  // still queued at shutdown may hold Tickets, and destroying those
  // handlers releases the Tickets into this budget.
  MemoryBudget budget;
  MemoryBudget read_ahead;  // as the budget
  BufferPool buffers;  // as the budget: outlives handlers that hold buffers
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  runtime_internal::BlockingPool blocking;
  std::vector<std::thread> io_threads;
};

Runtime::Runtime(const RuntimeOptions& options) : impl_(std::make_unique<Impl>(options)) {
  const int n = std::max(1, options.io_threads);
  impl_->io_threads.reserve(n);
  for (int i = 0; i < n; ++i) {
    impl_->io_threads.emplace_back([this] { impl_->io.run(); });
  }
}

Runtime::~Runtime() {
  impl_->guard.reset();
  impl_->io.stop();
  for (std::thread& t : impl_->io_threads) t.join();
  impl_->blocking.Stop();
}

asio::io_context& Runtime::io_context() { return impl_->io; }

void Runtime::Post(absl::AnyInvocable<void()> fn) { asio::post(impl_->io, std::move(fn)); }

void Runtime::PostBlocking(absl::AnyInvocable<void()> fn) {
  impl_->blocking.Post(std::move(fn));
}

bool Runtime::InIoThread() const { return impl_->io.get_executor().running_in_this_thread(); }

MemoryBudget& Runtime::memory_budget() { return impl_->budget; }

MemoryBudget& Runtime::read_ahead_budget() { return impl_->read_ahead; }

BufferPool& Runtime::buffer_pool() { return impl_->buffers; }

const RuntimeOptions& Runtime::options() const { return impl_->options; }

}  // namespace ferry
