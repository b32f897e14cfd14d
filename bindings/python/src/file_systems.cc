// ferry._core._FileSystems and _Walk: the protocol-neutral front from
// Python. A _FileSystems pins a Runtime and owns a FileSystemRegistry with
// every built adapter registered (ferry::RegisterBuiltinFileSystems) and
// one fs::FileTable; ferry/_fs.py is the API (ferry.open, ferry.walk,
// ferry.copy, ferry.stat, ferry.FileSystems).
//
// Nothing here knows a protocol: URLs resolve through the registry, files
// are fs::FileTable descriptors behind the same PyOpenFile the clients'
// files use, walks are bindings::WalkStream batches, copies the core
// engine. The one exception is iRODS's own calls (metadata, ACLs), which go
// through bindings/common's irods_ops like every binding's. Every call that
// may touch the network runs with the GIL released.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bindings.h"
#include "ferry/adapters/builtin.h"
#include "ferry/base/mutex.h"
#include "ferry/bindings/copy_urls.h"
#include "ferry/bindings/sync_urls.h"
#include "ferry/bindings/irods_ops.h"
#include "ferry/bindings/url_ops.h"
#include "ferry/bindings/walk_stream.h"
#include "ferry/fs/file_table.h"
#include "ferry/fs/registry.h"
#include "ferry/fs/walk_guard.h"
#include "ferry/records/fs_records.h"
#include "ferry/transfer/copy_engine.h"
#include "open_file.h"
#include "progress.h"
#include "python_object.h"
#include "runtime_handle.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

std::string KindName(fs::EntryKind kind) { return std::string(fs::EntryKindName(kind)); }

// The state a _FileSystems and everything it made share; the last owner
// (the Python object, an open file, a walk) drops the Runtime pin.
struct Shared {
  RuntimeHandle::Pin pin;
  std::unique_ptr<fs::FileSystemRegistry> registry;
  std::unique_ptr<fs::FileTable> files = std::make_unique<fs::FileTable>();

  explicit Shared(RuntimeHandle::Pin p) : pin(std::move(p)) {}
  ~Shared() {
    files.reset();
    registry.reset();  // the filesystems, before the Runtime they run on
  }
};

// ferry._core._Walk: records.proto WalkBatch bytes, pulled. GIL held on
// entry to every method.
class PyWalk {
 public:
  PyWalk(std::shared_ptr<Shared> shared, std::unique_ptr<bindings::WalkStream> stream)
      : shared_(std::move(shared)), stream_(std::move(stream)) {}
  ~PyWalk() { Close(); }

  py::bytes Next() {
    if (stream_ == nullptr) throw py::stop_iteration();
    absl::StatusOr<std::optional<std::string>> bytes;
    {
      py::gil_scoped_release nogil;
      bytes = stream_->Next();
    }
    if (bytes.ok() && bytes->has_value()) return py::bytes(**bytes);
    Close();
    if (!bytes.ok()) ThrowStatus(bytes.status());
    throw py::stop_iteration();
  }

  // Stops the walk, waits for it, and lets go of the Runtime. Idempotent.
  void Close() {
    if (stream_ == nullptr) return;
    py::gil_scoped_release nogil;
    stream_->Close();
    stats_ = stream_->stats();
    stream_.reset();
    shared_.reset();
  }

  py::object Stats() const {
    if (!stats_.has_value()) return py::none();
    const fs::WalkStats& s = *stats_;
    py::dict d;
    d["directories"] = s.directories;
    d["entries"] = s.entries;
    d["bytes"] = s.bytes;
    d["errors"] = s.errors;
    d["requests"] = s.requests;
    d["retries"] = s.retries;
    d["elapsed"] = absl::ToDoubleSeconds(s.elapsed);
    d["stopped_early"] = s.stopped_early;
    return d;
  }

  bool closed() const { return stream_ == nullptr; }

 private:
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<bindings::WalkStream> stream_;  // null once closed
  std::optional<fs::WalkStats> stats_;
};

// ferry._core._FileSystems. GIL held on entry to every method.
class PyFileSystems {
 public:
  PyFileSystems(const py::object& runtime, const BuiltinFileSystemOptions& options) {
    std::shared_ptr<RuntimeHandle> handle = HandleOf(runtime);
    RuntimeHandle::Pin pin = ValueOrThrow(handle->Acquire("FileSystems"));
    auto shared = std::make_shared<Shared>(std::move(pin));
    shared->registry = std::make_unique<fs::FileSystemRegistry>(shared->pin.runtime());
    ThrowIfError(RegisterBuiltinFileSystems(*shared->registry, options));
    shared_ = std::move(shared);
  }

  // An operation by URL on the registry (bindings/common's url_ops and
  // irods_ops), GIL released; RunUrlOp raises its error, RunUrlQuery also
  // answers its value.
  template <typename Op>
  void RunUrlOp(const char* what, Op op) {
    ThrowIfError(Released(what, op));
  }
  template <typename Op>
  auto RunUrlQuery(const char* what, Op op) {
    return ValueOrThrow(Released(what, op));
  }

  fs::Location Resolve(const std::string& url) {
    std::shared_ptr<Shared> shared = Live("resolve");  // raises: GIL held
    absl::StatusOr<fs::Location> where;
    {
      py::gil_scoped_release nogil;  // a provider may connect
      where = shared->registry->Resolve(url);
    }
    return ValueOrThrow(std::move(where));
  }

  py::dict Stat(const std::string& url) {
    fs::Location where = Resolve(url);
    absl::StatusOr<fs::Entry> e;
    {
      py::gil_scoped_release nogil;
      e = where.fs->Stat(where.path);
    }
    ThrowIfError(e.status());
    py::dict d;
    d["url"] = url;
    d["kind"] = KindName(e->kind);
    d["size"] = e->size;
    d["mtime_ns"] = e->mtime == absl::InfinitePast() ? 0 : absl::ToUnixNanos(e->mtime);
    d["mode"] = e->mode;
    d["id"] = e->id;
    return d;
  }

  std::unique_ptr<PyOpenFile> Open(const std::string& url, const std::string& mode,
                                   int64_t size) {
    const bool write = mode == "w";
    if (!write && mode != "r") {
      ThrowStatus(absl::InvalidArgumentError(
          absl::StrCat("open ", url, ": mode must be 'r' or 'w', got '", mode, "'")));
    }
    fs::Location where = Resolve(url);
    std::shared_ptr<Shared> shared = Live("open");
    absl::StatusOr<int> fd;
    {
      py::gil_scoped_release nogil;
      fd = shared->files->Open(*where.fs, where.path,
                               write ? OpenMode::kWrite : OpenMode::kRead, {.size = size});
    }
    ThrowIfError(fd.status());
    // The file holds the whole Shared (registry, filesystems, Runtime pin)
    // until it is closed, even if the _FileSystems is closed first.
    fs::FileTable& files = *shared->files;
    return std::make_unique<PyOpenFile>(std::make_shared<FileTable>(std::move(shared), files),
                                        *fd, where.fs->Url(where.path), !write, write);
  }

  // The entries directly in the directory `url` names (FileSystem::List:
  // paths are their names), as one records.proto WalkBatch; a distributed
  // walk lists one level to split a tree into subtrees.
  py::bytes List(const std::string& url) {
    fs::Location where = Resolve(url);
    fs::WalkBatch batch;
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = where.fs->List(where.path, [&](std::vector<fs::Entry>& page) {
        // A name that is not one safe component is refused here as a walk
        // refuses it: a caller recursing on these names must not loop.
        fs::SplitRefusedNames("", page, batch.errors);
        for (fs::Entry& e : page) batch.entries.push_back(std::move(e));
        return true;
      });
    }
    ThrowIfError(s);
    std::string bytes;
    {
      py::gil_scoped_release nogil;
      bytes = records::SerializeWalkBatch(batch, {.last = true});
    }
    return py::bytes(bytes);
  }

  std::unique_ptr<PyWalk> Walk(const std::string& url, int64_t batch_entries,
                               int max_in_flight) {
    if (batch_entries <= 0 || max_in_flight <= 0) {
      ThrowStatus(absl::InvalidArgumentError(absl::StrCat(
          "walk: batch_entries (", batch_entries, ") and max_in_flight (", max_in_flight,
          ") must be > 0")));
    }
    fs::Location where = Resolve(url);
    bindings::WalkStream::Options o;
    o.walk.batch_entries = static_cast<size_t>(batch_entries);
    // Full batches only: each costs a serialization, a wake-up of the
    // Python thread and a decode.
    o.walk.min_batch_entries = o.walk.batch_entries;
    o.walk.max_in_flight = max_in_flight;
    o.walk.max_queued_batches = static_cast<int>(o.max_queued);
    o.walk_id = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
    std::shared_ptr<Shared> shared = Live("walk");
    std::unique_ptr<bindings::WalkStream> stream;
    {
      py::gil_scoped_release nogil;
      stream = bindings::WalkStream::Start(shared->pin.runtime(), where.fs, where.path,
                                           std::move(o));
    }
    return std::make_unique<PyWalk>(std::move(shared), std::move(stream));
  }

  // One file, or a tree with `recursive` (bindings/common's CopyUrls);
  // TransferStats bytes.
  py::bytes Copy(const std::string& src_url, const std::string& dst_url, bool recursive,
                 const py::object& progress, int jobs, int64_t chunk_bytes, int parallelism) {
    std::shared_ptr<Shared> shared = Live("copy");
    std::string stats = RunWithProgress(progress, [&](ProgressCallback cb) {
      CopyOptions o;
      o.jobs = jobs;
      o.chunk_bytes = chunk_bytes;
      o.parallelism = parallelism;
      o.progress = std::move(cb);
      return bindings::CopyUrls(shared->pin.runtime(), *shared->registry, src_url, dst_url, recursive,
                                std::move(o));
    });
    return py::bytes(stats);
  }

  // The tree at src made the tree at dst (bindings/common's SyncUrls); a
  // dict of what it did.
  py::dict Sync(const std::string& src_url, const std::string& dst_url, const std::string& compare,
                bool delete_extraneous, bool dry_run, int64_t max_delete,
                std::vector<std::string> include, std::vector<std::string> exclude,
                std::vector<std::string> filter, const py::object& progress, int jobs) {
    std::shared_ptr<Shared> shared = Live("sync");
    bindings::SyncRequest req;
    static const std::pair<const char*, SkipRule> kRules[] = {
        {"size_and_time", SkipRule::kSizeAndTime}, {"size", SkipRule::kSizeOnly},
        {"checksum", SkipRule::kChecksum},         {"existing", SkipRule::kExisting},
        {"never", SkipRule::kNever}};
    bool known = false;
    for (const auto& [name, rule] : kRules) {
      if (compare == name) {
        req.options.skip = rule;
        known = true;
      }
    }
    if (!known) {
      ThrowStatus(absl::InvalidArgumentError(absl::StrCat(
          "sync: compare='", compare,
          "' is not one of 'size_and_time', 'size', 'checksum', 'existing', 'never'")));
    }
    req.options.delete_extraneous = delete_extraneous;
    req.options.dry_run = dry_run;
    req.options.max_delete = max_delete;
    req.options.jobs = jobs;
    req.filter = {std::move(include), std::move(exclude), std::move(filter)};
    bindings::SyncReport r = RunWithProgress(progress, [&](ProgressCallback cb) {
      req.options.progress = std::move(cb);
      return bindings::SyncUrls(shared->pin.runtime(), *shared->registry, src_url, dst_url,
                                std::move(req));
    });
    py::dict out;
    out["dry_run"] = r.result.dry_run;
    out["copied"] = r.result.totals.files;
    out["skipped"] = r.result.files_up_to_date;
    out["times_updated"] = r.result.times_updated;
    out["deleted"] = r.result.files_deleted;
    out["excluded"] = r.result.files_excluded;
    out["refused"] = r.result.entries_refused;
    out["failed"] = r.result.files_failed;
    out["bytes"] = r.result.totals.bytes;
    out["copied_files"] = r.files.copied;
    out["copied_files_unlisted"] = r.files.copied_unlisted;
    out["deleted_files"] = r.files.deleted;
    out["deleted_files_unlisted"] = r.files.deleted_unlisted;
    out["warnings"] = r.result.warnings;
    return out;
  }

  // Drops the registry and its filesystems once nothing else holds them.
  void Close() {
    if (shared_ == nullptr) return;
    py::gil_scoped_release nogil;
    shared_.reset();
  }
  bool closed() const { return shared_ == nullptr; }

 private:
  std::shared_ptr<Shared> Live(const char* op) const {
    if (shared_ == nullptr) {
      ThrowStatus(absl::FailedPreconditionError(absl::StrCat(op, ": the FileSystems is closed")));
    }
    return shared_;
  }

  // `op` on the registry with the GIL released; its Status or StatusOr.
  template <typename Op>
  auto Released(const char* what, Op op) {
    std::shared_ptr<Shared> shared = Live(what);  // raises: GIL held
    py::gil_scoped_release nogil;
    return op(*shared->registry);
  }

  std::shared_ptr<Shared> shared_;  // null once closed
};

// A _FileSystems method adding or removing one AVU by URL through `op`
// (bindings/common's irods_ops).
template <typename Op>
auto AvuCall(const char* what, Op op) {
  return [what, op](PyFileSystems& f, const std::string& url, const std::string& attribute,
                    const std::string& value, const std::string& units) {
    f.RunUrlOp(what, [&](fs::FileSystemRegistry& r) { return op(r, url, {attribute, value, units}); });
  };
}

}  // namespace

void RegisterFileSystems(py::module_& m) {
  const fs::WalkOptions walk_defaults;
  py::class_<PyWalk>(m, "_Walk", R"doc(
A walk: iterating yields records.proto WalkBatch bytes. Use ferry.walk(),
which decodes them.)doc")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyWalk::Next)
      .def("close", &PyWalk::Close, "Stops the walk and waits for it to stop. Idempotent.")
      .def_property_readonly("closed", &PyWalk::closed)
      .def_property_readonly("stats", &PyWalk::Stats,
                             "The walk's statistics (a dict) once it ended, else None.");
  py::class_<PyFileSystems>(m, "_FileSystems", R"doc(
Every filesystem ferry reaches, by URL (file paths, s3://, nfs://, ...).
Use ferry.FileSystems, the Python wrapper.)doc")
      .def(py::init([](const py::object& runtime, int64_t s3_chunk_bytes, int s3_concurrency,
                       bool s3_make_bucket, int nfs_parallelism, int nfs_connections,
                       int irods_parallelism, int irods_connections, const py::object& timeout,
                       std::string s3_endpoint_url, std::string s3_profile, std::string s3_region,
                       bool s3_no_sign_request, std::string s3_access_key_id,
                       std::string s3_secret_access_key, std::string s3_session_token,
                       std::string irods_client_user, std::string irods_password) {
             if (nfs_connections < 0 || nfs_parallelism < 0 || irods_connections < 0 ||
                 irods_parallelism < 0) {
               ThrowStatus(absl::InvalidArgumentError(absl::StrCat(
                   "FileSystems: connections and parallelism must be >= 0 (nfs ", nfs_connections,
                   "/", nfs_parallelism, ", irods ", irods_connections, "/", irods_parallelism, ")")));
             }
             // None keeps every adapter's default (60 s); zero would mean
             // the same in C++, so it is refused rather than read as "none".
             absl::Duration io_timeout = absl::ZeroDuration();
             if (!timeout.is_none()) {
               io_timeout = DurationFromPython(timeout, "FileSystems timeout");
               if (io_timeout <= absl::ZeroDuration() || io_timeout == absl::InfiniteDuration()) {
                 ThrowStatus(absl::InvalidArgumentError(absl::StrCat(
                     "FileSystems: timeout must be a positive, finite number of seconds or None, got ",
                     py::str(timeout).cast<std::string>())));
               }
             }
             return std::make_unique<PyFileSystems>(
                 runtime, BuiltinFileSystemOptions{.s3_chunks = {.chunk_bytes = s3_chunk_bytes,
                                                                 .parallelism = s3_concurrency},
                                                   .s3_make_bucket = s3_make_bucket,
                                                   .s3_endpoint_url = std::move(s3_endpoint_url),
                                                   .s3_profile = std::move(s3_profile),
                                                   .s3_region = std::move(s3_region),
                                                   .s3_no_sign_request = s3_no_sign_request,
                                                   .s3_access_key_id = std::move(s3_access_key_id),
                                                   .s3_secret_access_key = std::move(s3_secret_access_key),
                                                   .s3_session_token = std::move(s3_session_token),
                                                   .nfs_parallelism = nfs_parallelism,
                                                   .nfs_connections = nfs_connections,
                                                   .irods_parallelism = irods_parallelism,
                                                   .irods_connections = irods_connections,
                                                   .irods_client_user = std::move(irods_client_user),
                                                   .irods_password = std::move(irods_password),
                                                   .io_timeout = io_timeout});
           }),
           py::kw_only(), py::arg("runtime"), py::arg("s3_chunk_bytes") = 0,
           py::arg("s3_concurrency") = 0, py::arg("s3_make_bucket") = false,
           py::arg("nfs_parallelism") = 0, py::arg("nfs_connections") = 0,
           py::arg("irods_parallelism") = 0, py::arg("irods_connections") = 0,
           py::arg("timeout") = py::none(), py::arg("s3_endpoint_url") = "",
           py::arg("s3_profile") = "", py::arg("s3_region") = "",
           py::arg("s3_no_sign_request") = false, py::arg("s3_access_key_id") = "",
           py::arg("s3_secret_access_key") = "", py::arg("s3_session_token") = "",
           py::arg("irods_client_user") = "", py::arg("irods_password") = "")
      .def("stat", &PyFileSystems::Stat, py::arg("url"))
      .def("open", &PyFileSystems::Open, py::arg("url"), py::arg("mode") = "r",
           py::kw_only(), py::arg("size") = -1)
      .def("list", &PyFileSystems::List, py::arg("url"))
      .def("walk", &PyFileSystems::Walk, py::arg("url"), py::kw_only(),
           py::arg("batch_entries") = walk_defaults.batch_entries,
           py::arg("max_in_flight") = walk_defaults.max_in_flight)
      .def("copy", &PyFileSystems::Copy, py::arg("src"), py::arg("dst"), py::kw_only(),
           py::arg("recursive") = false, py::arg("progress") = py::none(),
           py::arg("jobs") = CopyOptions{}.jobs, py::arg("chunk_bytes") = 0,
           py::arg("parallelism") = 0)
      .def("sync", &PyFileSystems::Sync, py::arg("src"), py::arg("dst"), py::kw_only(),
           py::arg("compare") = "size_and_time", py::arg("delete") = true,
           py::arg("dry_run") = false, py::arg("max_delete") = -1,
           py::arg("include") = std::vector<std::string>(),
           py::arg("exclude") = std::vector<std::string>(),
           py::arg("filter") = std::vector<std::string>(), py::arg("progress") = py::none(),
           py::arg("jobs") = CopyOptions{}.jobs)
      .def(
          "mkdir",
          [](PyFileSystems& f, const std::string& url, bool parents) {
            f.RunUrlOp("mkdir", [&](fs::FileSystemRegistry& r) { return bindings::MakeDirectory(r, url, parents); });
          },
          py::arg("url"), py::kw_only(), py::arg("parents") = false)
      .def(
          "remove",
          [](PyFileSystems& f, const std::string& url) {
            f.RunUrlOp("remove", [&](fs::FileSystemRegistry& r) { return bindings::RemoveFile(r, url); });
          },
          py::arg("url"))
      .def(
          "rmdir",
          [](PyFileSystems& f, const std::string& url) {
            f.RunUrlOp("rmdir", [&](fs::FileSystemRegistry& r) { return bindings::RemoveDirectory(r, url); });
          },
          py::arg("url"))
      .def(
          "rename",
          [](PyFileSystems& f, const std::string& src, const std::string& dst) {
            f.RunUrlOp("rename", [&](fs::FileSystemRegistry& r) { return bindings::Rename(r, src, dst); });
          },
          py::arg("src"), py::arg("dst"))
      .def("irods_add_metadata", AvuCall("add metadata", &bindings::AddIrodsMetadata), py::arg("url"),
           py::arg("attribute"), py::arg("value"), py::arg("units") = "")
      .def("irods_remove_metadata", AvuCall("remove metadata", &bindings::RemoveIrodsMetadata),
           py::arg("url"), py::arg("attribute"), py::arg("value"), py::arg("units") = "")
      .def(
          "irods_metadata",
          [](PyFileSystems& f, const std::string& url) {
            std::vector<std::tuple<std::string, std::string, std::string>> out;
            for (irods::IrodsAvu& a : f.RunUrlQuery("list metadata", [&](fs::FileSystemRegistry& r) {
                   return bindings::ListIrodsMetadata(r, url);
                 })) {
              out.emplace_back(std::move(a.attribute), std::move(a.value), std::move(a.units));
            }
            return out;
          },
          py::arg("url"), "(attribute, value, units) triples.")
      .def(
          "irods_set_access",
          [](PyFileSystems& f, const std::string& url, const std::string& user, const std::string& level,
             bool recursive) {
            f.RunUrlOp("set access", [&](fs::FileSystemRegistry& r) {
              return bindings::SetIrodsAccess(r, url, user, level, recursive);
            });
          },
          py::arg("url"), py::arg("user"), py::arg("level"), py::kw_only(), py::arg("recursive") = false)
      .def(
          "irods_access",
          [](PyFileSystems& f, const std::string& url) {
            return f.RunUrlQuery("get access",
                                 [&](fs::FileSystemRegistry& r) { return bindings::GetIrodsAccess(r, url); });
          },
          py::arg("url"), "(user, access name) pairs.")
      .def("close", &PyFileSystems::Close)
      .def_property_readonly("closed", &PyFileSystems::closed);
}

}  // namespace ferry::python
