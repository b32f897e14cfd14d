#!/usr/bin/env bash
# scripts/bench nfsrods: ferry-nfsrods (examples/nfsrods) on the iRODS test
# peer, with a counting proxy between them (irods_call_counter.py) so the
# iRODS calls each NFS workload made are known:
#   - a BENCH_ENTRIES (10,000) entry collection listed by READDIRPLUS through
#     the server, cold and warm (target: warm <= 10 ms), vs python-irodsclient
#     listing it directly;
#   - a BENCH_BIG_MIB (256) MiB file written and read through the server
#     (libnfs nfs-cp) vs ferry-cp's direct iRODS put and get (both through
#     the counting proxy, which is Python and costs both the same);
#   - iRODS calls per NFS READ over that sequential read.
# Client CPU (user+sys of the client process) is printed beside every wall
# time; the server's and the peer's CPU at the end. Ends with RESULT {json}.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_built nfsrods.sh "$CP"
[ -f "$ROOT/examples/nfsrods/target/ferry-nfsrods.jar" ] || "$ROOT/scripts/test-nfsrods" --build-only >&2
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
bench_pip_ensure irods "python-irodsclient==3.3.0"
"$ROOT/tests/peers/install-peers" >&2
ENTRIES=${BENCH_ENTRIES:-10000}
BIG_MIB=${BENCH_BIG_MIB:-256}

bench_work nfsrods
IRODS_PEER_PORT=0 bench_peer irods "$STATE/irods"
IPORT=$(cat "$STATE/irods/port")
export IRODS_PASSWORD=rods HOME="$WORK/home"
mkdir -p "$HOME" "$WORK/list"
python3 "$ROOT/tests/bench/irods_call_counter.py" "$IPORT" "$WORK/proxy.port" "$WORK/calls.json" &
PROXY_PID=$!
BENCH_STOPS+=("kill -TERM $PROXY_PID")
for _ in $(seq 100); do [ -s "$WORK/proxy.port" ] && break; sleep 0.05; done
PPORT=$(cat "$WORK/proxy.port")

(cd "$WORK/list" && seq -f "entry %05g" 1 "$ENTRIES" | xargs -d '\n' touch)
echo "nfsrods.sh: seeding $ENTRIES entries" >&2
"$CP" --quiet -r --jobs=16 "$WORK/list" "irods://rods@127.0.0.1:$IPORT/tempZone/home/rods/list"

cat >"$WORK/server.json" <<JSON
{ "nfs_server": { "port": 0, "irods_mount_point": "/tempZone/home/rods" },
  "irods_client": { "host": "127.0.0.1", "port": $PPORT, "zone": "tempZone",
                    "proxy_admin_account": { "username": "rods", "password": "rods" } } }
JSON
bench_peer nfsrods "$STATE/nfsrods" "$WORK/server.json"
NPORT=$(cat "$STATE/nfsrods/port")
URL() { printf 'nfs://127.0.0.1/tempZone/home/rods%s?nfsport=%s&mountport=%s&version=3' "$1" "$NPORT" "$NPORT"; }
# timed LABEL CMD...: runs CMD, prints LABEL wall and the CMD's CPU (user+sys), sets WALL and CPU.
timed() {
  local label=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S' -o "$WORK/time" "$@" >"$WORK/out" 2>>"$WORK/err"
  t1=$(date +%s%N)
  WALL=$(python3 -c "print(round(($t1 - $t0) / 1e9, 3))")
  CPU=$(awk '{print $1 + $2}' "$WORK/time")
  printf '%-44s %8.3f s wall  %6.2f s client CPU\n' "$label" "$WALL" "$CPU" >&2
}
calls() { kill -USR1 "$PROXY_PID"; sleep 0.3; cat "$WORK/calls.json"; }

dh=$(python3 "$ROOT/tests/nfsrods/nfs3probe.py" "$NPORT" resolve /tempZone/home/rods list)
python3 "$ROOT/tests/nfsrods/nfs3probe.py" "$NPORT" listplus "$dh" 6 >"$WORK/lists.txt"
cold_ms=$(head -1 "$WORK/lists.txt" | cut -d' ' -f2)
warm_ms=$(tail -n +2 "$WORK/lists.txt" | cut -d' ' -f2 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
listed=$(head -1 "$WORK/lists.txt" | cut -d' ' -f1)
echo "READDIRPLUS of $listed entries through ferry-nfsrods, 1 MiB pages decoded by Python: cold $cold_ms ms, warm (median of 5) $warm_ms ms" >&2
python3 "$ROOT/tests/nfsrods/nfs3probe.py" "$NPORT" listplus1 "$dh" 11 >"$WORK/one.txt"
one_ms=$(tail -n +2 "$WORK/one.txt" | cut -d' ' -f2 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "READDIRPLUS of $listed entries in one reply ($(head -1 "$WORK/one.txt" | cut -d' ' -f1) bytes), warm, median of 10: $one_ms ms" >&2
timed "nfs-ls (libnfs) of the collection, warm" nfs-ls "$(URL /list)"
nfsls_wall=$WALL; nfsls_cpu=$CPU
cat >"$WORK/prc_list.py" <<PY
from irods.session import iRODSSession
with iRODSSession(host="127.0.0.1", port=$IPORT, user="rods", password="rods", zone="tempZone") as s:
    print(len(list(s.collections.get("/tempZone/home/rods/list").data_objects)))
PY
timed "python-irodsclient listing it directly" "$VENV/bin/python" "$WORK/prc_list.py"
prc_wall=$WALL; prc_cpu=$CPU

head -c $((BIG_MIB << 20)) /dev/urandom >"$WORK/big.bin"
before=$(calls)
timed "nfs-cp ${BIG_MIB} MiB to the server (write)" nfs-cp "$WORK/big.bin" "$(URL /big.bin)"
w_wall=$WALL; w_cpu=$CPU
mid=$(calls)
timed "nfs-cp ${BIG_MIB} MiB from the server (read)" nfs-cp "$(URL /big.bin)" "$WORK/big.back"
r_wall=$WALL; r_cpu=$CPU
after=$(calls)
cmp "$WORK/big.bin" "$WORK/big.back"
timed "ferry-cp ${BIG_MIB} MiB direct iRODS put" "$CP" --quiet "$WORK/big.bin" "irods://rods@127.0.0.1:$PPORT/tempZone/home/rods/direct.bin"
fp_wall=$WALL; fp_cpu=$CPU
timed "ferry-cp ${BIG_MIB} MiB direct iRODS get" "$CP" --quiet "irods://rods@127.0.0.1:$PPORT/tempZone/home/rods/direct.bin" "$WORK/direct.back"
fg_wall=$WALL; fg_cpu=$CPU

reads=$(python3 -c "print(-(-($BIG_MIB << 20) // (1 << 20)))")  # nfs-cp reads in rtpref (1 MiB) READs
per_read=$(python3 - "$mid" "$after" "$reads" <<'PY'
import json, sys
mid, after, reads = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
d = {k: after.get(k, 0) - mid.get(k, 0) for k in after}
print(round(sum(d.values()) / reads, 3), json.dumps({k: v for k, v in d.items() if v}))
PY
)
echo "iRODS calls during the read, per NFS READ (~$reads READs): $per_read" >&2
"$PEERS/nfsrods" stop "$STATE/nfsrods"
grep "stopped" "$STATE/nfsrods/nfsrods.log" >&2 || true
server_cpu=$(grep -o 'server cpu [0-9.]*' "$STATE/nfsrods/nfsrods.log" | awk '{print $3}' | tail -1)
"$PEERS/irods" stop "$STATE/irods"
peer_cpu=$(grep -o 'cpu user [0-9.]*s sys [0-9.]*s' "$STATE/irods/irods.log" | tail -1)
echo "server (ferry-nfsrods, whole run) CPU: ${server_cpu:-?} s; iRODS peer (whole run): ${peer_cpu:-?}" >&2
echo "RESULT $(python3 -c "
import json
print(json.dumps({'bench': 'nfsrods', 'entries': $listed, 'readdirplus_cold_ms': $cold_ms, 'readdirplus_warm_ms': $warm_ms, 'readdirplus_one_reply_warm_ms': $one_ms,
  'nfs_ls_warm_s': $nfsls_wall, 'nfs_ls_cpu_s': $nfsls_cpu, 'prc_list_s': $prc_wall, 'prc_list_cpu_s': $prc_cpu,
  'big_mib': $BIG_MIB, 'nfs_write_s': $w_wall, 'nfs_write_client_cpu_s': $w_cpu, 'nfs_read_s': $r_wall,
  'nfs_read_client_cpu_s': $r_cpu, 'ferry_put_s': $fp_wall, 'ferry_put_cpu_s': $fp_cpu, 'ferry_get_s': $fg_wall,
  'ferry_get_cpu_s': $fg_cpu, 'server_cpu_s': float('${server_cpu:-0}'), 'irods_calls_per_nfs_read': float('$per_read'.split()[0])}))")"
