#!/usr/bin/env bash
# The S3 part of scripts/demo: starts versitygw (a local S3 server as strict
# as AWS about signatures), then with ferry-cp:
#   1. uploads a 32 MiB file, downloads it back and checks it by SHA-256;
#   2. copies a small tree up and back down (-r, 4 files at once);
#   3. uploads a 256 MiB object and reads 1 KiB from its middle, showing how
#      many bytes crossed the network for it.
# Builds nothing; stops versitygw by PID on exit, failure included. Takes
# about 10 s.
#   examples/demo-s3.sh BUILD_DIR        (e.g. build/release)
# versitygw's port (7070) is fixed: if a test run holds it, this fails
# naming the holder; retry once it is done.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath "${1:?usage: examples/demo-s3.sh BUILD_DIR}")
CP="$BUILD/examples/ferry-cp"
[ -x "$CP" ] || { echo "demo-s3: $CP is missing (build it first)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/ferry-demo-s3.XXXXXX)
STATE="$WORK/versitygw"
cleanup() {
  "$ROOT/tests/peers/versitygw" stop "$STATE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$ROOT/tests/peers/versitygw" start "$STATE"
# ferry-cp finds its server and credentials the way the AWS CLI does.
export AWS_ENDPOINT_URL="http://127.0.0.1:${VERSITYGW_PORT:-7070}"
export AWS_ACCESS_KEY_ID=AKIDLOCAL AWS_SECRET_ACCESS_KEY=SECRETLOCAL AWS_REGION=us-east-1
BUCKET=s3://ferry-demo
sum() { sha256sum "$1" | cut -d' ' -f1; }
run() { printf '$ %s\n' "$*" | sed "s|$CP|ferry-cp|; s|$WORK|\$WORK|g"; "$@"; }

echo "== S3: ferry-cp round trip of a 32 MiB file (versitygw at $AWS_ENDPOINT_URL) =="
head -c $((32 << 20)) /dev/urandom >"$WORK/sample.bin"
run "$CP" "$WORK/sample.bin" "$BUCKET/demo/" --make-bucket
run "$CP" "$BUCKET/demo/sample.bin" "$WORK/sample.back"
if [ "$(sum "$WORK/sample.bin")" = "$(sum "$WORK/sample.back")" ]; then
  echo "round trip OK: sha256 $(sum "$WORK/sample.bin")"
else
  echo "round trip FAILED" >&2; exit 1
fi

echo
echo "== S3: a tree up and back (-r, --jobs=4) =="
for d in a b c; do
  mkdir -p "$WORK/tree/$d"
  for i in 1 2 3 4; do head -c $((i * 300 << 10)) /dev/urandom >"$WORK/tree/$d/part$i.dat"; done
done
run "$CP" -r "$WORK/tree" "$BUCKET/tree/" --jobs=4
run "$CP" -r "$BUCKET/tree/" "$WORK/tree.back" --jobs=4
diff -r "$WORK/tree" "$WORK/tree.back" && echo "tree OK: 12 files identical"

echo
echo "== S3: 1 KiB from the middle of a 256 MiB object =="
head -c $((256 << 20)) /dev/urandom >"$WORK/big.bin"
run "$CP" "$WORK/big.bin" "$BUCKET/big.bin"
middle=$((128 << 20))
run "$CP" --range="$middle:1024" "$BUCKET/big.bin" "$WORK/slice.bin"
if cmp -s "$WORK/slice.bin" <(tail -c +$((middle + 1)) "$WORK/big.bin" | head -c 1024); then
  echo "slice OK: the 1024 bytes match the file's; first 32 of them:"
  head -c 32 "$WORK/slice.bin" | od -An -tx1
else
  echo "slice FAILED" >&2; exit 1
fi
