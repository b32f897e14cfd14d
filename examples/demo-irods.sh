#!/usr/bin/env bash
# The iRODS and cross-protocol part of scripts/demo: starts ferry's iRODS
# test peer, nfs-ganesha and versitygw, then
#   1. ferry-cp copies one generated tree NFS -> S3 -> iRODS -> local and
#      checks the result byte for byte (diff -r against the source);
#   2. ferry-walk walks the tree on iRODS;
#   3. the same three hops from Java (examples/java/DemoCrossCopy.java, only
#      the shaded jar on the class path), then an iRODS listing uncached and
#      cached (IrodsCaches) and metadata (AVUs) set and read back;
#   4. the same three hops from Python, when the .venv has the ferry
#      package (scripts/test-python or the wheel puts it there; or set
#      FERRY_DEMO_PYTHON to a python that imports ferry).
# Builds nothing but the jar; stops every peer by PID on exit.
#   examples/demo-irods.sh BUILD_DIR JAR      (e.g. build/release, from scripts/build-jar)
# ganesha's (2049, 20048) and versitygw's (7070) ports are fixed: if a test
# run holds them, this fails naming the holder; retry once it is done.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath "${1:?usage: examples/demo-irods.sh BUILD_DIR JAR}")
JAR=$(realpath "${2:?usage: examples/demo-irods.sh BUILD_DIR JAR}")
CP="$BUILD/examples/ferry-cp"
WALK="$BUILD/examples/ferry-walk"
for tool in "$CP" "$WALK" "$JAR"; do
  [ -e "$tool" ] || { echo "demo-irods: $tool is missing (build it first)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/ferry-demo-irods.XXXXXX)
cleanup() {
  "$ROOT/tests/peers/irods" stop "$WORK/irods" >/dev/null 2>&1 || true
  "$ROOT/tests/peers/ganesha" stop "$WORK/ganesha" >/dev/null 2>&1 || true
  "$ROOT/tests/peers/versitygw" stop "$WORK/versitygw" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
run() { printf '$ %s\n' "$*" | sed "s|$CP|ferry-cp|; s|$WALK|ferry-walk|; s|$WORK|\$WORK|g"; "$@"; }

echo "== iRODS + cross-protocol: 101 files (about 18 MiB) in 4 directories, on NFS =="
for d in 1 2 3 4; do
  mkdir -p "$WORK/export/tree/dir$d"
  for f in $(seq 25); do
    head -c $(((d * 7919 + f * 104729) % (200 << 10))) /dev/urandom >"$WORK/export/tree/dir$d/f$f.bin"
  done
done
head -c $((8 << 20)) /dev/urandom >"$WORK/export/tree/big.bin"

"$ROOT/tests/peers/ganesha" start "$WORK/export" "$WORK/ganesha"
"$ROOT/tests/peers/versitygw" start "$WORK/versitygw"
IRODS_PEER_PORT=0 "$ROOT/tests/peers/irods" start "$WORK/irods" >/dev/null
export AWS_ENDPOINT_URL="http://127.0.0.1:${VERSITYGW_PORT:-7070}"
export AWS_ACCESS_KEY_ID=AKIDLOCAL AWS_SECRET_ACCESS_KEY=SECRETLOCAL AWS_REGION=us-east-1
# The iRODS password as iCommands' users give it; HOME: nobody's ~/.irods.
export IRODS_PASSWORD=rods HOME="$WORK/home"
mkdir -p "$HOME"
NFS="nfs://127.0.0.1/export"
NFS_Q="?nfsport=2049&mountport=20048"
IRODS="irods://rods@127.0.0.1:$(cat "$WORK/irods/port")/tempZone/home/rods"
check() {  # check DIR: byte for byte the tree that started on NFS
  diff -r "$WORK/export/tree" "$1" && echo "byte for byte OK: $(find "$1" -type f | wc -l) files"
}

echo
echo "== ferry-cp: NFS -> S3 -> iRODS -> local =="
run "$CP" -r "$NFS/tree$NFS_Q" s3://cross/tree/ --make-bucket
run "$CP" -r s3://cross/tree/ "$IRODS/tree/"
run "$CP" -r "$IRODS/tree/" "$WORK/back/"
check "$WORK/back"
echo
echo "== ferry-walk: the tree on iRODS =="
run "$WALK" "$IRODS/tree/"

echo
echo "== Java (java -cp ferry.jar examples/java/DemoCrossCopy.java) =="
java -cp "$JAR" "$ROOT/examples/java/DemoCrossCopy.java" \
  "$NFS/tree$NFS_Q" s3://cross/java/ "$IRODS/java/" "$WORK/java-back/"
check "$WORK/java-back"

echo
py="${FERRY_DEMO_PYTHON:-$ROOT/.venv/bin/python}"
if [ -x "$py" ] && "$py" -c 'import ferry' 2>/dev/null; then
  echo "== Python (ferry.FileSystems) =="
  "$py" - "$NFS/tree$NFS_Q" s3://cross/python/ "$IRODS/python/" "$WORK/python-back/" <<'PY'
import sys, ferry
hops = sys.argv[1:]
with ferry.Runtime() as rt, ferry.FileSystems(runtime=rt) as fs:
    for src, dst in zip(hops, hops[1:]):
        stats = fs.copy(src, dst, recursive=True)
        print(f"python: {src} -> {dst}: {stats.files} files, {stats.bytes} bytes")
PY
  check "$WORK/python-back"
else
  echo "== Python: skipped ($py does not import ferry: scripts/test-python installs it into $ROOT/.venv) =="
fi
