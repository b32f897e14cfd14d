#!/usr/bin/env bash
# scripts/bench all: the project's published ferry-bench set. Starts its
# own ganesha (+ rpcbind), versitygw and iRODS test peer, runs ferry-bench
# (bindings/python/ferry/bench) against all three with the sizes below,
# writes every measurement to docs/bench/records.jsonl, and regenerates the
# plots under docs/bench/ and the section of docs/benchmarks.md between the
# ferry-bench marker comments from those records (the rest of the page is
# hand-written and left alone). Fixed ports (2049/20048/111, 7070): run it
# in a private network namespace beside anything else that uses them.
#   BENCH_VENV=.venv        the Python with ferry installed (+ matplotlib,
#                           boto3, python-irodsclient; installed if missing)
#   BENCH_SKIP_INSTALL=1    do not pip install bindings/python first
#   BENCH_ARGS="..."        extra ferry-bench flags (after the set's own)
#   BENCH_REPORT_ONLY=1     only regenerate the page and plots from the records
#   FERRY_BUILD_DIR=build/release   its ferry-cp and ferry-walk
#   BENCH_WORK_BASE=/dev/shm  where the peers' data and the local files go:
#                           tmpfs, as nfs-copy and s3-trees, so that the VM
#                           disk's write-back and inode allocation do not land
#                           on whichever tool runs next (/tmp if /dev/shm is
#                           not writable)
# About 10 minutes here (5 runs a point). Ends with one line `RESULT {json}`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
DOCS="$ROOT/docs"
RECORDS="$DOCS/bench/records.jsonl"
report() {  # the page section and plots, from the records alone
  rm -f "$DOCS"/bench/*.png
  "$VENV/bin/ferry-bench" --from-records="$RECORDS" --out="$WORK/report" --plots-dir="$DOCS/bench" \
    --image-prefix=bench/ --title="" --splice-into="$DOCS/benchmarks.md"
}

base=${BENCH_WORK_BASE:-/dev/shm}
[ -w "$base" ] || base=/tmp
WORK=$(mktemp -d "$base/ferry-bench-all.XXXXXX")
if [ -n "${BENCH_REPORT_ONLY:-}" ]; then
  trap 'rm -rf "$WORK"' EXIT
  report
  exit 0
fi
BENCH_PACKAGE="$ROOT/bindings/python[bench]" \
  bench_python_env all.sh matplotlib boto3 irods=python-irodsclient==3.3.0
"$ROOT/tests/peers/install-peers" >&2

STATE="$WORK/state"
EXPORT="$WORK/export"
mkdir -p "$STATE" "$EXPORT" "$WORK/home"
cleanup() {
  "$PEERS/versitygw" stop "$STATE/versitygw" || true
  "$PEERS/irods" stop "$STATE/irods" || true
  "$PEERS/ganesha" stop "$STATE/ganesha" || true
  rm -rf "$WORK"
}
trap cleanup EXIT
"$PEERS/ganesha" start "$EXPORT" "$STATE/ganesha" >&2
"$PEERS/versitygw" start "$STATE/versitygw" >&2
IRODS_PEER_PORT=0 "$PEERS/irods" start "$STATE/irods" >&2

# Every client the same credentials and endpoint, and nobody's ~/.aws or ~/.irods.
export AWS_ENDPOINT_URL="http://127.0.0.1:${VERSITYGW_PORT:-7070}" AWS_ACCESS_KEY_ID=AKIDLOCAL \
  AWS_SECRET_ACCESS_KEY=SECRETLOCAL AWS_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null \
  AWS_SHARED_CREDENTIALS_FILE=/dev/null IRODS_PASSWORD=rods HOME="$WORK/home"
"$VENV/bin/python" -c "import boto3, os; boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL']).create_bucket(Bucket='bench')"
IRODS_PORT=$(cat "$STATE/irods/port")

# The published set: every scenario on every adapter, sized to finish in
# about 15 minutes here (the defaults are smaller; the flags go to 1 GiB
# and 1e6 entries).
mkdir -p "$DOCS/bench"
# shellcheck disable=SC2086
"$VENV/bin/ferry-bench" \
  "nfs://127.0.0.1/export?nfsport=2049&mountport=20048" s3://bench/published \
  "irods://rods@127.0.0.1:$IRODS_PORT/tempZone/home/rods" \
  --ferry-cp="$CP" --ferry-walk="$WALK" --out="$WORK/out" --keep \
  --runs=5 --stage-sizes=1,16M --parallel-files=64 --parallel-size=64K --parallelism=1,4,16,64 \
  --tree-files=100,1000 --tree-size=16K --tree-jobs=16 --sweep-max=16M --sweep-threads=1,8 \
  --meta-ops=100 --meta-parallel=8 --stress-clients=1,2,4,8,16,32,64 --stress-seconds=1 --stress-cap=20 \
  --catalog-sizes=1000,10000,30000 ${BENCH_ARGS:-}
cp "$WORK/out/records.jsonl" "$RECORDS"
report
"$VENV/bin/python" - "$RECORDS" <<'EOF'
import json, sys
from ferry.bench import report
recs = report.read_records(sys.argv[1])
r = report.Report(recs, "", "", plots=False)
r.render(None)
summary = r.ratio_summary()
print("RESULT " + json.dumps({"bench": "all", "records": len(recs),
      "errors": sum(1 for x in recs if x.errors),
      "rows_below_1": sum(int(t["rows_below_1"]) for t in summary.values()),
      "per_target": summary,
      "ratios": {f"{t} {w}: {f} vs {p}": round(v, 2) for t, w, f, p, v in r.ratios}}))
EOF
