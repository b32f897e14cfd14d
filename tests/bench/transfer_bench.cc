// scripts/bench transfer: MultipartDownloader (and MultipartUploader)
// against the in-memory store with a fixed per-request latency and a
// bandwidth model (per-request stream speed, one shared link).
//
// Download scenarios, each on a fresh downloader, medians of --runs runs:
//   1 reader    one thread reads the object front to back in 4 MiB reads.
//               A lone reader gets exact ranged GETs, no read-ahead.
//   8 readers   iRODS parallel get: 8 threads, each its own stripe in 4 MiB
//               reads; the reader count starts ONE multipart download and
//               each reader wakes when its own chunk lands.
//   plugin      the iRODS S3 plugin's behaviour, as the peer baseline: no
//               reader sees a byte until the whole multipart download
//               (same chunk size and threads) is done, so its time to first
//               byte is the whole-object time.
// Upload: 8 writers of their own stripes streaming parts, vs the same
// upload through the scratch file (scratch_only, the plugin's way).
//
// Ends with one line: RESULT {json}.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "ferry/base/clock.h"
#include "ferry/runtime/runtime.h"
#include "ferry/transfer/multipart_downloader.h"
#include "ferry/transfer/multipart_uploader.h"
#include "testing/in_memory_object_store.h"

namespace ferry {
namespace {

using ::ferry::testing::InMemoryObjectStore;

constexpr int64_t kMiB = int64_t{1} << 20;

struct Config {
  int64_t object_bytes = 256 * kMiB;
  int64_t chunk_bytes = 8 * kMiB;    // S3_MPU_CHUNK
  int concurrency = 8;               // S3_MPU_THREADS
  int64_t read_bytes = 4 * kMiB;     // one reader's read size
  int readers = 8;
  int64_t budget_bytes = 128 * kMiB; // half the object: memory stays bounded
  absl::Duration latency = absl::Milliseconds(20);
  int64_t stream_bytes_per_second = 200 * 1000 * 1000;  // one TCP stream
  int64_t link_bytes_per_second = 1250 * 1000 * 1000;   // 10 GbE
  int runs = 5;
};

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The object's bytes, kept real (not synthetic) so serving and checking
// them costs a memcpy/memcmp, not the 2 shared cores' time.
bool Check(const std::vector<char>& buf, size_t n, int64_t offset, const std::string& object) {
  return std::memcmp(buf.data(), object.data() + offset, n) == 0;
}

struct Timing {
  double first_byte_ms = 0;      // median over readers of their first read
  double first_byte_max_ms = 0;  // the last reader's first read
  double total_ms = 0;
  bool ok = true;
};

// `readers` threads each read their stripe in `read_bytes` pieces.
Timing ReadStripes(MultipartDownloader& d, const Config& c, int readers,
                   const std::string& object) {
  const int64_t size = d.info().size;
  const int64_t stripe = (size + readers - 1) / readers;
  std::vector<double> first(readers, 0);
  std::atomic<bool> ok{true};
  const absl::Time start = MonotonicNow();
  std::vector<std::thread> threads;
  for (int i = 0; i < readers; ++i) {
    threads.emplace_back([&, i] {
      std::vector<char> buf(static_cast<size_t>(c.read_bytes));
      const int64_t end = std::min(size, (i + 1) * stripe);
      for (int64_t at = i * stripe; at < end;) {
        const size_t want = static_cast<size_t>(std::min<int64_t>(c.read_bytes, end - at));
        absl::StatusOr<size_t> n = d.Read(at, std::span<char>(buf.data(), want));
        if (!n.ok() || *n == 0 || !Check(buf, *n, at, object)) {
          std::fprintf(stderr, "read at %lld failed: %s\n", static_cast<long long>(at),
                       n.ok() ? "wrong bytes" : std::string(n.status().message()).c_str());
          ok = false;
          return;
        }
        if (at == i * stripe) first[i] = Ms(MonotonicNow() - start);
        at += static_cast<int64_t>(*n);
      }
    });
  }
  for (auto& t : threads) t.join();
  Timing t;
  t.total_ms = Ms(MonotonicNow() - start);
  t.first_byte_ms = Median(first);
  t.first_byte_max_ms = *std::max_element(first.begin(), first.end());
  t.ok = ok;
  return t;
}

int Main(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (flag == "--runs") c.runs = static_cast<int>(v);
    else if (flag == "--size_mib") c.object_bytes = v * kMiB;
    else if (flag == "--latency_ms") c.latency = absl::Milliseconds(v);
    else if (flag == "--budget_mib") c.budget_bytes = v * kMiB;
  }
  MemoryBudget budget(c.budget_bytes);
  Runtime runtime({.io_threads = 2, .blocking_threads = 2, .memory_budget_bytes = c.budget_bytes});
  RuntimeDelayScheduler timers(runtime);
  InMemoryObjectStore::Options so;
  so.scheduler = &timers;
  so.latency = c.latency;
  so.bytes_per_second = c.stream_bytes_per_second;
  so.link_bytes_per_second = c.link_bytes_per_second;
  InMemoryObjectStore store(so);
  const uint64_t seed = 42;
  const std::string payload = [&] {
    std::string s(static_cast<size_t>(c.object_bytes), '\0');
    InMemoryObjectStore::FillSynthetic(seed, 0, std::span<char>(s.data(), s.size()));
    return s;
  }();
  store.PutObject("bench/object", payload);
  MultipartDownloadManager downloads(store, runtime,
                                     {.chunk_bytes = c.chunk_bytes,
                                      .concurrency = c.concurrency,
                                      .memory_budget = &budget});

  std::printf("transfer bench: %lld MiB object, %lld MiB chunks, %d in flight, %lld MiB reads,\n"
              "  store latency %.0f ms, %lld MB/s per request, %lld MB/s link, budget %lld MiB, "
              "%d runs (medians)\n",
              static_cast<long long>(c.object_bytes / kMiB), static_cast<long long>(c.chunk_bytes / kMiB),
              c.concurrency, static_cast<long long>(c.read_bytes / kMiB), Ms(c.latency),
              static_cast<long long>(c.stream_bytes_per_second / 1000000),
              static_cast<long long>(c.link_bytes_per_second / 1000000),
              static_cast<long long>(c.budget_bytes / kMiB), c.runs);

  std::vector<double> fb1, tot1, fb8, fb8max, tot8, whole;
  bool ok = true;
  for (int r = 0; r < c.runs; ++r) {
    {
      auto d = downloads.Open("bench/object");
      if (!d.ok()) return std::fprintf(stderr, "%s\n", d.status().ToString().c_str()), 1;
      Timing t = ReadStripes(**d, c, 1, payload);
      ok = ok && t.ok;
      fb1.push_back(t.first_byte_ms);
      tot1.push_back(t.total_ms);
    }
    {
      auto d = downloads.Open("bench/object");
      if (!d.ok()) return 1;
      (*d)->OnReaderCountChanged(c.readers);  // what FdTable reports
      Timing t = ReadStripes(**d, c, c.readers, payload);
      ok = ok && t.ok;
      fb8.push_back(t.first_byte_ms);
      fb8max.push_back(t.first_byte_max_ms);
      tot8.push_back(t.total_ms);
    }
    {
      // Plugin baseline: no reader gets a byte before the whole object is in,
      // i.e. the time of one whole-object multipart download.
      auto d = downloads.Open("bench/object");
      if (!d.ok()) return 1;
      std::vector<char> all(static_cast<size_t>(c.object_bytes));
      const absl::Time start = MonotonicNow();
      absl::StatusOr<size_t> n = (*d)->Read(0, all);  // a whole-object read
      whole.push_back(Ms(MonotonicNow() - start));
      ok = ok && n.ok() && *n == all.size() && Check(all, all.size(), 0, payload);
    }
  }

  // Upload: 8 writers, known size, streaming vs through a scratch file.
  std::vector<double> up_stream, up_scratch;
  for (int r = 0; r < c.runs; ++r) {
    for (bool scratch : {false, true}) {
      MultipartUploaderOptions uo;
      uo.total_bytes = c.object_bytes;
      uo.part_bytes = c.chunk_bytes;
      uo.concurrency = c.concurrency;
      uo.memory_budget = &budget;
      uo.scratch_only = scratch;
      auto up = MultipartUploader::Create(store, runtime, "bench/upload", uo);
      if (!up.ok()) return 1;
      const absl::Time start = MonotonicNow();
      const int64_t stripe = c.object_bytes / c.readers;
      std::vector<std::thread> threads;
      for (int i = 0; i < c.readers; ++i) {
        threads.emplace_back([&, i] {
          for (int64_t at = i * stripe; at < (i + 1) * stripe; at += c.read_bytes) {
            if (!(*up)->Write(at, std::span<const char>(payload.data() + at,
                                                        static_cast<size_t>(c.read_bytes)))
                     .ok()) {
              ok = false;
            }
          }
        });
      }
      for (auto& t : threads) t.join();
      absl::StatusOr<std::string> etag = (*up)->Finish();
      (scratch ? up_scratch : up_stream).push_back(Ms(MonotonicNow() - start));
      ok = ok && etag.ok() && store.ObjectData("bench/upload") == payload;
    }
  }

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;

  std::printf("\n%-34s %12s %12s\n", "download", "first byte", "total");
  std::printf("%-34s %9.1f ms %9.1f ms\n", "1 reader (ranged GETs)", Median(fb1), Median(tot1));
  std::printf("%-34s %9.1f ms %9.1f ms   (last reader's first byte %.1f ms)\n",
              "8 readers (one multipart download)", Median(fb8), Median(tot8), Median(fb8max));
  std::printf("%-34s %9.1f ms %9.1f ms\n", "iRODS plugin (blocks until whole)", Median(whole),
              Median(whole));
  std::printf("\n%-34s %12s\n", "upload, 8 writers", "total");
  std::printf("%-34s %9.1f ms\n", "streaming parts", Median(up_stream));
  std::printf("%-34s %9.1f ms\n", "through a scratch file", Median(up_scratch));
  std::printf("\npeak bytes held %lld of a %lld budget; peak RSS %.0f MiB (includes the %lld MiB\n"
              "upload payload and whole-object read buffer)%s\n",
              static_cast<long long>(budget.peak()), static_cast<long long>(budget.capacity()), rss_mib,
              static_cast<long long>(c.object_bytes / kMiB), ok ? "" : "\nERRORS: see above");
  std::printf(
      "RESULT {\"object_bytes\":%lld,\"chunk_bytes\":%lld,\"concurrency\":%d,\"latency_ms\":%.0f,"
      "\"runs\":%d,\"first_byte_ms_1_reader\":%.1f,\"total_ms_1_reader\":%.1f,"
      "\"first_byte_ms_8_readers\":%.1f,\"first_byte_ms_8_readers_last\":%.1f,"
      "\"total_ms_8_readers\":%.1f,\"plugin_first_byte_ms\":%.1f,\"upload_ms_streaming\":%.1f,"
      "\"upload_ms_scratch_file\":%.1f,\"peak_bytes_held\":%lld,\"budget_bytes\":%lld,"
      "\"peak_rss_mib\":%.0f,\"ok\":%s}\n",
      static_cast<long long>(c.object_bytes), static_cast<long long>(c.chunk_bytes), c.concurrency,
      Ms(c.latency), c.runs, Median(fb1), Median(tot1), Median(fb8), Median(fb8max), Median(tot8),
      Median(whole), Median(up_stream), Median(up_scratch), static_cast<long long>(budget.peak()),
      static_cast<long long>(budget.capacity()), rss_mib, ok ? "true" : "false");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace ferry

int main(int argc, char** argv) { return ferry::Main(argc, argv); }
