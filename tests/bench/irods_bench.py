"""python-irodsclient's side of scripts/bench irods, and the driver: the
same operations as tests/bench/irods_bench.cc, then both sides' figures,
with the peer's CPU seconds for each, and one line RESULT {json}.

Each side times its calls inside its own process, and the client's CPU
(user + system, every thread) around the same calls. RESULT keys: the wall
ratios *_speedup_vs_prc (PRC's median over ferry's: list_10k, small_files
(put + get), put_small, get_small, get_1g, put_1g) and beside each the same
key + _cpu_ratio (PRC's client CPU over ferry's: > 1, ferry uses less);
{put,get}_1g_cpu_s_per_gib_{ferry,prc} and {put,get}_1g_cpu_ratio (ferry's
CPU over PRC's: the older keys, the other way round); client_cpu_s
{ferry,prc} {list_uncached,put_small,get_small,put_big,get_big}: the
medians; list_10k_*_ms, peer_cpu_s_{ferry,prc}, entries, runs, bench;
stream_read_{64k,1m,8m}_speedup_vs_prc (+ _cpu_ratio): a 64 MiB object
read to its end through a file object in pieces of that size, ferry's
Python binding against PRC's, both in this process (stream_read_mib)."""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

from irods.session import iRODSSession


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def self_cpu():
    """This process's CPU seconds (user + system, every thread: PRC's
    parallel transfers run on threads)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


CPU_OPS = ("list_uncached", "put_small", "get_small", "put_big", "get_big")


def cpu_ratio(prc, ferry, *ops):
    """PRC's client CPU over ferry's for the sum of OPS ("put_small", ...)."""
    return sum(prc[f"{op}_cpu_s"] for op in ops) / max(sum(ferry[f"{op}_cpu_s"] for op in ops), 1e-9)


def prc_side(a):
    out = {}
    with iRODSSession(host="127.0.0.1", port=a.port, user="rods", password="rods", zone="tempZone") as s:
        root = a.coll.rsplit("/", 1)[0]
        times, cpus = [], []
        for _ in range(a.runs):
            t, c0 = time.monotonic(), self_cpu()
            c = s.collections.get(a.coll)
            n = len(c.data_objects) + len(c.subcollections)
            times.append(time.monotonic() - t)
            cpus.append(self_cpu() - c0)
        out["listed"] = n
        out["list_uncached_s"] = statistics.median(times)
        out["list_uncached_cpu_s"] = statistics.median(cpus)
        put_t, get_t, put_c, get_c = [], [], [], []
        names = sorted(os.listdir(a.small))
        for r in range(a.runs):
            dst = f"{root}/prc-small-{r}"
            s.collections.create(dst)
            t, c = time.monotonic(), self_cpu()
            for n_ in names:
                s.data_objects.put(os.path.join(a.small, n_), f"{dst}/{n_}")
            put_t.append(time.monotonic() - t)
            put_c.append(self_cpu() - c)
            back = os.path.join(a.work, f"prc-small-back-{r}")
            os.makedirs(back)
            t, c = time.monotonic(), self_cpu()
            for n_ in names:
                s.data_objects.get(f"{dst}/{n_}", os.path.join(back, n_))
            get_t.append(time.monotonic() - t)
            get_c.append(self_cpu() - c)
            shutil.rmtree(back)
        out["put_small_s"] = statistics.median(put_t)
        out["get_small_s"] = statistics.median(get_t)
        out["put_small_cpu_s"] = statistics.median(put_c)
        out["get_small_cpu_s"] = statistics.median(get_c)
        put_t, get_t, put_c, get_c = [], [], [], []
        for r in range(a.runs):
            dst = f"{root}/prc-big-{r}"
            back = os.path.join(a.work, "prc-big-back")
            t, c = time.monotonic(), self_cpu()
            s.data_objects.put(a.big, dst)
            put_t.append(time.monotonic() - t)
            put_c.append(self_cpu() - c)
            t, c = time.monotonic(), self_cpu()
            s.data_objects.get(dst, back)
            get_t.append(time.monotonic() - t)
            get_c.append(self_cpu() - c)
            os.remove(back)
            s.data_objects.unlink(dst, force=True)
        out["put_big_s"] = statistics.median(put_t)
        out["get_big_s"] = statistics.median(get_t)
        out["put_big_cpu_s"] = statistics.median(put_c)
        out["get_big_cpu_s"] = statistics.median(get_c)
    return out


# Stream reads: one object read from start to end through a file object,
# in pieces of each size, by ferry (ferry.FileSystems.open, the C++ core
# under Python) and by PRC (data_objects.open), both in this process.
STREAM_PIECES = (("64k", 64 << 10), ("1m", 1 << 20), ("8m", 8 << 20))


def read_through(f, piece):
    """Reads `f` to its end in pieces of `piece` bytes; the bytes read."""
    n = 0
    while chunk := f.read(piece):
        n += len(chunk)
    return n


def stream_reads(a):
    """{side: {label: (median wall s, median client CPU s)}}, sides taking
    turns within each run, each open and close inside its timing."""
    import ferry

    root = a.coll.rsplit("/", 1)[0]
    path = f"{root}/stream-{os.getpid()}"
    size = os.path.getsize(a.stream)
    url = f"irods://rods@127.0.0.1:{a.port}{path}"
    times = {side: {label: [] for label, _ in STREAM_PIECES} for side in ("ferry", "prc")}
    with iRODSSession(host="127.0.0.1", port=a.port, user="rods", password="rods", zone="tempZone") as s, \
            ferry.Runtime() as rt, ferry.FileSystems(runtime=rt) as fs:
        s.data_objects.put(a.stream, path)
        opens = {"ferry": lambda: fs.open(url, "rb"), "prc": lambda: s.data_objects.open(path, "r")}
        for side in opens:  # untimed: each side's connection made, the whole object checked once
            with opens[side]() as f:
                assert read_through(f, 8 << 20) == size, side
        for r in range(a.runs):
            for label, piece in STREAM_PIECES:
                for side in (("ferry", "prc") if r % 2 == 0 else ("prc", "ferry")):
                    t, c = time.monotonic(), self_cpu()
                    with opens[side]() as f:
                        got = read_through(f, piece)
                    times[side][label].append((time.monotonic() - t, self_cpu() - c))
                    assert got == size, (side, label, got)
        s.data_objects.unlink(path, force=True)
    return {side: {label: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
                   for label, runs in by_label.items()} for side, by_label in times.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--peer-pid", type=int, required=True)
    p.add_argument("--coll", required=True)
    p.add_argument("--small", required=True)
    p.add_argument("--big", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--ferry-bench", required=True)
    p.add_argument("--stream", required=True, help="the object read by stream_reads")
    a = p.parse_args()

    c0 = cpu(a.peer_pid)
    t0 = time.monotonic()
    ferry_out = subprocess.run([a.ferry_bench, str(a.port), a.coll, a.small, a.big, a.work, str(a.runs)],
                               check=True, capture_output=True, text=True).stdout
    ferry = json.loads(ferry_out)
    ferry["wall_s"] = time.monotonic() - t0
    ferry["peer_cpu_s"] = cpu(a.peer_pid) - c0
    c0 = cpu(a.peer_pid)
    t0 = time.monotonic()
    prc = prc_side(a)
    prc["wall_s"] = time.monotonic() - t0
    prc["peer_cpu_s"] = cpu(a.peer_pid) - c0
    assert ferry["listed"] == prc["listed"], (ferry["listed"], prc["listed"])

    print(f"{'':24}{'ferry':>12}{'prc':>12}{'ratio':>8}")
    for k in ("list_uncached_s", "list_uncached_cpu_s", "put_small_s", "put_small_cpu_s", "get_small_s",
              "get_small_cpu_s", "put_big_s", "put_big_cpu_s", "get_big_s", "get_big_cpu_s", "peer_cpu_s"):
        print(f"{k:24}{ferry[k]:12.4f}{prc[k]:12.4f}{prc[k] / max(ferry[k], 1e-9):8.2f}")
    print(f"{'list_cached_s':24}{ferry['list_cached_s']:12.6f}")
    streams = stream_reads(a)
    stream_mib = os.path.getsize(a.stream) >> 20
    for label, _ in STREAM_PIECES:
        (fw, fc), (pw, pc) = streams["ferry"][label], streams["prc"][label]
        print(f"{f'read {stream_mib} MiB by {label} s':24}{fw:12.4f}{pw:12.4f}{pw / fw:8.2f}"
              f"   cpu {fc:.4f} / {pc:.4f}")
    gib = os.path.getsize(a.big) / (1 << 30)
    result = {
        "bench": "irods",
        "entries": ferry["listed"],
        "list_10k_speedup_vs_prc": round(prc["list_uncached_s"] / ferry["list_uncached_s"], 2),
        "list_10k_uncached_ms": round(ferry["list_uncached_s"] * 1e3, 2),
        "list_10k_prc_ms": round(prc["list_uncached_s"] * 1e3, 2),
        "list_10k_cached_ms": round(ferry["list_cached_s"] * 1e3, 4),
        "small_files_speedup_vs_prc": round((prc["put_small_s"] + prc["get_small_s"]) /
                                            (ferry["put_small_s"] + ferry["get_small_s"]), 2),
        "put_small_speedup_vs_prc": round(prc["put_small_s"] / ferry["put_small_s"], 2),
        "get_small_speedup_vs_prc": round(prc["get_small_s"] / ferry["get_small_s"], 2),
        "get_1g_speedup_vs_prc": round(prc["get_big_s"] / ferry["get_big_s"], 2),
        "put_1g_speedup_vs_prc": round(prc["put_big_s"] / ferry["put_big_s"], 2),
        # Client CPU (user + system) per GiB moved, and ferry's over PRC's.
        "put_1g_cpu_s_per_gib_ferry": round(ferry["put_big_cpu_s"] / gib, 3),
        "put_1g_cpu_s_per_gib_prc": round(prc["put_big_cpu_s"] / gib, 3),
        "put_1g_cpu_ratio": round(ferry["put_big_cpu_s"] / max(prc["put_big_cpu_s"], 1e-9), 2),
        "get_1g_cpu_s_per_gib_ferry": round(ferry["get_big_cpu_s"] / gib, 3),
        "get_1g_cpu_s_per_gib_prc": round(prc["get_big_cpu_s"] / gib, 3),
        "get_1g_cpu_ratio": round(ferry["get_big_cpu_s"] / max(prc["get_big_cpu_s"], 1e-9), 2),
        # Beside each wall ratio, PRC's client CPU over ferry's (> 1: ferry
        # uses less; the *_cpu_ratio convention of the other benches, the
        # inverse of put_1g_cpu_ratio / get_1g_cpu_ratio above).
        **{f"{key}_cpu_ratio": round(cpu_ratio(prc, ferry, *ops), 2) for key, ops in (
            ("list_10k_speedup_vs_prc", ("list_uncached",)),
            ("small_files_speedup_vs_prc", ("put_small", "get_small")),
            ("put_small_speedup_vs_prc", ("put_small",)),
            ("get_small_speedup_vs_prc", ("get_small",)),
            ("get_1g_speedup_vs_prc", ("get_big",)),
            ("put_1g_speedup_vs_prc", ("put_big",)))},
        "client_cpu_s": {side: {op: round(d[f"{op}_cpu_s"], 4) for op in CPU_OPS}
                         for side, d in (("ferry", ferry), ("prc", prc))},
        # A file object read to its end in pieces of 64 KiB, 1 MiB, 8 MiB:
        # ferry.FileSystems.open against PRC's data_objects.open, in Python.
        **{f"stream_read_{label}_speedup_vs_prc": round(streams["prc"][label][0] / streams["ferry"][label][0], 2)
           for label, _ in STREAM_PIECES},
        **{f"stream_read_{label}_speedup_vs_prc_cpu_ratio":
           round(streams["prc"][label][1] / max(streams["ferry"][label][1], 1e-9), 2) for label, _ in STREAM_PIECES},
        "stream_read_mib": stream_mib,
        "peer_cpu_s_ferry": round(ferry["peer_cpu_s"], 2),
        "peer_cpu_s_prc": round(prc["peer_cpu_s"], 2),
        "runs": a.runs,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
