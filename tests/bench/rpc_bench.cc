// ferry_rpc_bench: RpcPool NULL calls per second to a real ONC RPC server
// (nfs-ganesha's NFS v3 NULL) against the number of calls in flight (1, 8,
// 64, 256) and of connections (1, 4), on a direct loopback path and on a
// path with added latency (toxiproxy, +1 ms each way); with the client's and
// the server's CPU time per call on the direct path.
//
// Run through `scripts/bench rpc` (tests/bench/rpc.sh), which starts ganesha
// and a toxiproxy proxy and passes their ports and the server's PID:
//   ferry_rpc_bench --port=2049 --delayed_port=P --delay_ms=1 --server_pid=N
//                   [--host=127.0.0.1] [--runs=5] [--seconds=0.8] [--io_threads=1]
//
// Method: each point is a closed loop (a completion starts the next call)
// for a fixed duration, on pools created once and warmed up. Runs are
// interleaved (run 1 visits every point, then run 2...) so slow phases of a
// shared machine spread over all points; each figure is the median over
// runs, and a point's speedup is the median of its per-run ratio to depth 1
// on the same path and connection count. Client CPU is getrusage of this
// process (all its threads) over the point; server CPU is the server PID's
// utime+stime from /proc (10 ms ticks: fine over a point of many calls).
//
// Prints a table and ends with one line `RESULT {json}`.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ferry/base/strings.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/onc_rpc.h"
#include "ferry/rpc/rpc_pool.h"
#include "ferry/runtime/runtime.h"
#include "testing/rpc_load.h"

namespace ferry {
namespace {

constexpr RpcProcedure kNfs3Null{100003, 3, 0, "NFS", "NULL"};

struct Flags {
  std::string host = "127.0.0.1";
  std::string server = "nfs-ganesha 4.3";  // what answers, for the report
  int port = 2049;
  int delayed_port = 0;  // 0: no delayed path
  int delay_ms = 1;
  int server_pid = 0;    // 0: no server CPU figures
  int runs = 5;
  double seconds = 0.8;
  std::vector<int> depths = {1, 8, 64, 256};
  std::vector<int> connections = {1, 4};
  int io_threads = RuntimeOptions{}.io_threads;
};

[[noreturn]] void Usage(std::string_view why) {
  std::fprintf(stderr,
               "ferry_rpc_bench: %.*s\nusage: ferry_rpc_bench --port=P [--host=H] "
               "[--delayed_port=P --delay_ms=N] [--server_pid=PID] [--runs=N] [--seconds=S] "
               "[--depths=1,8,64,256] [--connections=1,4] [--io_threads=N]\n",
               static_cast<int>(why.size()), why.data());
  std::exit(2);
}

std::vector<int> ParseIntList(std::string_view flag, std::string_view value) {
  std::vector<int> out;
  for (absl::string_view item : absl::StrSplit(ToAbsl(value), ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(item, &v) || v < 1) Usage(absl::StrCat("bad ", ToAbsl(flag)));
    out.push_back(v);
  }
  return out;
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.substr(0, 2) != "--" || eq == std::string_view::npos) Usage(arg);
    const std::string_view name = arg.substr(2, eq - 2);
    const std::string_view value = arg.substr(eq + 1);
    const absl::string_view v = ToAbsl(value);
    bool ok = true;
    if (name == "host") {
      f.host = std::string(value);
    } else if (name == "port") {
      ok = absl::SimpleAtoi(v, &f.port);
    } else if (name == "delayed_port") {
      ok = absl::SimpleAtoi(v, &f.delayed_port);
    } else if (name == "server") {
      f.server = std::string(v);
    } else if (name == "delay_ms") {
      ok = absl::SimpleAtoi(v, &f.delay_ms);
    } else if (name == "server_pid") {
      ok = absl::SimpleAtoi(v, &f.server_pid);
    } else if (name == "runs") {
      ok = absl::SimpleAtoi(v, &f.runs) && f.runs >= 1;
    } else if (name == "seconds") {
      ok = absl::SimpleAtod(v, &f.seconds) && f.seconds > 0;
    } else if (name == "depths") {
      f.depths = ParseIntList(name, value);
    } else if (name == "connections") {
      f.connections = ParseIntList(name, value);
    } else if (name == "io_threads") {
      ok = absl::SimpleAtoi(v, &f.io_threads) && f.io_threads >= 1;
    } else {
      Usage(absl::StrCat("unknown flag ", ToAbsl(arg)));
    }
    if (!ok) Usage(absl::StrCat("bad value in ", ToAbsl(arg)));
  }
  if (f.port <= 0 || f.port > 65535) Usage("--port is required");
  return f;
}

// CPU seconds (user + system) of this process, every thread included.
double ClientCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// CPU seconds of `pid` (utime + stime, fields 14 and 15 of /proc/PID/stat);
// -1 if unreadable.
double ProcessCpuSeconds(int pid) {
  if (pid <= 0) return -1;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces: count fields after its ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One measured configuration and its per-run samples.
struct Point {
  std::string path;  // "direct" or "+Nms"
  bool delayed = false;
  int connections = 0;
  int depth = 0;
  std::vector<double> rate;             // calls/s
  std::vector<double> client_us;        // client CPU us per call
  std::vector<double> server_us;        // server CPU us per call
  std::vector<double> client_cores;     // client CPU s per wall s
  std::vector<double> server_cores;
  std::vector<double> speedup;          // rate / rate at depth 1, same run
};

std::unique_ptr<RpcPool> MakePool(Runtime& runtime, const Flags& flags, int port,
                                  int connections) {
  RpcPoolOptions o;
  o.host = flags.host;
  o.port = static_cast<uint16_t>(port);
  o.framing = NewRecordMarkingFraming({});
  o.connections = connections;
  // The deepest point must fit on one connection.
  o.max_in_flight_per_connection = *std::max_element(flags.depths.begin(), flags.depths.end());
  o.default_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<RpcPool>> pool = RpcPool::Create(runtime, std::move(o));
  if (!pool.ok()) {
    std::fprintf(stderr, "ferry_rpc_bench: %s\n", pool.status().ToString().c_str());
    std::exit(1);
  }
  const absl::Status ready = (*pool)->WaitUntilReady(connections, absl::Now() + absl::Seconds(10));
  if (!ready.ok()) {
    std::fprintf(stderr, "ferry_rpc_bench: %s\n", ready.ToString().c_str());
    std::exit(1);
  }
  return *std::move(pool);
}

peers::RpcLoad Load(int depth, absl::Duration duration) {
  peers::RpcLoad load;
  EncodeCallHeader(/*xid=*/0, kNfs3Null, AuthNone(), AuthNone(), &load.request);
  load.depth = depth;
  load.duration = duration;
  // A real client decodes every reply; so does the bench.
  load.check_reply = [](const std::string& record) {
    return DecodeReply(record, kNfs3Null).status();
  };
  return load;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  Runtime runtime({.io_threads = flags.io_threads});

  std::vector<Point> points;
  struct PathSpec {
    std::string name;
    bool delayed;
    int port;
  };
  std::vector<PathSpec> paths = {{"direct", false, flags.port}};
  if (flags.delayed_port > 0) {
    paths.push_back({absl::StrCat("+", flags.delay_ms, "ms"), true, flags.delayed_port});
  }
  // One pool per path and connection count, reused by every run.
  std::map<std::pair<int, int>, std::unique_ptr<RpcPool>> pools;
  for (const PathSpec& p : paths) {
    for (int c : flags.connections) {
      pools[{p.port, c}] = MakePool(runtime, flags, p.port, c);
      for (int d : flags.depths) points.push_back({p.name, p.delayed, c, d});
    }
  }

  std::printf("RpcPool NFS v3 NULL calls to %s:%d (%s)", flags.host.c_str(), flags.port,
              flags.server.c_str());
  if (flags.delayed_port > 0) {
    std::printf(", and via toxiproxy :%d with +%d ms each way", flags.delayed_port,
                flags.delay_ms);
  }
  std::printf("\n%d runs x %zu points x %.2f s, Runtime io_threads=%d, %ld cores\n", flags.runs,
              points.size(), flags.seconds, runtime.options().io_threads,
              sysconf(_SC_NPROCESSORS_ONLN));
  std::fflush(stdout);

  // Warm-up: connections, server caches, allocator.
  for (auto& [key, pool] : pools) {
    peers::RunClosedLoop(*pool, Load(64, absl::Milliseconds(200)));
  }

  const absl::Duration duration = absl::Seconds(flags.seconds);
  for (int run = 0; run < flags.runs; ++run) {
    std::map<std::tuple<std::string, int>, double> depth1_rate;
    for (Point& pt : points) {
      RpcPool& pool = *pools[{pt.delayed ? flags.delayed_port : flags.port, pt.connections}];
      const double client0 = ClientCpuSeconds();
      const double server0 = ProcessCpuSeconds(flags.server_pid);
      const peers::RpcLoadResult r = peers::RunClosedLoop(pool, Load(pt.depth, duration));
      const double client_s = ClientCpuSeconds() - client0;
      const double server_s = ProcessCpuSeconds(flags.server_pid) - server0;
      if (r.failed > 0 || r.succeeded == 0) {
        std::fprintf(stderr, "ferry_rpc_bench: %s c=%d depth=%d: %lld of %lld calls failed: %s\n",
                     pt.path.c_str(), pt.connections, pt.depth, static_cast<long long>(r.failed),
                     static_cast<long long>(r.started), r.first_error.ToString().c_str());
        return 1;
      }
      const double wall = absl::ToDoubleSeconds(r.elapsed);
      const double calls = static_cast<double>(r.succeeded);
      pt.rate.push_back(calls / wall);
      pt.client_us.push_back(client_s * 1e6 / calls);
      pt.client_cores.push_back(client_s / wall);
      if (flags.server_pid > 0 && server_s >= 0) {
        pt.server_us.push_back(server_s * 1e6 / calls);
        pt.server_cores.push_back(server_s / wall);
      }
      // Depth 1 comes first in each path/connections group (as listed).
      const auto key = std::make_tuple(pt.path, pt.connections);
      if (pt.depth == flags.depths.front()) depth1_rate[key] = calls / wall;
      pt.speedup.push_back(calls / wall / depth1_rate[key]);
    }
    std::fprintf(stderr, "run %d/%d done\n", run + 1, flags.runs);
  }

  std::printf("\n%-8s %5s %6s %12s %9s %12s %12s %12s %12s\n", "path", "conns", "depth",
              "calls/s", "vs d=1", "client us", "server us", "client cores",
              "server cores");
  for (const Point& pt : points) {
    std::printf("%-8s %5d %6d %12.0f %8.1fx %12.2f %12s %12.2f %12s\n", pt.path.c_str(),
                pt.connections, pt.depth, Median(pt.rate), Median(pt.speedup),
                Median(pt.client_us),
                pt.server_us.empty() ? "-" : absl::StrFormat("%.2f", Median(pt.server_us)).c_str(),
                Median(pt.client_cores),
                pt.server_cores.empty() ? "-"
                                        : absl::StrFormat("%.2f", Median(pt.server_cores)).c_str());
  }
  std::printf("(medians of %d runs; 'us' = CPU microseconds per call; 'cores' = CPU seconds per "
              "wall second)\n",
              flags.runs);

  auto find = [&](bool delayed, int conns, int depth) -> const Point* {
    for (const Point& pt : points) {
      if (pt.delayed == delayed && pt.connections == conns && pt.depth == depth) return &pt;
    }
    return nullptr;
  };
  auto num = [](double v) { return absl::StrFormat("%.4g", v); };
  std::vector<std::string> fields = {
      "\"bench\":\"rpc\"",
      absl::StrCat("\"peer\":\"", flags.server, ", NFS v3 NULL over TCP\""),
      absl::StrCat("\"runs\":", flags.runs),
      absl::StrCat("\"seconds_per_point\":", num(flags.seconds)),
      absl::StrCat("\"delay_ms_each_way\":", flags.delay_ms),
  };
  if (const Point* p = find(true, 1, 64)) {
    fields.push_back(absl::StrCat("\"speedup_depth64_vs_depth1_1ms\":", num(Median(p->speedup))));
  }
  if (const Point* p = find(true, 4, 64)) {
    fields.push_back(
        absl::StrCat("\"speedup_depth64_vs_depth1_1ms_4conn\":", num(Median(p->speedup))));
  }
  if (const Point* p = find(false, 1, 64)) {
    fields.push_back(absl::StrCat("\"client_cpu_us_per_call\":", num(Median(p->client_us))));
    if (!p->server_us.empty()) {
      fields.push_back(absl::StrCat("\"server_cpu_us_per_call\":", num(Median(p->server_us))));
    }
    fields.push_back(absl::StrCat("\"client_cores_depth64_0ms\":", num(Median(p->client_cores))));
    if (!p->server_cores.empty()) {
      fields.push_back(
          absl::StrCat("\"server_cores_depth64_0ms\":", num(Median(p->server_cores))));
    }
  }
  if (const Point* p = find(false, 4, 64)) {
    fields.push_back(
        absl::StrCat("\"client_cpu_us_per_call_4conn\":", num(Median(p->client_us))));
    if (!p->server_us.empty()) {
      fields.push_back(
          absl::StrCat("\"server_cpu_us_per_call_4conn\":", num(Median(p->server_us))));
    }
  }
  std::vector<std::string> rates;
  for (const Point& pt : points) {
    rates.push_back(absl::StrCat("\"", pt.delayed ? "delay" : "direct", "_c", pt.connections,
                                 "_d", pt.depth, "\":", absl::StrFormat("%.0f", Median(pt.rate))));
  }
  fields.push_back(absl::StrCat("\"calls_per_sec\":{", absl::StrJoin(rates, ","), "}"));
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  fields.push_back(absl::StrCat("\"peak_rss_kb\":", u.ru_maxrss));
  std::printf("RESULT {%s}\n", absl::StrJoin(fields, ",").c_str());
  return 0;
}

}  // namespace
}  // namespace ferry

int main(int argc, char** argv) { return ferry::Main(argc, argv); }
