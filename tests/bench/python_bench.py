"""The measuring half of `scripts/bench python` (tests/bench/python.sh
starts the peers and calls this with the venv that has ferry and boto3).

Three comparisons, each in one run against the same server:
  download  ferry.s3.download vs `ferry-cp` (C++) vs boto3 download_file
  walk      ferry.nfs.walk vs `ferry-walk` (C++)
  cache     TtlCache.get hit vs dict.get vs a functools.lru_cache hit
Ratios are "C++ time over Python time" (1.0 = as fast; above 0.95 is within
5 %) and "boto3 time over ferry time". Each timed call also takes the
client's CPU (user + system): this process's CPU clock around an in-process
call, the waited-for child's around a process. Prints readable lines and
ends with one line `RESULT {json}`: download_python_vs_cpp,
download_python_process_vs_cpp, download_speedup_vs_boto3,
walk_python_vs_cpp (wall ratios) and each + _cpu_ratio (the same ratio of
client CPU); download_s, walk_s and download_cpu_s, walk_cpu_s (medians per
side); cache_hit_ns (a hit is all CPU: no CPU figure beside it);
peak_rss_mib.
"""

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import boto3
from botocore.config import Config

import ferry
import ferry.nfs
import ferry.s3

# The peer's keys and the checksum, as the s3 bench has them (same folder).
from s3_bench import ACCESS_KEY, MIB, REGION, SECRET_KEY, sha256

BUCKET = "bench-python"


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def timed_cpu(fn):
    """(wall seconds, client CPU seconds) of fn(): this process's CPU clock
    (user + system, every thread: ferry's and boto3's workers) plus that of
    the children it waited for (the C++ tools, `python -c`)."""
    def children():
        u = resource.getrusage(resource.RUSAGE_CHILDREN)
        return u.ru_utime + u.ru_stime
    c0, k0, t0 = time.process_time(), children(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    return wall, time.process_time() - c0 + children() - k0


def run(cmd, env=None):
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)


def bench_download(args):
    size = args.download_mib * MIB
    s3_env = dict(os.environ, AWS_ENDPOINT_URL=args.endpoint, AWS_ACCESS_KEY_ID=ACCESS_KEY,
                  AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_REGION=REGION)
    boto = boto3.client("s3", endpoint_url=args.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"}))
    boto.create_bucket(Bucket=BUCKET)
    src = os.path.join(args.work, "src.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(size))
    want = sha256(src)
    key = "big.bin"
    boto.upload_file(src, BUCKET, key)
    os.remove(src)  # keep the page cache for the downloads
    url = f"s3://{BUCKET}/{key}"
    out = {name: os.path.join(args.work, f"{name}.bin")
           for name in ("python", "cpp", "boto3", "python_process")}

    def ferry_python():
        # As a user would: a Runtime and a client, then the download.
        with ferry.Runtime() as rt, ferry.s3.S3Client(
                runtime=rt, endpoint=args.endpoint, access_key_id=ACCESS_KEY,
                secret_access_key=SECRET_KEY, region=REGION) as s3:
            s3.download(url, out["python"])

    def ferry_cpp():
        run([args.ferry_cp, url, out["cpp"]], env=s3_env)

    def boto3_download():
        boto.download_file(BUCKET, key, out["boto3"])

    def python_process():
        code = ("import ferry, ferry.s3, sys\n"
                "with ferry.Runtime() as rt, ferry.s3.S3Client(runtime=rt) as s3:\n"
                "    s3.download(sys.argv[1], sys.argv[2])\n")
        run([sys.executable, "-c", code, url, out["python_process"]], env=s3_env)

    tools = {"python": ferry_python, "cpp": ferry_cpp, "boto3": boto3_download,
             "python_process": python_process}
    for name, fn in tools.items():  # warm-up, checked
        fn()
    for name in out:
        got = sha256(out[name])
        if got != want:
            sys.exit(f"python_bench: {name} download differs from the object")
    times = {name: [] for name in tools}
    cpus = {name: [] for name in tools}
    names = list(tools)
    for r in range(args.runs):
        # Each run starts with another tool: none always follows the same one.
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = tools[name]
            # Untimed: replacing a 256 MiB file drops its page cache inside
            # the rename, a cost that depends on how recently it was written.
            os.remove(out[name])
            wall, cpu = timed_cpu(fn)
            times[name].append(wall)
            cpus[name].append(cpu)
    med = {name: statistics.median(t) for name, t in times.items()}
    cpu_med = {name: statistics.median(c) for name, c in cpus.items()}
    print(f"== S3 download, {args.download_mib} MiB, versitygw (medians of {args.runs}; wall / client CPU) ==")
    for name, label in (("python", "ferry.s3.download (in Python)"),
                        ("python_process", "python -c (import + download)"),
                        ("cpp", "ferry-cp (C++ process)"),
                        ("boto3", "boto3 download_file")):
        print(f"  {label:32s} {med[name]:7.3f} s  {args.download_mib / med[name]:8.1f} MiB/s  "
              f"{cpu_med[name]:7.3f} s CPU")
    return med, cpu_med


def bench_walk(args):
    def ferry_python():
        n = 0
        with ferry.Runtime() as rt:
            for batch in ferry.nfs.walk(args.nfs_url, runtime=rt):
                n += len(batch.entries)
        return n

    def ferry_cpp():
        run([args.ferry_walk, args.nfs_url])

    n = ferry_python()
    if n != args.walk_entries:
        sys.exit(f"python_bench: ferry.nfs.walk saw {n} entries, want {args.walk_entries}")
    summary = json.loads(subprocess.run([args.ferry_walk, args.nfs_url, "--json"], check=True,
                                        capture_output=True, text=True).stdout)
    if summary["entries"] != args.walk_entries:
        sys.exit(f"python_bench: ferry-walk saw {summary['entries']} entries")
    # A walk takes ~0.2 s and varies +-15 % on a busy machine: three times
    # the runs of the download for the same confidence at little cost.
    runs = 3 * args.runs
    times = {"python": [], "cpp": []}
    cpus = {"python": [], "cpp": []}
    for r in range(runs):
        order = [("python", ferry_python), ("cpp", ferry_cpp)]
        for name, fn in order if r % 2 == 0 else reversed(order):
            wall, cpu = timed_cpu(fn)
            times[name].append(wall)
            cpus[name].append(cpu)
    med = {name: statistics.median(t) for name, t in times.items()}
    cpu_med = {name: statistics.median(c) for name, c in cpus.items()}
    print(f"== NFS walk, {args.walk_entries} entries, ganesha (medians of {runs}; wall / client CPU) ==")
    print(f"  {'ferry.nfs.walk (in Python)':32s} {med['python']:7.3f} s  {cpu_med['python']:7.3f} s CPU")
    print(f"  {'ferry-walk (C++ process)':32s} {med['cpp']:7.3f} s  {cpu_med['cpp']:7.3f} s CPU")
    return med, cpu_med


def bench_cache(args):
    keys = [f"key{i}" for i in range(1000)]
    cache = ferry.TtlCache(lambda k: k, refresh_time=3600)
    plain = {}
    for k in keys:
        cache.put(k, k)
        plain[k] = k

    @functools.lru_cache(maxsize=None)
    def cached(k):
        return k

    for k in keys:
        cached(k)
    lookups = keys * 500  # 500,000 hits per run

    def per_hit(fn):
        def loop():
            for k in lookups:
                fn(k)
        return timed(loop) / len(lookups) * 1e9

    ns = {"ttl_cache": [], "dict": [], "lru_cache": []}
    for _ in range(args.runs):
        ns["ttl_cache"].append(per_hit(cache.get))
        ns["dict"].append(per_hit(plain.get))
        ns["lru_cache"].append(per_hit(cached))
    med = {name: statistics.median(v) for name, v in ns.items()}
    print(f"== cache hit from Python, ns per call (medians of {args.runs}) ==")
    print(f"  TtlCache.get {med['ttl_cache']:6.0f}   dict.get {med['dict']:6.0f}   "
          f"lru_cache {med['lru_cache']:6.0f}")
    return med


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ferry-cp", required=True)
    p.add_argument("--ferry-walk", required=True)
    p.add_argument("--endpoint", required=True)
    p.add_argument("--nfs-url", required=True)
    p.add_argument("--walk-entries", type=int, required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--download-mib", type=int, default=256)
    args = p.parse_args()

    dl, dl_cpu = bench_download(args)
    walk, walk_cpu = bench_walk(args)
    cache = bench_cache(args)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: this Python process {rss_mib:.0f} MiB (all three benches, boto3 included); "
          f"largest child {child_rss_mib:.0f} MiB")
    result = {
        "bench": "python",
        "runs": args.runs,
        "download_mib": args.download_mib,
        "download_python_vs_cpp": round(dl["cpp"] / dl["python"], 3),
        "download_python_process_vs_cpp": round(dl["cpp"] / dl["python_process"], 3),
        "download_speedup_vs_boto3": round(dl["boto3"] / dl["python"], 2),
        "download_s": {k: round(v, 4) for k, v in dl.items()},
        # Beside each wall ratio, the same ratio of client CPU (> 1: the
        # ferry side named first uses less).
        "download_python_vs_cpp_cpu_ratio": round(dl_cpu["cpp"] / max(dl_cpu["python"], 1e-9), 3),
        "download_python_process_vs_cpp_cpu_ratio": round(
            dl_cpu["cpp"] / max(dl_cpu["python_process"], 1e-9), 3),
        "download_speedup_vs_boto3_cpu_ratio": round(dl_cpu["boto3"] / max(dl_cpu["python"], 1e-9), 2),
        "download_cpu_s": {k: round(v, 4) for k, v in dl_cpu.items()},
        "walk_python_vs_cpp": round(walk["cpp"] / walk["python"], 3),
        "walk_runs": 3 * args.runs,
        "walk_entries": args.walk_entries,
        "walk_s": {k: round(v, 4) for k, v in walk.items()},
        "walk_python_vs_cpp_cpu_ratio": round(walk_cpu["cpp"] / max(walk_cpu["python"], 1e-9), 3),
        "walk_cpu_s": {k: round(v, 4) for k, v in walk_cpu.items()},
        "cache_hit_ns": {k: round(v, 1) for k, v in cache.items()},
        "peak_rss_mib": {"python": round(rss_mib), "largest_child": round(child_rss_mib)},
    }
    print("RESULT " + json.dumps(result, separators=(",", ":")))


if __name__ == "__main__":
    main()
