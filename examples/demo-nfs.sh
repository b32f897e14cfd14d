#!/usr/bin/env bash
# The NFS part of scripts/demo: serves a generated tree with nfs-ganesha,
# walks it with ferry-walk (summary), and copies a file NFS -> local -> NFS
# with ferry-cp, checking the round trip by SHA-256. Builds nothing.
#   examples/demo-nfs.sh BUILD_DIR        (e.g. build/release)
# Generates 20,000 files in 210 directories under a temp dir, starts ganesha
# through tests/peers/ganesha, and stops it by PID on exit, failure
# included. ganesha's ports are fixed: if another one runs (a test run),
# this fails naming it; retry once it is done.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath "${1:?usage: examples/demo-nfs.sh BUILD_DIR}")
WALK="$BUILD/examples/ferry-walk"
CP="$BUILD/examples/ferry-cp"
for tool in "$WALK" "$CP"; do
  [ -x "$tool" ] || { echo "demo-nfs: $tool is missing (build it first)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/ferry-demo-nfs.XXXXXX)
EXPORT="$WORK/export"
STATE="$WORK/ganesha"
cleanup() {
  "$ROOT/tests/peers/ganesha" stop "$STATE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== NFS: generating 20,000 files in 210 directories =="
python3 - "$EXPORT/tree" <<'EOF'
import os, sys
root = sys.argv[1]
for d in range(210):
    p = os.path.join(root, "dir%03d" % d)
    os.makedirs(p)
    for f in range(20000 // 210 + (1 if d < 20000 % 210 else 0)):
        with open(os.path.join(p, "file%03d.txt" % f), "w") as fh:
            fh.write("x" * (f % 100))
EOF
head -c $((32 << 20)) /dev/urandom >"$EXPORT/sample.bin"

"$ROOT/tests/peers/ganesha" start "$EXPORT" "$STATE"
BASE="nfs://127.0.0.1/export"
OPTS="nfsport=2049&mountport=20048"

echo "== NFS: ferry-walk $BASE/tree =="
"$WALK" "$BASE/tree?$OPTS"

echo "== NFS: ferry-cp round trip of a 32 MiB file =="
"$CP" "$BASE/sample.bin?$OPTS" "$WORK/sample.local"
"$CP" "$WORK/sample.local" "$BASE/sample-copy.bin?$OPTS"
want=$(sha256sum <"$EXPORT/sample.bin" | cut -d' ' -f1)
got_local=$(sha256sum <"$WORK/sample.local" | cut -d' ' -f1)
got_back=$(sha256sum <"$EXPORT/sample-copy.bin" | cut -d' ' -f1)
if [ "$want" = "$got_local" ] && [ "$want" = "$got_back" ]; then
  echo "round trip OK: sha256 $want"
else
  echo "round trip FAILED: $want / $got_local / $got_back" >&2
  exit 1
fi
