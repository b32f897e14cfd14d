#!/usr/bin/env bash
# scripts/bench rpc: RpcPool NULL calls per second to nfs-ganesha (NFS v3
# NULL) against in-flight depth (1, 8, 64, 256) and connections (1, 4),
# directly and through toxiproxy with +1 ms each way; client and server CPU
# per call; then the same against ferry_null_rpc_server (the bench's own
# server, answering from a template), keys suffixed _null. Starts its own
# ganesha (+ rpcbind), toxiproxy and null server, runs
# build/release/tests/ferry_rpc_bench twice, and stops them on exit.
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

echo "== against nfs-ganesha (NFS v3 NULL) ==" >&2
"$BENCH" --host=127.0.0.1 --port=2049 --delayed_port="$delayed_port" --delay_ms="$DELAY_MS" \
  --server_pid="$(cat "$STATE/ganesha/ganesha.pid")" "$@" | tee "$STATE/ganesha.out" | grep -v '^RESULT '

# The same points against the bench's own null server (a reply from a
# template, well under 2 us a call): what the client's pipelining reaches
# when the server is not the limit on these shared cores.
NULL_SERVER="$BUILD/tests/ferry_null_rpc_server"
rm -f "$STATE/null.port"
"$NULL_SERVER" "$STATE/null.port" &
null_pid=$!
trap 'kill $null_pid 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do [ -s "$STATE/null.port" ] && break; sleep 0.05; done
null_port=$(cat "$STATE/null.port")
null_delayed=$(toxi_delay_proxy bench_null "$null_port" "$DELAY_MS")
echo "== against ferry_null_rpc_server ==" >&2
"$BENCH" --host=127.0.0.1 --port="$null_port" --delayed_port="$null_delayed" \
  --delay_ms="$DELAY_MS" --server_pid="$null_pid" --server=ferry_null_rpc_server "$@" | tee "$STATE/null.out" | grep -v '^RESULT '

# One RESULT: ganesha's keys as before, the null server's with "_null".
jq -c -n --argjson g "$(sed -n 's/^RESULT //p' "$STATE/ganesha.out")" \
  --argjson n "$(sed -n 's/^RESULT //p' "$STATE/null.out")" \
  '$g + ($n | del(.bench, .peer, .runs, .seconds_per_point, .delay_ms_each_way, .peak_rss_kb)
            | with_entries(.key += "_null"))
      + {client_cpu_us_per_call_depth64_null: $n.client_cpu_us_per_call}' |
  sed 's/^/RESULT /'
