"""The scenarios (after Hünich and Müller-Pfefferkorn's iRODS benchmark:
stages of one transfer, many files in parallel, directory transfers, a
size sweep, metadata, stress, catalog size), for any target.

Each scenario is planned as a list of ``Step``s (one tool, one point, one
run) so the runner can show progress and stop between steps; a step
returns the records it measured.
"""

import concurrent.futures
import math
import os
import random
import shutil
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from ferry.bench.targets import (FerryPy, Target, Tool, Unsupported, Usage, measure, peak_window, self_cpu,
                                  self_peak_rss, tcp_connect_s)
from ferry.records_pb2 import BenchRecord

SCENARIOS = ("stages", "parallel", "tree", "sweep", "metadata", "stress", "catalog")


@dataclass
class Options:
    runs: int = 3
    stage_sizes: Sequence[int] = (1, 16 << 20)
    parallel_files: int = 64
    parallel_size: int = 64 << 10
    parallelism: Sequence[int] = (1, 4, 16, 64)
    tree_files: Sequence[int] = (16, 256)
    tree_size: int = 16 << 10
    tree_jobs: int = 16
    sweep_max: int = 16 << 20
    sweep_threads: Sequence[int] = (1, 8)
    meta_ops: int = 100
    meta_parallel: int = 8
    stress_clients: Sequence[int] = (1, 2, 4, 8, 16, 32)
    stress_seconds: float = 1.0
    stress_cap_s: float = 30.0
    catalog_sizes: Sequence[int] = (1000, 10000)
    catalog_stats: int = 20

    def sweep_sizes(self) -> List[int]:
        out, s = [], 1
        while s <= self.sweep_max:
            out.append(s)
            s *= 4
        return out


@dataclass
class Step:
    scenario: str
    label: str
    run: Callable[[], List[BenchRecord]]


@dataclass
class Context:
    """What the scenarios share: the run directory on the target, a local
    scratch directory, the tools, and ferry-py for set-up (untimed)."""

    target: Target          # the run directory
    local: str              # local scratch
    tools: List[Tool]
    options: Options
    notes: List[str]
    setup: FerryPy = field(init=False)
    _made: Dict[str, str] = field(default_factory=dict)
    _said: set = field(default_factory=set)

    def __post_init__(self) -> None:
        self.setup = next(t for t in self.tools if isinstance(t, FerryPy))

    def note_once(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self.notes.append(text)

    def local_file(self, size: int) -> str:
        """A local file of ``size`` random bytes (made once)."""
        path = os.path.join(self.local, "src", f"f{size}")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                left = size
                while left:
                    n = min(left, 8 << 20)
                    f.write(os.urandom(n))
                    left -= n
        return path

    def local_tree(self, files: int, size: int) -> str:
        path = os.path.join(self.local, "src", f"tree{files}x{size}")
        if not os.path.exists(path):
            os.makedirs(path + ".tmp")
            data = os.urandom(size)
            for i in range(files):
                with open(os.path.join(path + ".tmp", f"f{i:06d}"), "wb") as f:
                    f.write(data)
            os.rename(path + ".tmp", path)
        return path

    def mkdirs(self, rel: str) -> None:
        if self.target.scheme != "s3":  # S3 prefixes need no making
            self.setup.fs.mkdir(self.target.ferry_url(rel), parents=True)

    def remote_file(self, size: int) -> str:
        """``src/f<size>`` on the target (put once by ferry-py, untimed)."""
        rel = f"src/f{size}"
        if rel not in self._made:
            self.mkdirs("src")
            self.setup.fs.copy(self.local_file(size), self.target.ferry_url(rel))
            self._made[rel] = rel
        return rel

    def scratch(self, *parts: str) -> str:
        """A fresh empty local directory."""
        path = os.path.join(self.local, "out", *parts)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    def record(self, scenario: str, tool: Tool, params: Dict[str, object], run: int,
               usage: Optional[Usage] = None, *, nbytes: int = 0, ops: int = 0,
               times: Optional[Dict[str, float]] = None, errors: int = 0, error: str = "",
               figures: Optional[Dict[str, float]] = None) -> BenchRecord:
        r = BenchRecord(scenario=scenario, target=self.target.scheme, tool=tool.name, bytes=nbytes,
                        ops=ops, errors=errors, error=error[:500], run=run)
        for k, v in params.items():
            r.parameters[k] = str(v)
        if usage is not None:
            r.times_s["wall"] = usage.wall_s
            r.cpu_s = usage.cpu_s
            r.peak_rss_bytes = usage.peak_rss_bytes
        for k, v in (times or {}).items():
            r.times_s[k] = v
        for k, v in (figures or {}).items():
            r.figures[k] = v
        return r


def _supports(tool: Tool, method: str) -> bool:
    return getattr(type(tool), method) is not getattr(Tool, method)


def _failed(ctx: Context, scenario: str, tool: Tool, params: Dict[str, object], run: int,
            e: BaseException) -> List[BenchRecord]:
    if isinstance(e, Unsupported):
        ctx.note_once(f"{scenario}: {tool.name} on {ctx.target.scheme} has no {e}")
        return []
    return [ctx.record(scenario, tool, params, run, errors=1, error=f"{type(e).__name__}: {e}")]


def _guard(ctx: Context, scenario: str, tool: Tool, params: Dict[str, object], run: int,
           body: Callable[[], List[BenchRecord]]) -> Callable[[], List[BenchRecord]]:
    """A step that turns a failure into an error record (and goes on)."""

    def step() -> List[BenchRecord]:
        try:
            return body()
        except KeyboardInterrupt:
            raise
        except Exception as e:
            return _failed(ctx, scenario, tool, params, run, e)

    return step


# ---------------------------------------------------------------- stages


def plan_stages(ctx: Context) -> Iterable[Step]:
    for size in ctx.options.stage_sizes:
        for tool in ctx.tools:
            if not _supports(tool, "staged"):
                continue
            for direction in ("put", "get"):
                for run in range(ctx.options.runs):
                    params = {"size_bytes": size, "direction": direction}

                    def body(tool=tool, size=size, direction=direction, run=run, params=params):
                        local = ctx.local_file(size)
                        if direction == "get":
                            rel = ctx.remote_file(size)
                            local = os.path.join(ctx.scratch("stages"), "back")
                        else:
                            ctx.mkdirs(f"stages/{tool.name}")
                            rel = f"stages/{tool.name}/s{size}-r{run}"
                        tcp = tcp_connect_s(ctx.target)
                        holder: Dict[str, Dict[str, float]] = {}
                        usage = measure(lambda: holder.setdefault("s", tool.staged(direction, local, rel)))
                        times = dict(holder["s"], tcp_connect=tcp)
                        return [ctx.record("stages", tool, params, run, usage, nbytes=size, ops=1, times=times)]

                    yield Step("stages", f"{tool.name} {direction} {size} B #{run}",
                               _guard(ctx, "stages", tool, params, run, body))


# ---------------------------------------------------------------- parallel


def _run_parallel(tool: Tool, parallelism: int, jobs: Sequence[Callable[[Tool], Usage]]) -> Usage:
    """Runs ``jobs`` ``parallelism`` at a time (each simulated client its own
    connections where the tool needs that); wall time of the whole, CPU and
    RSS summed / maxed over processes (or the process's own)."""
    local = threading.local()
    clients: List[Tool] = []
    lock = threading.Lock()

    def client() -> Tool:
        c = getattr(local, "client", None)
        if c is None:
            c = tool if isinstance(tool, (FerryPy,)) or not tool.in_process else tool.new_client()
            local.client = c
            with lock:
                clients.append(c)
        return c

    with peak_window():
        c0, t0 = self_cpu(), time.perf_counter()
        ex = concurrent.futures.ThreadPoolExecutor(parallelism)
        try:
            usages = list(ex.map(lambda job: job(client()), jobs))
        finally:
            # On Ctrl-C (or a failure) the queued jobs are dropped, not run.
            ex.shutdown(wait=True, cancel_futures=True)
        wall = time.perf_counter() - t0
        peak = self_peak_rss()
    for c in clients:
        if c is not tool:
            c.close()
    if tool.in_process:
        return Usage(wall, self_cpu() - c0, peak)
    return Usage(wall, sum(u.cpu_s for u in usages), max(u.peak_rss_bytes for u in usages))


def plan_parallel(ctx: Context) -> Iterable[Step]:
    o = ctx.options
    n, size = o.parallel_files, o.parallel_size
    for p in o.parallelism:
        for tool in ctx.tools:
            if not (_supports(tool, "put") and _supports(tool, "get")):
                continue
            if not tool.per_file_processes:
                ctx.note_once(f"parallel: {tool.name} runs in the tree scenario only (one process per file "
                              "would measure its start-up)")
                continue
            for run in range(o.runs):
                def body(tool=tool, p=p, run=run):
                    src = ctx.local_file(size)
                    rel = f"parallel/{tool.name}/p{p}-r{run}"
                    ctx.mkdirs(rel)
                    put = _run_parallel(tool, p, [lambda c, i=i: c.put(src, f"{rel}/f{i:05d}") for i in range(n)])
                    back = ctx.scratch("parallel")
                    get = _run_parallel(tool, p, [lambda c, i=i: c.get(f"{rel}/f{i:05d}", f"{back}/f{i:05d}")
                                                  for i in range(n)])
                    common = {"files": n, "file_bytes": size, "parallelism": p}
                    return [ctx.record("parallel", tool, dict(common, direction=d), run, u, nbytes=n * size, ops=n)
                            for d, u in (("put", put), ("get", get))]

                yield Step("parallel", f"{tool.name} {n} x {size} B at {p} #{run}",
                           _guard(ctx, "parallel", tool, {"parallelism": p}, run, body))


# ---------------------------------------------------------------- tree


def plan_tree(ctx: Context) -> Iterable[Step]:
    o = ctx.options
    for files in o.tree_files:
        for tool in ctx.tools:
            if not _supports(tool, "put_tree"):
                continue
            for run in range(o.runs):
                def body(tool=tool, files=files, run=run):
                    src = ctx.local_tree(files, o.tree_size)
                    rel = f"tree/{tool.name}/n{files}-r{run}"
                    ctx.mkdirs(f"tree/{tool.name}")
                    put = tool.put_tree(src, rel, o.tree_jobs)
                    back = os.path.join(ctx.scratch("tree"), "t")
                    get = tool.get_tree(rel, back, o.tree_jobs)
                    got = sum(len(f) for _, _, f in os.walk(back))
                    common = {"files": files, "file_bytes": o.tree_size, "jobs": o.tree_jobs}
                    out = [ctx.record("tree", tool, dict(common, direction=d), run, u,
                                      nbytes=files * o.tree_size, ops=files) for d, u in (("put", put), ("get", get))]
                    if got != files:
                        out[-1].errors, out[-1].error = 1, f"got {got} files back, want {files}"
                    return out

                yield Step("tree", f"{tool.name} tree of {files} #{run}",
                           _guard(ctx, "tree", tool, {"files": files}, run, body))


# ---------------------------------------------------------------- sweep


def plan_sweep(ctx: Context) -> Iterable[Step]:
    o = ctx.options
    for size in o.sweep_sizes():
        for threads in o.sweep_threads:
            for tool in ctx.tools:
                if not (_supports(tool, "put") and _supports(tool, "get")):
                    continue
                for run in range(o.runs):
                    params = {"size_bytes": size, "threads": threads}

                    def body(tool=tool, size=size, threads=threads, run=run, params=params):
                        out = []
                        ctx.mkdirs(f"sweep/{tool.name}")
                        put = tool.put(ctx.local_file(size), f"sweep/{tool.name}/s{size}-t{threads}-r{run}", threads)
                        out.append(ctx.record("sweep", tool, dict(params, direction="put"), run, put,
                                              nbytes=size, ops=1))
                        back = os.path.join(ctx.scratch("sweep"), "back")
                        get = tool.get(ctx.remote_file(size), back, threads)
                        if os.path.getsize(back) != size:
                            raise RuntimeError(f"got {os.path.getsize(back)} bytes back, want {size}")
                        out.append(ctx.record("sweep", tool, dict(params, direction="get"), run, get,
                                              nbytes=size, ops=1))
                        return out

                    yield Step("sweep", f"{tool.name} {size} B, {threads} threads #{run}",
                               _guard(ctx, "sweep", tool, params, run, body))


# ---------------------------------------------------------------- metadata

META_OPS = ("mkdir", "create", "stat", "list", "meta_add", "remove", "rmdir")
_META_METHOD = {"create": "touch"}


def _pool_map(tool: Tool, threads: int, fn: Callable[[Tool, int], None], n: int) -> float:
    return _run_parallel(tool, threads, [lambda c, i=i: (fn(c, i), Usage(0, 0, 0))[1] for i in range(n)]).wall_s


def plan_metadata(ctx: Context) -> Iterable[Step]:
    o = ctx.options
    for tool in ctx.tools:
        if not tool.in_process:
            continue
        for mode, threads in (("sequential", 1), ("parallel", o.meta_parallel)):
            for run in range(o.runs):
                def body(tool=tool, mode=mode, threads=threads, run=run):
                    # Directories and files in two siblings: `list` lists a
                    # flat directory of files only, as every tool's listing
                    # (one level or a whole walk) sees the same entries.
                    dirs, files = f"meta/{tool.name}/{mode}-r{run}/dirs", f"meta/{tool.name}/{mode}-r{run}/files"
                    ctx.mkdirs(dirs)
                    ctx.mkdirs(files)
                    n, out = o.meta_ops, []
                    calls: Dict[str, Callable[[Tool, int], None]] = {
                        "mkdir": lambda c, i: c.mkdir(f"{dirs}/d{i:05d}"),
                        "create": lambda c, i: c.touch(f"{files}/f{i:05d}"),
                        "stat": lambda c, i: c.stat(f"{files}/f{i:05d}"),
                        "list": lambda c, i: c.list(files),
                        "meta_add": lambda c, i: c.meta_add(f"{files}/f{i:05d}", "bench", str(i)),
                        "remove": lambda c, i: c.remove(f"{files}/f{i:05d}"),
                        "rmdir": lambda c, i: c.rmdir(f"{dirs}/d{i:05d}"),
                    }
                    for op in META_OPS:
                        if op in ("mkdir", "rmdir") and ctx.target.scheme == "s3":
                            ctx.note_once("metadata: no mkdir/rmdir on S3 (a prefix is made by its objects; "
                                          "ferry's answer without a request)")
                            continue
                        if not _supports(tool, _META_METHOD.get(op, op)):
                            ctx.note_once(f"metadata: {tool.name} on {ctx.target.scheme} has no {op}")
                            continue
                        count = min(n, 20) if op == "list" else n
                        params = {"op": op, "mode": mode, "threads": threads, "count": count}
                        try:
                            with peak_window():
                                c0 = self_cpu()
                                wall = _pool_map(tool, threads, calls[op], count)
                                u = Usage(wall, self_cpu() - c0, self_peak_rss())
                            out.append(ctx.record("metadata", tool, params, run, u, ops=count,
                                                  figures={"ops_per_s": count / wall}))
                        except Exception as e:
                            if _is_unimplemented(e):
                                ctx.note_once(f"metadata: {tool.name} on {ctx.target.scheme} has no {op}: "
                                              f"{str(e)[:120]}")
                            else:
                                out += _failed(ctx, "metadata", tool, params, run, e)
                    return out

                yield Step("metadata", f"{tool.name} {mode} #{run}",
                           _guard(ctx, "metadata", tool, {"mode": mode}, run, body))


def _is_unimplemented(e: BaseException) -> bool:
    text = f"{type(e).__name__} {e}".lower()
    return isinstance(e, (Unsupported, NotImplementedError)) or "unimplemented" in text or "not implemented" in text


# ---------------------------------------------------------------- stress


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile ``q`` (0..1) of sorted values."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, math.ceil(q * len(sorted_values) - 1e-9) - 1))
    return sorted_values[k]


def plan_stress(ctx: Context) -> Iterable[Step]:
    o = ctx.options
    for tool in ctx.tools:
        if not (tool.in_process and _supports(tool, "stat")):
            continue
        state = {"stop": False, "spent": 0.0}
        for clients in o.stress_clients:
            def body(tool=tool, clients=clients, state=state):
                if state["stop"]:
                    return []
                rel = ctx.remote_file(1)
                made = [tool.new_client() for _ in range(clients)]
                lat: List[List[float]] = [[] for _ in range(clients)]
                errs: List[str] = []
                deadline = time.perf_counter() + o.stress_seconds

                def loop(i: int) -> None:
                    c, mine = made[i], lat[i]
                    while time.perf_counter() < deadline:
                        t = time.perf_counter()
                        try:
                            c.stat(rel)
                        except Exception as e:  # the point of stress: count, don't stop
                            errs.append(f"{type(e).__name__}: {e}")
                            continue
                        mine.append(time.perf_counter() - t)

                with peak_window():
                    c0, t0 = self_cpu(), time.perf_counter()
                    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
                    for t in threads:
                        t.start()
                    for t in threads:
                        t.join()
                    wall = time.perf_counter() - t0
                    peak = self_peak_rss()
                for c in made:
                    if c is not tool:
                        c.close()
                all_lat = sorted(x for part in lat for x in part)
                state["spent"] += wall
                if errs or state["spent"] > o.stress_cap_s:
                    state["stop"] = True
                figures = {"ops_per_s": len(all_lat) / wall, "p50_s": percentile(all_lat, 0.5),
                           "p99_s": percentile(all_lat, 0.99), "p999_s": percentile(all_lat, 0.999)}
                return [ctx.record("stress", tool, {"clients": clients, "op": "stat"}, 0,
                                   Usage(wall, self_cpu() - c0, peak), ops=len(all_lat),
                                   errors=len(errs), error=errs[0] if errs else "", figures=figures)]

            yield Step("stress", f"{tool.name} {clients} clients",
                       _guard(ctx, "stress", tool, {"clients": clients}, 0, body))


# ---------------------------------------------------------------- catalog


def plan_catalog(ctx: Context) -> Iterable[Step]:
    o = ctx.options
    grown = {"n": 0}
    rel = "catalog/dir"
    for size in sorted(o.catalog_sizes):
        def grow(size=size):
            # The new entries only, put by ferry-py's tree copy into the
            # directory (recorded as the "populate" op: ferry's ingest rate).
            stage = ctx.scratch("catalog", f"to{size}")
            for i in range(grown["n"], size):
                open(os.path.join(stage, f"e{i:07d}"), "wb").close()
            ctx.mkdirs(rel)
            u = measure(lambda: ctx.setup.fs.copy(stage, ctx.target.ferry_url(rel), recursive=True,
                                                  jobs=32) and None)
            added = size - grown["n"]
            grown["n"] = size
            shutil.rmtree(stage)
            return [ctx.record("catalog", ctx.setup, {"entries": size, "op": "populate"}, 0, u, ops=added,
                               figures={"ops_per_s": added / u.wall_s})]

        yield Step("catalog", f"grow to {size}", _guard(ctx, "catalog", ctx.setup, {"entries": size}, 0, grow))
        for tool in ctx.tools:
            for run in range(o.runs):
                def body(tool=tool, size=size, run=run):
                    out = []
                    if _supports(tool, "list"):
                        seen = {}
                        u = measure(lambda: seen.setdefault("n", tool.list(rel)) and None)
                        r = ctx.record("catalog", tool, {"entries": size, "op": "list"}, run, u, ops=seen["n"])
                        if seen["n"] < size:
                            r.errors, r.error = 1, f"listed {seen['n']} entries, want {size}"
                        out.append(r)
                    if hasattr(tool, "list_process"):
                        u = tool.list_process(rel)
                        name = {"ferry-cp": "ferry-walk", "nfs-cp": "nfs-ls", "aws": "aws"}.get(tool.name, tool.name)
                        r = ctx.record("catalog", tool, {"entries": size, "op": "list_cli"}, run, u, ops=size)
                        r.tool = name
                        out.append(r)
                    if _supports(tool, "stat"):
                        rng = random.Random(run)
                        names = [f"{rel}/e{rng.randrange(size):07d}" for _ in range(o.catalog_stats)]
                        u = measure(lambda: [tool.stat(nm) for nm in names] and None)
                        out.append(ctx.record("catalog", tool, {"entries": size, "op": "stat"}, run, u,
                                              ops=len(names), figures={"per_op_s": u.wall_s / len(names)}))
                    return out

                yield Step("catalog", f"{tool.name} list/stat of {size} #{run}",
                           _guard(ctx, "catalog", tool, {"entries": size}, run, body))


PLANNERS = {
    "stages": plan_stages, "parallel": plan_parallel, "tree": plan_tree, "sweep": plan_sweep,
    "metadata": plan_metadata, "stress": plan_stress, "catalog": plan_catalog,
}


def median(values: Iterable[float]) -> float:
    v = list(values)
    return statistics.median(v) if v else 0.0
