// ferry._core._S3Client: a ferry::s3::S3Client (store, shared downloads,
// ObjectFileTable, whole-file transfers) for Python.
//
// Configuration is the C++ one: S3Config::FromEnvironment (AWS variables
// and profile files) or FromContextString (iRODS "K=V;K=V"), with the
// keyword arguments given from Python standing in for the AWS variables
// they name. The C++ state (Runtime pin + S3Client) is shared by the Python
// client and every file opened through it, as for NFS (nfs_files.cc): the
// client's close() lets go of its reference and open files keep theirs.
// Files are descriptors of the client's ObjectFileTable; closing a written
// one completes the upload and raises if it failed (the object was then not
// written). Transfers release the GIL for their whole run; their progress
// callback takes it back (progress.h).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional arguments

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "ferry/fs/local_file_system.h"
#include "ferry/records/fs_records.h"
#include "ferry/s3/s3_client.h"
#include "ferry/s3/s3_config.h"
#include "ferry/s3/s3_file_system.h"
#include "ferry/transfer/copy_engine.h"
#include "ferry/transfer/object_file_table.h"
#include "open_file.h"
#include "progress.h"
#include "runtime_handle.h"
#include "status_exceptions.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

using S3State = PinnedFileSystem<s3::S3FileSystem>;

// What Python may set instead of the AWS variables (None: the variable,
// or the profile files, decide).
struct S3Settings {
  std::optional<std::string> endpoint;           // AWS_ENDPOINT_URL
  std::optional<std::string> access_key_id;      // AWS_ACCESS_KEY_ID
  std::optional<std::string> secret_access_key;  // AWS_SECRET_ACCESS_KEY
  std::optional<std::string> session_token;      // AWS_SESSION_TOKEN
  std::optional<std::string> region;             // AWS_REGION
  std::optional<std::string> profile;            // AWS_PROFILE
  std::optional<std::string> context;            // an iRODS-style context string
};

absl::StatusOr<s3::S3Config> ConfigFrom(const S3Settings& settings) {
  std::map<std::string, std::string> env = s3::S3Config::ProcessEnvironment();
  auto set = [&env](const char* name, const std::optional<std::string>& value) {
    if (value.has_value()) env[name] = *value;
  };
  set("AWS_ENDPOINT_URL", settings.endpoint);
  set("AWS_ACCESS_KEY_ID", settings.access_key_id);
  set("AWS_SECRET_ACCESS_KEY", settings.secret_access_key);
  set("AWS_SESSION_TOKEN", settings.session_token);
  set("AWS_REGION", settings.region);
  set("AWS_PROFILE", settings.profile);
  if (settings.context.has_value()) return s3::S3Config::FromContextString(*settings.context, env);
  return s3::S3Config::FromEnvironment(env);
}

// ferry._core._S3Client. Only Python uses it (GIL held on entry).
class PyS3Client {
 public:
  PyS3Client(const py::object& runtime, const S3Settings& settings) {
    std::shared_ptr<RuntimeHandle> handle = HandleOf(runtime);
    absl::Status status;
    {
      py::gil_scoped_release nogil;
      status = Create(*handle, settings);
    }
    ThrowIfError(status);
  }

  std::unique_ptr<PyOpenFile> Open(const std::string& url, const std::string& mode,
                                   std::optional<int64_t> size) {
    if (mode != "r" && mode != "w") {
      ThrowStatus(absl::InvalidArgumentError(
          absl::StrCat("s3 open ", url, ": mode must be \"r\" or \"w\", got \"", mode, "\"")));
    }
    if (size.has_value() && *size < 0) {
      ThrowStatus(absl::InvalidArgumentError(
          absl::StrCat("s3 open ", url, ": size must be >= 0, got ", *size)));
    }
    std::shared_ptr<S3State> state = State("open", url);
    const std::string key = ValueOrThrow(s3::S3UrlToKey(url));
    const bool write = mode == "w";
    absl::StatusOr<int> fd;
    {
      py::gil_scoped_release nogil;
      fd = state->files().Open(state->fs(), key, write ? OpenMode::kWrite : OpenMode::kRead,
                               {.size = size.value_or(-1)});
    }
    ThrowIfError(fd.status());
    auto files = std::make_shared<FileTable>(state, state->files());
    return std::make_unique<PyOpenFile>(std::move(files), *fd, url, !write, write);
  }

  py::bytes Download(const std::string& url, const std::string& local_path,
                     const py::object& progress) {
    return CopyWithLocal(records::TransferOperation::kDownload, url, local_path, progress);
  }

  py::bytes Upload(const std::string& local_path, const std::string& url,
                   const py::object& progress) {
    return CopyWithLocal(records::TransferOperation::kUpload, url, local_path, progress);
  }

  // Lets go of this object's reference; open files keep theirs (the last
  // one frees the state without the GIL: PinnedFileSystem::Make).
  void Close() { state_.reset(); }

  bool closed() const { return state_ == nullptr; }
  const std::string& endpoint() const { return endpoint_; }

 private:
  // A download (S3 to local) or an upload (local to S3) through the engine.
  py::bytes CopyWithLocal(records::TransferOperation operation, const std::string& url,
                          const std::string& local_path, const py::object& progress) {
    const bool download = operation == records::TransferOperation::kDownload;
    std::shared_ptr<S3State> state = State(download ? "download" : "upload", url);
    const std::string key = ValueOrThrow(s3::S3UrlToKey(url));
    const std::string local_key = fs::LocalPathToFsPath(local_path);
    return Transfer({.operation = operation,
                     .source = download ? url : local_path,
                     .destination = download ? local_path : url},
                    progress, [&](CopyOptions options) {
                      fs::LocalFileSystem local;
                      fs::FileSystem& s3 = state->fs();
                      return download ? CopyFile(state->runtime(), s3, key, local, local_key,
                                                 std::move(options))
                                      : CopyFile(state->runtime(), local, local_key, s3, key,
                                                 std::move(options));
                    });
  }

  absl::Status Create(RuntimeHandle& handle, const S3Settings& settings) {
    absl::StatusOr<s3::S3Config> config = ConfigFrom(settings);
    if (!config.ok()) return config.status();
    absl::StatusOr<RuntimeHandle::Pin> pin = handle.Acquire("s3 client");
    if (!pin.ok()) return pin.status();
    // The CLI's chunking (8 MiB, 10 in flight) unless a resource context
    // string chose its own (S3_MPU_CHUNK, S3_MPU_THREADS).
    s3::S3FileSystemOptions fs_options;
    if (settings.context.has_value()) {
      fs_options.chunks = {.chunk_bytes = config->mpu_chunk_bytes,
                           .parallelism = config->mpu_threads};
    }
    absl::StatusOr<std::shared_ptr<s3::S3FileSystem>> fs =
        s3::S3FileSystem::Create(pin->runtime(), *config, fs_options);
    if (!fs.ok()) return fs.status();
    // No endpoint: AWS's for the region (shown as its regional form).
    endpoint_ = config->endpoints.empty()
                    ? absl::StrCat("https://s3.", config->region, ".amazonaws.com")
                    : absl::StrCat(config->use_https ? "https://" : "http://",
                                   config->endpoints.front());
    state_ = S3State::Make(std::move(*pin), std::move(*fs));
    return absl::OkStatus();
  }

  std::shared_ptr<S3State> State(const char* op, const std::string& url) {
    if (state_ == nullptr) {
      ThrowStatus(absl::FailedPreconditionError(
          absl::StrCat("s3 ", op, " ", url, ": the S3Client is closed")));
    }
    return state_;
  }

  template <typename Run>
  py::bytes Transfer(records::TransferRecordContext context, const py::object& progress, Run run) {
    const TransferStats stats = RunWithProgress(progress, [&](ProgressCallback callback) {
      CopyOptions options;
      options.progress = std::move(callback);
      return run(std::move(options));
    });
    return py::bytes(records::SerializeTransferStats(context, stats));
  }

  std::shared_ptr<S3State> state_;  // null once closed
  std::string endpoint_;            // http(s)://host:port, for repr
};

}  // namespace

void RegisterS3Client(py::module_& m) {
  py::class_<PyS3Client>(m, "_S3Client", R"doc(
An S3 endpoint: open objects as files, whole-file transfers. Use
ferry.s3.S3Client.)doc")
      .def(py::init([](const py::object& runtime, std::optional<std::string> endpoint,
                       std::optional<std::string> access_key_id,
                       std::optional<std::string> secret_access_key,
                       std::optional<std::string> session_token, std::optional<std::string> region,
                       std::optional<std::string> profile, std::optional<std::string> context) {
             return std::make_unique<PyS3Client>(
                 runtime, S3Settings{.endpoint = std::move(endpoint),
                                     .access_key_id = std::move(access_key_id),
                                     .secret_access_key = std::move(secret_access_key),
                                     .session_token = std::move(session_token),
                                     .region = std::move(region),
                                     .profile = std::move(profile),
                                     .context = std::move(context)});
           }),
           py::kw_only(), py::arg("runtime"), py::arg("endpoint") = py::none(),
           py::arg("access_key_id") = py::none(), py::arg("secret_access_key") = py::none(),
           py::arg("session_token") = py::none(), py::arg("region") = py::none(),
           py::arg("profile") = py::none(), py::arg("context") = py::none())
      .def("open", &PyS3Client::Open, py::arg("url"), py::arg("mode"),
           py::arg("size") = py::none())
      .def("download", &PyS3Client::Download, py::arg("url"), py::arg("local_path"),
           py::kw_only(), py::arg("progress") = py::none())
      .def("upload", &PyS3Client::Upload, py::arg("local_path"), py::arg("url"), py::kw_only(),
           py::arg("progress") = py::none())
      .def("close", &PyS3Client::Close)
      .def_property_readonly("closed", &PyS3Client::closed)
      .def_property_readonly("endpoint", &PyS3Client::endpoint);
}

}  // namespace ferry::python
