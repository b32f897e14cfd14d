#!/usr/bin/env bash
# scripts/bench startup: what a process pays before it does any work
# (issue #33 part 1). Medians of RUNS (20) runs of each command (a get by
# ferry-cp and the peer's get alternated run by run), wall time and the
# child's CPU (user+sys, from wait4's rusage) side by side:
#   - ferry-cp --help, ferry-walk --help;
#   - `import ferry` against `import irods` (python-irodsclient) and
#     `import boto3`, each in a fresh interpreter of $VENV;
#   - a 1-byte NFS get, whole process: ferry-cp against libnfs's nfs-cp,
#     the same file from one nfs-ganesha (ports 2049/20048);
#   - a 1-byte iRODS get, whole process: ferry-cp against a `python -c`
#     python-irodsclient (PRC) get, the same file from the iRODS test peer;
#   - the JNI library's load (System.load in a fresh JVM, timed inside it).
# The peer rows start their own ganesha and iRODS peer: run in a private
# network namespace (tests/peers/README.md). STARTUP_PEERS=0 skips them.
# RESULT keys: cp_help_{cpu,wall}_ms, walk_help_{cpu,wall}_ms,
#   import_ferry_{cpu,wall}_ms, import_irods_*, import_boto3_*,
#   cp_help_libs (shared libraries ferry-cp maps, from ldd);
#   nfs_get_1b_{ferry,nfs_cp}_{cpu,wall}_ms, nfs_get_1b_vs_nfs_cp (nfs-cp's
#   wall over ferry-cp's: >= 1 when ferry-cp is as fast), and
#   nfs_get_1b_cpu_vs_nfs_cp (the same with CPU); irods_get_1b_{ferry,prc}_*,
#   irods_get_1b_vs_prc_process, irods_get_1b_cpu_vs_prc_process;
#   jni_load_ms (median inside the JVM) and jni_libs (ldd).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-20}
require_built startup.sh "$CP" "$WALK"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
libs=$(ldd "$CP" | wc -l)
JNI="$BUILD/bindings/java/libferry_jni.so"

bench_work startup
export STARTUP_NFS_URL="" STARTUP_IRODS_URL="" STARTUP_IRODS_PORT="" STARTUP_WORK="$WORK"
if [ "${STARTUP_PEERS:-1}" != 0 ]; then
  command -v nfs-cp >/dev/null || { echo "startup.sh: nfs-cp missing (libnfs-utils)" >&2; exit 1; }
  bench_pip_ensure irods "python-irodsclient==3.3.0"
  "$ROOT/tests/peers/install-peers" >&2
  head -c 1 /dev/urandom >"$EXPORT/one.bin"
  bench_peer ganesha "$EXPORT" "$STATE/ganesha" >&2
  STARTUP_NFS_URL="nfs://127.0.0.1/export/one.bin?nfsport=2049&mountport=20048"
  IRODS_PEER_PORT=0 bench_peer irods "$STATE/irods" >&2
  STARTUP_IRODS_PORT=$(cat "$STATE/irods/port")
  STARTUP_IRODS_URL="irods://rods@127.0.0.1:$STARTUP_IRODS_PORT/tempZone/home/rods/one.bin"
  export IRODS_PASSWORD=rods HOME="$WORK/home"
  mkdir -p "$HOME"
  "$CP" --quiet "$EXPORT/one.bin" "$STARTUP_IRODS_URL"
fi
# The JNI library's JNI_OnLoad finds io.ferry's classes: the jar goes on the
# class path (packed as java.sh packs it, offline, when it is missing).
JAR=$(ls "$ROOT"/bindings/java/target/ferry-*.jar 2>/dev/null | grep -v original | head -1 || true)
if [ -z "$JAR" ] && [ -f "$JNI" ] && command -v mvn >/dev/null; then
  mvn -q -B -o -f "$ROOT/bindings/java/pom.xml" -DskipTests -Dferry.native.dir="$BUILD/bindings/java" \
    package >&2 || echo "startup.sh: could not pack the jar; jni_load_ms left out" >&2
  JAR=$(ls "$ROOT"/bindings/java/target/ferry-*.jar 2>/dev/null | grep -v original | head -1 || true)
fi
export STARTUP_JAR="$JAR"

"$PY" - "$RUNS" "$CP" "$WALK" "$PY" "$libs" "$JNI" <<'PYEOF'
import json, os, shutil, statistics, subprocess, sys, tempfile, time
runs, cp, walk, py, libs, jni = (int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4],
                                 int(sys.argv[5]), sys.argv[6])
work = os.environ["STARTUP_WORK"]

def run_once(argv, fresh=None):
    """(child CPU, wall) of one run in ms; None when the command fails.
    `fresh`: a file removed before the run (a copy's destination)."""
    if fresh and os.path.exists(fresh):
        os.remove(fresh)
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"startup: {' '.join(argv)}: {err.decode(errors='replace').strip()}", file=sys.stderr)
        return None
    if fresh and os.path.getsize(fresh) != 1:
        print(f"startup: {' '.join(argv)} did not write 1 byte to {fresh}", file=sys.stderr)
        return None
    return (ru.ru_utime + ru.ru_stime) * 1e3, wall

def measure(*argvs, fresh=None):
    """Medians of (child CPU, wall) in ms for each command, their runs
    alternated (A B A B ...) so that the host's drift, which moves a row
    by half within a minute on this VM, falls on both alike; None for a
    command that fails."""
    samples = [[] for _ in argvs]
    for _ in range(runs):
        for i, argv in enumerate(argvs):
            if samples[i] is None:
                continue
            m = run_once(argv, fresh)
            samples[i] = None if m is None else samples[i] + [m]
    return [None if s is None else (statistics.median(c for c, _ in s),
                                    statistics.median(w for _, w in s)) for s in samples]

result = {"bench": "startup", "runs": runs, "cp_help_libs": libs}

def record(key, m):
    if m is None:
        print(f"startup: {key} left out", file=sys.stderr)
        return None
    result[key + "_cpu_ms"], result[key + "_wall_ms"] = round(m[0], 2), round(m[1], 2)
    print(f"{key:22s} cpu {m[0]:7.2f} ms  wall {m[1]:7.2f} ms", file=sys.stderr)
    return m

def row(key, argv):
    return record(key, measure(argv)[0])

def rows(key_a, argv_a, key_b, argv_b, fresh):
    """Two commands measured alternately (see measure)."""
    a, b = measure(argv_a, argv_b, fresh=fresh)
    return record(key_a, a), record(key_b, b)

def versus(key, ours, theirs):
    """The peer's figure over ferry's: >= 1 when ferry is as fast."""
    if ours and theirs:
        result[key] = round(theirs[1] / ours[1], 2)
        result[key.replace("_vs_", "_cpu_vs_", 1)] = round(theirs[0] / ours[0], 2)

row("cp_help", [cp, "--help"])
row("walk_help", [walk, "--help"])
row("import_ferry", [py, "-c", "import ferry"])
row("import_irods", [py, "-c", "import irods.session"])
row("import_boto3", [py, "-c", "import boto3"])

dst = os.path.join(work, "one.out")
nfs_url = os.environ["STARTUP_NFS_URL"]
if nfs_url:
    f, n = rows("nfs_get_1b_ferry", [cp, "--quiet", nfs_url, dst],
                "nfs_get_1b_nfs_cp", ["nfs-cp", nfs_url, dst], dst)
    versus("nfs_get_1b_vs_nfs_cp", f, n)
irods_url = os.environ["STARTUP_IRODS_URL"]
if irods_url:
    prc = ("import sys\nfrom irods.session import iRODSSession\n"
           "with iRODSSession(host='127.0.0.1', port=int(sys.argv[1]), user='rods',"
           " password='rods', zone='tempZone') as s:\n"
           "    s.data_objects.get('/tempZone/home/rods/one.bin', sys.argv[2])\n")
    f, p = rows("irods_get_1b_ferry", [cp, "--quiet", irods_url, dst],
                "irods_get_1b_prc", [py, "-c", prc, os.environ["STARTUP_IRODS_PORT"], dst], dst)
    versus("irods_get_1b_vs_prc_process", f, p)

# The JNI library's load: System.load timed inside a fresh JVM (the JVM's
# own start is not ferry's), compiled once with javac.
jar = os.environ["STARTUP_JAR"]
if jar and os.path.exists(jni) and shutil.which("javac") and shutil.which("java"):
    src = os.path.join(work, "JniLoad.java")
    with open(src, "w") as out:
        out.write("public class JniLoad { public static void main(String[] a) {"
                  " long t0 = System.nanoTime(); System.load(a[0]);"
                  " System.out.println((System.nanoTime() - t0) / 1e6); } }\n")
    subprocess.run(["javac", "-d", work, src], check=True)
    loads = []
    for _ in range(runs):
        out = subprocess.run(["java", "-Xshare:auto", "-cp", work + ":" + jar, "JniLoad", jni],
                             check=True, capture_output=True, text=True).stdout
        loads.append(float(out))
    result["jni_load_ms"] = round(statistics.median(loads), 2)
    result["jni_libs"] = len(subprocess.run(["ldd", jni], capture_output=True,
                                            text=True).stdout.splitlines())
    print(f"{'jni_load':22s} {result['jni_load_ms']:7.2f} ms (in the JVM)", file=sys.stderr)
print("RESULT " + json.dumps(result))
PYEOF
