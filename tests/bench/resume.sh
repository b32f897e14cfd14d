#!/usr/bin/env bash
# scripts/bench resume: a 1 GiB upload to S3 (versitygw) SIGKILLed halfway,
# then run again: ferry-cp resumes the multipart upload and sends only the
# parts the server lacks (counted in versitygw's access log); rclone's
# rerun starts over. Then the same for a 1 GiB download to local disk
# (tmpfs): ferry-cp's rerun keeps what its temporary recorded and GETs
# only the rest; rclone's starts over. Same run, medians of RUNS (3) of
# each rerun, client CPU (user+sys) beside wall time.
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
#   rerun_vs_full: ferry-cp's whole upload over its rerun;
#   download_*: the same keys for the download (bytes_kept_at_kill,
#     gets_on_rerun of gets_total 8 MiB GETs, download_ferry_full_s, ...).
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
# --- the download ---------------------------------------------------------
"$CP" --quiet "$WORK/big.bin" s3://bench/down
# recorded FILE: the prefix FILE's resumable temporary records, else 0.
recorded() { python3 "$ROOT/tests/testing/resume_record.py" "$1"; }
# kill_download_halfway SECONDS_OR_EMPTY COMMAND... (ferry: until its
# temporary records half; rclone: after SECONDS, ferry's time to its kill).
declare -a dfull_w dfull_c drerun_w drerun_c drc_w drc_c dkept dgets
CHUNKS=$(((SIZE_MIB + PART_MIB - 1) / PART_MIB))  # ferry-cp's 8 MiB GETs
for ((i = 0; i < RUNS; i++)); do
  out="$WORK/down-$i.bin"
  r=$(timed_run "$CP" --quiet s3://bench/down "$WORK/full-$i.bin")
  dfull_w+=("${r% *}"); dfull_c+=("${r#* }")
  rm -f "$WORK/full-$i.bin"
  t0=$(now)
  "$CP" --quiet --bwlimit 200M s3://bench/down "$out" 2>/dev/null &
  pid=$!
  for ((k = 0; k < 600; k++)); do
    [ "$(recorded "$out")" -ge $(((SIZE_MIB << 20) / 2)) ] && break
    sleep 0.1
  done
  kill -KILL $pid; wait $pid 2>/dev/null || true
  took=$(elapsed_since "$t0")
  dkept+=("$(recorded "$out")")
  from=$(($(wc -l <"$LOG") + 1))
  r=$(timed_run "$CP" --quiet s3://bench/down "$out")
  drerun_w+=("${r% *}"); drerun_c+=("${r#* }")
  dgets+=("$(tail -n +"$from" "$LOG" | grep -c " s3_GetObject down " || true)")
  cmp -s "$WORK/big.bin" "$out" || { echo "resume.sh: download $i differs" >&2; exit 1; }
  rm -f "$out"
  rclone_ copyto --bwlimit 200M "$REMOTE/down" "$WORK/rclone-$i.bin" 2>/dev/null &
  pid=$!
  sleep "$took"
  kill -KILL $pid; wait $pid 2>/dev/null || true
  r=$(timed_run rclone_ copyto "$REMOTE/down" "$WORK/rclone-$i.bin")
  drc_w+=("${r% *}"); drc_c+=("${r#* }")
  cmp -s "$WORK/big.bin" "$WORK/rclone-$i.bin" || { echo "resume.sh: rclone download $i differs" >&2; exit 1; }
  rm -f "$WORK/rclone-$i.bin" "$WORK"/.rclone-"$i".bin* "$WORK"/rclone-"$i".bin.*
  echo "  download run $i: ferry-cp whole ${dfull_w[i]} s / ${dfull_c[i]} s CPU; killed after" \
    "${took} s with ${dkept[i]} bytes recorded, the rerun sent ${dgets[i]} GETs in ${drerun_w[i]} s /" \
    "${drerun_c[i]} s CPU; rclone's rerun ${drc_w[i]} s / ${drc_c[i]} s CPU" >&2
done

m() { median "$@"; }
fw=$(m "${full_w[@]}"); fc=$(m "${full_c[@]}"); rw=$(m "${rerun_w[@]}"); rcpu=$(m "${rerun_c[@]}")
cw=$(m "${rc_w[@]}"); cc=$(m "${rc_c[@]}")
echo "== resume of a killed $SIZE_MIB MiB upload (medians of $RUNS; wall / client CPU) =="
printf 'ferry-cp whole %.3f s / %.3f s; rerun after the kill %.3f s / %.3f s (%s of %d parts sent); rclone rerun %.3f s / %.3f s (%.2fx wall)\n' \
  "$fw" "$fc" "$rw" "$rcpu" "$(m "${sent[@]}")" "$PARTS" "$cw" "$cc" "$(echo "$cw / $rw" | bc -l)"
dfw=$(m "${dfull_w[@]}"); dfc=$(m "${dfull_c[@]}"); drw=$(m "${drerun_w[@]}"); drc=$(m "${drerun_c[@]}")
dcw=$(m "${drc_w[@]}"); dcc=$(m "${drc_c[@]}")
echo "== resume of a killed $SIZE_MIB MiB download to tmpfs (medians of $RUNS; wall / client CPU) =="
printf 'ferry-cp whole %.3f s / %.3f s; rerun after the kill %.3f s / %.3f s (%s of %d GETs); rclone rerun %.3f s / %.3f s (%.2fx wall)\n' \
  "$dfw" "$dfc" "$drw" "$drc" "$(m "${dgets[@]}")" "$CHUNKS" "$dcw" "$dcc" "$(echo "$dcw / $drw" | bc -l)"
printf 'RESULT {"bench":"resume","runs":%d,"size_mib":%d,"parts_total":%d,"parts_stored_at_kill":%s,"parts_sent_on_rerun":%s,' \
  "$RUNS" "$SIZE_MIB" "$PARTS" "$(m "${stored[@]}")" "$(m "${sent[@]}")"
printf '"ferry_full_s":%.3f,"ferry_full_cpu_s":%.3f,"ferry_rerun_s":%.3f,"ferry_rerun_cpu_s":%.3f,' "$fw" "$fc" "$rw" "$rcpu"
printf '"rclone_rerun_s":%.3f,"rclone_rerun_cpu_s":%.3f,"rerun_vs_rclone_rerun":%.2f,"rerun_vs_full":%.2f,' \
  "$cw" "$cc" "$(echo "$cw / $rw" | bc -l)" "$(echo "$fw / $rw" | bc -l)"
printf '"download_bytes_kept_at_kill":%s,"download_gets_total":%d,"download_gets_on_rerun":%s,' \
  "$(m "${dkept[@]}")" "$CHUNKS" "$(m "${dgets[@]}")"
printf '"download_ferry_full_s":%.3f,"download_ferry_full_cpu_s":%.3f,"download_ferry_rerun_s":%.3f,"download_ferry_rerun_cpu_s":%.3f,' \
  "$dfw" "$dfc" "$drw" "$drc"
printf '"download_rclone_rerun_s":%.3f,"download_rclone_rerun_cpu_s":%.3f,"download_rerun_vs_rclone_rerun":%.2f,"download_rerun_vs_full":%.2f}\n' \
  "$dcw" "$dcc" "$(echo "$dcw / $drw" | bc -l)" "$(echo "$dfw / $drw" | bc -l)"
