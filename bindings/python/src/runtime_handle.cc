// RuntimeHandle: a mutex around the Runtime's pointer and a count of pins.
// PostBlocking posts under the lock, so Close (which takes the pointer out
// under the same lock) never races a post into a Runtime being destroyed;
// the Runtime itself is destroyed outside the lock, because joining its
// threads may wait for tasks that post again.
#include "runtime_handle.h"

#include <utility>

#include <pybind11/pybind11.h>

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"

namespace ferry::python {

RuntimeHandle::Pin& RuntimeHandle::Pin::operator=(Pin&& other) noexcept {
  if (this != &other) {
    Reset();
    handle_ = std::move(other.handle_);
    runtime_ = std::exchange(other.runtime_, nullptr);
  }
  return *this;
}

void RuntimeHandle::Pin::Reset() {
  if (handle_ == nullptr) return;
  handle_->Unpin();
  runtime_ = nullptr;
  handle_.reset();  // may be the last reference: the handle then stops the Runtime
}

std::shared_ptr<RuntimeHandle> RuntimeHandle::Create(const RuntimeOptions& options) {
  return std::shared_ptr<RuntimeHandle>(new RuntimeHandle(options));
}

RuntimeHandle::RuntimeHandle(const RuntimeOptions& options)
    : options_(options), runtime_(std::make_unique<Runtime>(options)) {}

RuntimeHandle::~RuntimeHandle() {
  std::unique_ptr<Runtime> rt;
  {
    MutexLock l(&mu_);
    rt = std::move(runtime_);
  }
  if (rt == nullptr) return;
  if (PyGILState_Check() != 0) {
    pybind11::gil_scoped_release nogil;
    rt.reset();
  } else {
    rt.reset();
  }
}

absl::StatusOr<RuntimeHandle::Pin> RuntimeHandle::Acquire(std::string_view operation) {
  MutexLock l(&mu_);
  if (runtime_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(ToAbsl(operation), ": the ferry.Runtime is closed"));
  }
  ++pins_;
  return Pin(shared_from_this(), runtime_.get());
}

void RuntimeHandle::Unpin() {
  MutexLock l(&mu_);
  --pins_;
}

void RuntimeHandle::PostBlocking(absl::AnyInvocable<void()> fn) {
  {
    MutexLock l(&mu_);
    if (runtime_ != nullptr) {
      runtime_->PostBlocking(std::move(fn));
      return;
    }
  }
  fn = nullptr;  // closed: dropped, outside the lock
}

absl::Status RuntimeHandle::Close() {
  std::unique_ptr<Runtime> rt;
  {
    MutexLock l(&mu_);
    if (pins_ > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Runtime.close: ", pins_,
          " object(s) made with this runtime are still open (memory tickets, files); "
          "release or close them first"));
    }
    rt = std::move(runtime_);
  }
  rt.reset();  // joins the threads; queued work is dropped
  return absl::OkStatus();
}

bool RuntimeHandle::closed() const {
  MutexLock l(&mu_);
  return runtime_ == nullptr;
}

}  // namespace ferry::python
