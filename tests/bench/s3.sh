#!/usr/bin/env bash
# scripts/bench s3: ferry-cp against the AWS CLI (`/usr/bin/aws s3 cp`,
# Debian's awscli) and boto3's TransferManager (upload_file/download_file),
# all three against the same versitygw on loopback, in the same run:
# uploads and downloads of 64 MiB, 256 MiB and 1 GiB files, medians of 5
# runs (tools interleaved within each run), with each client's CPU seconds
# (user+sys, from its rusage) and peak RSS (from /usr/bin/time), and
# versitygw's CPU per run.
# Every tool runs with its defaults (ferry-cp's and the CLI's: 8 MiB parts,
# 10 requests in flight). Local files live in one temp dir on the same
# filesystem as versitygw's data; nothing is written into the repo.
#   BENCH_SIZES="64 256 1024"  sizes in MiB      BENCH_RUNS=5  runs per point
#   FERRY_BUILD_DIR=build/release                the ferry-cp to measure
# Installs what is missing (idempotent): awscli and time with apt-get,
# boto3 with pip into the project's .venv (BENCH_VENV to use another).
# Starts its own versitygw (127.0.0.1:7070; run it in a network namespace
# beside a test run) and stops it by PID on exit. About 4 minutes with the
# defaults. Ends with one line `RESULT {json}` (tests/bench/s3_bench.py
# lists its keys): per size and direction, {upload,download}_speedup_vs_
# {aws,boto3}_{64m,256m,1g} (wall) and the same + _cpu_ratio (the peer's
# client CPU over ferry-cp's), beside the older cpu_ratio_vs_{aws,boto3}_*
# (ferry-cp's CPU over the peer's).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_built s3.sh "$CP"
[ -x /usr/bin/aws ] || bench_apt_install awscli
[ -x /usr/bin/time ] || bench_apt_install time
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
bench_pip_ensure boto3 boto3

WORK=$(mktemp -d /tmp/ferry-s3-bench.XXXXXX)
cleanup() {
  "$ROOT/tests/peers/versitygw" stop "$WORK/versitygw" || true
  rm -rf "$WORK"
}
trap cleanup EXIT
"$ROOT/tests/peers/versitygw" start "$WORK/versitygw"

"$VENV/bin/python" "$ROOT/tests/bench/s3_bench.py" \
  --ferry-cp="$CP" --work="$WORK" \
  --server-pid="$(cat "$WORK/versitygw/versitygw.pid")" \
  --server-data="$WORK/versitygw/data" \
  --endpoint="http://127.0.0.1:${VERSITYGW_PORT:-7070}" \
  --sizes="${BENCH_SIZES:-64 256 1024}" --runs="${BENCH_RUNS:-5}"
