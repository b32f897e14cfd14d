#!/usr/bin/env bash
# scripts/bench nfs-walk: ferry-walk against libnfs's `nfs-ls -R` on the
# same trees, served by the same nfs-ganesha, in the same run:
#   - 20,000 files in 210 dirs, then 100,000 files in 1,000 dirs (smaller
#     tree first: ganesha's metadata cache favours the tree walked last);
#   - directly, and through toxiproxy with +1 ms on requests and on replies
#     (both the NFS and the MOUNT port);
#   - parallel copy throughput: ferry-cp against nfs-cp, NFS -> local and
#     local -> NFS, on one 256 MiB file.
# Medians of RUNS (5) wall-clock times of the whole command (connect, mount
# and walk), and of the client's CPU (user+sys) beside them, after one
# untimed warm-up of each tree. nfs-ls at +1 ms on the
# 100,000-file tree takes ~11 s a run, so it gets SLOW_RUNS (3) runs; the
# output says so. Starts its own ganesha (+ rpcbind) and toxiproxy (API port
# 18476, not the tests' 18474 nor bench rpc's 18475) and stops them by PID
# on exit. Takes about 3 minutes. Ends with one line `RESULT {json}`:
#   speedup_vs_nfs_ls_{0ms,1ms}_{20k,100k}: nfs-ls -R's median wall over
#     ferry-walk's;
#   the same keys + _cpu_ratio: nfs-ls's median client CPU over ferry-walk's
#     (> 1: ferry-walk uses less);
#   ferry_walk_s, nfs_ls_s and ferry_walk_cpu_s, nfs_ls_cpu_s: the medians
#     per tree and link ({"20k_0ms",...});
#   ferry_walk_cpu_ms_per_1k_entries, nfs_ls_cpu_ms_per_1k_entries: that
#     CPU in milliseconds per 1,000 entries walked;
#   copy_mib_s, copy_cpu_s ({"ferry_read","nfs_cp_read",...}) and
#     copy_cpu_ratio ({"read","write"}: nfs-cp's CPU over ferry-cp's) for
#     the COPY_MIB file; ferry_walk_peak_rss_mib.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-5}
SLOW_RUNS=${SLOW_RUNS:-3}
DELAY_MS=1
COPY_MIB=${COPY_MIB:-256}
export TOXIPROXY_PORT=${TOXIPROXY_PORT:-18476}

require_built nfs-walk.sh "$WALK" "$CP"
command -v nfs-ls >/dev/null || { echo "nfs-walk.sh: nfs-ls missing (libnfs-utils)" >&2; exit 1; }

bench_work nfs-walk

bench_make_tree t20k 210 20000
bench_make_tree t100k 1000 100000
head -c $((COPY_MIB << 20)) /dev/urandom >"$EXPORT/big.bin"

bench_peer ganesha "$EXPORT" "$STATE/ganesha"
bench_peer toxiproxy "$STATE/toxiproxy"
NFS_DELAYED=$(toxi_delay_proxy bench_walk_nfs 2049 "$DELAY_MS")
MOUNT_DELAYED=$(toxi_delay_proxy bench_walk_mount 20048 "$DELAY_MS")

url() {  # url TREE DELAYED(0|1)
  if [ "$2" = 1 ]; then
    echo "nfs://127.0.0.1/export/$1?nfsport=$NFS_DELAYED&mountport=$MOUNT_DELAYED"
  else
    echo "nfs://127.0.0.1/export/$1?nfsport=2049&mountport=20048"
  fi
}

declare -A RESULT
bench_tree() {  # bench_tree TREE EXPECTED_ENTRIES
  local tree=$1 expected=$2
  for delayed in 0 1; do
    local u; u=$(url "$tree" "$delayed")
    # Warm-up, and a check that both see every entry.
    local n_ferry n_ls
    n_ferry=$("$WALK" "$u" --json | jq .entries)
    n_ls=$(nfs-ls -R "$u" | wc -l)
    [ "$n_ferry" = "$expected" ] || { echo "ferry-walk saw $n_ferry entries of $tree, want $expected" >&2; exit 1; }
    [ "$n_ls" = "$expected" ] || { echo "nfs-ls saw $n_ls entries of $tree, want $expected" >&2; exit 1; }
    local ls_runs=$RUNS
    [ "$delayed" = 1 ] && [ "$tree" = t100k ] && ls_runs=$SLOW_RUNS
    local f=() l=() fc=() lc=() r
    for ((i = 0; i < RUNS; i++)); do
      r=$(timed_run "$WALK" "$u")
      f+=("${r% *}"); fc+=("${r#* }")
      if ((i < ls_runs)); then
        r=$(timed_run nfs-ls -R "$u")
        l+=("${r% *}"); lc+=("${r#* }")
      fi
    done
    local mf ml
    mf=$(median "${f[@]}"); ml=$(median "${l[@]}")
    local key="${tree}_$([ "$delayed" = 1 ] && echo 1ms || echo 0ms)"
    RESULT[ferry_$key]=$mf
    RESULT[nfs_ls_$key]=$ml
    RESULT[speedup_$key]=$(echo "$ml / $mf" | bc -l)
    RESULT[cpu_ferry_$key]=$(median "${fc[@]}")
    RESULT[cpu_nfs_ls_$key]=$(median "${lc[@]}")
    RESULT[cpu_ratio_$key]=$(div "${RESULT[cpu_nfs_ls_$key]}" "${RESULT[cpu_ferry_$key]}")
    RESULT[cpu_ms_per_1k_ferry_$key]=$(echo "${RESULT[cpu_ferry_$key]} * 1000000 / $expected" | bc -l)
    RESULT[cpu_ms_per_1k_nfs_ls_$key]=$(echo "${RESULT[cpu_nfs_ls_$key]} * 1000000 / $expected" | bc -l)
    printf '%-6s %-14s ferry-walk %7.3f s / %6.3f s CPU (%d runs)   nfs-ls -R %7.3f s / %6.3f s CPU (%d runs)   %5.1fx wall %5.2fx CPU   (%s entries; CPU per 1,000: %.2f ms / %.2f ms)\n' \
      "$tree" "$([ "$delayed" = 1 ] && echo "+${DELAY_MS} ms each way" || echo direct)" \
      "$mf" "${RESULT[cpu_ferry_$key]}" "$RUNS" "$ml" "${RESULT[cpu_nfs_ls_$key]}" "$ls_runs" \
      "${RESULT[speedup_$key]}" "${RESULT[cpu_ratio_$key]}" "$expected" \
      "${RESULT[cpu_ms_per_1k_ferry_$key]}" "${RESULT[cpu_ms_per_1k_nfs_ls_$key]}"
  done
}

echo
echo "== walk: ferry-walk vs nfs-ls -R (medians; wall / client CPU) =="
bench_tree t20k 20210
bench_tree t100k 101000
[ "$SLOW_RUNS" -lt "$RUNS" ] &&
  echo "(nfs-ls -R at +${DELAY_MS} ms on t100k: $SLOW_RUNS runs, not $RUNS, to keep the bench short)"

echo
echo "== copy: ferry-cp vs nfs-cp, one ${COPY_MIB} MiB file, direct (medians of 3) =="
src_sum=$(sha256sum "$EXPORT/big.bin" | cut -d' ' -f1)
copy_rate() {  # copy_rate TOOL DIRECTION -> "MiB/s CPU-seconds" (medians)
  local tool=$1 dir=$2 r out=() cpu=()
  for ((i = 0; i < 3; i++)); do
    # Fresh target names: files removed behind ganesha's back leave stale
    # handles in its cache.
    local up="up-$(basename "$tool")-$i.bin"
    rm -f "$WORK/local.bin"
    if [ "$dir" = read ]; then
      r=$(timed_run "$tool" "$(url big.bin 0)" "$WORK/local.bin")
      [ "$(sha256sum "$WORK/local.bin" | cut -d' ' -f1)" = "$src_sum" ] || { echo "$tool read: checksum mismatch" >&2; exit 1; }
    else
      cp "$EXPORT/big.bin" "$WORK/local.bin"
      r=$(timed_run "$tool" "$WORK/local.bin" "$(url "$up" 0)")
      [ "$(sha256sum "$EXPORT/$up" | cut -d' ' -f1)" = "$src_sum" ] || { echo "$tool write: checksum mismatch" >&2; exit 1; }
    fi
    out+=("$(echo "$COPY_MIB / ${r% *}" | bc -l)")
    cpu+=("${r#* }")
  done
  echo "$(median "${out[@]}") $(median "${cpu[@]}")"
}
for dir in read write; do
  for tool in ferry nfs_cp; do
    r=$(copy_rate "$([ "$tool" = ferry ] && echo "$CP" || echo nfs-cp)" "$dir")
    RESULT[${tool}_${dir}_mib_s]=${r% *}
    RESULT[${tool}_${dir}_cpu_s]=${r#* }
  done
  RESULT[copy_cpu_ratio_$dir]=$(div "${RESULT[nfs_cp_${dir}_cpu_s]}" "${RESULT[ferry_${dir}_cpu_s]}")
  printf '%-14s ferry-cp %8.1f MiB/s / %6.3f s CPU   nfs-cp %8.1f MiB/s / %6.3f s CPU   %5.2fx CPU\n' \
    "$([ "$dir" = read ] && echo "NFS -> local" || echo "local -> NFS")" \
    "${RESULT[ferry_${dir}_mib_s]}" "${RESULT[ferry_${dir}_cpu_s]}" \
    "${RESULT[nfs_cp_${dir}_mib_s]}" "${RESULT[nfs_cp_${dir}_cpu_s]}" "${RESULT[copy_cpu_ratio_$dir]}"
done
rss=$( { /usr/bin/time -f '%M' "$WALK" "$(url t100k 0)" >/dev/null; } 2>&1 | tail -1)
echo "ferry-walk peak RSS on t100k: $((rss / 1024)) MiB"

printf 'RESULT {"bench":"nfs-walk","runs":%d,"slow_runs":%d,"delay_ms_each_way":%d,' "$RUNS" "$SLOW_RUNS" "$DELAY_MS"
printf '"speedup_vs_nfs_ls_0ms_20k":%.2f,"speedup_vs_nfs_ls_1ms_20k":%.2f,' "${RESULT[speedup_t20k_0ms]}" "${RESULT[speedup_t20k_1ms]}"
printf '"speedup_vs_nfs_ls_0ms_100k":%.2f,"speedup_vs_nfs_ls_1ms_100k":%.2f,' "${RESULT[speedup_t100k_0ms]}" "${RESULT[speedup_t100k_1ms]}"
printf '"speedup_vs_nfs_ls_0ms_20k_cpu_ratio":%.2f,"speedup_vs_nfs_ls_1ms_20k_cpu_ratio":%.2f,' \
  "${RESULT[cpu_ratio_t20k_0ms]}" "${RESULT[cpu_ratio_t20k_1ms]}"
printf '"speedup_vs_nfs_ls_0ms_100k_cpu_ratio":%.2f,"speedup_vs_nfs_ls_1ms_100k_cpu_ratio":%.2f,' \
  "${RESULT[cpu_ratio_t100k_0ms]}" "${RESULT[cpu_ratio_t100k_1ms]}"
walk_map() {  # walk_map NAME PREFIX FORMAT: "NAME":{"20k_0ms":RESULT[PREFIX_t20k_0ms],...},
  local tree delayed pairs=()
  for tree in 20k 100k; do
    for delayed in 0ms 1ms; do pairs+=("${tree}_${delayed}=${2}_t${tree}_${delayed}"); done
  done
  json_map "$1" RESULT "$3" "${pairs[@]}"
  printf ','
}
walk_map ferry_walk_cpu_s cpu_ferry %.4f
walk_map nfs_ls_cpu_s cpu_nfs_ls %.4f
walk_map ferry_walk_cpu_ms_per_1k_entries cpu_ms_per_1k_ferry %.3f
walk_map nfs_ls_cpu_ms_per_1k_entries cpu_ms_per_1k_nfs_ls %.3f
printf '"copy_cpu_s":{"ferry_read":%.3f,"nfs_cp_read":%.3f,"ferry_write":%.3f,"nfs_cp_write":%.3f},' \
  "${RESULT[ferry_read_cpu_s]}" "${RESULT[nfs_cp_read_cpu_s]}" "${RESULT[ferry_write_cpu_s]}" "${RESULT[nfs_cp_write_cpu_s]}"
printf '"copy_cpu_ratio":{"read":%.2f,"write":%.2f},' "${RESULT[copy_cpu_ratio_read]}" "${RESULT[copy_cpu_ratio_write]}"
walk_map ferry_walk_s ferry %.4f
walk_map nfs_ls_s nfs_ls %.4f
printf '"copy_mib_s":{"ferry_read":%.1f,"nfs_cp_read":%.1f,"ferry_write":%.1f,"nfs_cp_write":%.1f},"ferry_walk_peak_rss_mib":%d}\n' \
  "${RESULT[ferry_read_mib_s]}" "${RESULT[nfs_cp_read_mib_s]}" "${RESULT[ferry_write_mib_s]}" "${RESULT[nfs_cp_write_mib_s]}" "$((rss / 1024))"
