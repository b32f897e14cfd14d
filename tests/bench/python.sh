#!/usr/bin/env bash
# scripts/bench python: ferry from Python against the C++ tools and boto3,
# on the same peers in the same run (tests/bench/python_bench.py measures):
#   - one 256 MiB S3 download: ferry.s3.download (in one Python process)
#     vs the C++ `ferry-cp s3://... /local` vs boto3's download_file, all
#     against the same versitygw;
#   - a 100,000-file NFS walk (1,000 dirs x 100 files, as bench nfs-walk;
#     3 x RUNS runs, it is short):
#     ferry.nfs.walk vs the C++ `ferry-walk`, against the same ganesha;
#   - the cost of a TtlCache.get hit from Python, beside dict.get and an
#     functools.lru_cache hit.
# Medians of RUNS (5) runs, tools interleaved (the first one rotating) and
# each output file removed before its timed run, after one
# untimed warm-up of each (whose output is checked). C++ times are whole
# processes (start, connect, transfer); Python times are the calls in a
# running interpreter (client creation included), and the output also gives
# the whole `python -c` process for comparison.
# Installs the package into $FERRY_ROOT/.venv (incremental, as
# scripts/test-python does) and boto3 if missing. Starts its own versitygw
# (127.0.0.1:7070) and ganesha (2049/20048) and stops them by PID on exit:
# beside a test run, run it in a network namespace (FERRY_PEERS_NETNS=1).
# Each timed run also takes the client's CPU (user+sys): the Python
# process's own CPU clock around an in-process call, the child's around a
# process. About 2 minutes. Ends with one line `RESULT {json}`
# (tests/bench/python_bench.py lists the keys): each wall ratio
# (download_python_vs_cpp, download_python_process_vs_cpp,
# download_speedup_vs_boto3, walk_python_vs_cpp) gains the same key +
# _cpu_ratio, and download_cpu_s / walk_cpu_s the medians beside
# download_s / walk_s.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-5}
DOWNLOAD_MIB=${DOWNLOAD_MIB:-256}
bench_python_env python.sh boto3

bench_work python
bench_make_tree t100k 1000 100000
bench_peer ganesha "$EXPORT" "$STATE/ganesha"
bench_peer versitygw "$STATE/versitygw"

"$VENV/bin/python" "$ROOT/tests/bench/python_bench.py" \
  --ferry-cp="$CP" --ferry-walk="$WALK" --work="$WORK" --runs="$RUNS" \
  --endpoint="http://127.0.0.1:${VERSITYGW_PORT:-7070}" --download-mib="$DOWNLOAD_MIB" \
  --nfs-url="nfs://127.0.0.1/export/t100k?nfsport=2049&mountport=20048" --walk-entries=101000
