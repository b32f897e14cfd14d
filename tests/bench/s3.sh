#!/usr/bin/env bash
# scripts/bench s3: ferry-cp against the AWS CLI (`/usr/bin/aws s3 cp`,
# Debian's awscli) and boto3's TransferManager (upload_file/download_file),
# all three against the same versitygw on loopback, in the same run:
# uploads and downloads of 64 MiB, 256 MiB and 1 GiB files, medians of 5
# runs (tools interleaved within each run), with each client's CPU seconds
# (user+sys) and peak RSS from /usr/bin/time, and versitygw's CPU per run.
# Every tool runs with its defaults (ferry-cp's and the CLI's: 8 MiB parts,
# 10 requests in flight). Local files live in one temp dir on the same
# filesystem as versitygw's data; nothing is written into the repo.
#   BENCH_SIZES="64 256 1024"  sizes in MiB      BENCH_RUNS=5  runs per point
#   FERRY_BUILD_DIR=build/release                the ferry-cp to measure
# Installs what is missing (idempotent): awscli and time with apt-get,
# boto3 with pip into the project's .venv (BENCH_VENV to use another).
# Starts its own versitygw (127.0.0.1:7070; run it in a network namespace
# beside a test run) and stops it by PID on exit. About 4 minutes with the
# defaults. Ends with one line `RESULT {json}`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${FERRY_BUILD_DIR:-$ROOT/build/release}
CP="$BUILD/examples/ferry-cp"
VENV=${BENCH_VENV:-$ROOT/.venv}
[ -x "$CP" ] || { echo "s3.sh: $CP is missing (scripts/build release)" >&2; exit 1; }

apt_install() {  # apt_install PACKAGE: once, refreshing the lists only if needed
  echo "s3.sh: installing $1 (apt-get)" >&2
  apt-get install -y -q "$1" >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get install -y -q "$1" >/dev/null; }
}
[ -x /usr/bin/aws ] || apt_install awscli
[ -x /usr/bin/time ] || apt_install time
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import boto3' 2>/dev/null || {
  echo "s3.sh: installing boto3 into $VENV (pip)" >&2
  "$VENV/bin/python" -m pip install -q boto3 >&2
}

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
