#!/usr/bin/env bash
# ferry-nfsrods against ferry's iRODS test peer, proved with clients ferry did
# not write: libnfs's nfs-ls / nfs-cp / nfs-cat on the NFS side,
# python-irodsclient on the iRODS side (nfs3probe.py only where a check must
# hold a file handle across calls). Each check_* is one behaviour; the run
# ends with "N passed, M failed". Ports are picked free (0), so it runs beside
# other peers; scripts/test-nfsrods builds what it needs and calls it.
#   tests/nfsrods/checks.sh [CHECK_NAME...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
FERRY_ROOT=$(cd "$here/../.." && pwd)
PY=${FERRY_PYTHON_VENV:-$FERRY_ROOT/.venv}/bin/python
work=$(mktemp -d /tmp/ferry-nfsrods-checks.XXXXXX)
cleanup() {
  "$FERRY_ROOT/tests/peers/nfsrods" stop "$work/nfsrods" >/dev/null 2>&1
  "$FERRY_ROOT/tests/peers/irods" stop "$work/irods" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

HOME_COLL=/tempZone/home/rods
EXPORT=$HOME_COLL  # what the checks mount: a collection below the server's irods_mount_point

IRODS_PEER_PORT=0 "$FERRY_ROOT/tests/peers/irods" start "$work/irods" >/dev/null || exit 1
IPORT=$(cat "$work/irods/port")
cat >"$work/server.json" <<JSON
{
  "nfs_server": {
    "port": 0,
    "irods_mount_point": "/tempZone/home",
    "file_information_refresh_time_in_milliseconds": 1000,
    "list_operation_query_results_refresh_time_in_milliseconds": 2000,
    "allow_overwrite_of_existing_files": true
  },
  "irods_client": {
    "host": "127.0.0.1", "port": $IPORT, "zone": "tempZone",
    "proxy_admin_account": { "username": "rods", "password": "rods" }
  },
  "ferry": { "bind_address": "127.0.0.1", "read_idle_ms": 2000, "write_idle_ms": 2000,
             "users": { "0": "rods", "1001": "alice" } }
}
JSON
start_server() { "$FERRY_ROOT/tests/peers/nfsrods" start "$work/nfsrods" "$work/server.json" >/dev/null; }
stop_server() { "$FERRY_ROOT/tests/peers/nfsrods" stop "$work/nfsrods"; }
start_server || exit 1
NPORT=$(cat "$work/nfsrods/port")
# Restarts keep the address, as a real server's do (clients hold it).
sed -i "s/\"port\": 0,/\"port\": $NPORT,/" "$work/server.json"

irods() { "$PY" "$here/irods_side.py" "$IPORT" "$@"; }
probe() { python3 "$here/nfs3probe.py" "$NPORT" "$@"; }
# nfs_url PATH-BELOW-THE-EXPORT: libnfs's URL, ports given (no portmapper needed).
nfs_url() { printf 'nfs://127.0.0.1%s%s?nfsport=%s&mountport=%s&version=3' "$EXPORT" "$1" "$NPORT" "$NPORT"; }
# nfs_names DIR: what nfs-ls lists in DIR, sorted, collections ending in /.
nfs_names() {
  nfs-ls "$(nfs_url "$1")" | python3 -c '
import sys
for line in sys.stdin.buffer.read().decode().split("\n"):
    if not line: continue
    # "-rw-r--r--  1     0     0            0 name": the name follows five fields.
    f = line.split(None, 5)
    name = f[5] if len(f) > 5 else ""
    if name in (".", ".."): continue
    print(name + ("/" if line.startswith("d") else ""))' | LC_ALL=C sort
}

# seed COLL N: N awkward names + 3 subcollections in COLL, by ferry-cp when the
# Release build has it (seconds), else by python-irodsclient (a minute).
seed() {
  local cp=$FERRY_ROOT/build/release/examples/ferry-cp
  if [ -x "$cp" ]; then
    rm -rf "$work/seeddir" && mkdir -p "$work/seeddir" && irods awkward "$work/seeddir" "$2" &&
      IRODS_PASSWORD=rods HOME="$work" "$cp" --quiet -r --jobs=8 "$work/seeddir" \
        "irods://rods@127.0.0.1:$IPORT$1" >/dev/null || return 1
    local d; for d in "sub dir" "ünï sub" 'say "sub"'; do irods rm "$1/$d/x" || return 1; done
  else
    irods populate "$1" "$2"
  fi
}

check_a_collection_with_awkward_names_lists_as_python_irodsclient_lists_it() {
  seed "$HOME_COLL/awkward" 3000 || return 1
  echo x >"$work/x"
  nfs-cp "$work/x" "$(nfs_url "/awkward/it's a 'quote'")" >/dev/null || return 1
  irods list "$HOME_COLL/awkward" | LC_ALL=C sort >"$work/prc.txt"
  nfs_names /awkward >"$work/nfs.txt" || return 1
  [ "$(wc -l <"$work/prc.txt")" -eq 3004 ] || { echo "python-irodsclient lists $(wc -l <"$work/prc.txt")"; return 1; }
  diff "$work/prc.txt" "$work/nfs.txt" >"$work/diff.txt" || { head "$work/diff.txt"; return 1; }
}

check_nfs_ls_recursive_reaches_every_entry_once() {
  seed "$HOME_COLL/tree" 50 >/dev/null || return 1
  seed "$HOME_COLL/tree/sub dir/deeper" 20 >/dev/null || return 1
  local n
  n=$(nfs-ls -R "$(nfs_url /tree)" | grep -vc -E ' \.\.?$')
  # 50 + 3 subcollections; "sub dir" holds 20 + 3 in "deeper" plus "deeper" itself.
  [ "$n" -eq $((50 + 3 + 1 + 20 + 3)) ] || { echo "nfs-ls -R listed $n entries"; return 1; }
}

check_a_file_written_through_nfs_reads_back_identical_through_python_irodsclient() {
  head -c $((5 * 1024 * 1024 + 123)) /dev/urandom >"$work/up.bin"
  nfs-cp "$work/up.bin" "$(nfs_url "/up 文件.bin")" >/dev/null || return 1
  irods get "$HOME_COLL/up 文件.bin" "$work/up.back" || return 1
  cmp "$work/up.bin" "$work/up.back"
}

check_a_file_put_by_python_irodsclient_reads_back_identical_through_nfs() {
  head -c $((3 * 1024 * 1024 + 7)) /dev/urandom >"$work/down.bin"
  irods put "$work/down.bin" "$HOME_COLL/down ünï.bin" || return 1
  nfs-cp "$(nfs_url "/down ünï.bin")" "$work/down.back" >/dev/null || return 1
  cmp "$work/down.bin" "$work/down.back"
}

check_nfs_ls_and_nfs_cat_report_the_size_python_irodsclient_wrote() {
  # (Debian's libnfs-utils 4.0.0 ships nfs-ls, nfs-cp and nfs-cat; no nfs-stat.)
  head -c 4321 /dev/urandom >"$work/s.bin"
  irods mkcoll "$HOME_COLL/sized" || return 1
  irods put "$work/s.bin" "$HOME_COLL/sized/stat me" || return 1
  nfs-ls "$(nfs_url /sized)" >"$work/ls.txt" || return 1
  grep -Eq ' 4321 stat me$' "$work/ls.txt" || { cat "$work/ls.txt"; return 1; }
  [ "$(nfs-cat "$(nfs_url "/sized/stat me")" | wc -c)" -eq 4321 ]
}

check_a_write_at_an_offset_keeps_the_rest_of_the_file() {
  head -c 100000 /dev/urandom >"$work/base.bin"
  irods put "$work/base.bin" "$HOME_COLL/patched" || return 1
  local fh
  fh=$(probe resolve "$EXPORT" patched) || return 1
  printf 'PATCH' | probe write "$fh" 5000 || return 1
  probe commit "$fh" || return 1
  python3 -c "
import sys
b = bytearray(open('$work/base.bin', 'rb').read()); b[5000:5005] = b'PATCH'
open('$work/expected.bin', 'wb').write(b)"
  irods get "$HOME_COLL/patched" "$work/patched.back" || return 1
  cmp "$work/expected.bin" "$work/patched.back"
}

check_getattr_during_unstable_writes_shows_the_written_size() {
  echo seed >"$work/seed"
  nfs-cp "$work/seed" "$(nfs_url /growing)" >/dev/null || return 1
  local fh
  fh=$(probe resolve "$EXPORT" growing) || return 1
  head -c 50000 /dev/zero | probe write "$fh" 100000 || return 1
  [ "$(probe getattr "$fh" | cut -d' ' -f2)" -eq 150000 ] || { probe getattr "$fh"; return 1; }
  probe commit "$fh" || return 1
  irods get "$HOME_COLL/growing" "$work/growing.back" || return 1
  [ "$(stat -c %s "$work/growing.back")" -eq 150000 ]
}

check_create_guarded_of_an_existing_file_is_exist() {
  echo one >"$work/one"
  nfs-cp "$work/one" "$(nfs_url /once)" >/dev/null || return 1
  local out
  out=$(nfs-cp "$work/one" "$(nfs_url /once)" 2>&1) && { echo "the second copy answered: $out"; return 1; }
  grep -q NFS3ERR_EXIST <<<"$out" || { echo "$out"; return 1; }
}

check_handles_taken_before_a_restart_work_after_it() {
  head -c 70000 /dev/urandom >"$work/keep.bin"
  irods mkcoll "$HOME_COLL/keep" || return 1
  irods put "$work/keep.bin" "$HOME_COLL/keep/kept file" || return 1
  local fh dh
  fh=$(probe resolve "$EXPORT" keep "kept file") || return 1
  dh=$(probe resolve "$EXPORT" keep) || return 1
  stop_server && start_server || return 1
  probe read "$fh" 0 70000 >"$work/keep.back" || return 1
  cmp "$work/keep.bin" "$work/keep.back" || return 1
  probe readdir "$dh" 0 0000000000000000 4096 >"$work/keep.ls" || return 1
  grep -q "kept file" "$work/keep.ls"
}

check_a_handle_of_a_file_written_through_nfs_survives_a_restart() {
  head -c 3000 /dev/urandom >"$work/w.bin"
  nfs-cp "$work/w.bin" "$(nfs_url /written)" >/dev/null || return 1
  local fh
  fh=$(probe resolve "$EXPORT" written) || return 1
  probe write "$fh" 0 <"$work/w.bin" && probe commit "$fh" || return 1  # a new object: the old id aliases it
  stop_server && start_server || return 1
  probe read "$fh" 0 3000 >"$work/w.back" || return 1
  cmp "$work/w.bin" "$work/w.back"
}

check_a_removed_objects_handle_is_stale() {
  echo gone >"$work/gone.txt"
  irods put "$work/gone.txt" "$HOME_COLL/gone" || return 1
  local fh out
  fh=$(probe resolve "$EXPORT" gone) || return 1
  local before
  before=$(probe getattr "$fh") || return 1
  irods rm "$HOME_COLL/gone" || return 1
  # Removed by another client: the server may answer from its stat cache
  # until the file information refresh time (1 s above), but only with the
  # object the handle names (the same attributes), never another one.
  out=$(probe getattr "$fh" 2>&1)
  [ "$out" = "$before" ] || [ "$out" = "NFS3ERR 70" ] || { echo "before the refresh time: $out"; return 1; }
  sleep 1.2
  out=$(probe getattr "$fh" 2>&1) && { echo "getattr answered: $out"; return 1; }
  [ "$out" = "NFS3ERR 70" ] || { echo "got: $out"; return 1; }
}

# paged DIR COUNT: READDIR page 1 of DIR (COUNT bytes): sets DH, VERF, LAST (its last cookie).
paged() {
  DH=$(probe resolve "$EXPORT" "$1") || return 1
  local page
  page=$(probe readdir "$DH" 0 0000000000000000 "$2") || return 1
  [ "$(echo "$page" | tail -1)" = more ] || { echo "one page held it all"; return 1; }
  VERF=$(echo "$page" | awk '/^verf/ {print $2}')
  LAST=$(echo "$page" | grep -E '^[0-9]+ ' | tail -1 | cut -d' ' -f1)
  echo "$page" | grep -E '^[0-9]+ ' | cut -d' ' -f2- >"$work/page1.txt"
}

check_a_listing_under_way_goes_on_from_its_snapshot_after_a_change() {
  seed "$HOME_COLL/busy" 200 >/dev/null || return 1
  local dh
  dh=$(probe resolve "$EXPORT" busy) || return 1
  # Pages of 1 KiB; "aaa new one" made after the first: the listing is the collection before it.
  probe names "$dh" 1024 "aaa new one" | LC_ALL=C sort >"$work/all.txt" || return 1
  irods list "$HOME_COLL/busy" >"$work/busy.txt" || return 1
  grep -qx 'aaa new one/' "$work/busy.txt" || { echo "the MKDIR did not happen"; return 1; }
  grep -v '^aaa new one/$' "$work/busy.txt" | sed 's|/$||' | LC_ALL=C sort >"$work/want.txt"
  [ "$(wc -l <"$work/want.txt")" -eq 203 ] || { echo "python-irodsclient lists $(wc -l <"$work/want.txt")"; return 1; }
  diff "$work/want.txt" "$work/all.txt" >/dev/null || { diff "$work/want.txt" "$work/all.txt" | head; return 1; }
}

check_a_listing_that_changed_is_bad_cookie_once_its_snapshot_is_older_than_the_refresh_time() {
  seed "$HOME_COLL/paged" 200 >/dev/null || return 1
  paged paged 1024 || return 1
  probe readdir "$DH" "$LAST" "$VERF" 1024 >/dev/null || { echo "page 2 of an unchanged listing failed"; return 1; }
  probe mkdir "$DH" "new one" >/dev/null || return 1
  sleep 2.2  # the listing refresh time (2 s)
  local out
  out=$(probe readdir "$DH" "$LAST" "$VERF" 1024 2>&1) && { echo "page 2 after a change answered"; return 1; }
  [ "$out" = "NFS3ERR 10003" ] || { echo "got: $out"; return 1; }
}

check_an_unchanged_listing_goes_on_after_its_snapshot_expires() {
  seed "$HOME_COLL/still" 200 >/dev/null || return 1
  paged still 1024 || return 1
  sleep 2.2
  probe readdir "$DH" "$LAST" "$VERF" 100000 >/dev/null
}

check_a_change_by_another_irods_client_shows_within_the_refresh_time() {
  irods mkcoll "$HOME_COLL/fresh" || return 1
  nfs_names /fresh >"$work/fresh0.txt" || return 1
  [ ! -s "$work/fresh0.txt" ] || { cat "$work/fresh0.txt"; return 1; }
  echo new >"$work/new.txt"
  irods put "$work/new.txt" "$HOME_COLL/fresh/from prc" || return 1
  sleep 2.2  # the listing refresh time of server.json above (2 s; stats 1 s)
  nfs_names /fresh >"$work/fresh1.txt" || return 1
  [ "$(cat "$work/fresh1.txt")" = "from prc" ] || { cat "$work/fresh1.txt"; return 1; }
}

# as_uid UID PATH: libnfs's URL for PATH (below /tempZone/home) with AUTH_UNIX uid and gid UID.
as_uid() { printf 'nfs://127.0.0.1/tempZone/home%s?nfsport=%s&mountport=%s&version=3&uid=%s&gid=%s' "$2" "$NPORT" "$NPORT" "$1" "$1"; }

check_a_mapped_user_is_denied_what_that_irods_user_may_not_read() {
  echo private >"$work/private"
  irods put "$work/private" "$HOME_COLL/private" || return 1
  nfs-cat "$(as_uid 0 /rods/private)" | grep -q private || { echo "rods cannot read its own"; return 1; }
  local out fh
  out=$(nfs-cat "$(as_uid 1001 /rods/private)" 2>&1) && { echo "alice read it with nfs-cat: $out"; return 1; }
  fh=$(probe resolve "$EXPORT" private) || return 1
  out=$(PROBE_UID=1001 probe read "$fh" 0 100 2>&1) && { echo "alice read it: $out"; return 1; }
  [ "$out" = "NFS3ERR 13" ] || { echo "got: $out"; return 1; }
}

check_access_answers_what_the_mapped_users_irods_permissions_allow() {
  echo shared >"$work/shared.txt"
  irods put "$work/shared.txt" "$HOME_COLL/readable" || return 1
  irods chmod read alice "$HOME_COLL/readable" || return 1
  irods put "$work/shared.txt" "$HOME_COLL/closed" || return 1
  local r c
  r=$(probe resolve "$EXPORT" readable) && c=$(probe resolve "$EXPORT" closed) || return 1
  # 63: READ LOOKUP MODIFY EXTEND DELETE EXECUTE asked; read-only grants READ LOOKUP EXECUTE (35).
  [ "$(PROBE_UID=1001 probe access "$r" 63)" = 35 ] || { echo "alice on readable: $(PROBE_UID=1001 probe access "$r" 63)"; return 1; }
  [ "$(PROBE_UID=1001 probe access "$c" 63)" = 0 ] || { echo "alice on closed: $(PROBE_UID=1001 probe access "$c" 63)"; return 1; }
  [ "$(probe access "$c" 63)" = 63 ] || { echo "rods on closed: $(probe access "$c" 63)"; return 1; }
}

check_a_mapped_user_writes_as_that_irods_user() {
  echo "alice's" >"$work/alices"
  nfs-cp "$work/alices" "$(as_uid 1001 /alice/by-nfs)" >/dev/null || return 1
  "$PY" - "$IPORT" <<'PY' || return 1
import sys
from irods.session import iRODSSession
with iRODSSession(host="127.0.0.1", port=int(sys.argv[1]), user="alice", password="apass", zone="tempZone") as s:
    obj = s.data_objects.get("/tempZone/home/alice/by-nfs")
    acl = s.acls.get(obj)
    assert any(a.user_name == "alice" and a.access_name == "own" for a in acl), acl
    assert obj.open("r").read() == b"alice's\n"
PY
  local out
  out=$(nfs-cp "$work/alices" "$(as_uid 1001 /rods/by-alice)" 2>&1) && { echo "alice wrote into rods's home: $out"; return 1; }
  return 0
}

check_an_unmapped_uid_is_refused() {
  local out
  out=$(nfs-ls "$(as_uid 4242 /rods)" 2>&1) && { echo "uid 4242 listed: $out"; return 1; }
  grep -q "ACCES\|Permission\|denied" <<<"$out" || { echo "$out"; return 1; }
}

check_a_malformed_call_is_refused_and_the_server_keeps_serving() {
  probe garbage >/dev/null || return 1
  nfs-ls "$(nfs_url /)" >/dev/null
}

checks=("$@")
[ ${#checks[@]} -gt 0 ] || mapfile -t checks < <(declare -F | awk '{print $3}' | grep '^check_')
passed=0; failed=0
for c in "${checks[@]}"; do
  t0=$(date +%s%N)
  if out=$("$c" 2>&1); then
    passed=$((passed + 1)); status=PASS
  else
    failed=$((failed + 1)); status=FAIL
  fi
  printf '%s %s (%d ms)\n' "$status" "${c#check_}" $((($(date +%s%N) - t0) / 1000000))
  [ "$status" = PASS ] || { echo "$out" | sed 's/^/    /' | tail -20; tail -20 "$work/nfsrods/nfsrods.log" | sed 's/^/    log: /'; }
done
echo "nfsrods: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
