#!/usr/bin/env bash
# The long runs of ferry-nfsrods (not in CI; figures for the README and the
# report): a 20,000-entry collection listed page by page by libnfs's nfs-ls
# and by READDIR in small pages, every entry exactly once; LONG_CLIENTS (16)
# libnfs clients writing, reading and listing for LONG_SECONDS (60); a
# LONG_MIB (1024) MiB file both ways through it, checked byte for byte and
# against python-irodsclient. Needs scripts/test-nfsrods's build and the
# Release build's ferry-cp (to seed the collection). Ends with RESULT {json}.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
FERRY_ROOT=$(cd "$here/../.." && pwd)
PY=$FERRY_ROOT/.venv/bin/python
CP=$FERRY_ROOT/build/release/examples/ferry-cp
CLIENTS=${LONG_CLIENTS:-16}; SECONDS_=${LONG_SECONDS:-60}; MIB=${LONG_MIB:-1024}; ENTRIES=${LONG_ENTRIES:-20000}
work=$(mktemp -d "${LONG_WORK_BASE:-/tmp}/ferry-nfsrods-long.XXXXXX")
cleanup() {
  "$FERRY_ROOT/tests/peers/nfsrods" stop "$work/nfsrods" >/dev/null 2>&1
  cp "$work/nfsrods/nfsrods.log" "${LONG_SERVER_LOG:-/tmp/ferry-nfsrods-long.log}" 2>/dev/null
  "$FERRY_ROOT/tests/peers/irods" stop "$work/irods" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
IRODS_PEER_PORT=0 "$FERRY_ROOT/tests/peers/irods" start "$work/irods" >/dev/null || exit 1
IPORT=$(cat "$work/irods/port")
cat >"$work/server.json" <<JSON
{ "nfs_server": { "port": 0, "irods_mount_point": "/tempZone/home/rods" },
  "irods_client": { "host": "127.0.0.1", "port": $IPORT, "zone": "tempZone",
                    "proxy_admin_account": { "username": "rods", "password": "rods" } } }
JSON
"$FERRY_ROOT/tests/peers/nfsrods" start "$work/nfsrods" "$work/server.json" || exit 1
NPORT=$(cat "$work/nfsrods/port")
url() { printf 'nfs://127.0.0.1/tempZone/home/rods%s?nfsport=%s&mountport=%s&version=3' "$1" "$NPORT" "$NPORT"; }
probe() { python3 "$here/nfs3probe.py" "$NPORT" "$@"; }
export IRODS_PASSWORD=rods HOME="$work/home"; mkdir -p "$HOME"

echo "== $ENTRIES entries, every one exactly once" >&2
mkdir -p "$work/list"
(cd "$work/list" && seq -f "entry %05g é" 1 "$ENTRIES" | xargs -d '\n' touch)
"$CP" --quiet -r --jobs=16 "$work/list" "irods://rods@127.0.0.1:$IPORT/tempZone/home/rods/list20k" || exit 1
(cd "$work/list" && ls | LC_ALL=C sort) >"$work/want.txt"
nfs-ls "$(url /list20k)" | awk '{ $1=$2=$3=$4=$5=""; sub(/^ +/, ""); print }' | grep -v '^\.\.\?$' | LC_ALL=C sort >"$work/nfsls.txt"
dh=$(probe resolve /tempZone/home/rods list20k)
probe names "$dh" 4096 | LC_ALL=C sort >"$work/names.txt"
listing_ok=true
for f in nfsls names; do
  n=$(wc -l <"$work/$f.txt"); u=$(uniq "$work/$f.txt" | wc -l)
  if cmp -s "$work/want.txt" "$work/$f.txt"; then r=exact; else r=DIFFERENT; listing_ok=false; fi
  echo "$f: $n entries, $u distinct, $r" >&2
done

echo "== $CLIENTS clients for $SECONDS_ s" >&2
head -c 65536 /dev/urandom >"$work/blob"
nfs-cp "$work/blob" "$(url /shared.bin)" >/dev/null
"$PY" -c "
from irods.session import iRODSSession
with iRODSSession(host='127.0.0.1', port=$IPORT, user='rods', password='rods', zone='tempZone') as s:
    s.collections.create('/tempZone/home/rods/load')"
client() {  # client N: write a new file, read the shared one back, list, until the deadline
  local n=$1 end=$(($(date +%s) + SECONDS_)) i=0 ok=0 bad=0
  while [ "$(date +%s)" -lt "$end" ]; do
    i=$((i + 1))
    if nfs-cp "$work/blob" "$(url "/load/c$n-$i")" >/dev/null 2>>"$work/errors.$n"; then ok=$((ok + 1)); else bad=$((bad + 1)); echo "cp failed" >>"$work/errors.$n"; fi
    if nfs-cat "$(url /shared.bin)" 2>>"$work/errors.$n" | cmp -s - "$work/blob"; then ok=$((ok + 1)); else bad=$((bad + 1)); echo "cat failed" >>"$work/errors.$n"; fi
    if nfs-ls "$(url /load)" >/dev/null 2>>"$work/errors.$n"; then ok=$((ok + 1)); else bad=$((bad + 1)); echo "ls failed" >>"$work/errors.$n"; fi
  done
  echo "$ok $bad" >"$work/client.$n"
}
t0=$(date +%s%N)
for n in $(seq "$CLIENTS"); do client "$n" & done
wait
load_s=$(( ($(date +%s%N) - t0) / 1000000 ))
ops=$(cat "$work"/client.* | awk '{s += $1} END {print s}')
bad=$(cat "$work"/client.* | awk '{s += $2} END {print s}')
files=$(nfs-ls "$(url /load)" | grep -vc ' \.\.\?$')
cat "$work"/errors.* 2>/dev/null | sort | uniq -c | sort -rn | head -5 >&2
rss=$(awk '/VmHWM/ {print $2}' "/proc/$(cat "$work/nfsrods/nfsrods.pid")/status")
echo "load: $ops operations ok, $bad failed, in $load_s ms ($(python3 -c "print(round($ops * 1000 / $load_s, 1))") ops/s); $files files written; server peak RSS $((rss / 1024)) MiB" >&2

echo "== $MIB MiB both ways" >&2
head -c $((MIB << 20)) /dev/urandom >"$work/big.bin"
timed() { local t0=$(date +%s%N); /usr/bin/time -f '%U %S' -o "$work/t" "$@" >/dev/null; local rc=$?; echo "$(( ($(date +%s%N) - t0) / 1000000 )) $(awk '{print $1 + $2}' "$work/t")"; return $rc; }
up=$(timed nfs-cp "$work/big.bin" "$(url /big.bin)")
down=$(timed nfs-cp "$(url /big.bin)" "$work/big.back")
cmp "$work/big.bin" "$work/big.back" && same=true || same=false
"$PY" -c "
from irods.session import iRODSSession
with iRODSSession(host='127.0.0.1', port=$IPORT, user='rods', password='rods', zone='tempZone') as s:
    s.data_objects.get('/tempZone/home/rods/big.bin', '$work/big.prc', force=True)"
cmp "$work/big.bin" "$work/big.prc" && prc_same=true || prc_same=false
echo "write: ${up% *} ms (nfs-cp CPU ${up#* } s); read: ${down% *} ms (nfs-cp CPU ${down#* } s); identical: $same; python-irodsclient reads it identical: $prc_same" >&2
"$FERRY_ROOT/tests/peers/nfsrods" stop "$work/nfsrods"
grep stopped "$work/nfsrods/nfsrods.log" >&2
echo "RESULT {\"entries\": $ENTRIES, \"listing_exact\": $listing_ok, \"clients\": $CLIENTS, \"load_ms\": $load_s, \"ops_ok\": $ops, \"ops_failed\": $bad, \"server_peak_rss_kib\": $rss, \"mib\": $MIB, \"write_ms\": ${up% *}, \"read_ms\": ${down% *}, \"identical\": $same, \"prc_identical\": $prc_same}"
$listing_ok && [ "$bad" -eq 0 ] && $same && $prc_same
