#!/usr/bin/env bash
# scripts/bench dist: ferry.dist (walks and copies sharded over Dask) against
# the single-process C++ tools, on the same ganesha in the same run:
#   - walk: the 100,000-file tree (1,000 dirs x 100 files, 101,000 entries)
#     by `ferry-walk`, by ferry.FileSystems.walk in one Python process and
#     by ferry.dist.walk on LocalClusters of 1, 2 and 4 worker processes;
#   - copy: a COPY_FILES-file tree (default 10,000 files in 100 dirs; the
#     100,000-file copy takes ~3 minutes a run with ferry-cp alone on 2
#     cores) NFS -> NFS, by `ferry-cp -r` and by ferry.dist.copy on the same
#     clusters.
# Medians of RUNS (3) runs, tools interleaved (the first one rotating), after
# one untimed, checked warm-up of each (tests/bench/dist_bench.py). On 2
# cores the point is the overhead over the single-process tool, not speedup.
# Installs the package into $FERRY_ROOT/.venv (incremental, as
# scripts/test-python does) and distributed if missing. Starts its own
# ganesha (2049/20048) and stops it on exit: beside a test run, run it in a
# network namespace (FERRY_PEERS_NETNS=1). About 5 minutes. Ends with one
# line `RESULT {json}`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-3}
COPY_FILES=${COPY_FILES:-10000}
bench_python_env dist.sh distributed

bench_work dist
bench_make_tree t100k 1000 100000
bench_make_tree tcopy $(( (COPY_FILES + 99) / 100 )) "$COPY_FILES"
bench_peer ganesha "$EXPORT" "$STATE/ganesha"

NFS="nfs://127.0.0.1/export"
OPTS="nfsport=2049&mountport=20048"
cd "$WORK"  # the LocalClusters' scratch space lands here, not in the checkout
"$VENV/bin/python" "$ROOT/tests/bench/dist_bench.py" \
  --ferry-cp="$CP" --ferry-walk="$WALK" --runs="$RUNS" \
  --walk-url="$NFS/t100k?$OPTS" --walk-entries=101000 \
  --copy-src-url="$NFS/tcopy?$OPTS" --copy-files="$COPY_FILES" \
  --dst-url="$NFS?$OPTS" --export="$EXPORT"
