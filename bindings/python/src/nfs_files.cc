// ferry._core._NfsClient: one mounted NFS export (ferry::nfs::NfsClient)
// with a ferry::FdTable<NfsFile> of the files Python opened through it, and
// the whole-file copies of ferry/nfs/nfs_copy.h.
//
// The C++ state (Runtime pin, client, fd table) is one shared object: the
// Python client holds it until close(), and every open file holds it until
// its own close, so closing the client while files are open is safe (they
// keep working; the connection goes with the last of them). Each open makes
// its own NfsFile (LOOKUP, or CREATE for writing), and its close COMMITs
// what was written through it, raising if the COMMIT fails. Copies release
// the GIL for their whole run; their progress callback takes it back (see
// progress.h). Connecting happens in the constructor, with the GIL
// released: a bad URL or an unreachable server raises at once.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional uid, gid

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "ferry/fs/file_table.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_copy.h"
#include "ferry/nfs/nfs_file_system.h"
#include "ferry/nfs/nfs_url.h"
#include "ferry/records/fs_records.h"
#include "nfs_url_args.h"
#include "open_file.h"
#include "progress.h"
#include "runtime_handle.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

using NfsState = PinnedFileSystem<nfs::NfsFileSystem>;

struct NfsConnectConfig {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  nfs::NfsClientOptions client;
};


// ferry._core._NfsClient. Only Python uses it (GIL held on entry).
class PyNfsClient {
 public:
  // Connects to `url`; with `split_file`, to its parent directory, and
  // file_name() is the last path component.
  PyNfsClient(const py::object& runtime, const std::string& url, const NfsConnectConfig& config,
              bool split_file) {
    std::shared_ptr<RuntimeHandle> handle = HandleOf(runtime);
    absl::Status status;
    {
      py::gil_scoped_release nogil;
      status = Connect(*handle, url, config, split_file);
    }
    ThrowIfError(status);
  }

  std::shared_ptr<NfsState>& State(const char* op) {
    if (state_ == nullptr) {
      ThrowStatus(absl::FailedPreconditionError(
          absl::StrCat("nfs ", op, " ", display_, ": the NfsClient is closed")));
    }
    return state_;
  }

  std::unique_ptr<PyOpenFile> Open(const std::string& path, const std::string& mode,
                                   uint32_t file_mode) {
    if (mode != "r" && mode != "w") {
      ThrowStatus(absl::InvalidArgumentError(
          absl::StrCat("nfs open ", path, ": mode must be \"r\" or \"w\", got \"", mode, "\"")));
    }
    std::shared_ptr<NfsState> state = State("open");
    const bool write = mode == "w";
    absl::StatusOr<int> fd;
    {
      py::gil_scoped_release nogil;
      fd = state->files().Open(state->fs(), path, write ? OpenMode::kWrite : OpenMode::kRead,
                               {.mode = file_mode});
    }
    ThrowIfError(fd.status());
    std::string name = state->fs().client().DisplayPath(path);
    auto files = std::make_shared<FileTable>(state, state->files());
    return std::make_unique<PyOpenFile>(std::move(files), *fd, std::move(name), !write, write);
  }

  py::bytes Download(const std::string& path, const std::string& local_path,
                     const py::object& progress, int parallelism, uint32_t chunk_bytes) {
    std::shared_ptr<NfsState> state = State("download");
    return Copy(*state, records::TransferOperation::kDownload, progress, parallelism, chunk_bytes, 0644,
                state->fs().client().DisplayPath(path), local_path,
                [&](nfs::CopyOptions options) {
                  return nfs::CopyNfsToLocal(state->runtime(), state->fs().client(), path, local_path,
                                             std::move(options));
                });
  }

  py::bytes Upload(const std::string& local_path, const std::string& path,
                   const py::object& progress, int parallelism, uint32_t chunk_bytes,
                   uint32_t file_mode) {
    std::shared_ptr<NfsState> state = State("upload");
    return Copy(*state, records::TransferOperation::kUpload, progress, parallelism, chunk_bytes, file_mode,
                local_path, state->fs().client().DisplayPath(path),
                [&](nfs::CopyOptions options) {
                  return nfs::CopyLocalToNfs(state->runtime(), state->fs().client(), local_path, path,
                                             std::move(options));
                });
  }

  // Lets go of this object's reference; open files keep theirs (the last
  // one frees the state without the GIL: PinnedFileSystem::Make).
  void Close() { state_.reset(); }

  bool closed() const { return state_ == nullptr; }
  const std::string& display() const { return display_; }
  const std::string& file_name() const { return file_name_; }

 private:
  absl::Status Connect(RuntimeHandle& handle, const std::string& text,
                       const NfsConnectConfig& config, bool split_file) {
    absl::StatusOr<nfs::NfsUrl> url = ParseNfsUrlWithIds(text, config.uid, config.gid);
    if (!url.ok()) return url.status();
    if (split_file) {
      // The URL's path is normalised: absolute, no trailing '/'.
      const auto [dir, name] = nfs::SplitNfsPath(url->path);
      if (name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("nfs: no file name in ", text));
      }
      file_name_ = std::string(name);
      url->path = dir.empty() ? "/" : std::string(dir);
    }
    absl::StatusOr<RuntimeHandle::Pin> pin = handle.Acquire("nfs connect");
    if (!pin.ok()) return pin.status();
    absl::StatusOr<std::unique_ptr<nfs::NfsClient>> client =
        nfs::NfsClient::Connect(pin->runtime(), *url, config.client);
    if (!client.ok()) return client.status();
    display_ = (*client)->DisplayPath("");
    state_ = NfsState::Make(std::move(*pin), nfs::NfsFileSystem::Over(std::move(*client)));
    return absl::OkStatus();
  }

  template <typename Run>
  py::bytes Copy(NfsState& state, records::TransferOperation operation, const py::object& progress,
                 int parallelism, uint32_t chunk_bytes, uint32_t file_mode, std::string source,
                 std::string destination, Run run) {
    if (parallelism <= 0) {
      ThrowStatus(absl::InvalidArgumentError(
          absl::StrCat("nfs copy: parallelism must be > 0, got ", parallelism)));
    }
    const TransferStats stats = RunWithProgress(progress, [&](ProgressCallback callback) {
      nfs::CopyOptions options;
      options.parallelism = parallelism;
      options.chunk_bytes = chunk_bytes;
      options.mode = file_mode;
      options.progress = std::move(callback);
      return run(std::move(options));
    });
    (void)state;
    return py::bytes(records::SerializeTransferStats(
        {.operation = operation, .source = std::move(source), .destination = std::move(destination)},
        stats));
  }

  std::shared_ptr<NfsState> state_;  // null once closed
  std::string display_;              // nfs://host/export/path
  std::string file_name_;            // split_file: the file's name in that directory
};

}  // namespace

void RegisterNfsFiles(py::module_& m) {
  const nfs::CopyOptions copy_defaults;
  py::class_<PyNfsClient>(m, "_NfsClient", R"doc(
A mounted NFS export: open files, whole-file copies. Use ferry.nfs.NfsClient.)doc")
      .def(py::init([](const std::string& url, const py::object& runtime,
                       std::optional<int64_t> uid, std::optional<int64_t> gid, int connections,
                       bool split_file) {
             if (connections <= 0) {
               ThrowStatus(absl::InvalidArgumentError(
                   absl::StrCat("nfs: connections must be > 0, got ", connections)));
             }
             NfsConnectConfig config{.uid = IdFromPython(uid, "uid", "nfs"),
                                     .gid = IdFromPython(gid, "gid", "nfs")};
             config.client.connections = connections;
             return std::make_unique<PyNfsClient>(runtime, url, config, split_file);
           }),
           py::arg("url"), py::kw_only(), py::arg("runtime"), py::arg("uid") = py::none(),
           py::arg("gid") = py::none(), py::arg("connections") = nfs::NfsClientOptions{}.connections,
           py::arg("split_file") = false)
      .def("open", &PyNfsClient::Open, py::arg("path"), py::arg("mode"),
           py::arg("file_mode") = 0644)
      .def("download", &PyNfsClient::Download, py::arg("path"), py::arg("local_path"),
           py::kw_only(), py::arg("progress") = py::none(),
           py::arg("parallelism") = copy_defaults.parallelism,
           py::arg("chunk_bytes") = copy_defaults.chunk_bytes)
      .def("upload", &PyNfsClient::Upload, py::arg("local_path"), py::arg("path"), py::kw_only(),
           py::arg("progress") = py::none(), py::arg("parallelism") = copy_defaults.parallelism,
           py::arg("chunk_bytes") = copy_defaults.chunk_bytes,
           py::arg("file_mode") = copy_defaults.mode)
      .def("close", &PyNfsClient::Close)
      .def_property_readonly("closed", &PyNfsClient::closed)
      .def_property_readonly("url", &PyNfsClient::display)
      .def_property_readonly("file_name", &PyNfsClient::file_name);
}

}  // namespace ferry::python
