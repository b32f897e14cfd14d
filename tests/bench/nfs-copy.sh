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
# RESULT line then names the speedups (and CPU ratios) measured.
# FERRY_CP_ARGS go to every ferry-cp (e.g. "--jobs=16"), to try settings
# against the defaults. Medians of RUNS (3) wall-clock times of the whole
# command (start-up, mount, copy), and of the client's CPU (user+sys, every
# process it starts: all 16 nfs-cp at once for a tree) beside them, tools
# interleaved; every copy is checked by sha256. Starts its own ganesha
# (+ rpcbind) and toxiproxy (API port 18479) and stops them on exit. Takes
# about 4 minutes. Ends with one line `RESULT {json}`:
#   nfs_read_speedup_vs_nfs_cp_1g, nfs_write_speedup_vs_nfs_cp_1g,
#     nfs_small_files_speedup_vs_nfs_cp: nfs-cp's median wall over
#     ferry-cp's, the lower of the two links (the target holds at both);
#     the small-files key the lowest of read and write;
#   the same keys + _cpu_ratio: nfs-cp's median client CPU over ferry-cp's
#     (> 1: ferry-cp uses less), lower of the links likewise;
#   speedup, cpu_ratio: those ratios per CASE_DELAYms (read_0ms, ...);
#   seconds, cpu_seconds: the medians behind them, {"ferry_cp","nfs_cp"}.
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

# nfs-cp copies one file per process: a tree is `ls | xargs -P 16 nfs-cp`,
# as a function so that timed_run counts the CPU of every process it starts.
nfs_cp_tree_read() {  # nfs_cp_tree_read DELAYED DST
  mkdir -p "$2"
  (cd "$LOCAL/small" && ls) | xargs -P 16 -I{} nfs-cp "$(url "small/{}" "$1")" "$2/{}"
}
nfs_cp_tree_write() {  # nfs_cp_tree_write DELAYED TREE (below the export)
  mkdir -p "$EXPORT/$2"
  (cd "$LOCAL/small" && ls) | xargs -P 16 -I{} nfs-cp "$LOCAL/small/{}" "$(url "$2/{}" "$1")"
}

# One timed copy: run_copy TOOL(ferry|nfs-cp) CASE(read|write|small-read|small-write) DELAYED RUN
# -> "WALL CPU" (seconds; CPU: the client's user+sys); checks the bytes that arrived.
run_copy() {
  local tool=$1 case=$2 delayed=$3 run=$4 r
  local tag="$tool-$delayed-$run"
  # shellcheck disable=SC2206  # FERRY_CP_ARGS: words, as the user wrote them
  local cp=("$CP" ${FERRY_CP_ARGS:-})
  case "$tool:$case" in
    ferry:read) r=$(timed_run "${cp[@]}" "$(url big.bin "$delayed")" "$LOCAL/read-$tag.bin") ;;
    nfs-cp:read) r=$(timed_run nfs-cp "$(url big.bin "$delayed")" "$LOCAL/read-$tag.bin") ;;
    ferry:write) r=$(timed_run "${cp[@]}" "$LOCAL/big.bin" "$(url "up-$tag.bin" "$delayed")") ;;
    nfs-cp:write) r=$(timed_run nfs-cp "$LOCAL/big.bin" "$(url "up-$tag.bin" "$delayed")") ;;
    ferry:small-read) r=$(timed_run "${cp[@]}" -r "$(url small "$delayed")" "$LOCAL/tree-$tag") ;;
    nfs-cp:small-read) r=$(timed_run nfs_cp_tree_read "$delayed" "$LOCAL/tree-$tag") ;;
    ferry:small-write) r=$(timed_run "${cp[@]}" -r "$LOCAL/small" "$(url "tree-$tag" "$delayed")") ;;
    nfs-cp:small-write) r=$(timed_run nfs_cp_tree_write "$delayed" "tree-$tag") ;;
  esac || exit 1
  case "$case" in
    read)
      [ "$(sha256sum "$LOCAL/read-$tag.bin" | cut -d' ' -f1)" = "$big_sum" ] || { echo "$tool $case: checksum mismatch" >&2; exit 1; }
      rm -f "$LOCAL/read-$tag.bin" ;;
    write)
      [ "$(sha256sum "$EXPORT/up-$tag.bin" | cut -d' ' -f1)" = "$big_sum" ] || { echo "$tool $case: checksum mismatch" >&2; exit 1; }
      rm -f "$EXPORT/up-$tag.bin" ;;
    small-read)
      [ "$(tree_sum "$LOCAL/tree-$tag")" = "$small_sum" ] || { echo "$tool $case: tree checksum mismatch" >&2; exit 1; }
      rm -rf "$LOCAL/tree-$tag" ;;
    small-write)
      [ "$(tree_sum "$EXPORT/tree-$tag")" = "$small_sum" ] || { echo "$tool $case: tree checksum mismatch" >&2; exit 1; }
      rm -rf "$EXPORT/tree-$tag" ;;
  esac
  echo "$r"
}

declare -A RESULT
bench_case() {  # bench_case CASE DELAYED
  local case=$1 delayed=$2 f=() n=() fc=() nc=() i r
  for ((i = 0; i < RUNS; i++)); do
    # Interleaved, the first tool alternating: neither always runs warm.
    local tool order="ferry nfs-cp"
    ((i % 2 == 0)) || order="nfs-cp ferry"
    for tool in $order; do
      r=$(run_copy "$tool" "$case" "$delayed" "$i")
      if [ "$tool" = ferry ]; then f+=("${r% *}"); fc+=("${r#* }"); else n+=("${r% *}"); nc+=("${r#* }"); fi
    done
    case "$case" in *write) restart_ganesha ;; esac
  done
  local key="${case}_${delayed}ms" mf mn
  mf=$(median "${f[@]}"); mn=$(median "${n[@]}")
  RESULT[ferry_$key]=$mf; RESULT[nfs_cp_$key]=$mn
  RESULT[speedup_$key]=$(echo "$mn / $mf" | bc -l)
  RESULT[cpu_ferry_$key]=$(median "${fc[@]}"); RESULT[cpu_nfs_cp_$key]=$(median "${nc[@]}")
  RESULT[cpu_ratio_$key]=$(div "${RESULT[cpu_nfs_cp_$key]}" "${RESULT[cpu_ferry_$key]}")
  printf '%-12s %-16s ferry-cp %6.3f s / %6.3f s CPU   nfs-cp %6.3f s / %6.3f s CPU   %5.2fx wall %5.2fx CPU\n' "$case" \
    "$([ "$delayed" = 1 ] && echo "+${DELAY_MS} ms each way" || echo direct)" "$mf" "${RESULT[cpu_ferry_$key]}" \
    "$mn" "${RESULT[cpu_nfs_cp_$key]}" "${RESULT[speedup_$key]}" "${RESULT[cpu_ratio_$key]}"
}

# The RESULT line's maps over CASES: ratio_map NAME PREFIX DELAYS... prints
# "NAME":{"CASE_Dms":RESULT[PREFIX_CASE_Dms],...}; seconds_map NAME
# FERRY_PREFIX NFS_CP_PREFIX, "NAME":{"CASE_Dms":{"ferry_cp":..,"nfs_cp":..},...}
# over DELAYS.
ratio_map() {
  local name=$1 prefix=$2 delayed case pairs=()
  shift 2
  for delayed in "$@"; do
    for case in $CASES; do pairs+=("${case}_${delayed}ms=${prefix}_${case}_${delayed}ms"); done
  done
  json_map "$name" RESULT %.2f "${pairs[@]}"
}

seconds_map() {
  local delayed case sep=
  printf '"%s":{' "$1"
  for delayed in $DELAYS; do
    for case in $CASES; do
      printf '%s"%s_%dms":{"ferry_cp":%.3f,"nfs_cp":%.3f}' "$sep" "$case" "$delayed" \
        "${RESULT[${2}_${case}_${delayed}ms]}" "${RESULT[${3}_${case}_${delayed}ms]}"; sep=,
    done
  done
  printf '}'
}

echo "== ferry-cp vs nfs-cp (medians of $RUNS; wall / client CPU) =="
for delayed in $DELAYS; do
  for case in $CASES; do bench_case "$case" "$delayed"; done
done
if [ "$CASES" != "read write small-read small-write" ] || [ "$DELAYS" != "0 1" ]; then
  printf 'RESULT {"bench":"nfs-copy","subset":true,'
  # shellcheck disable=SC2086
  ratio_map speedup speedup $DELAYS; printf ','
  # shellcheck disable=SC2086
  ratio_map cpu_ratio cpu_ratio $DELAYS; printf ','
  seconds_map seconds ferry nfs_cp; printf ','
  seconds_map cpu_seconds cpu_ferry cpu_nfs_cp; printf '}\n'
  exit 0
fi

lower() { echo "if ($1 < $2) $1 else $2" | bc -l; }
printf 'RESULT {"bench":"nfs-copy","runs":%d,"copy_mib":%d,"small_files":%d,"small_kib":%d,"delay_ms_each_way":%d,' \
  "$RUNS" "$COPY_MIB" "$SMALL_FILES" "$SMALL_KIB" "$DELAY_MS"
# lowest PREFIX CASE...: the lowest RESULT[PREFIX_CASE_Dms] over the CASEs
# and both links.
lowest() {
  local prefix=$1 case delayed low= v
  shift
  for case in "$@"; do
    for delayed in 0 1; do
      v=${RESULT[${prefix}_${case}_${delayed}ms]}
      if [ -z "$low" ]; then low=$v; else low=$(lower "$low" "$v"); fi
    done
  done
  echo "$low"
}
for prefix in speedup cpu_ratio; do
  suffix=$([ "$prefix" = cpu_ratio ] && echo _cpu_ratio || true)
  printf '"nfs_read_speedup_vs_nfs_cp_1g%s":%.2f,"nfs_write_speedup_vs_nfs_cp_1g%s":%.2f,' \
    "$suffix" "$(lowest "$prefix" read)" "$suffix" "$(lowest "$prefix" write)"
  printf '"nfs_small_files_speedup_vs_nfs_cp%s":%.2f,' "$suffix" "$(lowest "$prefix" small-read small-write)"
done
ratio_map speedup speedup 0 1; printf ','
ratio_map cpu_ratio cpu_ratio 0 1; printf ','
seconds_map seconds ferry nfs_cp; printf ','
seconds_map cpu_seconds cpu_ferry cpu_nfs_cp; printf '}\n'
