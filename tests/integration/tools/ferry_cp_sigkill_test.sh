#!/usr/bin/env bash
# What a SIGKILL leaves (a temporary beside the target, an unfinished S3
# multipart upload) is removed by the next copy of the same file, and by
# `ferry-cp --clean-up URL` on demand; nothing else is touched. Local, NFS
# (peer_ganesha), iRODS (peer_irods) and S3 (peer_versitygw); the copies
# to be killed go through toxiproxy (peer_toxiproxy) slowed, so they are
# surely mid-flight when killed. A killed S3 upload of an unchanged file is
# resumed: the rerun sends only the parts the server lacks (counted in
# versitygw's access log, ACCESS_LOG). A killed download to local disk is
# resumed too: the rerun fetches only what its temporary lacks.
#   ferry_cp_sigkill_test.sh FERRY_CP FERRY_WALK EXPORT_DIR ACCESS_LOG
set -uo pipefail
CP=${1:?usage: ferry_cp_sigkill_test.sh FERRY_CP FERRY_WALK EXPORT_DIR}
WALK=${2:?}
EXPORT=${3:?}
ACCESS_LOG=${4:?}
source "$(dirname "$0")/lib.sh" ferry-cp-sigkill
TOXI=http://127.0.0.1:18474
trap 'rm -rf "$WORK" "$EXPORT/$RUN"; for p in $PROXIES; do curl -sf -X DELETE "$TOXI/proxies/$p" >/dev/null; done' EXIT
PROXIES=""
mkdir -p "$EXPORT/$RUN"
Q="?nfsport=2049&mountport=20048"
NFS="nfs://127.0.0.1/export/$RUN"
export IRODS_PASSWORD=rods
IRODS_PORT=${IRODS_PEER_PORT:-1247}
IR_PATH=/tempZone/home/rods/$RUN
BUCKET=ferry-cp-sigkill-$$

wait_for() {  # wait_for COMMAND...: polls up to 30 s until it succeeds
  for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
  return 1
}
positive() { [ "$("$@")" -gt 0 ]; }  # positive COUNT_COMMAND...: it counts some
# kill_mid_copy COUNT_COMMAND... -- FERRY_CP_ARGS...: starts ferry-cp and
# SIGKILLs it once COUNT_COMMAND counts a leftover; seen=0 if it did. The
# slow proxies then drop their connections: what the killed copy had
# handed them would otherwise go on trickling into the server for seconds
# (a whole S3 part could land during the rerun and be counted as its own).
kill_mid_copy() {
  local probe=() p
  while [ "$1" != -- ]; do probe+=("$1"); shift; done
  shift
  "$CP" --quiet "$@" &
  local pid=$!
  wait_for positive "${probe[@]}"; seen=$?
  kill -KILL $pid; wait $pid 2>/dev/null
  for p in $PROXIES; do  # a disabled proxy drops every connection through it
    curl -sf -X POST "$TOXI/proxies/$p" -d '{"enabled":false}' >/dev/null &&
      curl -sf -X POST "$TOXI/proxies/$p" -d '{"enabled":true}' >/dev/null
  done
}
# slow_proxy NAME UPSTREAM_PORT LISTEN_PORT: a toxiproxy proxy letting
# 2 MB/s through towards the server.
slow_proxy() {
  curl -sf -X POST "$TOXI/proxies" \
    -d "{\"name\":\"$1-$$\",\"listen\":\"127.0.0.1:$3\",\"upstream\":\"127.0.0.1:$2\"}" >/dev/null &&
    curl -sf -X POST "$TOXI/proxies/$1-$$/toxics" \
      -d '{"name":"slow","type":"bandwidth","stream":"upstream","attributes":{"rate":2000}}' >/dev/null
  PROXIES="$PROXIES $1-$$"
}
head -c $((64 << 20)) /dev/urandom >"$WORK/big.bin"

# --- NFS: killed, then the same copy again --------------------------------
nfs_temps() { ls -A "$EXPORT/$RUN" | grep -c '^\.big\.bin\.ferry-'; }
slow_proxy nfs 2049 18431
kill_mid_copy nfs_temps -- --parallelism=1 --chunk-mib=1 "$WORK/big.bin" \
  "$NFS/big.bin?nfsport=18431&mountport=20048"
left_after_kill=$(nfs_temps)
"$CP" --quiet "$WORK/big.bin" "$NFS/big.bin$Q"; rc=$?
echo "nfs: temporary seen=$((seen == 0)), after SIGKILL $left_after_kill, after the rerun $(nfs_temps)"
if [ $seen -eq 0 ] && [ "$left_after_kill" = 1 ] && [ $rc -eq 0 ] && [ "$(nfs_temps)" = 0 ] &&
   cmp -s "$WORK/big.bin" "$EXPORT/$RUN/big.bin"; then
  pass NfsRerunAfterSigkillRemovesTheKilledCopysTemporary
else fail NfsRerunAfterSigkillRemovesTheKilledCopysTemporary "seen=$seen left=$left_after_kill rc=$rc"; fi

# --- NFS: --clean-up removes a killed copy's temporary, nothing else ------
mkdir -p "$EXPORT/$RUN/sub"
sub_temps() { ls -A "$EXPORT/$RUN/sub" | grep -c '^\.other\.bin\.ferry-'; }
kill_mid_copy sub_temps -- --parallelism=1 --chunk-mib=1 "$WORK/big.bin" \
  "$NFS/sub/other.bin?nfsport=18431&mountport=20048"
echo decoy >"$EXPORT/$RUN/sub/.mine.ferry-notahexname"
echo mine >"$EXPORT/$RUN/sub/mine.txt"
out=$("$CP" --clean-up "$NFS$Q" 2>&1); rc=$?
echo "nfs --clean-up: rc=$rc: $out"
if [ $rc -eq 0 ] && [ "$(sub_temps)" = 0 ] && grep -q "removed 1 leftover" <<<"$out" &&
   [ -e "$EXPORT/$RUN/sub/.mine.ferry-notahexname" ] && [ -e "$EXPORT/$RUN/sub/mine.txt" ] &&
   [ -e "$EXPORT/$RUN/big.bin" ]; then
  pass CleanUpRemovesAKilledCopysTemporaryBelowTheUrlAndNothingElse
else fail CleanUpRemovesAKilledCopysTemporaryBelowTheUrlAndNothingElse "rc=$rc out=$out"; fi

# --- local: killed mid-copy from NFS, then the same copy again ------------
# The killed copy's temporary records how far it got (a user attribute);
# the rerun keeps that prefix and fetches the rest.
recorded() {  # recorded DIR NAME: the prefix NAME's temporary in DIR records, else 0
  python3 "$(dirname "$0")/../../testing/resume_record.py" "$1/$2"
}
json_field() { grep -o "\"$1\":[0-9]*" <<<"$2" | tail -1 | cut -d: -f2; }  # json_field KEY JSON
local_temps() { ls -A "$WORK/dst" | grep -c '\.ferry-'; }
mkdir -p "$WORK/dst"
kill_mid_copy recorded "$WORK/dst" big.bin -- --bwlimit=8M "$NFS/big.bin$Q" "$WORK/dst/big.bin"
kept=$(recorded "$WORK/dst" big.bin)
out=$("$CP" --json "$NFS/big.bin$Q" "$WORK/dst/big.bin"); rc=$?
resumed=$(json_field bytes_resumed "$out"); fetched=$(json_field bytes_fetched "$out")
echo "local from nfs: $kept bytes recorded at the kill; the rerun kept $resumed, fetched $fetched"
if [ $seen -eq 0 ] && [ $rc -eq 0 ] && [ "$(local_temps)" = 0 ] && [ "${resumed:-0}" -ge "$kept" ] &&
   [ "$((resumed + fetched))" = $((64 << 20)) ] && cmp -s "$WORK/big.bin" "$WORK/dst/big.bin"; then
  pass LocalRerunAfterSigkillKeepsTheRecordedPrefixAndFetchesOnlyTheRest
else fail LocalRerunAfterSigkillKeepsTheRecordedPrefixAndFetchesOnlyTheRest "seen=$seen rc=$rc kept=$kept out=$out"; fi

# A source changed since the kill: nothing kept, the whole file fetched.
kill_mid_copy recorded "$WORK/dst" changed.bin -- --bwlimit=8M "$NFS/big.bin$Q" "$WORK/dst/changed.bin"
# The same bytes under a new time, written through NFS (ganesha's cache
# would not see a change made behind it).
sleep 1 && touch "$WORK/big.bin" && "$CP" --quiet "$WORK/big.bin" "$NFS/big.bin$Q"
out=$("$CP" --json "$NFS/big.bin$Q" "$WORK/dst/changed.bin"); rc=$?
resumed=$(json_field bytes_resumed "$out")
if [ $seen -eq 0 ] && [ $rc -eq 0 ] && [ "$resumed" = 0 ] && [ "$(local_temps)" = 0 ] &&
   cmp -s "$WORK/big.bin" "$WORK/dst/changed.bin"; then
  pass LocalRerunAfterSigkillOfAChangedSourceKeepsNothing
else fail LocalRerunAfterSigkillOfAChangedSourceKeepsNothing "seen=$seen rc=$rc out=$out"; fi

# --- iRODS: killed, then the same copy again ------------------------------
slow_proxy irods "$IRODS_PORT" 18432
mkdir -p "$WORK/seed" && echo seed >"$WORK/seed/s"
"$CP" --quiet -r "$WORK/seed" "irods://rods@127.0.0.1:$IRODS_PORT$IR_PATH" || fail IrodsSetup "no collection"
irods_temps() { "$WALK" "irods://rods@127.0.0.1:$IRODS_PORT$IR_PATH" --list 2>/dev/null | grep -c '\.big\.bin\.ferry-'; }
kill_mid_copy irods_temps -- --parallelism=1 --chunk-mib=1 "$WORK/big.bin" \
  "irods://rods@127.0.0.1:18432$IR_PATH/big.bin"
left_after_kill=$(irods_temps)
sleep 1  # iRODS keeps whole seconds: the rerun starts a second after the kill
"$CP" --quiet "$WORK/big.bin" "irods://rods@127.0.0.1:$IRODS_PORT$IR_PATH/big.bin"; rc=$?
"$CP" --quiet "irods://rods@127.0.0.1:$IRODS_PORT$IR_PATH/big.bin" "$WORK/irods-back.bin"
echo "irods: temporary seen=$((seen == 0)), after SIGKILL $left_after_kill, after the rerun $(irods_temps)"
if [ $seen -eq 0 ] && [ "$left_after_kill" -ge 1 ] && [ $rc -eq 0 ] && [ "$(irods_temps)" = 0 ] &&
   cmp -s "$WORK/big.bin" "$WORK/irods-back.bin"; then
  pass IrodsRerunAfterSigkillRemovesTheKilledCopysTemporary
else fail IrodsRerunAfterSigkillRemovesTheKilledCopysTemporary "seen=$seen left=$left_after_kill rc=$rc"; fi

# --- S3: killed, then the same copy again; then --clean-up ----------------
"$CP" --quiet --make-bucket "$WORK/big.bin" "s3://$BUCKET/seed" || fail S3Setup "no bucket"
uploads() {  # uploads [PREFIX]: unfinished multipart uploads in the bucket
  aws s3api list-multipart-uploads --bucket "$BUCKET" --prefix "${1:-}" \
    --query 'length(Uploads || `[]`)' --output text
}
slow_proxy s3 "${VERSITYGW_PORT:-7070}" 18433
kill_mid_copy uploads p/ -- --concurrency=2 --endpoint-url "http://127.0.0.1:18433" "$WORK/big.bin" \
  "s3://$BUCKET/p/big.bin"
left_after_kill=$(uploads p/)
sleep 1  # S3 dates uploads in whole seconds
"$CP" --quiet "$WORK/big.bin" "s3://$BUCKET/p/big.bin"; rc=$?
echo "s3: upload seen=$((seen == 0)), after SIGKILL $left_after_kill, after the rerun $(uploads p/)"
if [ $seen -eq 0 ] && [ "$left_after_kill" = 1 ] && [ $rc -eq 0 ] && [ "$(uploads p/)" = 0 ]; then
  pass S3RerunAfterSigkillLeavesNoUnfinishedUpload
else fail S3RerunAfterSigkillLeavesNoUnfinishedUpload "seen=$seen left=$left_after_kill rc=$rc"; fi

# --- S3: a killed upload of an unchanged file is resumed -----------------
# 64 MiB in 5 MiB parts: 13. Killed once two parts are listed; the
# rerun (same file, same part size) sends only the others, and no new upload.
upload_id() {  # upload_id PREFIX: the one unfinished upload's id under PREFIX
  aws s3api list-multipart-uploads --bucket "$BUCKET" --prefix "$1" \
    --query 'Uploads[0].UploadId' --output text
}
stored_parts() {  # stored_parts KEY: parts its unfinished upload holds
  local id
  id=$(upload_id "$1") && [ "$id" != None ] || { echo 0; return; }
  aws s3api list-parts --bucket "$BUCKET" --key "$1" --upload-id "$id" \
    --query 'length(Parts || `[]`)' --output text 2>/dev/null || echo 0
}
parts_past_one() { echo $(($(stored_parts "$1") - 1)); }  # > 0: two parts stored
# parts_holding_source KEY: the parts KEY's unfinished upload holds whose
# ETag is the MD5 of the source's 5 MiB at their place, once the listing
# has stopped changing. Only those may be kept: versitygw lists a part cut
# off mid-body (the killed copy's, dropped by the proxy) at its full size
# with the ETag of what it got, and the rerun rightly sends those again.
parts_holding_source() {
  local id now last=none n size etag
  id=$(upload_id "$1") && [ "$id" != None ] || { echo 0; return; }
  for _ in $(seq 20); do
    now=$(aws s3api list-parts --bucket "$BUCKET" --key "$1" --upload-id "$id" \
      --query 'Parts[].[PartNumber,Size,ETag]' --output text 2>/dev/null)
    [ "$now" = "$last" ] && break
    last=$now
    sleep 1
  done
  local held=0
  while read -r n size etag; do
    [ -n "$n" ] && [ "$size" = $((5 << 20)) ] || continue
    [ "${etag//\"/}" = "$(dd if="$WORK/big.bin" bs=5M skip=$((n - 1)) count=1 2>/dev/null |
      md5sum | cut -d' ' -f1)" ] && held=$((held + 1))
  done <<<"$last"
  echo $held
}
logged() {  # logged FROM_LINE OPERATION KEY: requests since line FROM_LINE
  # versitygw writes its log behind the replies: counted once it stops growing.
  local n=-1 m
  for _ in $(seq 50); do
    m=$(tail -n +"$1" "$ACCESS_LOG" | grep -c " s3_$2 $3 " || true)
    [ "$m" = "$n" ] && break
    n=$m
    sleep 0.2
  done
  echo "$n"
}
resume_case() {  # resume_case KEY [touch]: kill, (touch the source,) rerun
  local key=$1 from
  kill_mid_copy parts_past_one "$key" -- --concurrency=2 --chunk-mib=5 \
    --endpoint-url "http://127.0.0.1:18433" "$WORK/big.bin" "s3://$BUCKET/$key"
  # A source changed after the upload began (versitygw dates an upload by
  # its last part, which may land just after the kill).
  [ "${2:-}" = touch ] && sleep 2 && touch "$WORK/big.bin"
  sleep 1  # S3 dates uploads in whole seconds
  before=$(parts_holding_source "$key")
  from=$(($(wc -l <"$ACCESS_LOG") + 1))
  "$CP" --quiet --chunk-mib=5 "$WORK/big.bin" "s3://$BUCKET/$key"; rc=$?
  sent=$(logged $from UploadPart "$key")
  created=$(logged $from CreateMultipartUpload "$key")
  "$CP" --quiet "s3://$BUCKET/$key" "$WORK/resumed.bin" && cmp -s "$WORK/big.bin" "$WORK/resumed.bin"
  same=$?
  echo "s3 resume $key${2:+ (source touched)}: $before of 13 parts stored whole at the kill; the rerun" \
    "sent $sent parts, created $created uploads; $(uploads "$key") left; content same=$((same == 0))"
}
resume_case r/big.bin
if [ $seen -eq 0 ] && [ "$before" -ge 1 ] && [ $rc -eq 0 ] && [ "$sent" = $((13 - before)) ] &&
   [ "$created" = 0 ] && [ "$(uploads r/)" = 0 ] && [ $same -eq 0 ]; then
  pass S3RerunAfterSigkillResumesTheUploadSendingOnlyMissingParts
else fail S3RerunAfterSigkillResumesTheUploadSendingOnlyMissingParts "seen=$seen before=$before rc=$rc sent=$sent created=$created"; fi
resume_case t/big.bin touch
if [ $seen -eq 0 ] && [ $rc -eq 0 ] && [ "$sent" = 13 ] && [ "$created" = 1 ] &&
   [ "$(uploads t/)" = 0 ] && [ $same -eq 0 ]; then
  pass S3RerunAfterSigkillOfAChangedSourceStartsAfreshAndAbortsTheOldUpload
else fail S3RerunAfterSigkillOfAChangedSourceStartsAfreshAndAbortsTheOldUpload "seen=$seen rc=$rc sent=$sent created=$created"; fi

# --- local: killed mid-download from S3; the rerun's GETs counted --------
# Killed in 1 MiB chunks (so it is mid-way at 8 MB/s); the rerun in the default 8 MiB ones.
kill_mid_copy recorded "$WORK/dst" s3.bin -- --bwlimit=8M --chunk-mib=1 "s3://$BUCKET/r/big.bin" "$WORK/dst/s3.bin"
kept=$(recorded "$WORK/dst" s3.bin)
from=$(($(wc -l <"$ACCESS_LOG") + 1))
out=$("$CP" --json "s3://$BUCKET/r/big.bin" "$WORK/dst/s3.bin"); rc=$?
gets=$(logged $from GetObject r/big.bin)
resumed=$(json_field bytes_resumed "$out")
# A GET per missing 8 MiB chunk, and one for the check of the kept bytes' end.
want=$((((64 << 20) - ${resumed:-0} + (8 << 20) - 1) / (8 << 20) + 1))
echo "local from s3: $kept bytes recorded at the kill; the rerun kept $resumed and sent $gets GETs (a whole download: 8)"
if [ $seen -eq 0 ] && [ $rc -eq 0 ] && [ "${resumed:-0}" -ge "$kept" ] && [ "$gets" = "$want" ] &&
   [ "$(local_temps)" = 0 ] && cmp -s "$WORK/big.bin" "$WORK/dst/s3.bin"; then
  pass LocalRerunAfterSigkillOfAnS3DownloadGetsOnlyTheMissingBytes
else fail LocalRerunAfterSigkillOfAnS3DownloadGetsOnlyTheMissingBytes "seen=$seen rc=$rc kept=$kept gets=$gets want=$want out=$out"; fi

kill_mid_copy uploads q/ -- --concurrency=2 --endpoint-url "http://127.0.0.1:18433" "$WORK/big.bin" \
  "s3://$BUCKET/q/deep/x.bin"
sleep 1
out=$("$CP" --clean-up "s3://$BUCKET/q" --json 2>&1); rc=$?
echo "s3 --clean-up: rc=$rc: $out"
if [ $rc -eq 0 ] && [ "$(uploads q/)" = 0 ] && grep -q '"removed":1' <<<"$out" &&
   "$CP" --quiet "s3://$BUCKET/p/big.bin" "$WORK/s3-back.bin" && cmp -s "$WORK/big.bin" "$WORK/s3-back.bin"; then
  pass CleanUpAbortsTheUnfinishedUploadsUnderThePrefix
else fail CleanUpAbortsTheUnfinishedUploadsUnderThePrefix "rc=$rc out=$out"; fi

# A leftover younger than --older-than stays (and is counted); without it,
# one from before the clean-up goes.
# (made through NFS: ganesha's cache would not see a file made behind it)
echo partial >"$WORK/partial"
"$CP" --quiet "$WORK/partial" "$NFS/.x.bin.ferry-0123456789abcdef$Q"
out=$("$CP" --clean-up "$NFS$Q" --older-than 1h 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q "removed 0 leftovers.*left 1 changed since 1h ago" <<<"$out" &&
   [ -e "$EXPORT/$RUN/.x.bin.ferry-0123456789abcdef" ]; then
  pass CleanUpOlderThanLeavesYoungerLeftovers
else fail CleanUpOlderThanLeavesYoungerLeftovers "rc=$rc out=$out"; fi
sleep 1
out=$("$CP" --clean-up "$NFS$Q" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ ! -e "$EXPORT/$RUN/.x.bin.ferry-0123456789abcdef" ]; then
  pass CleanUpWithoutOlderThanRemovesWhatPredatesIt
else fail CleanUpWithoutOlderThanRemovesWhatPredatesIt "rc=$rc out=$out"; fi
out=$("$CP" --clean-up "$NFS$Q" --older-than soon 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "not a duration" <<<"$out"; then pass CleanUpRejectsABadDuration
else fail CleanUpRejectsABadDuration "rc=$rc out=$out"; fi

finish
