#!/usr/bin/env bash
# scripts/bench s3-trees: many small files to and from S3, ferry-cp -r
# against rclone (`rclone copy`, Debian's rclone), both against one
# versitygw on loopback, in the same run:
#   - FILES (1,000) files of KIB (64) KiB, local -> S3 ("up") and S3 ->
#     local ("down");
#   - 16 at once on both sides (ferry-cp --jobs=16, rclone --transfers=16),
#     and each tool with its defaults (ferry-cp: 16 files at once; rclone:
#     4 transfers, 8 checkers, an MD5 of every file checked against the
#     ETag).
# Medians of RUNS (5) wall-clock times of the whole command and of the
# client's CPU (user+sys) beside them, the tools
# interleaved with a rotating first one; every copy is checked by sha256
# (uploads in versitygw's posix store, downloads in the local folder);
# each copy starts after a sync (outside the timing). Copies are kept
# until the end (about 2.6 GB of disk): on a disk without a journal (this
# VM's) ext4 skips every inode removed in the last minute (six, once its
# inode-table block is dirty), scanning them all on each file created, so
# removing each copy at once made every later
# copy slower by the same kernel time per file, whichever tool ran it (by
# the fifth round, 0.45 s more system time for ferry-cp, 0.55 s for rclone).
# rclone gets its remote from a connection string and the AWS environment
# (--config /dev/null): nothing is written to ~/.config. Installs rclone
# with apt-get when it is missing. Starts its own versitygw
# (127.0.0.1:$VERSITYGW_PORT, default 7070) and stops it on exit. About a
# minute. Ends with one line `RESULT {json}`:
#   s3_small_files_up_vs_rclone, s3_small_files_down_vs_rclone: rclone's
#     median time over ferry-cp's, 16 at once (target >= 1.5);
#   s3_small_files_up_cpu_ratio, ..._down_...: rclone's median client CPU
#     (user+sys) over ferry-cp's, 16 at once (target down >= 2: ferry's CPU
#     at most half rclone's);
#   s3_small_files_up_defaults_vs_rclone, ..._down_...: the same with each
#     tool's defaults (target >= 1).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-5}
FILES=${FILES:-1000}
KIB=${KIB:-64}
JOBS=16
require_built s3-trees.sh "$CP"
command -v rclone >/dev/null || bench_apt_install rclone

bench_work s3-trees
LOCAL="$WORK/local"
mkdir -p "$LOCAL/small"
bench_versitygw_bucket

echo "s3-trees: $FILES x $KIB KiB files, versitygw, rclone $(rclone version | head -1 | cut -d' ' -f2)" >&2
bench_random_files "$LOCAL/small" "$FILES" "$KIB"
small_sum=$(tree_sum "$LOCAL/small")
# What the downloads read, uploaded through S3 so each object has the
# ETag a real store lists (files copied into the posix store have none).
"$CP" -r "$LOCAL/small" s3://bench/small >/dev/null
[ "$(rclone_ lsf "$REMOTE/small" | wc -l)" = "$FILES" ] ||
  { echo "s3-trees.sh: versitygw does not list the $FILES seeded files" >&2; exit 1; }

# One timed copy: run_copy TOOL(ferry|ferry16|rclone|rclone16) DIRECTION(up|down) RUN
# -> "WALL CPU" (seconds; CPU: the client's user+sys).
run_copy() {
  local tool=$1 dir=$2 run=$3 tag="$1-$2-$3" r args=()
  case "$tool" in
    ferry16) args=(--jobs=$JOBS) ;;
    rclone16) args=(--transfers=$JOBS) ;;
  esac
  # Earlier runs' files still being written back to this VM's disk would
  # land on whichever copy runs next: flush them first, outside the timing.
  sync
  case "$tool:$dir" in
    ferry*:up) r=$(timed_run "$CP" "${args[@]}" -r "$LOCAL/small" "s3://bench/up-$tag") ;;
    ferry*:down) r=$(timed_run "$CP" "${args[@]}" -r "s3://bench/small" "$LOCAL/down-$tag") ;;
    rclone*:up) r=$(timed_run rclone_ copy "${args[@]}" "$LOCAL/small" "$REMOTE/up-$tag") ;;
    rclone*:down) r=$(timed_run rclone_ copy "${args[@]}" "$REMOTE/small" "$LOCAL/down-$tag") ;;
  esac
  local landed="$LOCAL/down-$tag"
  [ "$dir" = up ] && landed="$DATA/bench/up-$tag"
  [ "$(tree_sum "$landed")" = "$small_sum" ] || { echo "$tool $dir: tree checksum mismatch" >&2; exit 1; }
  echo "$r"
}

declare -A SECONDS_OF CPU_OF
TOOLS=(ferry16 rclone16 ferry rclone)
for dir in up down; do
  declare -A times=() cpus=()
  for ((i = 0; i < RUNS; i++)); do
    # Rotate the first tool: none always runs first (or after a given one).
    for ((k = 0; k < ${#TOOLS[@]}; k++)); do
      tool=${TOOLS[(i + k) % ${#TOOLS[@]}]}
      r=$(run_copy "$tool" "$dir" "$i")
      echo "  $dir $tool run $i: ${r% *} s wall, ${r#* } s CPU" >&2
      times[$tool]+="${r% *} "
      cpus[$tool]+="${r#* } "
    done
  done
  for tool in "${TOOLS[@]}"; do
    # shellcheck disable=SC2086
    SECONDS_OF[$tool-$dir]=$(median ${times[$tool]})
    # shellcheck disable=SC2086
    CPU_OF[$tool-$dir]=$(median ${cpus[$tool]})
  done
  unset times cpus
done

ratio() { echo "${SECONDS_OF[$1]} / ${SECONDS_OF[$2]}" | bc -l; }
cpu_ratio() { echo "${CPU_OF[$1]} / ${CPU_OF[$2]}" | bc -l; }
echo "== ferry-cp -r vs rclone copy, $FILES x $KIB KiB (medians of $RUNS; wall / client CPU) =="
for dir in up down; do
  printf '%-5s 16 at once: ferry-cp %6.3f s / %6.3f s CPU  rclone %6.3f s / %6.3f s CPU  %5.2fx wall %5.2fx CPU\n' \
    "$dir" "${SECONDS_OF[ferry16-$dir]}" "${CPU_OF[ferry16-$dir]}" "${SECONDS_OF[rclone16-$dir]}" \
    "${CPU_OF[rclone16-$dir]}" "$(ratio "rclone16-$dir" "ferry16-$dir")" "$(cpu_ratio "rclone16-$dir" "ferry16-$dir")"
  printf '%-5s defaults:   ferry-cp %6.3f s / %6.3f s CPU  rclone %6.3f s / %6.3f s CPU  %5.2fx wall %5.2fx CPU\n' \
    "$dir" "${SECONDS_OF[ferry-$dir]}" "${CPU_OF[ferry-$dir]}" "${SECONDS_OF[rclone-$dir]}" \
    "${CPU_OF[rclone-$dir]}" "$(ratio "rclone-$dir" "ferry-$dir")" "$(cpu_ratio "rclone-$dir" "ferry-$dir")"
done
printf 'RESULT {"bench":"s3-trees","runs":%d,"files":%d,"kib":%d,"jobs":%d,' "$RUNS" "$FILES" "$KIB" "$JOBS"
printf '"s3_small_files_up_vs_rclone":%.2f,"s3_small_files_down_vs_rclone":%.2f,' \
  "$(ratio rclone16-up ferry16-up)" "$(ratio rclone16-down ferry16-down)"
printf '"s3_small_files_up_cpu_ratio":%.2f,"s3_small_files_down_cpu_ratio":%.2f,' \
  "$(cpu_ratio rclone16-up ferry16-up)" "$(cpu_ratio rclone16-down ferry16-down)"
printf '"s3_small_files_up_defaults_vs_rclone":%.2f,"s3_small_files_down_defaults_vs_rclone":%.2f,' \
  "$(ratio rclone-up ferry-up)" "$(ratio rclone-down ferry-down)"
labels=()
for dir in up down; do
  for tool in "${TOOLS[@]}"; do labels+=("${tool/16/_16}_$dir=$tool-$dir"); done
done
json_map cpu_seconds CPU_OF "${labels[@]}"; printf ','
json_map seconds SECONDS_OF "${labels[@]}"; printf '}\n'
