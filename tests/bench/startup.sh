#!/usr/bin/env bash
# scripts/bench startup: what a process pays before it does any work
# (issue #33 part 1). Medians of RUNS (20) runs of each command, wall time
# and the child's CPU (user+sys, from wait4's rusage) side by side.
# Measured so far: ferry-cp --help, ferry-walk --help, `import ferry`
# against `import irods` (python-irodsclient) and `import boto3`, each in a
# fresh interpreter of $VENV. Not yet here: the 1-byte NFS get against
# nfs-cp, the 1-byte iRODS get against a PRC process, the JNI load.
# RESULT keys: cp_help_{cpu,wall}_ms, walk_help_{cpu,wall}_ms,
#   import_ferry_{cpu,wall}_ms, import_irods_*, import_boto3_*,
#   cp_help_libs (shared libraries ferry-cp maps, from ldd).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-20}
require_built startup.sh "$CP" "$WALK"
PY="$VENV/bin/python"
[ -x "$PY" ] || PY=python3
libs=$(ldd "$CP" | wc -l)
"$PY" - "$RUNS" "$CP" "$WALK" "$PY" "$libs" <<'PYEOF'
import json, os, statistics, subprocess, sys, time
runs, cp, walk, py, libs = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

def measure(argv):
    """Medians of wall and child CPU in ms; None when the command fails."""
    walls, cpus = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        walls.append((time.perf_counter() - t0) * 1e3)
        cpus.append((ru.ru_utime + ru.ru_stime) * 1e3)
        if os.waitstatus_to_exitcode(status) != 0:
            return None
    return statistics.median(cpus), statistics.median(walls)

result = {"bench": "startup", "runs": runs, "cp_help_libs": libs}
rows = {
    "cp_help": [cp, "--help"],
    "walk_help": [walk, "--help"],
    "import_ferry": [py, "-c", "import ferry"],
    "import_irods": [py, "-c", "import irods.session"],
    "import_boto3": [py, "-c", "import boto3"],
}
for key, argv in rows.items():
    m = measure(argv)
    if m is None:
        print(f"startup: {' '.join(argv)} failed; {key} left out", file=sys.stderr)
        continue
    result[key + "_cpu_ms"], result[key + "_wall_ms"] = round(m[0], 2), round(m[1], 2)
    print(f"{key:14s} cpu {m[0]:7.2f} ms  wall {m[1]:7.2f} ms", file=sys.stderr)
print("RESULT " + json.dumps(result))
PYEOF
