#!/usr/bin/env bash
# scripts/bench sync: a local tree kept in sync with S3, ferry-sync against
# `rclone sync` (Debian's rclone, its defaults: size and modification
# time, read from each object's metadata) and `aws s3 sync` (the AWS CLI:
# size and upload time from the listing), all three against one versitygw
# on loopback, in the same run:
#   - FILES (10,000) files of KIB (4) KiB, synced once to each tool's own
#     prefix (untimed);
#   - noop: a rerun with nothing changed;
#   - changed: CHANGED_PCT (1) % of the files rewritten (new bytes, same
#     size, new time) before each round, then each tool syncs them;
#   - checksum: a rerun with nothing changed comparing content hashes
#     (ferry-sync --checksum, rclone sync --checksum; the AWS CLI has none).
# Medians of RUNS (5), the tools interleaved with a rotating first one;
# wall time of the whole command and the client's CPU (user+sys of the
# process and its children) beside it. After each phase every prefix is
# checked against the source by sha256 (in versitygw's posix store).
# Also runs ferry_sync_memory_bench: a 10^6-file sync between synthetic
# filesystems, its peak RSS. Starts its own versitygw and stops it.
# Ends with one line `RESULT {json}`:
#   noop_sync_10k_vs_rclone (target >= 2), noop_sync_10k_vs_aws (>= 5),
#   changed_1pct_sync_vs_rclone (>= 1.5), checksum_noop_vs_rclone (>= 1.5):
#     the peer's median wall time over ferry-sync's;
#   *_cpu_ratio: the peer's median client CPU over ferry-sync's;
#   peak_rss_mib_sync_1m (<= 256).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-5}
FILES=${FILES:-10000}
KIB=${KIB:-4}
CHANGED_PCT=${CHANGED_PCT:-1}
SYNC="$BUILD/examples/ferry-sync"
require_built sync.sh "$SYNC"
command -v rclone >/dev/null || bench_apt_install rclone
command -v aws >/dev/null || { echo "sync.sh: the AWS CLI is missing" >&2; exit 1; }

bench_work sync
LOCAL="$WORK/local"
mkdir -p "$LOCAL/tree"
bench_versitygw_bucket

echo "sync: $FILES x $KIB KiB files, versitygw, rclone $(rclone version | head -1 | cut -d' ' -f2)," \
  "$(aws --version 2>&1 | cut -d' ' -f1)" >&2
bench_random_files "$LOCAL/tree" "$FILES" "$KIB"
mapfile -t ALL_FILES < <(cd "$LOCAL/tree" && find . -type f | sort)

# One sync: sync_once TOOL(ferry|rclone|aws) MODE(plain|checksum) -> "WALL CPU"
# (seconds), the client's CPU being user+sys of the command and its children.
sync_once() {
  local tool=$1 mode=$2 out
  local TIMEFORMAT='%R %U %S'
  sync  # earlier runs' writes flushed outside the timing
  out=$( { time (
    case "$tool:$mode" in
      ferry:plain) "$SYNC" --quiet "$LOCAL/tree" "s3://bench/ferry" ;;
      ferry:checksum) "$SYNC" --quiet --checksum "$LOCAL/tree" "s3://bench/ferry" ;;
      rclone:plain) rclone_ sync "$LOCAL/tree" "$REMOTE/rclone" ;;
      rclone:checksum) rclone_ sync --checksum "$LOCAL/tree" "$REMOTE/rclone" ;;
      aws:plain) aws s3 sync --only-show-errors "$LOCAL/tree" "s3://bench/aws" ;;
      # The floor of any no-op sync: the destination's listing alone.
      walk:plain) "$BUILD/examples/ferry-walk" "s3://bench/ferry" ;;
    esac >/dev/null 2>"$WORK/err-$tool" ) ; } 2>&1 ) ||
    { echo "sync.sh: $tool $mode failed: $(cat "$WORK/err-$tool")" >&2; exit 1; }
  awk '{printf "%.4f %.4f\n", $1, $2 + $3}' <<<"$out"
}

check_prefixes() {  # every tool's prefix holds the source tree, byte for byte
  local want; want=$(tree_sum "$LOCAL/tree")
  for tool in "$@"; do
    [ "$(tree_sum "$DATA/bench/$tool")" = "$want" ] ||
      { echo "sync.sh: $tool's copy differs from the source after $phase" >&2; exit 1; }
  done
}

# Rewrites CHANGED_PCT % of the files (the round's share): new bytes,
# same size, a new modification time.
change_some() {  # change_some ROUND
  local n=$((FILES * CHANGED_PCT / 100)) i
  for ((i = 0; i < n; i++)); do
    local f=${ALL_FILES[(($1 * n + i) * 7919) % FILES]}
    head -c $((KIB * 1024)) /dev/urandom >"$LOCAL/tree/$f"
  done
}

declare -A WALL CPU
# phase NAME MODE TOOLS...: RUNS rounds of each tool, rotated.
phase() {
  local name=$1 mode=$2; shift 2
  local tools=("$@") i k
  declare -A walls=() cpus=()
  for ((i = 0; i < RUNS; i++)); do
    [ "$name" = changed ] && change_some "$i"
    for ((k = 0; k < ${#tools[@]}; k++)); do
      local tool=${tools[(i + k) % ${#tools[@]}]} r
      r=$(sync_once "$tool" "$mode")
      echo "  $name $tool run $i: ${r% *} s wall, ${r#* } s CPU" >&2
      walls[$tool]+="${r% *} "
      cpus[$tool]+="${r#* } "
    done
  done
  for tool in "${tools[@]}"; do
    # shellcheck disable=SC2086
    WALL[$name-$tool]=$(median ${walls[$tool]})
    # shellcheck disable=SC2086
    CPU[$name-$tool]=$(median ${cpus[$tool]})
  done
  phase=$name check_prefixes "${tools[@]}"
}

phase=seed
for tool in ferry rclone aws; do sync_once "$tool" plain >/dev/null; done
check_prefixes ferry rclone aws
phase noop plain ferry rclone aws
# The listing a no-op sync cannot skip, by itself (versitygw's posix backend
# stats every object it lists): how close the no-op sync is to the server.
walls=(); cpus=()
for ((i = 0; i < RUNS; i++)); do
  r=$(sync_once walk plain); walls+=("${r% *}"); cpus+=("${r#* }")
  echo "  listing floor run $i: ${r% *} s wall, ${r#* } s CPU" >&2
done
WALL[floor-walk]=$(median "${walls[@]}"); CPU[floor-walk]=$(median "${cpus[@]}")
phase changed plain ferry rclone aws
phase checksum checksum ferry rclone

rss_mib=$("$BUILD/tests/ferry_sync_memory_bench" --files 1000000 | sed -n 's/^peak_rss_mib //p')

ratio() { echo "${WALL[$1]} / ${WALL[$2]}" | bc -l; }
cpu_ratio() { echo "${CPU[$1]} / ${CPU[$2]}" | bc -l; }
echo "== ferry-sync vs rclone sync vs aws s3 sync, $FILES x $KIB KiB -> S3 (medians of $RUNS; wall / client CPU) =="
for p in noop changed checksum; do
  line=$(printf '%-9s ferry-sync %6.3f s / %6.3f s' "$p" "${WALL[$p-ferry]}" "${CPU[$p-ferry]}")
  for tool in rclone aws; do
    [ -n "${WALL[$p-$tool]:-}" ] || continue
    line+=$(printf '   %s %6.3f s / %6.3f s (%.2fx wall, %.2fx CPU)' "$tool" "${WALL[$p-$tool]}" \
      "${CPU[$p-$tool]}" "$(ratio "$p-$tool" "$p-ferry")" "$(cpu_ratio "$p-$tool" "$p-ferry")")
  done
  echo "$line"
done
printf 'listing floor (ferry-walk of the 10,000 objects) %6.3f s / %6.3f s: the no-op sync is %.2fx it; aws s3 sync could be beaten by at most %.2fx\n' \
  "${WALL[floor-walk]}" "${CPU[floor-walk]}" "$(ratio noop-ferry floor-walk)" "$(ratio noop-aws floor-walk)"
echo "10^6-file sync between synthetic filesystems: peak RSS $rss_mib MiB"
printf 'RESULT {"bench":"sync","runs":%d,"files":%d,"kib":%d,"changed_pct":%d,' \
  "$RUNS" "$FILES" "$KIB" "$CHANGED_PCT"
printf '"noop_sync_10k_vs_rclone":%.2f,"noop_sync_10k_vs_aws":%.2f,' \
  "$(ratio noop-rclone noop-ferry)" "$(ratio noop-aws noop-ferry)"
printf '"changed_1pct_sync_vs_rclone":%.2f,"changed_1pct_sync_vs_aws":%.2f,' \
  "$(ratio changed-rclone changed-ferry)" "$(ratio changed-aws changed-ferry)"
printf '"checksum_noop_vs_rclone":%.2f,' "$(ratio checksum-rclone checksum-ferry)"
printf '"noop_vs_rclone_cpu_ratio":%.2f,"noop_vs_aws_cpu_ratio":%.2f,' \
  "$(cpu_ratio noop-rclone noop-ferry)" "$(cpu_ratio noop-aws noop-ferry)"
printf '"changed_vs_rclone_cpu_ratio":%.2f,"checksum_vs_rclone_cpu_ratio":%.2f,' \
  "$(cpu_ratio changed-rclone changed-ferry)" "$(cpu_ratio checksum-rclone checksum-ferry)"
printf '"noop_listing_floor_s":%.3f,"noop_sync_over_listing_floor":%.2f,"aws_noop_over_listing_floor":%.2f,' \
  "${WALL[floor-walk]}" "$(ratio noop-ferry floor-walk)" "$(ratio noop-aws floor-walk)"
printf '"peak_rss_mib_sync_1m":%s,"seconds":{' "${rss_mib:-null}"
sep=
for key in "${!WALL[@]}"; do
  printf '%s"%s":{"wall":%.3f,"cpu":%.3f}' "$sep" "${key/-/_}" "${WALL[$key]}" "${CPU[$key]}"; sep=,
done
printf '}}\n'
