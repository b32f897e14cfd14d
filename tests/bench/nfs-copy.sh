#!/usr/bin/env bash
# scripts/bench nfs-copy: ferry-cp against libnfs's nfs-cp, both directions,
# on one nfs-ganesha, in the same run:
#   - one 1 GiB file (COPY_MIB), NFS -> local and local -> NFS;
#   - 1,000 files of 64 KiB (SMALL_FILES x SMALL_KIB): ferry-cp -r with its
#     defaults against nfs-cp run 16 at once by xargs -P 16 (nfs-cp copies
#     one file per process; 16 at once is the best a shell gets from it);
#   - directly, and through toxiproxy with +1 ms on requests and on replies
#     (the NFS and the MOUNT port).
# The export and the local files live on tmpfs (/dev/shm): on this VM a
# 1 GiB write-back to the virtual disk costs seconds of noise that lands on
# whichever tool runs next; both tools read and write the same memory, so
# the figures measure the clients and ganesha. ganesha keeps files it wrote
# open after they are removed behind its back, so it is restarted after
# every upload round (outside the timing) to give their memory back.
# CASES and DELAYS (e.g. CASES="small-write" DELAYS=1) pick a subset; the
# RESULT line then names the speedups measured. FERRY_CP_ARGS go to every
# ferry-cp (e.g. "--jobs=16"), to try settings against the defaults. Medians of RUNS (3) wall-clock times of the whole command (start-up,
# mount, copy), tools interleaved; every copy is checked by sha256. Starts
# its own ganesha (+ rpcbind) and toxiproxy (API port 18479) and stops them
# on exit. Takes about 4 minutes. Ends with one line `RESULT {json}`; a
# named speedup is the lower of the two links (the target holds at both).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-3}
COPY_MIB=${COPY_MIB:-1024}
SMALL_FILES=${SMALL_FILES:-1000}
SMALL_KIB=${SMALL_KIB:-64}
CASES=${CASES:-read write small-read small-write}
DELAYS=${DELAYS:-0 1}
DELAY_MS=1
export TOXIPROXY_PORT=${TOXIPROXY_PORT:-18479}

[ -x "$CP" ] || { echo "nfs-copy.sh: $CP is missing (scripts/build release)" >&2; exit 1; }
command -v nfs-cp >/dev/null || { echo "nfs-copy.sh: nfs-cp missing (libnfs-utils)" >&2; exit 1; }

WORK=$(mktemp -d /dev/shm/ferry-nfs-copy-bench.XXXXXX)
STATE=$(mktemp -d /tmp/ferry-nfs-copy-state.XXXXXX)
EXPORT="$WORK/export"
LOCAL="$WORK/local"
mkdir -p "$EXPORT/small" "$LOCAL/small"
cleanup() {
  "$PEERS/toxiproxy" stop "$STATE/toxiproxy" || true
  "$PEERS/ganesha" stop "$STATE/ganesha" || true
  rm -rf "$WORK" "$STATE"
}
trap cleanup EXIT

echo "nfs-copy: ${COPY_MIB} MiB file, ${SMALL_FILES} x ${SMALL_KIB} KiB files, on tmpfs" >&2
head -c $((COPY_MIB << 20)) /dev/urandom >"$EXPORT/big.bin"
cp "$EXPORT/big.bin" "$LOCAL/big.bin"
bench_random_files "$EXPORT/small" "$SMALL_FILES" "$SMALL_KIB"
cp "$EXPORT/small/"* "$LOCAL/small/"
big_sum=$(sha256sum "$LOCAL/big.bin" | cut -d' ' -f1)
small_sum=$(tree_sum "$LOCAL/small")

"$PEERS/ganesha" start "$EXPORT" "$STATE/ganesha"
"$PEERS/toxiproxy" start "$STATE/toxiproxy"
NFS_DELAYED=$(toxi_delay_proxy bench_copy_nfs 2049 "$DELAY_MS")
MOUNT_DELAYED=$(toxi_delay_proxy bench_copy_mount 20048 "$DELAY_MS")
restart_ganesha() {
  "$PEERS/ganesha" stop "$STATE/ganesha" >/dev/null
  "$PEERS/ganesha" start "$EXPORT" "$STATE/ganesha" >/dev/null
}

url() {  # url PATH DELAYED(0|1)
  if [ "$2" = 1 ]; then
    echo "nfs://127.0.0.1/export/$1?nfsport=$NFS_DELAYED&mountport=$MOUNT_DELAYED"
  else
    echo "nfs://127.0.0.1/export/$1?nfsport=2049&mountport=20048"
  fi
}

# One timed copy: run_copy TOOL(ferry|nfs-cp) CASE(read|write|small-read|small-write) DELAYED RUN
# -> seconds; checks the bytes that arrived.
run_copy() {
  local tool=$1 case=$2 delayed=$3 run=$4 t0 t dst
  local tag="$tool-$delayed-$run"
  case "$case" in
    read)
      dst="$LOCAL/read-$tag.bin"
      t0=$(now)
      if [ "$tool" = ferry ]; then "$CP" ${FERRY_CP_ARGS:-} "$(url big.bin "$delayed")" "$dst" >/dev/null
      else nfs-cp "$(url big.bin "$delayed")" "$dst" >/dev/null; fi
      t=$(elapsed_since "$t0")
      [ "$(sha256sum "$dst" | cut -d' ' -f1)" = "$big_sum" ] || { echo "$tool $case: checksum mismatch" >&2; exit 1; }
      rm -f "$dst" ;;
    write)
      t0=$(now)
      if [ "$tool" = ferry ]; then "$CP" ${FERRY_CP_ARGS:-} "$LOCAL/big.bin" "$(url "up-$tag.bin" "$delayed")" >/dev/null
      else nfs-cp "$LOCAL/big.bin" "$(url "up-$tag.bin" "$delayed")" >/dev/null; fi
      t=$(elapsed_since "$t0")
      [ "$(sha256sum "$EXPORT/up-$tag.bin" | cut -d' ' -f1)" = "$big_sum" ] || { echo "$tool $case: checksum mismatch" >&2; exit 1; }
      rm -f "$EXPORT/up-$tag.bin" ;;
    small-read)
      dst="$LOCAL/tree-$tag"
      t0=$(now)
      if [ "$tool" = ferry ]; then "$CP" ${FERRY_CP_ARGS:-} -r "$(url small "$delayed")" "$dst" >/dev/null
      else
        mkdir -p "$dst"
        (cd "$LOCAL/small" && ls) | xargs -P 16 -I{} nfs-cp "$(url "small/{}" "$delayed")" "$dst/{}" >/dev/null
      fi
      t=$(elapsed_since "$t0")
      [ "$(tree_sum "$dst")" = "$small_sum" ] || { echo "$tool $case: tree checksum mismatch" >&2; exit 1; }
      rm -rf "$dst" ;;
    small-write)
      t0=$(now)
      if [ "$tool" = ferry ]; then "$CP" ${FERRY_CP_ARGS:-} -r "$LOCAL/small" "$(url "tree-$tag" "$delayed")" >/dev/null
      else
        mkdir -p "$EXPORT/tree-$tag"
        (cd "$LOCAL/small" && ls) | xargs -P 16 -I{} nfs-cp "$LOCAL/small/{}" "$(url "tree-$tag/{}" "$delayed")" >/dev/null
      fi
      t=$(elapsed_since "$t0")
      [ "$(tree_sum "$EXPORT/tree-$tag")" = "$small_sum" ] || { echo "$tool $case: tree checksum mismatch" >&2; exit 1; }
      rm -rf "$EXPORT/tree-$tag" ;;
  esac
  echo "$t"
}

declare -A RESULT
bench_case() {  # bench_case CASE DELAYED
  local case=$1 delayed=$2 f=() n=() i
  for ((i = 0; i < RUNS; i++)); do
    # Interleaved, the first tool alternating: neither always runs warm.
    if ((i % 2 == 0)); then
      f+=("$(run_copy ferry "$case" "$delayed" "$i")"); n+=("$(run_copy nfs-cp "$case" "$delayed" "$i")")
    else
      n+=("$(run_copy nfs-cp "$case" "$delayed" "$i")"); f+=("$(run_copy ferry "$case" "$delayed" "$i")")
    fi
    case "$case" in *write) restart_ganesha ;; esac
  done
  local key="${case}_${delayed}ms" mf mn
  mf=$(median "${f[@]}"); mn=$(median "${n[@]}")
  RESULT[ferry_$key]=$mf; RESULT[nfs_cp_$key]=$mn
  RESULT[speedup_$key]=$(echo "$mn / $mf" | bc -l)
  printf '%-12s %-16s ferry-cp %8.3f s   nfs-cp %8.3f s   %6.2fx\n' "$case" \
    "$([ "$delayed" = 1 ] && echo "+${DELAY_MS} ms each way" || echo direct)" "$mf" "$mn" "${RESULT[speedup_$key]}"
}

echo "== ferry-cp vs nfs-cp (wall clock, medians of $RUNS) =="
for delayed in $DELAYS; do
  for case in $CASES; do bench_case "$case" "$delayed"; done
done
if [ "$CASES" != "read write small-read small-write" ] || [ "$DELAYS" != "0 1" ]; then
  sep='RESULT {"bench":"nfs-copy","subset":true,"speedup":{'
  for delayed in $DELAYS; do
    for case in $CASES; do
      printf '%s"%s_%dms":%.2f' "$sep" "$case" "$delayed" "${RESULT[speedup_${case}_${delayed}ms]}"; sep=,
    done
  done
  printf '}}\n'
  exit 0
fi

lower() { echo "if ($1 < $2) $1 else $2" | bc -l; }
printf 'RESULT {"bench":"nfs-copy","runs":%d,"copy_mib":%d,"small_files":%d,"small_kib":%d,"delay_ms_each_way":%d,' \
  "$RUNS" "$COPY_MIB" "$SMALL_FILES" "$SMALL_KIB" "$DELAY_MS"
printf '"nfs_read_speedup_vs_nfs_cp_1g":%.2f,"nfs_write_speedup_vs_nfs_cp_1g":%.2f,' \
  "$(lower "${RESULT[speedup_read_0ms]}" "${RESULT[speedup_read_1ms]}")" \
  "$(lower "${RESULT[speedup_write_0ms]}" "${RESULT[speedup_write_1ms]}")"
printf '"nfs_small_files_speedup_vs_nfs_cp":%.2f,' \
  "$(lower "$(lower "${RESULT[speedup_small-read_0ms]}" "${RESULT[speedup_small-read_1ms]}")" \
           "$(lower "${RESULT[speedup_small-write_0ms]}" "${RESULT[speedup_small-write_1ms]}")")"
sep='"speedup":{'
for delayed in 0 1; do
  for case in read write small-read small-write; do
    printf '%s"%s_%dms":%.2f' "$sep" "$case" "$delayed" "${RESULT[speedup_${case}_${delayed}ms]}"; sep=,
  done
done
printf '},"seconds":{'
sep=
for delayed in 0 1; do
  for case in read write small-read small-write; do
    printf '%s"%s_%dms":{"ferry_cp":%.3f,"nfs_cp":%.3f}' "$sep" "$case" "$delayed" \
      "${RESULT[ferry_${case}_${delayed}ms]}" "${RESULT[nfs_cp_${case}_${delayed}ms]}"; sep=,
  done
done
printf '}}\n'
