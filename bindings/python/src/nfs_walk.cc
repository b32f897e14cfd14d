// ferry._core._NfsWalk: ferry::nfs::WalkTree as a Python iterator of
// records.proto WalkBatch bytes (ferry/nfs.py decodes them and is the API).
//
// The walk runs on one of the Runtime's blocking threads, without the GIL,
// and hands over full batches only (WalkOptions::min_batch_entries): each
// batch costs a serialization, a wake-up of the Python thread and a decode.
// Its callback converts each batch with ferry::nfs::SerializeWalkBatch (the
// converter Java will use too) and hands the bytes to a small queue; while
// the queue is full the callback waits, and since WalkTree sends no new
// READDIRPLUS while its callback is behind, the walk pauses with Python.
// One batch is held back so the final one can carry `last`. next() waits
// for bytes with the GIL released. close() (also on drop) tells the callback
// to return false, which stops the walk, and waits for the task to finish,
// so nothing runs once close() returns. Connecting happens in the
// constructor, so a bad URL or an unreachable server raises right away; an
// error resolving the root is raised by next() after the batches before it.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional uid, gid

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bindings.h"
#include "ferry/base/mutex.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_url.h"
#include "ferry/nfs/tree_walker.h"
#include "ferry/nfs/walk_records.h"
#include "nfs_url_args.h"
#include "python_object.h"
#include "runtime_handle.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// Serialized batches waiting for Python before the walk pauses. Two keep
// the walker busy while Python decodes one, and bound memory at about
// (2 + 1 held back + the walker's own queue) x batch_entries entries.
constexpr size_t kMaxQueuedBatches = 2;

struct NfsWalkConfig {
  std::string url;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  nfs::WalkOptions walk;
  nfs::NfsClientOptions client;
};

// Shared by the Python object (owner) and the walk task (which only uses it
// until it sets finished_, and the owner waits for that before dropping it).
// Thread-safe.
class WalkChannel {
 public:
  // Walk task: queues `bytes`, waiting while the queue is full. False once
  // the consumer closed (the walk should stop).
  bool Push(std::string bytes) {
    MutexLock l(&mu_);
    while (!closed_ && queue_.size() >= kMaxQueuedBatches) cv_.Wait(&mu_);
    if (closed_) return false;
    queue_.push_back(std::move(bytes));
    cv_.SignalAll();
    return true;
  }
  bool closed() {
    MutexLock l(&mu_);
    return closed_;
  }
  // Walk task, its last touch: the outcome, then nothing more.
  void Finish(absl::Status status, std::optional<nfs::WalkStats> stats) {
    MutexLock l(&mu_);
    status_ = std::move(status);
    stats_ = stats;
    finished_ = true;
    cv_.SignalAll();
  }

  // Consumer: the next bytes; nullopt at the end, with *status the walk's
  // outcome (reported once: later calls see OK).
  std::optional<std::string> Pop(absl::Status* status) {
    MutexLock l(&mu_);
    while (queue_.empty() && !finished_) cv_.Wait(&mu_);
    if (!queue_.empty()) {
      std::string bytes = std::move(queue_.front());
      queue_.pop_front();
      cv_.SignalAll();
      return bytes;
    }
    *status = std::exchange(status_, absl::OkStatus());
    return std::nullopt;
  }
  // Consumer: stops the walk (Push returns false) and waits for the task.
  void CloseAndWait() {
    MutexLock l(&mu_);
    closed_ = true;
    queue_.clear();
    cv_.SignalAll();
    while (!finished_) cv_.Wait(&mu_);
  }
  std::optional<nfs::WalkStats> stats() {
    MutexLock l(&mu_);
    return stats_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::optional<nfs::WalkStats> stats_ ABSL_GUARDED_BY(mu_);
};

// Runs the walk; if destroyed unrun (a Runtime that dropped it), still
// finishes the channel, so the owner never waits forever.
class WalkTask {
 public:
  WalkTask(WalkChannel* channel, nfs::NfsClient* client, nfs::WalkOptions options, uint64_t walk_id)
      : channel_(channel), client_(client), options_(options), walk_id_(walk_id) {}
  WalkTask(WalkTask&& other) noexcept
      : channel_(std::exchange(other.channel_, nullptr)),
        client_(other.client_),
        options_(other.options_),
        walk_id_(other.walk_id_) {}
  WalkTask(const WalkTask&) = delete;
  WalkTask& operator=(const WalkTask&) = delete;
  WalkTask& operator=(WalkTask&&) = delete;
  ~WalkTask() {
    if (channel_ != nullptr) {
      channel_->Finish(absl::CancelledError("nfs.walk: the ferry.Runtime dropped the walk"),
                       std::nullopt);
    }
  }

  void operator()() {
    WalkChannel* channel = std::exchange(channel_, nullptr);
    nfs::WalkBatchContext context{.walk_id = walk_id_};
    std::optional<nfs::WalkBatch> held;  // sent once the next one (or the end) is known
    auto send_held = [&](bool last) {
      context.last = last;
      const bool more = channel->Push(nfs::SerializeWalkBatch(*held, context));
      ++context.sequence;
      held.reset();
      return more;
    };
    absl::StatusOr<nfs::WalkStats> stats =
        nfs::WalkTree(*client_, "", options_, [&](nfs::WalkBatch& batch) {
          if (held.has_value() && !send_held(false)) return false;
          held = std::move(batch);
          return !channel->closed();
        });
    if (stats.ok() && !stats->stopped_early) {
      if (!held.has_value()) held.emplace();  // an empty tree: one empty, last batch
      send_held(true);
    } else if (!stats.ok() && held.has_value()) {
      send_held(false);  // what was read before the error
    }
    channel->Finish(stats.status(), stats.ok() ? std::optional<nfs::WalkStats>(*stats)
                                               : std::nullopt);
  }

 private:
  WalkChannel* channel_;
  nfs::NfsClient* client_;
  nfs::WalkOptions options_;
  uint64_t walk_id_;
};

// ferry._core._NfsWalk. Only Python uses it (GIL held on entry).
class PyNfsWalk {
 public:
  PyNfsWalk(const py::object& runtime, NfsWalkConfig config) {
    std::shared_ptr<RuntimeHandle> handle = HandleOf(runtime);
    absl::Status status;
    {
      py::gil_scoped_release nogil;
      status = Start(*handle, std::move(config));
    }
    if (!status.ok()) {
      Release();
      ThrowStatus(status);
    }
  }
  PyNfsWalk(const PyNfsWalk&) = delete;
  PyNfsWalk& operator=(const PyNfsWalk&) = delete;
  ~PyNfsWalk() { Close(); }

  py::bytes Next() {
    if (channel_ == nullptr) throw py::stop_iteration();
    absl::Status status;
    std::optional<std::string> bytes;
    {
      py::gil_scoped_release nogil;
      bytes = channel_->Pop(&status);
    }
    if (bytes.has_value()) return py::bytes(*bytes);
    Close();
    ThrowIfError(status);
    throw py::stop_iteration();
  }

  // Stops the walk if it still runs, waits for it, and lets go of the
  // server and the Runtime. Idempotent.
  void Close() {
    if (channel_ == nullptr && client_ == nullptr && !pin_.has_value()) return;
    py::gil_scoped_release nogil;
    Release();
  }

  py::object Stats() const {
    if (!stats_.has_value()) return py::none();
    const nfs::WalkStats& s = *stats_;
    py::dict d;
    d["directories"] = s.directories;
    d["entries"] = s.entries;
    d["bytes"] = s.bytes;
    d["errors"] = s.errors;
    d["rpcs"] = s.rpcs;
    d["retries"] = s.retries;
    d["elapsed"] = absl::ToDoubleSeconds(s.elapsed);
    d["stopped_early"] = s.stopped_early;
    return d;
  }

  bool closed() const { return channel_ == nullptr; }

 private:
  absl::Status Start(RuntimeHandle& handle, NfsWalkConfig config) {
    absl::StatusOr<nfs::NfsUrl> url = ParseNfsUrlWithIds(config.url, config.uid, config.gid);
    if (!url.ok()) return url.status();
    absl::StatusOr<RuntimeHandle::Pin> pin = handle.Acquire("nfs.walk");
    if (!pin.ok()) return pin.status();
    pin_.emplace(std::move(*pin));
    absl::StatusOr<std::unique_ptr<nfs::NfsClient>> client =
        nfs::NfsClient::Connect(pin_->runtime(), *url, config.client);
    if (!client.ok()) return client.status();
    client_ = std::move(*client);
    channel_ = std::make_unique<WalkChannel>();
    // A walk id that differs between walks: the start time and this walk's
    // address (a receiver tells interleaved streams apart by it).
    const uint64_t walk_id = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^
                             reinterpret_cast<uintptr_t>(channel_.get());
    pin_->runtime().PostBlocking(WalkTask(channel_.get(), client_.get(), config.walk, walk_id));
    return absl::OkStatus();
  }

  // REQUIRES: the GIL is not held (the walk may be waiting on the server).
  void Release() {
    if (channel_ != nullptr) {
      channel_->CloseAndWait();
      if (!stats_.has_value()) stats_ = channel_->stats();
      channel_.reset();
    }
    client_.reset();  // before the pin: the Runtime outlives the client
    pin_.reset();
  }

  std::optional<RuntimeHandle::Pin> pin_;
  std::unique_ptr<nfs::NfsClient> client_;
  std::unique_ptr<WalkChannel> channel_;  // null once closed
  std::optional<nfs::WalkStats> stats_;
};

}  // namespace

void RegisterNfsWalk(py::module_& m) {
  const nfs::WalkOptions walk_defaults;
  py::class_<PyNfsWalk>(m, "_NfsWalk", R"doc(
A walk of an NFS tree: iterating yields records.proto WalkBatch bytes.
Use ferry.nfs.walk(), which decodes them.)doc")
      .def(py::init([](const std::string& url, const py::object& runtime, int64_t batch_entries,
                       std::optional<int64_t> uid, std::optional<int64_t> gid,
                       int max_directories_in_flight, int connections) {
             if (batch_entries <= 0) {
               ThrowStatus(absl::InvalidArgumentError(
                   absl::StrCat("nfs.walk: batch_entries must be > 0, got ", batch_entries)));
             }
             NfsWalkConfig config{.url = url,
                                  .uid = IdFromPython(uid, "uid", "nfs.walk"),
                                  .gid = IdFromPython(gid, "gid", "nfs.walk")};
             if (max_directories_in_flight <= 0 || connections <= 0) {
               ThrowStatus(absl::InvalidArgumentError(absl::StrCat(
                   "nfs.walk: max_directories_in_flight (", max_directories_in_flight,
                   ") and connections (", connections, ") must be > 0")));
             }
             config.walk.batch_entries = static_cast<size_t>(batch_entries);
             // Full batches only: each costs a serialization, a wake-up of
             // the Python thread and a decode, so ~25 batches of 4096 beat
             // the ~500 one-page batches a waiting consumer would get.
             config.walk.min_batch_entries = config.walk.batch_entries;
             config.walk.max_directories_in_flight = max_directories_in_flight;
             // The channel queues batches too: the walker's own queue can be short.
             config.walk.max_queued_batches = static_cast<int>(kMaxQueuedBatches);
             config.client.connections = connections;
             return std::make_unique<PyNfsWalk>(runtime, std::move(config));
           }),
           py::arg("url"), py::kw_only(), py::arg("runtime"),
           py::arg("batch_entries") = walk_defaults.batch_entries, py::arg("uid") = py::none(),
           py::arg("gid") = py::none(),
           py::arg("max_directories_in_flight") = walk_defaults.max_directories_in_flight,
           py::arg("connections") = nfs::NfsClientOptions{}.connections)
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyNfsWalk::Next)
      .def("close", &PyNfsWalk::Close, "Stops the walk and waits for it to stop. Idempotent.")
      .def_property_readonly("closed", &PyNfsWalk::closed)
      .def_property_readonly("stats", &PyNfsWalk::Stats,
                             "The walk's statistics (a dict) once it ended, else None.");
}

}  // namespace ferry::python
