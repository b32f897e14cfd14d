"""python -m ferry.dist: distributed walks and copies from a shell.

    python -m ferry.dist walk URL [--scheduler ADDR] [--workers N] [--parquet OUT]
    python -m ferry.dist cp SRC DST [-r] [--scheduler ADDR] [--workers N]

Without --scheduler, a LocalCluster of N worker processes (default: one per
core) on this machine. `walk` prints one line per entry (size, type, path)
unless --parquet writes them there; both end with a summary on stderr.
Exit status: 0 done, 1 some entries or files failed (listed on stderr),
2 usage.
"""

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Iterator, List, Optional

from ferry import dist


@contextlib.contextmanager
def _client(scheduler: Optional[str], workers: Optional[int]) -> Iterator[object]:
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    n = workers or os.cpu_count() or 1
    # One thread per worker: a task blocks in ferry with the GIL released
    # and runs ferry's own threads, so more processes (each a Runtime and
    # memory budget) is the unit of scale, as on a real cluster.
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def _walk(args: argparse.Namespace) -> int:
    start = time.monotonic()
    with _client(args.scheduler, args.workers) as client:
        if args.parquet:
            summary = dist.walk_to_parquet(args.url, args.parquet, client=client)
            entries, errors = summary["entries"], summary["errors"]
        else:
            w = dist.walk(args.url, client=client)
            entries, errors = w.entries, w.errors
            out = sys.stdout.buffer
            for part in w.partitions:
                for e in part.result().records():
                    out.write(b"%d\t%s\t%s\n" % (e["size"], e["type"].encode(), e["path"]))
            out.flush()
    for e in errors:
        print(f"error: {os.fsdecode(e['path'])}: {e['message']}", file=sys.stderr)
    print(json.dumps({"entries": entries, "errors": len(errors),
                      "seconds": round(time.monotonic() - start, 3)}), file=sys.stderr)
    return 1 if errors else 0


def _cp(args: argparse.Namespace) -> int:
    start = time.monotonic()
    with _client(args.scheduler, args.workers) as client:
        try:
            report = dist.copy(args.src, args.dst, recursive=args.recursive, client=client)
        except dist.CopyError as e:
            report = e.report
    for failure in report.failures:
        print(f"error: {failure}", file=sys.stderr)
    print(json.dumps({"files_copied": report.files_copied, "files_skipped": report.files_skipped,
                      "bytes_copied": report.bytes_copied, "ranges": report.ranges,
                      "not_copied": report.not_copied, "failed": len(report.failures),
                      "seconds": round(time.monotonic() - start, 3)}), file=sys.stderr)
    return 1 if report.failures else 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ferry.dist",
                                description="ferry walks and copies sharded over Dask")
    sub = p.add_subparsers(dest="command", required=True)

    def cluster_args(q: argparse.ArgumentParser) -> None:
        q.add_argument("--scheduler", metavar="ADDR",
                       help="a running Dask scheduler (tcp://host:8786); else a LocalCluster")
        q.add_argument("--workers", type=int, metavar="N",
                       help="LocalCluster worker processes (default: one per core)")

    w = sub.add_parser("walk", help="every entry below URL")
    w.add_argument("url")
    w.add_argument("--parquet", metavar="OUT", help="write the entries as Parquet into OUT")
    cluster_args(w)
    w.set_defaults(run=_walk)
    c = sub.add_parser("cp", help="copy SRC to DST (a tree with -r)")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("-r", "--recursive", action="store_true")
    cluster_args(c)
    c.set_defaults(run=_cp)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (OSError, ValueError) as e:
        print(f"python -m ferry.dist: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
