"""ferry-bench's command line: plans every scenario for every target, runs
the steps with a progress bar on stderr, appends each step's records to
the records file as soon as it is measured, and writes the report (also
after Ctrl-C, from what was measured)."""

import argparse
import concurrent.futures
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from typing import List, Optional, Sequence, TextIO

import ferry
from ferry.bench import report as report_mod
from ferry.bench.scenarios import PLANNERS, SCENARIOS, Context, Options, Step
from ferry.bench.targets import Programs, Target, tools_for
from ferry.records_pb2 import BenchRecord, FileType

_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``1``, ``64KiB``, ``16M``, ``1GiB``, ``1e5`` -> an int."""
    t = text.strip().lower().replace("ib", "").replace("b", "")
    if t and t[-1] in _UNITS:
        return int(float(t[:-1]) * _UNITS[t[-1]])
    return int(float(t))


def parse_list(text: str) -> List[int]:
    return [parse_size(x) for x in text.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    d = Options()
    p = argparse.ArgumentParser(
        prog="ferry-bench",
        description="ferry and each protocol's usual client, side by side, against your own servers.",
        epilog="Sizes take K/M/G suffixes (binary). Credentials: the AWS environment for s3://, "
               "IRODS_PASSWORD for irods://.")
    p.add_argument("targets", nargs="*", metavar="URL",
                   help="nfs://host/export/dir?nfsport=&mountport=, s3://bucket/prefix, "
                        "irods://user@host:port/zone/coll, or a local directory; the bench works in "
                        "a new sub-directory of each and removes it at the end")
    p.add_argument("--out", default="ferry-bench-out", help="directory for records.jsonl, report.md, plots/")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma list of {', '.join(SCENARIOS)}")
    p.add_argument("--tools", default="", help="only these tools (comma list; ferry-py is always used for set-up)")
    p.add_argument("--runs", type=int, default=d.runs, help="repetitions of every point (the report takes medians)")
    p.add_argument("--stage-sizes", default="1,16M", help="stages: file sizes")
    p.add_argument("--parallel-files", type=parse_size, default=d.parallel_files,
                   help="parallel: how many files are copied")
    p.add_argument("--parallel-size", type=parse_size, default=d.parallel_size,
                   help="parallel: the size of each file")
    p.add_argument("--parallelism", default="1,4,16,64", help="parallel: files at once")
    p.add_argument("--tree-files", default="16,256", help="tree: files per directory")
    p.add_argument("--tree-size", type=parse_size, default=d.tree_size, help="tree: the size of each file")
    p.add_argument("--tree-jobs", type=int, default=d.tree_jobs, help="tree: files each tool copies at once")
    p.add_argument("--sweep-max", type=parse_size, default=d.sweep_max,
                   help="sweep: largest size (1 B up by powers of 4; 1G for the whole sweep)")
    p.add_argument("--sweep-threads", default="1,8", help="sweep: streams/parts in flight per file")
    p.add_argument("--meta-ops", type=parse_size, default=d.meta_ops, help="metadata: operations of each kind")
    p.add_argument("--meta-parallel", type=int, default=d.meta_parallel,
                   help="metadata: operations in flight at once")
    p.add_argument("--stress-clients", default="1,2,4,8,16,32", help="stress: client counts, in order")
    p.add_argument("--stress-seconds", type=float, default=d.stress_seconds, help="stress: seconds per count")
    p.add_argument("--stress-cap", type=float, default=d.stress_cap_s, help="stress: seconds per tool at most")
    p.add_argument("--catalog-sizes", default="1000,10000,100000", help="catalog: entries, growing")
    p.add_argument("--catalog-million", action="store_true", help="catalog: also 1,000,000 entries")
    p.add_argument("--catalog-stats", type=int, default=d.catalog_stats,
                   help="catalog: stats of single entries timed at each size")
    for prog in ("ferry-cp", "ferry-walk", "nfs-cp", "nfs-ls", "aws", "rclone"):
        p.add_argument(f"--{prog}", default=None, help=f"the {prog} program (default: PATH)")
    p.add_argument("--keep", action="store_true", help="leave the run directory on the targets")
    p.add_argument("--from-records", default=None, help="only write the report from this records file")
    p.add_argument("--title", default="ferry-bench report", help="the report's title")
    p.add_argument("--plots-dir", default=None, help="where the plots go (default: OUT/plots)")
    p.add_argument("--image-prefix", default="plots/", help="the plots' path as the report links them")
    p.add_argument("--splice-into", default=None,
                   help="also put the report between ferry-bench's marker comments in this markdown page")
    p.add_argument("--heading-level", type=int, default=2, help="the report's title heading level")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    aws = p.add_argument_group("S3 (as the AWS CLI spells them; every tool the bench runs gets them "
                               "through the AWS environment)")
    aws.add_argument("--endpoint-url", default=None, help="the S3 endpoint (AWS_ENDPOINT_URL)")
    aws.add_argument("--profile", default=None, help="the shared-files profile (AWS_PROFILE)")
    aws.add_argument("--region", default=None, help="the region (AWS_REGION)")
    p.add_argument("--version", action="version", version=f"ferry-bench {ferry.__version__}")
    return p


def options_from(a: argparse.Namespace) -> Options:
    catalog = parse_list(a.catalog_sizes) + ([1_000_000] if a.catalog_million else [])
    return Options(runs=a.runs, stage_sizes=parse_list(a.stage_sizes), parallel_files=a.parallel_files,
                   parallel_size=a.parallel_size, parallelism=parse_list(a.parallelism),
                   tree_files=parse_list(a.tree_files), tree_size=a.tree_size, tree_jobs=a.tree_jobs,
                   sweep_max=a.sweep_max, sweep_threads=parse_list(a.sweep_threads), meta_ops=a.meta_ops,
                   meta_parallel=a.meta_parallel, stress_clients=parse_list(a.stress_clients),
                   stress_seconds=a.stress_seconds, stress_cap_s=a.stress_cap,
                   catalog_sizes=sorted(set(catalog)), catalog_stats=a.catalog_stats)


class Progress:
    """A one-line bar on stderr (a line per scenario when not a terminal)."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.done, self.stream, self.enabled = total, 0, stream, enabled
        self.tty = enabled and stream.isatty()
        self.t0 = time.monotonic()
        self.last_scenario = ""

    def show(self, step: Step, target: str) -> None:
        if not self.enabled:
            return
        frac = self.done / max(self.total, 1)
        elapsed = time.monotonic() - self.t0
        eta = f" eta {elapsed / frac * (1 - frac):.0f}s" if self.done else ""
        if self.tty:
            bar = "#" * int(frac * 24)
            line = f"\r[{bar:<24}] {self.done}/{self.total}{eta} {target} {step.scenario}: {step.label}"
            self.stream.write(line[:150].ljust(150))
        elif step.scenario != self.last_scenario:
            self.stream.write(f"ferry-bench: {self.done}/{self.total} steps, {elapsed:.0f}s; "
                              f"{target} {step.scenario}\n")
        self.last_scenario = step.scenario
        self.stream.flush()

    def step_done(self) -> None:
        self.done += 1

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _cleanup(ctx: Context) -> None:
    """Removes what the bench wrote below its run directory (files, then
    directories deepest first; S3 prefixes go with their objects)."""
    fs = ctx.setup.fs
    files, dirs = [], []
    try:
        with fs.walk(ctx.target.ferry_url("") + ("/" if ctx.target.scheme == "s3" else "")) as w:
            for batch in w:
                for e in batch.entries:  # paths relative to the run directory
                    rel = os.fsdecode(e.path)
                    (dirs if e.type == FileType.FILE_TYPE_DIRECTORY else files).append(rel)
    except Exception as e:  # best effort: say so, never fail the run for it
        err_note = f"cleanup of {ctx.target.url} failed: {e}"
        sys.stderr.write(f"ferry-bench: {err_note}\n")
        return
    url = ctx.target.ferry_url
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda rel: _quiet(lambda: fs.remove(url(rel))), files))
    for d in sorted(dirs, key=lambda rel: -rel.count("/")):
        _quiet(lambda: fs.rmdir(url(d)))
    if ctx.target.scheme != "s3":
        _quiet(lambda: fs.rmdir(url("")))


def _quiet(fn) -> None:
    try:
        fn()
    except Exception:
        pass


def _terminate_as_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def run(a: argparse.Namespace, err: TextIO = sys.stderr) -> int:
    # SIGTERM (a `kill`, a CI timeout) keeps what was measured, as Ctrl-C does.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    os.makedirs(a.out, exist_ok=True)
    records_path = os.path.join(a.out, "records.jsonl")
    options = options_from(a)
    scenarios = [s.strip() for s in a.scenarios.split(",") if s.strip()]
    unknown = [s for s in scenarios if s not in PLANNERS]
    if unknown:
        err.write(f"ferry-bench: unknown scenarios {unknown} (have {', '.join(SCENARIOS)})\n")
        return 2
    programs = Programs.find({k: getattr(a, k) for k in ("ferry_cp", "ferry_walk", "nfs_cp", "nfs_ls", "aws", "rclone")},
                             search=[])
    want = [t for t in a.tools.split(",") if t] or None
    local = tempfile.mkdtemp(prefix="ferry-bench-")
    run_name = f"ferry-bench-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    contexts: List[Context] = []
    steps: List[tuple] = []
    notes_all: List[tuple] = []
    interrupted = False
    with open(records_path, "w") as out:
        def emit(r: BenchRecord) -> None:
            out.write(report_mod.to_json_line(r) + "\n")
            out.flush()  # Ctrl-C or a crash keeps every finished step

        try:
            for url in a.targets:
                target = Target.parse(url)
                notes: List[str] = []
                tools = tools_for(target.child(run_name), programs, local, notes, want)
                if not any(t.name == "ferry-py" for t in tools):
                    from ferry.bench.targets import FerryPy

                    tools.insert(0, FerryPy(target.child(run_name)))
                ctx = Context(target.child(run_name), os.path.join(local, target.scheme + str(len(contexts))),
                              tools, options, notes)
                if want and "ferry-py" not in want:
                    ctx.tools = [t for t in tools if t.name != "ferry-py"]
                os.makedirs(ctx.local, exist_ok=True)
                ctx.mkdirs("")
                contexts.append(ctx)
                for s in scenarios:
                    steps += [(ctx, st) for st in PLANNERS[s](ctx)]
            progress = Progress(len(steps), err, not a.no_progress)
            for ctx, step in steps:
                progress.show(step, ctx.target.scheme)
                for r in step.run():
                    emit(r)
                progress.step_done()
            progress.finish()
        except KeyboardInterrupt:
            interrupted = True
            err.write("\nferry-bench: interrupted; writing the report from what was measured\n")
        finally:
            for ctx in contexts:
                for n in ctx.notes:
                    notes_all.append((ctx.target.scheme, n))
            if interrupted:
                notes_all.append(("", "the run was interrupted (Ctrl-C): some points are missing"))
            for scheme, n in sorted(set(notes_all)):
                emit(BenchRecord(scenario="note", target=scheme, error=n))
            for ctx in contexts:
                try:
                    if not a.keep:
                        _cleanup(ctx)
                except KeyboardInterrupt:
                    break
                finally:
                    for t in ctx.tools + [ctx.setup]:
                        _quiet(t.close)
            shutil.rmtree(local, ignore_errors=True)
    return _report(records_path, a, err) or (130 if interrupted else 0)


def _report(records_path: str, a: argparse.Namespace, err: TextIO) -> int:
    records = report_mod.read_records(records_path)
    md = os.path.join(a.out, "report.md")
    text = report_mod.write_report(records, md, a.plots_dir or os.path.join(a.out, "plots"), a.image_prefix,
                                   a.title, a.heading_level)
    if a.splice_into:
        with open(a.splice_into) as f:
            page = f.read()
        with open(a.splice_into, "w") as f:
            f.write(report_mod.splice(page, text))
    err.write(f"ferry-bench: {len(records)} records in {records_path}; report {md}\n")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = build_parser().parse_args(argv)
    for flag, var in (("endpoint_url", "AWS_ENDPOINT_URL"), ("profile", "AWS_PROFILE"), ("region", "AWS_REGION")):
        if getattr(a, flag):
            os.environ[var] = getattr(a, flag)
    if a.from_records:
        os.makedirs(a.out, exist_ok=True)
        return _report(a.from_records, a, sys.stderr)
    if not a.targets:
        build_parser().error("give at least one target URL (or --from-records)")
    # A bad URL is a usage error (one line, exit 2) before anything runs.
    for url in a.targets:
        try:
            Target.parse(url)
        except ValueError as e:
            build_parser().error(str(e).removeprefix("ferry-bench: "))
    return run(a)
