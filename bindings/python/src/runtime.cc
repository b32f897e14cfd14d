// ferry.Runtime, ferry.MemoryBudget and ferry.MemoryTicket.
//
// The Python Runtime owns one reference to a RuntimeHandle (see
// runtime_handle.h); close() and the context manager stop the C++ Runtime
// with the GIL released, since its threads may be running Python callbacks
// that need the GIL to finish. An atexit hook closes a Runtime still open at
// interpreter exit, while its threads can still take the GIL (later, during
// finalization, CPython ends any thread that tries).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bindings.h"
#include "ferry/runtime/memory_budget.h"
#include "ferry/runtime/runtime.h"
#include "python_object.h"
#include "runtime_handle.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// The Python object ferry.Runtime. Only Python destroys it (GIL held).
class PyRuntime {
 public:
  explicit PyRuntime(const RuntimeOptions& options) {
    {
      py::gil_scoped_release nogil;  // starting threads
      handle_ = RuntimeHandle::Create(options);
    }
    std::weak_ptr<RuntimeHandle> weak = handle_;
    atexit_hook_ = py::cpp_function([weak] {
      std::shared_ptr<RuntimeHandle> h = weak.lock();
      if (h == nullptr) return;
      py::gil_scoped_release nogil;
      (void)h->Close();  // pinned runtimes stay up; their pins hold them
    });
    py::module_::import("atexit").attr("register")(atexit_hook_);
  }
  PyRuntime(const PyRuntime&) = delete;
  PyRuntime& operator=(const PyRuntime&) = delete;
  ~PyRuntime() {
    // Objects made with this runtime may keep it running: the hook then
    // stays, to stop it at exit.
    if (handle_.use_count() == 1) UnregisterAtExit();
    handle_.reset();  // the last reference stops the Runtime (GIL released)
  }

  void Close() {
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = handle_->Close();
    }
    ThrowIfError(s);
    UnregisterAtExit();
  }

  const std::shared_ptr<RuntimeHandle>& handle() const { return handle_; }

 private:
  void UnregisterAtExit() {
    if (!atexit_hook_) return;
    try {
      py::module_::import("atexit").attr("unregister")(atexit_hook_);
    } catch (const py::error_already_set&) {
      // Interpreter shutting down: nothing left to unregister from.
    }
    atexit_hook_ = py::object();
  }

  std::shared_ptr<RuntimeHandle> handle_;
  py::object atexit_hook_;
};

// ferry.MemoryBudget: a view of a Runtime's budget.
class PyMemoryBudget {
 public:
  explicit PyMemoryBudget(std::shared_ptr<RuntimeHandle> h) : handle_(std::move(h)) {}

  // One of the budget's readings, taken while the runtime is pinned open.
  template <typename T>
  T Read(T (MemoryBudget::*reading)() const) const {
    RuntimeHandle::Pin pin = ValueOrThrow(handle_->Acquire("MemoryBudget"));
    return (pin.runtime().memory_budget().*reading)();
  }

  std::shared_ptr<RuntimeHandle> handle_;
};

// ferry.MemoryTicket: bytes held under the budget until release().
class PyMemoryTicket {
 public:
  PyMemoryTicket(RuntimeHandle::Pin pin, MemoryBudget::Ticket ticket)
      : pin_(std::move(pin)), ticket_(std::move(ticket)) {}
  int64_t bytes() const { return ticket_ ? ticket_->bytes() : 0; }
  bool released() const { return !ticket_.has_value(); }
  void Release() {
    ticket_.reset();  // before the pin: the budget must outlive its tickets
    pin_.reset();
  }

 private:
  std::optional<RuntimeHandle::Pin> pin_;
  std::optional<MemoryBudget::Ticket> ticket_;
};

}  // namespace

std::shared_ptr<RuntimeHandle> HandleOf(py::handle runtime) {
  return runtime.cast<const PyRuntime&>().handle();
}

void RegisterRuntime(py::module_& m) {
  const RuntimeOptions defaults;

  py::class_<PyRuntime>(m, "Runtime", R"doc(
Where ferry's threads come from: an event loop with `io_threads` I/O
threads, a pool of `blocking_threads` for blocking work (and Python
callbacks such as refresh-ahead loaders), one MemoryBudget of
`memory_budget_bytes` for all transfers, and a pool that keeps up to
`idle_buffer_bytes` of transfer buffers for reuse (-1: a quarter of the
budget; 0: none). Read-ahead (the windows an NFS file fills before a
sequential reader asks) holds at most `read_ahead_bytes` over all open
files, taken only when free (-1: a quarter of the budget; 0: none).

Use it as a context manager, or call close(); objects made with it keep it
alive, so dropping the last reference in any order is safe.

    with ferry.Runtime(io_threads=2) as rt:
        cache = ferry.TtlCache(refresh_after=20, runtime=rt)
)doc")
      .def(py::init([](int io_threads, int blocking_threads, int64_t memory_budget_bytes,
                       int64_t idle_buffer_bytes, int64_t read_ahead_bytes) {
             return std::make_unique<PyRuntime>(RuntimeOptions{
                 .io_threads = io_threads,
                 .blocking_threads = blocking_threads,
                 .memory_budget_bytes = memory_budget_bytes,
                 .idle_buffer_bytes = idle_buffer_bytes,
                 .read_ahead_bytes = read_ahead_bytes,
             });
           }),
           py::kw_only(), py::arg("io_threads") = defaults.io_threads,
           py::arg("blocking_threads") = defaults.blocking_threads,
           py::arg("memory_budget_bytes") = defaults.memory_budget_bytes,
           py::arg("idle_buffer_bytes") = defaults.idle_buffer_bytes,
           py::arg("read_ahead_bytes") = defaults.read_ahead_bytes)
      .def("close", &PyRuntime::Close, R"doc(
Stops the threads now (work still queued is dropped). Objects made with
this runtime that can do without it degrade (a TtlCache stops refreshing
ahead); while one that cannot is open (a MemoryTicket), raises ferry.Error
with code "FailedPrecondition". Closing twice is fine.)doc")
      .def_property_readonly("closed", [](const PyRuntime& r) { return r.handle()->closed(); })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyRuntime& r, const py::object&, const py::object&, const py::object&) {
             r.Close();
             return false;
           })
      .def_property_readonly("io_threads",
                             [](const PyRuntime& r) { return r.handle()->options().io_threads; })
      .def_property_readonly(
          "blocking_threads", [](const PyRuntime& r) { return r.handle()->options().blocking_threads; })
      .def_property_readonly(
          "memory_budget_bytes",
          [](const PyRuntime& r) { return r.handle()->options().memory_budget_bytes; })
      .def_property_readonly(
          "idle_buffer_bytes",
          [](const PyRuntime& r) { return r.handle()->options().idle_buffer_bytes; })
      .def_property_readonly(
          "read_ahead_bytes",
          [](const PyRuntime& r) { return r.handle()->options().read_ahead_bytes; })
      .def_property_readonly(
          "memory_budget", [](const PyRuntime& r) { return PyMemoryBudget(r.handle()); },
          "This runtime's MemoryBudget.")
      .def("__repr__", [](const PyRuntime& r) {
        const RuntimeOptions& o = r.handle()->options();
        return absl::StrCat("ferry.Runtime(io_threads=", o.io_threads,
                            ", blocking_threads=", o.blocking_threads,
                            ", memory_budget_bytes=", o.memory_budget_bytes,
                            r.handle()->closed() ? ", closed" : "", ")");
      });

  py::class_<PyMemoryBudget>(m, "MemoryBudget", R"doc(
The bound on bytes held by all transfers of a Runtime. Python code that
buffers data for ferry can hold part of it with acquire().)doc")
      .def_property_readonly(
          "capacity", [](const PyMemoryBudget& b) { return b.Read(&MemoryBudget::capacity); })
      .def_property_readonly(
          "in_use", [](const PyMemoryBudget& b) { return b.Read(&MemoryBudget::in_use); })
      .def_property_readonly(
          "peak", [](const PyMemoryBudget& b) { return b.Read(&MemoryBudget::peak); })
      .def_property_readonly(
          "waiters", [](const PyMemoryBudget& b) { return b.Read(&MemoryBudget::waiters); })
      .def(
          "acquire",
          [](const PyMemoryBudget& b, int64_t nbytes, const py::object& timeout) {
            const absl::Duration wait = DurationFromPython(timeout, "MemoryBudget.acquire timeout");
            RuntimeHandle::Pin pin = ValueOrThrow(b.handle_->Acquire("MemoryBudget.acquire"));
            absl::StatusOr<MemoryBudget::Ticket> t;
            {
              py::gil_scoped_release nogil;
              const absl::Time deadline = wait == absl::InfiniteDuration()
                                              ? absl::InfiniteFuture()
                                              : absl::Now() + wait;
              t = pin.runtime().memory_budget().Acquire(nbytes, deadline);
            }
            return PyMemoryTicket(std::move(pin), ValueOrThrow(std::move(t)));
          },
          py::arg("nbytes"), py::arg("timeout") = py::none(), R"doc(
Blocks (GIL released) until `nbytes` are free, after earlier waiters; a
ticket holding them. TimeoutError (ferry.DeadlineExceededError) once
`timeout` seconds pass; ValueError if `nbytes` is negative or larger than
the whole budget.)doc")
      .def(
          "try_acquire",
          [](const PyMemoryBudget& b, int64_t nbytes) -> py::object {
            RuntimeHandle::Pin pin = ValueOrThrow(b.handle_->Acquire("MemoryBudget.try_acquire"));
            std::optional<MemoryBudget::Ticket> t = pin.runtime().memory_budget().TryAcquire(nbytes);
            if (!t) return py::none();
            return py::cast(PyMemoryTicket(std::move(pin), std::move(*t)));
          },
          py::arg("nbytes"), "A ticket for `nbytes` if they are free now and nobody waits; else None.");

  py::class_<PyMemoryTicket>(m, "MemoryTicket", R"doc(
Bytes held under a MemoryBudget until release() (or the end of a with
block). While it is held, its Runtime cannot be closed.)doc")
      .def_property_readonly("nbytes", &PyMemoryTicket::bytes)
      .def_property_readonly("released", &PyMemoryTicket::released)
      .def("release", &PyMemoryTicket::Release, "Gives the bytes back (idempotent).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyMemoryTicket& t, const py::object&, const py::object&,
                          const py::object&) {
        t.Release();
        return false;
      });
}

}  // namespace ferry::python
