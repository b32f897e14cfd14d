// RuntimeHandle: the C++ side of ferry.Runtime, shared by everything made
// with it.
//
// A ferry::Runtime must outlive everything created with it, but Python
// destroys objects in whatever order their references drop. So the Python
// Runtime and every object that uses it (a TtlCache's refresh executor, a
// memory ticket; later files, walkers and transfers) hold one
// std::shared_ptr<RuntimeHandle>: the Runtime stops when the last of them
// goes, or earlier on close().
//
// Users of the Runtime that must not see it stop (a memory ticket; later an
// open file) hold a Pin: close() refuses with FailedPrecondition while any
// Pin exists. Users that can do without it (a cache's refresh-ahead: a
// dropped reload just lets the entry expire) post through PostBlocking,
// which drops the task once the Runtime is closed.
//
//   auto handle = RuntimeHandle::Create(options);
//   FERRY_ASSIGN_OR_RETURN(RuntimeHandle::Pin pin, handle->Acquire("open"));
//   pin.runtime().memory_budget().Acquire(n);
#ifndef FERRY_BINDINGS_PYTHON_RUNTIME_HANDLE_H_
#define FERRY_BINDINGS_PYTHON_RUNTIME_HANDLE_H_

#include <memory>
#include <string_view>

#include <pybind11/pybind11.h>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ferry/base/mutex.h"
#include "ferry/runtime/runtime.h"

namespace ferry::python {

// Thread-safe.
class RuntimeHandle : public std::enable_shared_from_this<RuntimeHandle> {
 public:
  // Keeps the Runtime running (close() fails) while it exists. Move-only.
  class Pin {
   public:
    Pin(Pin&& other) noexcept = default;
    Pin& operator=(Pin&& other) noexcept;
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ~Pin() { Reset(); }
    // REQUIRES: not moved from.
    Runtime& runtime() const { return *runtime_; }

   private:
    friend class RuntimeHandle;
    Pin(std::shared_ptr<RuntimeHandle> h, Runtime* rt) : handle_(std::move(h)), runtime_(rt) {}
    void Reset();
    std::shared_ptr<RuntimeHandle> handle_;
    Runtime* runtime_ = nullptr;
  };

  static std::shared_ptr<RuntimeHandle> Create(const RuntimeOptions& options);
  RuntimeHandle(const RuntimeHandle&) = delete;
  RuntimeHandle& operator=(const RuntimeHandle&) = delete;
  // Stops the Runtime if close() did not (releasing the GIL while it joins
  // its threads, which may be waiting for the GIL themselves).
  ~RuntimeHandle();

  // A Pin, or FailedPrecondition naming `operation` once the Runtime is closed.
  absl::StatusOr<Pin> Acquire(std::string_view operation);

  // Runs `fn` on the Runtime's blocking pool; once it is closed, destroys
  // `fn` unrun (outside the lock: destroying it may take the GIL).
  void PostBlocking(absl::AnyInvocable<void()> fn);

  // Stops the Runtime now and joins its threads; queued work is dropped.
  // FailedPrecondition while Pins exist. A second close() is OK.
  // REQUIRES: the GIL is not held (the threads joined may need it).
  absl::Status Close();

  bool closed() const;
  const RuntimeOptions& options() const { return options_; }

 private:
  explicit RuntimeHandle(const RuntimeOptions& options);
  void Unpin();

  const RuntimeOptions options_;
  mutable Mutex mu_;
  std::unique_ptr<Runtime> runtime_ ABSL_GUARDED_BY(mu_);  // null once closed
  int pins_ ABSL_GUARDED_BY(mu_) = 0;
};

// The handle of a ferry.Runtime object (TypeError for anything else).
// Defined in runtime.cc, where the Python class lives. REQUIRES: GIL held.
std::shared_ptr<RuntimeHandle> HandleOf(pybind11::handle runtime);

}  // namespace ferry::python

#endif  // FERRY_BINDINGS_PYTHON_RUNTIME_HANDLE_H_
