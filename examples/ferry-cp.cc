// ferry-cp: copies one file between a local path and an NFS URL, with many
// READ or WRITE calls in flight.
//
//   ferry-cp nfs://127.0.0.1/export/big.bin?nfsport=2049&mountport=20048 /tmp/big.bin
//   ferry-cp /tmp/big.bin nfs://127.0.0.1/export/copy.bin
//   options: --parallelism=N (chunks in flight, default 16)
//
// A destination ending in '/' gets the source's file name. Prints bytes,
// seconds and MiB/s. Endpoints are kinds (local, nfs; s3 to come): each
// kind knows how to open itself as a source or a target, and main() only
// picks the pair.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ferry/nfs/nfs_client.h"
#include "ferry/nfs/nfs_copy.h"
#include "ferry/nfs/nfs_url.h"
#include "ferry/runtime/runtime.h"

namespace {

enum class Kind { kLocal, kNfs };

// One side of a copy, as the user wrote it.
struct Endpoint {
  Kind kind = Kind::kLocal;
  std::string text;             // as given
  ferry::nfs::NfsUrl nfs;       // kNfs: the parent directory's URL
  std::string name;             // kNfs: the file name within it
};

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

absl::StatusOr<Endpoint> ParseEndpoint(std::string text, std::string_view source_name) {
  Endpoint e;
  e.text = text;
  if (text.rfind("nfs://", 0) != 0) {
    if (text.rfind("s3://", 0) == 0) {
      return absl::UnimplementedError(absl::StrCat("ferry-cp: S3 is not supported yet: ", text));
    }
    e.kind = Kind::kLocal;
    if (!text.empty() && text.back() == '/') e.text = text + std::string(source_name);
    return e;
  }
  e.kind = Kind::kNfs;
  // A trailing '/' before the options means "into this directory".
  const size_t q = text.find('?');
  const std::string_view path_part = std::string_view(text).substr(0, q);
  const bool into_dir = !path_part.empty() && path_part.back() == '/';
  absl::StatusOr<ferry::nfs::NfsUrl> url = ferry::nfs::ParseNfsUrl(text);
  if (!url.ok()) return url.status();
  e.nfs = *url;
  if (into_dir) {
    e.name = std::string(source_name);
  } else {
    const size_t slash = url->path.rfind('/');
    e.name = url->path.substr(slash + 1);
    e.nfs.path = slash == 0 ? "/" : url->path.substr(0, slash);
  }
  if (e.name.empty()) return absl::InvalidArgumentError(absl::StrCat("no file name in ", text));
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  ferry::nfs::CopyOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    int v = 0;
    if (a.rfind("--parallelism=", 0) == 0 &&
        absl::SimpleAtoi(absl::string_view(a.data() + 14, a.size() - 14), &v) && v > 0) {
      options.parallelism = v;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: ferry-cp SRC DST [--parallelism=N]\n");
      return 2;
    } else {
      args.emplace_back(a);
    }
  }
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: ferry-cp SRC DST [--parallelism=N]   (SRC/DST: path or nfs:// URL)\n");
    return 2;
  }
  absl::StatusOr<Endpoint> src = ParseEndpoint(args[0], "");
  if (!src.ok()) {
    std::fprintf(stderr, "ferry-cp: %s\n", std::string(src.status().message()).c_str());
    return 2;
  }
  const std::string src_name =
      src->kind == Kind::kNfs ? src->name : std::string(BaseName(src->text));
  absl::StatusOr<Endpoint> dst = ParseEndpoint(args[1], src_name);
  if (!dst.ok()) {
    std::fprintf(stderr, "ferry-cp: %s\n", std::string(dst.status().message()).c_str());
    return 2;
  }

  // One blocking-pool thread per chunk in flight (see nfs_copy.h).
  ferry::Runtime runtime({.io_threads = 2, .blocking_threads = options.parallelism});
  absl::StatusOr<ferry::nfs::CopyStats> stats;
  auto connect = [&](const Endpoint& e) {
    return ferry::nfs::NfsClient::Connect(runtime, e.nfs);
  };
  if (src->kind == Kind::kNfs && dst->kind == Kind::kLocal) {
    auto client = connect(*src);
    if (!client.ok()) {
      stats = client.status();
    } else {
      stats = ferry::nfs::CopyNfsToLocal(runtime, **client, src->name, dst->text, options);
    }
  } else if (src->kind == Kind::kLocal && dst->kind == Kind::kNfs) {
    auto client = connect(*dst);
    if (!client.ok()) {
      stats = client.status();
    } else {
      stats = ferry::nfs::CopyLocalToNfs(runtime, **client, src->text, dst->name, options);
    }
  } else {
    stats = absl::UnimplementedError(
        "ferry-cp copies between a local path and an nfs:// URL (one side each)");
  }
  if (!stats.ok()) {
    std::fprintf(stderr, "ferry-cp: %s: %s\n",
                 absl::StatusCodeToString(stats.status().code()).c_str(),
                 std::string(stats.status().message()).c_str());
    return 1;
  }
  const double secs = std::max(absl::ToDoubleSeconds(stats->elapsed), 1e-9);
  std::printf("copied %llu bytes in %.3f s (%.1f MiB/s, %llu chunks%s)\n",
              static_cast<unsigned long long>(stats->bytes), secs,
              stats->bytes / secs / (1 << 20), static_cast<unsigned long long>(stats->chunks),
              stats->rewrites ? ", re-sent after a server restart" : "");
  return 0;
}
