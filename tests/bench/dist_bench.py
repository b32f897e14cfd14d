"""The measuring half of `scripts/bench dist` (tests/bench/dist.sh starts
ganesha, makes the trees and calls this with the venv that has ferry and
distributed).

  walk  the 100k-entry tree: `ferry-walk` (the C++ tool, a whole process)
        and ferry.FileSystems.walk (one Python process) against
        ferry.dist.walk on LocalClusters of 1, 2 and 4 worker processes
  copy  the copy tree NFS -> NFS: `ferry-cp -r` against ferry.dist.copy on
        the same clusters (destination removed before each timed run)

Clusters are started first (their start is reported, not timed in the
runs: a deployment starts its cluster once), each gets one untimed warm-up
walk and copy (its workers' Runtimes and NFS mounts are made then, as a
running cluster has them), then the tools run interleaved, RUNS times;
medians. Overheads are fractions over the single-process C++ tool.
Prints readable lines and ends with one line `RESULT {json}`.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import ferry
import ferry.dist
from distributed import Client, LocalCluster


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def count_files(path):
    return sum(len(names) for _, _, names in os.walk(path))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ferry-cp", required=True)
    p.add_argument("--ferry-walk", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--walk-url", required=True)
    p.add_argument("--walk-entries", type=int, required=True)
    p.add_argument("--copy-src-url", required=True)
    p.add_argument("--copy-files", type=int, required=True)
    p.add_argument("--dst-url", required=True, help="URL of the export's root, copies go below")
    p.add_argument("--export", required=True, help="the export's local folder")
    args = p.parse_args()
    counts = [int(n) for n in args.workers.split(",")]

    def dst(name):
        base, _, query = args.dst_url.partition("?")
        return f"{base.rstrip('/')}/{name}" + (f"?{query}" if query else "")

    def clear(name):
        shutil.rmtree(os.path.join(args.export, name), ignore_errors=True)

    clusters = {}
    started = {}
    for n in counts:
        t, cluster = timed(lambda: LocalCluster(n_workers=n, threads_per_worker=1,
                                                processes=True, dashboard_address=None))
        clusters[n] = (cluster, Client(cluster))
        started[n] = round(t, 2)
        print(f"LocalCluster of {n}: started in {t:.2f} s", file=sys.stderr)

    def single_walk_python():
        with ferry.Runtime(blocking_threads=16) as rt, ferry.FileSystems(runtime=rt) as fs:
            with fs.walk(args.walk_url) as w:
                for _ in w.serialized():
                    pass
                return w.stats["entries"]

    walkers = {"cpp": lambda: run([args.ferry_walk, args.walk_url]),
               "python": single_walk_python}
    copiers = {"cpp": lambda name: run([args.ferry_cp, "-r", "--quiet", args.copy_src_url,
                                        dst(name)])}
    for n in counts:
        client = clusters[n][1]
        walkers[f"dist{n}"] = (lambda c: lambda: ferry.dist.walk(args.walk_url, client=c))(client)
    # The same tree split across the workers from the start (by default a
    # tree this small is walked whole by one task): what splitting costs.
    split_now = ferry.dist.SplitOptions(whole_walk_entries=0)
    walkers[f"dist{counts[-1]}split"] = lambda: ferry.dist.walk(
        args.walk_url, client=clusters[counts[-1]][1], split=split_now)
    for n in counts:
        client = clusters[n][1]
        copiers[f"dist{n}"] = (lambda c: lambda name: ferry.dist.copy(
            args.copy_src_url, dst(name), recursive=True, client=c))(client)

    # Warm-ups, checked.
    cold = {}
    for name, fn in walkers.items():
        t, out = timed(fn)
        cold[name] = round(t, 3)
        if isinstance(out, ferry.dist.DistWalk):
            assert out.entries == args.walk_entries and not out.errors, (name, out.entries)
    for name, fn in copiers.items():
        clear(f"copy-{name}")
        fn(f"copy-{name}")
        got = count_files(os.path.join(args.export, f"copy-{name}"))
        assert got == args.copy_files, (name, got)
        clear(f"copy-{name}")
    print(f"first (cold) walks: {cold}", file=sys.stderr)

    walk_times = {name: [] for name in walkers}
    copy_times = {name: [] for name in copiers}
    for i in range(args.runs):
        order = list(walkers)
        order = order[i % len(order):] + order[:i % len(order)]  # who goes first rotates
        for name in order:
            walk_times[name].append(timed(walkers[name])[0])
        order = list(copiers)
        order = order[i % len(order):] + order[:i % len(order)]
        for name in order:
            # A fresh destination per run: the workers' filesystems keep
            # NFS directory handles, which a folder removed behind their
            # back (rmtree on the export) leaves stale.
            target = f"copy-{name}-{i}"
            copy_times[name].append(timed(lambda: copiers[name](target))[0])
            clear(target)
        print(f"run {i + 1}/{args.runs}: walk "
              + " ".join(f"{k}={v[-1]:.3f}" for k, v in walk_times.items()) + " | copy "
              + " ".join(f"{k}={v[-1]:.2f}" for k, v in copy_times.items()), file=sys.stderr)

    walk = {k: statistics.median(v) for k, v in walk_times.items()}
    copy = {k: statistics.median(v) for k, v in copy_times.items()}
    result = {
        "walk_entries": args.walk_entries,
        "copy_files": args.copy_files,
        "runs": args.runs,
        "walk_single_cpp_s": round(walk["cpp"], 3),
        "walk_single_python_s": round(walk["python"], 3),
        "copy_single_cpp_s": round(copy["cpp"], 2),
        "cluster_start_s": started,
    }
    for n in counts:
        result[f"walk_{n}_workers_s"] = round(walk[f"dist{n}"], 3)
        result[f"copy_{n}_workers_s"] = round(copy[f"dist{n}"], 2)
        result[f"walk_overhead_{n}_workers"] = round(walk[f"dist{n}"] / walk["cpp"] - 1, 3)
        result[f"copy_overhead_{n}_workers"] = round(copy[f"dist{n}"] / copy["cpp"] - 1, 3)
        result[f"walk_entries_per_s_per_worker_{n}"] = round(args.walk_entries / walk[f"dist{n}"] / n)
        result[f"copy_files_per_s_per_worker_{n}"] = round(args.copy_files / copy[f"dist{n}"] / n)
    n = counts[-1]
    result[f"walk_{n}_workers_split_s"] = round(walk[f"dist{n}split"], 3)
    result[f"walk_overhead_{n}_workers_split"] = round(walk[f"dist{n}split"] / walk["cpp"] - 1, 3)
    result["walk_overhead_1_worker_vs_python"] = round(walk["dist1"] / walk["python"] - 1, 3)
    result["walk_entries_per_s_single_cpp"] = round(args.walk_entries / walk["cpp"])
    result["copy_files_per_s_single_cpp"] = round(args.copy_files / copy["cpp"])
    for n in counts:
        clusters[n][1].close()
        clusters[n][0].close()
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
