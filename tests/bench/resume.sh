#!/usr/bin/env bash
# scripts/bench resume: a 1 GiB upload to S3 (versitygw) SIGKILLed halfway,
# then run again: ferry-cp resumes the multipart upload and sends only the
# parts the server lacks (counted in versitygw's access log); rclone's
# rerun starts over. Same run, medians of RUNS (3) of each rerun, client
# CPU (user+sys) beside wall time.
#   SIZE_MIB (1024)  the file's size; parts are ferry-cp's 8 MiB
# On loopback, checking the stored parts' MD5s costs about what sending them
# again does; the saving is the bytes not sent (parts_sent_on_rerun), which
# a real link pays for. (toxiproxy's bandwidth toxic limits each connection,
# not a link, so it cannot stand in for one here.) The runs to be killed are
# held to 200 MiB/s (--bwlimit) so the kill lands mid-upload.
# RESULT keys:
#   parts_total, parts_stored_at_kill, parts_sent_on_rerun (medians);
#   ferry_full_s / ferry_rerun_s: a whole upload and the rerun after a kill;
#   rclone_rerun_s: rclone copyto again after its own killed upload;
#   rerun_vs_rclone_rerun: rclone's rerun wall over ferry-cp's;
#   rerun_vs_full: ferry-cp's whole upload over its rerun.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-3}
SIZE_MIB=${SIZE_MIB:-1024}
PART_MIB=8
require_built resume.sh "$CP"
command -v rclone >/dev/null || bench_apt_install rclone
BENCH_WORK_BASE=${BENCH_WORK_BASE:-/dev/shm} bench_work resume
VERSITYGW_ACCESS_LOG=1 bench_versitygw_bucket
LOG="$STATE/versitygw/access.log"
DIRECT="$AWS_ENDPOINT_URL"
head -c $((SIZE_MIB << 20)) /dev/urandom >"$WORK/big.bin"
PARTS=$(((SIZE_MIB + PART_MIB - 1) / PART_MIB))
echo "resume: $SIZE_MIB MiB in $PARTS parts of $PART_MIB MiB, versitygw on loopback" >&2

stored_parts() {  # stored_parts KEY: parts of KEY's unfinished upload
  local id
  id=$(aws s3api list-multipart-uploads --endpoint-url "$DIRECT" --bucket bench --prefix "$1" \
    --query 'Uploads[0].UploadId' --output text)
  [ "$id" != None ] || { echo 0; return; }
  aws s3api list-parts --endpoint-url "$DIRECT" --bucket bench --key "$1" --upload-id "$id" \
    --query 'length(Parts || `[]`)' --output text 2>/dev/null || echo 0
}
# kill_halfway KEY COMMAND...: runs COMMAND (slowed) until half of KEY's
# parts are stored, then SIGKILLs it.
kill_halfway() {
  local key=$1; shift
  "$@" >/dev/null 2>"$WORK/killed.err" &
  local pid=$! i
  for ((i = 0; i < 600; i++)); do
    [ "$(stored_parts "$key")" -ge $((PARTS / 2)) ] && break
    kill -0 $pid 2>/dev/null ||
      { echo "resume.sh: $1 ended before it was killed: $(tail -3 "$WORK/killed.err")" >&2; exit 1; }
    sleep 0.1
  done
  kill -KILL $pid; wait $pid 2>/dev/null || true
  sleep 1  # parts already sent land; S3 dates uploads in whole seconds
}

declare -a full_w full_c rerun_w rerun_c rc_w rc_c stored sent
for ((i = 0; i < RUNS; i++)); do
  r=$(timed_run "$CP" --quiet "$WORK/big.bin" "s3://bench/full-$i")
  full_w+=("${r% *}"); full_c+=("${r#* }")
  kill_halfway "ferry-$i" "$CP" --quiet --bwlimit 200M "$WORK/big.bin" "s3://bench/ferry-$i"
  stored+=("$(stored_parts "ferry-$i")")
  from=$(($(wc -l <"$LOG") + 1))
  r=$(timed_run "$CP" --quiet "$WORK/big.bin" "s3://bench/ferry-$i")
  rerun_w+=("${r% *}"); rerun_c+=("${r#* }")
  sent+=("$(tail -n +"$from" "$LOG" | grep -c " s3_UploadPart ferry-$i " || true)")
  cmp -s "$WORK/big.bin" "$DATA/bench/ferry-$i" || { echo "resume.sh: ferry-$i differs" >&2; exit 1; }
  kill_halfway "rclone-$i" rclone_ copyto --s3-no-check-bucket --s3-upload-cutoff 8M --s3-chunk-size 8M \
    --bwlimit 200M "$WORK/big.bin" "$REMOTE/rclone-$i"
  r=$(timed_run rclone_ copyto --s3-no-check-bucket --s3-upload-cutoff 8M --s3-chunk-size 8M "$WORK/big.bin" \
    "$REMOTE/rclone-$i")
  rc_w+=("${r% *}"); rc_c+=("${r#* }")
  echo "  run $i: ferry-cp whole ${full_w[i]} s / ${full_c[i]} s CPU; killed with ${stored[i]} of" \
    "$PARTS parts stored, the rerun sent ${sent[i]} in ${rerun_w[i]} s / ${rerun_c[i]} s CPU;" \
    "rclone's rerun ${rc_w[i]} s / ${rc_c[i]} s CPU" >&2
  rm -f "$DATA/bench/full-$i" "$DATA/bench/ferry-$i" "$DATA/bench/rclone-$i"
done
m() { median "$@"; }
fw=$(m "${full_w[@]}"); fc=$(m "${full_c[@]}"); rw=$(m "${rerun_w[@]}"); rcpu=$(m "${rerun_c[@]}")
cw=$(m "${rc_w[@]}"); cc=$(m "${rc_c[@]}")
echo "== resume of a killed $SIZE_MIB MiB upload (medians of $RUNS; wall / client CPU) =="
printf 'ferry-cp whole %.3f s / %.3f s; rerun after the kill %.3f s / %.3f s (%s of %d parts sent); rclone rerun %.3f s / %.3f s (%.2fx wall)\n' \
  "$fw" "$fc" "$rw" "$rcpu" "$(m "${sent[@]}")" "$PARTS" "$cw" "$cc" "$(echo "$cw / $rw" | bc -l)"
printf 'RESULT {"bench":"resume","runs":%d,"size_mib":%d,"parts_total":%d,"parts_stored_at_kill":%s,"parts_sent_on_rerun":%s,' \
  "$RUNS" "$SIZE_MIB" "$PARTS" "$(m "${stored[@]}")" "$(m "${sent[@]}")"
printf '"ferry_full_s":%.3f,"ferry_full_cpu_s":%.3f,"ferry_rerun_s":%.3f,"ferry_rerun_cpu_s":%.3f,' "$fw" "$fc" "$rw" "$rcpu"
printf '"rclone_rerun_s":%.3f,"rclone_rerun_cpu_s":%.3f,"rerun_vs_rclone_rerun":%.2f,"rerun_vs_full":%.2f}\n' \
  "$cw" "$cc" "$(echo "$cw / $rw" | bc -l)" "$(echo "$fw / $rw" | bc -l)"
