#!/usr/bin/env bash
# scripts/bench rpc: RpcPool NULL calls per second to nfs-ganesha (NFS v3
# NULL) against in-flight depth (1, 8, 64, 256) and connections (1, 4),
# directly and through toxiproxy with +1 ms each way; client and server CPU
# per call. Starts its own ganesha (+ rpcbind) and toxiproxy, runs
# build/release/tests/ferry_rpc_bench, and stops them by PID on exit.
# Extra arguments go to ferry_rpc_bench (e.g. --runs=3 --seconds=0.5).
# Takes about 90 s with the defaults (5 runs x 16 points x 0.8 s + set-up).
# Ends with one line `RESULT {json}`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
BENCH="$BUILD/tests/ferry_rpc_bench"
STATE="$BUILD/bench/rpc-peers"
# Not the tests' 18474: the bench can run while a test tree's toxiproxy is up.
export TOXIPROXY_PORT=${TOXIPROXY_PORT:-18475}
DELAY_MS=1

[ -x "$BENCH" ] || { echo "rpc.sh: $BENCH is missing (scripts/build release)" >&2; exit 1; }
mkdir -p "$STATE"
cleanup() {
  "$PEERS/toxiproxy" stop "$STATE/toxiproxy" || true
  "$PEERS/ganesha" stop "$STATE/ganesha" || true
}
trap cleanup EXIT

"$PEERS/ganesha" start "$STATE/export" "$STATE/ganesha"
"$PEERS/toxiproxy" start "$STATE/toxiproxy"

# A proxy to ganesha's NFS port with +DELAY_MS on requests and on replies.
delayed_port=$(toxi_delay_proxy bench_nfs 2049 "$DELAY_MS")

"$BENCH" --host=127.0.0.1 --port=2049 --delayed_port="$delayed_port" --delay_ms="$DELAY_MS" \
  --server_pid="$(cat "$STATE/ganesha/ganesha.pid")" "$@"
