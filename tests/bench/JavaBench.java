// The measuring half of `scripts/bench java` (tests/bench/java.sh starts the
// peers and runs this as a single-file program on the ferry jar's classpath).
//
// Three comparisons, each in one run against the same server:
//   cache     TtlCache.get hits/s from one Java thread, beside the C++ figure
//             (ferry_cache_bench's short path keys, passed in) and a
//             ConcurrentHashMap.get for scale
//   download  FileSystems.copy(s3://..., local) in this JVM vs `ferry-cp`
//   walk      FileSystems.walk(nfs://...) counted in this JVM vs `ferry-walk`
// Ratios are C++ time over Java time (1.0: as fast; >= 0.95: within 5 %).
// Java times are the calls in a running JVM (FerryRuntime and FileSystems made
// and closed inside the timed call); C++ times are whole processes. Beside
// each time, the client's CPU (user + system): the JVM's own around a call
// (every thread, the JIT's and the collector's included), the child's
// around a process.
// Ends with one line `RESULT {json}`: download_java_vs_cpp and
// walk_java_vs_cpp (C++ wall over Java wall) and each + _cpu_ratio (C++ CPU
// over Java CPU: > 1, the JVM uses less); download_s, walk_s and
// download_cpu_s, walk_cpu_s ({"java","cpp"} medians); cache_hits_per_s_*
// (a hit is all CPU: no CPU figure beside it).

import io.ferry.Entry;
import io.ferry.FileSystems;
import io.ferry.FerryRuntime;
import io.ferry.TtlCache;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

public class JavaBench {
  static final int KEYS = 1024;  // as ferry_cache_bench: a working set that stays in L2
  static final int GETS = 4_000_000;
  static long sink;

  static Map<String, String> args(String[] argv) {
    Map<String, String> m = new HashMap<>();
    for (String a : argv) {
      int eq = a.indexOf('=');
      m.put(a.substring(2, eq), a.substring(eq + 1));
    }
    return m;
  }

  static double median(List<Double> xs) {
    double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  interface Timed {
    void run() throws Exception;
  }

  // The client's CPU seconds so far: this JVM's (every thread) and that of
  // the children it has waited for (the C++ tools: cutime + cstime of
  // /proc/self/stat, in clock ticks of 1/100 s on Linux).
  static double cpuSeconds() throws Exception {
    var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    String stat = Files.readString(Path.of("/proc/self/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");  // f[0]: field 3
    return os.getProcessCpuTime() / 1e9 + (Long.parseLong(f[13]) + Long.parseLong(f[14])) / 100.0;
  }

  // {wall seconds, client CPU seconds} of one call.
  static double[] timed(Timed t) throws Exception {
    double c0 = cpuSeconds();
    long t0 = System.nanoTime();
    t.run();
    double wall = (System.nanoTime() - t0) / 1e9;
    return new double[] {wall, cpuSeconds() - c0};
  }

  static void process(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    if (p.waitFor() != 0) throw new RuntimeException(String.join(" ", cmd) + " failed");
  }

  static String sha256(Path p) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    try (var in = Files.newInputStream(p)) {
      byte[] buf = new byte[1 << 20];
      for (int n; (n = in.read(buf)) > 0; ) md.update(buf, 0, n);
    }
    return java.util.HexFormat.of().formatHex(md.digest());
  }

  // The KEYS keys the hit benchmarks look up, each its own value.
  static String[] hitKeys() {
    String[] keys = new String[KEYS];
    for (int i = 0; i < KEYS; i++) keys[i] = "/zone/home/u/f" + i;
    return keys;
  }

  // One lookup of the hit benchmarks (a cache's get may throw).
  interface Lookup {
    String get(String key) throws Exception;
  }

  // The median over `runs` timed runs of GETS lookups of `keys` through
  // `get`, in lookups per second; a first, untimed run warms the JIT up.
  static double hitsPerSecond(int runs, String[] keys, Lookup get) throws Exception {
    List<Double> rates = new ArrayList<>();
    for (int r = 0; r < runs + 1; r++) {
      long sum = 0;
      long t0 = System.nanoTime();
      for (int i = 0; i < GETS; i++) sum += get.get(keys[i & (KEYS - 1)]).length();
      double s = (System.nanoTime() - t0) / 1e9;
      sink += sum;
      if (r > 0) rates.add(GETS / s);
    }
    return median(rates);
  }

  static double cacheHitsPerSecond(int runs) throws Exception {
    String[] keys = hitKeys();
    try (TtlCache<String> cache = TtlCache.<String>builder()
        .refreshTime(null).loader(k -> k).build()) {
      for (String k : keys) cache.get(k);
      return hitsPerSecond(runs, keys, cache::get);
    }
  }

  static double mapHitsPerSecond(int runs) throws Exception {
    String[] keys = hitKeys();
    ConcurrentHashMap<String, String> map = new ConcurrentHashMap<>();
    for (String k : keys) map.put(k, k);
    return hitsPerSecond(runs, keys, map::get);
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> a = args(argv);
    int runs = Integer.parseInt(a.get("runs"));
    Path work = Path.of(a.get("work"));

    // Cache hits.
    double javaHits = cacheHitsPerSecond(runs);
    double mapHits = mapHitsPerSecond(runs);
    double cppHits = Double.parseDouble(a.get("cpp-cache-hits"));
    System.out.printf("== TtlCache hits/s, 1 thread, %d path keys (medians of %d) ==%n", KEYS, runs);
    System.out.printf("  %-34s %8.1f M%n", "TtlCache.get (Java)", javaHits / 1e6);
    System.out.printf("  %-34s %8.1f M%n", "TtlCache::Get (C++, same run)", cppHits / 1e6);
    System.out.printf("  %-34s %8.1f M%n", "ConcurrentHashMap.get (Java)", mapHits / 1e6);

    // Download: the JVM vs the C++ tool, interleaved, outputs removed untimed.
    String s3Url = a.get("s3-url");
    Path javaOut = work.resolve("java.bin"), cppOut = work.resolve("cpp.bin");
    Timed javaDownload = () -> {
      try (FerryRuntime rt = new FerryRuntime(); FileSystems fs = new FileSystems(rt)) {
        fs.copy(s3Url, javaOut.toString(), false);
      }
    };
    Timed cppDownload = () -> process(a.get("ferry-cp"), s3Url, cppOut.toString());
    javaDownload.run();
    cppDownload.run();
    String want = a.get("sha256");
    if (!sha256(javaOut).equals(want) || !sha256(cppOut).equals(want)) {
      throw new RuntimeException("a download differs from the object");
    }
    List<Double> dlJava = new ArrayList<>(), dlCpp = new ArrayList<>();
    List<Double> dlJavaCpu = new ArrayList<>(), dlCppCpu = new ArrayList<>();
    for (int r = 0; r < runs; r++) {
      for (int k = 0; k < 2; k++) {
        boolean java = (r + k) % 2 == 0;
        Files.deleteIfExists(java ? javaOut : cppOut);
        double[] t = timed(java ? javaDownload : cppDownload);
        (java ? dlJava : dlCpp).add(t[0]);
        (java ? dlJavaCpu : dlCppCpu).add(t[1]);
      }
    }
    double dlJ = median(dlJava), dlC = median(dlCpp);
    double dlJCpu = median(dlJavaCpu), dlCCpu = median(dlCppCpu);
    int mib = Integer.parseInt(a.get("download-mib"));
    System.out.printf("== S3 download, %d MiB, versitygw (medians of %d; wall / client CPU) ==%n", mib, runs);
    System.out.printf("  %-34s %7.3f s %8.1f MiB/s %7.3f s CPU%n", "FileSystems.copy (in the JVM)", dlJ, mib / dlJ,
        dlJCpu);
    System.out.printf("  %-34s %7.3f s %8.1f MiB/s %7.3f s CPU%n", "ferry-cp (C++ process)", dlC, mib / dlC, dlCCpu);

    // Walk: counted from the Stream<Entry>; three times the runs (it is short).
    String nfsUrl = a.get("nfs-url");
    long wantEntries = Long.parseLong(a.get("walk-entries"));
    long[] seen = new long[1];
    Timed javaWalk = () -> {
      try (FerryRuntime rt = new FerryRuntime(); FileSystems fs = new FileSystems(rt);
          Stream<Entry> entries = fs.walk(nfsUrl)) {
        seen[0] = entries.count();
      }
    };
    Timed cppWalk = () -> process(a.get("ferry-walk"), nfsUrl);
    javaWalk.run();
    if (seen[0] != wantEntries) {
      throw new RuntimeException("the Java walk saw " + seen[0] + " entries, want " + wantEntries);
    }
    cppWalk.run();
    List<Double> wJava = new ArrayList<>(), wCpp = new ArrayList<>();
    List<Double> wJavaCpu = new ArrayList<>(), wCppCpu = new ArrayList<>();
    for (int r = 0; r < 3 * runs; r++) {
      for (int k = 0; k < 2; k++) {
        boolean java = (r + k) % 2 == 0;
        double[] t = timed(java ? javaWalk : cppWalk);
        (java ? wJava : wCpp).add(t[0]);
        (java ? wJavaCpu : wCppCpu).add(t[1]);
      }
    }
    double wJ = median(wJava), wC = median(wCpp);
    double wJCpu = median(wJavaCpu), wCCpu = median(wCppCpu);
    System.out.printf("== NFS walk, %d entries, ganesha (medians of %d; wall / client CPU) ==%n", wantEntries,
        3 * runs);
    System.out.printf("  %-34s %7.3f s %7.3f s CPU%n", "FileSystems.walk (in the JVM)", wJ, wJCpu);
    System.out.printf("  %-34s %7.3f s %7.3f s CPU%n", "ferry-walk (C++ process)", wC, wCCpu);

    System.out.printf(
        "RESULT {\"bench\":\"java\",\"runs\":%d,\"cache_hits_per_s_java\":%.0f,"
            + "\"cache_hits_per_s_cpp\":%.0f,\"cache_hits_per_s_concurrent_hash_map\":%.0f,"
            + "\"download_mib\":%d,\"download_java_vs_cpp\":%.3f,\"download_s\":{\"java\":%.4f,\"cpp\":%.4f},"
            + "\"walk_entries\":%d,\"walk_runs\":%d,\"walk_java_vs_cpp\":%.3f,"
            + "\"walk_s\":{\"java\":%.4f,\"cpp\":%.4f},"
            + "\"download_java_vs_cpp_cpu_ratio\":%.3f,\"download_cpu_s\":{\"java\":%.4f,\"cpp\":%.4f},"
            + "\"walk_java_vs_cpp_cpu_ratio\":%.3f,\"walk_cpu_s\":{\"java\":%.4f,\"cpp\":%.4f}}%n",
        runs, javaHits, cppHits, mapHits, mib, dlC / dlJ, dlJ, dlC, wantEntries, 3 * runs, wC / wJ,
        wJ, wC, dlCCpu / Math.max(dlJCpu, 1e-9), dlJCpu, dlCCpu, wCCpu / Math.max(wJCpu, 1e-9), wJCpu, wCCpu);
    if (sink == 42) System.out.println();  // keeps the loops' sums alive
  }
}
