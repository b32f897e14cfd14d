#!/usr/bin/env bash
# scripts/bench irods: ferry (IrodsFileSystem on the core engine,
# tests/bench/irods_bench.cc) against python-irodsclient 3.3.0, both against
# the same fresh iRODS test peer in the same run: list a 10,000-entry
# collection (uncached; ferry also from its NFSRODS cache, warm), put and
# get 1,000 small files (4 KiB), put and get one 1 GiB file, and read a
# 64 MiB object to its end through a file object in pieces of 64 KiB,
# 1 MiB and 8 MiB (ferry's Python binding against PRC's, in Python). Medians of
# BENCH_RUNS runs (default 3); the peer's CPU seconds during each side's
# run are reported beside, so a ratio is the clients' difference, not the
# peer's ceiling. Each side runs with its defaults (ferry: 16 files at once,
# 4 streams of 8 MiB per large file; PRC: one file at a time, its own
# parallel threads above 32 MiB). Each side's client CPU (user+sys, every
# thread, its own process's clock around the same calls) is reported beside
# its wall time. About 3 minutes. Ends with one line `RESULT {json}`
# (tests/bench/irods_bench.py lists the keys): each wall ratio
# *_speedup_vs_prc gains *_speedup_vs_prc_cpu_ratio (PRC's client CPU over
# ferry's), beside the older {put,get}_1g_cpu_s_per_gib_* and
# {put,get}_1g_cpu_ratio (ferry's over PRC's).
#   BENCH_RUNS=3  BENCH_BIG_MIB=1024  BENCH_ENTRIES=10000  BENCH_SMALL=1000  BENCH_STREAM_MIB=64
set -euo pipefail
source "$(dirname "$0")/lib.sh"
BENCH="$BUILD/tests/ferry_irods_bench"
RUNS=${BENCH_RUNS:-3}
require_built irods.sh "$BENCH"
# ferry's Python binding for the stream reads (bench_python_env), PRC.
bench_python_env irods.sh "irods=python-irodsclient==3.3.0"
"$ROOT/tests/peers/install-peers" >&2

bench_work irods
IRODS_PEER_PORT=0 bench_peer irods "$STATE/irods"
PORT=$(cat "$STATE/irods/port")
export IRODS_PASSWORD=rods HOME="$WORK/home"
mkdir -p "$HOME" "$WORK/list" "$WORK/small"

# The 10,000-entry collection: empty data objects, put by ferry-cp.
entries=${BENCH_ENTRIES:-10000}
(cd "$WORK/list" && seq -f "e%05g" 1 "$entries" | xargs touch)
echo "irods.sh: seeding $entries entries" >&2
"$CP" --quiet -r --jobs=16 "$WORK/list" "irods://rods@127.0.0.1:$PORT/tempZone/home/rods/bench/list10k"
for i in $(seq -f "%04g" 1 "${BENCH_SMALL:-1000}"); do head -c 4096 /dev/urandom >"$WORK/small/s$i"; done
head -c $((${BENCH_BIG_MIB:-1024} << 20)) /dev/urandom >"$WORK/big.bin"
head -c $((${BENCH_STREAM_MIB:-64} << 20)) /dev/urandom >"$WORK/stream.bin"

"$VENV/bin/python" "$ROOT/tests/bench/irods_bench.py" --port="$PORT" \
  --peer-pid="$(cat "$STATE/irods/irods.pid")" --coll=/tempZone/home/rods/bench/list10k \
  --small="$WORK/small" --big="$WORK/big.bin" --stream="$WORK/stream.bin" --work="$WORK" --runs="$RUNS" \
  --ferry-bench="$BENCH"
