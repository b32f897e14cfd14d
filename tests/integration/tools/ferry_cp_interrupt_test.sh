#!/usr/bin/env bash
# Ctrl-C in the middle of a ferry-cp: exit 130, no temporary left in the
# NFS export (the peer_ganesha fixture), no unfinished multipart upload on
# versitygw (peer_versitygw, slowed through peer_toxiproxy), and an
# existing target unchanged.
#   ferry_cp_interrupt_test.sh PATH/TO/ferry-cp EXPORT_DIR
set -uo pipefail
CP=${1:?usage: ferry_cp_interrupt_test.sh FERRY_CP EXPORT_DIR}
EXPORT=${2:?}
source "$(dirname "$0")/lib.sh" ferry-cp-interrupt
trap 'rm -rf "$WORK" "$EXPORT/$RUN"' EXIT
mkdir -p "$EXPORT/$RUN"
NFS="nfs://127.0.0.1/export/$RUN"
Q="?nfsport=2049&mountport=20048"
BUCKET=ferry-cp-interrupt-$$

# wait_for PATTERN_COMMAND: polls up to 30 s until the command succeeds.
wait_for() {
  for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
  return 1
}
ms() { date +%s%3N; }

# Local -> NFS: SIGINT once the temporary is there (the copy is under way).
head -c $((384 << 20)) /dev/urandom >"$WORK/big.bin"
echo "keep me" >"$EXPORT/$RUN/big.bin"
"$CP" --quiet --parallelism=1 --chunk-mib=1 "$WORK/big.bin" "$NFS/big.bin$Q" &
pid=$!
temp_there() { ls -A "$EXPORT/$RUN" | grep -q '^\.big\.bin\.ferry-'; }
wait_for temp_there; seen=$?
t0=$(ms); kill -INT $pid; wait $pid; rc=$?; t1=$(ms)
left=$(ls -A "$EXPORT/$RUN")
echo "local -> nfs: temporary seen=$((seen == 0)), exit $rc $((t1 - t0)) ms after SIGINT, left: $left"
if [ $seen -eq 0 ] && [ $rc -eq 130 ] && [ "$left" = big.bin ] &&
   [ "$(cat "$EXPORT/$RUN/big.bin")" = "keep me" ]; then
  pass InterruptedNfsUploadExits130LeavesNoTemporaryAndKeepsTheTarget
else fail InterruptedNfsUploadExits130LeavesNoTemporaryAndKeepsTheTarget "seen=$seen rc=$rc left=$left"; fi

# Local -> S3 through a 2 MB/s toxiproxy: SIGINT once a multipart upload
# is open; afterwards none is listed and the old object is still there.
TOXI=http://127.0.0.1:18474
SLOW_PORT=18412
echo "keep me" >"$WORK/keep"
"$CP" --quiet --make-bucket "$WORK/keep" "s3://$BUCKET/big.bin" || fail S3Setup "no bucket"
curl -sf -X POST "$TOXI/proxies" -d "{\"name\":\"cp_interrupt\",\"listen\":\"127.0.0.1:$SLOW_PORT\",\"upstream\":\"127.0.0.1:${VERSITYGW_PORT:-7070}\"}" >/dev/null
curl -sf -X POST "$TOXI/proxies/cp_interrupt/toxics" -d '{"name":"slow","type":"bandwidth","stream":"upstream","attributes":{"rate":2000}}' >/dev/null
uploads() { aws s3api list-multipart-uploads --bucket "$BUCKET" --query 'length(Uploads || `[]`)' --output text; }
"$CP" --quiet --concurrency=2 --endpoint-url "http://127.0.0.1:$SLOW_PORT" "$WORK/big.bin" "s3://$BUCKET/big.bin" &
pid=$!
upload_open() { [ "$(uploads)" -gt 0 ]; }
wait_for upload_open; seen=$?
sleep 1
t0=$(ms); kill -INT $pid; wait $pid; rc=$?; t1=$(ms)
curl -sf -X DELETE "$TOXI/proxies/cp_interrupt" >/dev/null
open=$(uploads)
"$CP" --quiet "s3://$BUCKET/big.bin" "$WORK/after"
echo "local -> s3: upload seen=$((seen == 0)), exit $rc $((t1 - t0)) ms after SIGINT, uploads left: $open"
if [ $seen -eq 0 ] && [ $rc -eq 130 ] && [ "$open" = 0 ] && cmp -s "$WORK/keep" "$WORK/after"; then
  pass InterruptedS3UploadExits130AbortsTheMultipartUploadAndKeepsTheObject
else fail InterruptedS3UploadExits130AbortsTheMultipartUploadAndKeepsTheObject "seen=$seen rc=$rc open=$open"; fi

# A second SIGINT does not wait for the clean-up: exit 130 at once.
"$CP" --quiet --parallelism=1 --chunk-mib=1 "$WORK/big.bin" "$NFS/second.bin$Q" &
pid=$!
second_temp() { ls -A "$EXPORT/$RUN" | grep -q '^\.second\.bin\.ferry-'; }
wait_for second_temp
kill -INT $pid; kill -INT $pid; wait $pid; rc=$?
if [ $rc -eq 130 ]; then pass SecondInterruptExits130AtOnce
else fail SecondInterruptExits130AtOnce "rc=$rc"; fi

finish
