"""The distributed walk: a tree split into subtrees as they are discovered,
each walked by ferry's own parallel walker inside a Dask worker.

How a tree is split (the client drives, the workers list and walk):

1. A *listing* task lists one directory (``FileSystems.list``: one level,
   an S3 delimiter listing, one iRODS collection, one NFS READDIRPLUS run).
   Its entries are one partition of the result; its subdirectories go back
   to the client, which is all the client ever receives.
2. For each listing that comes back the client decides: while fewer than
   ``split_target`` tasks are out, the subdirectories are listed in turn
   (the tree is split further where it is being discovered); otherwise
   they are cut into ``split_target - in_flight`` groups of neighbours and
   each group is one *subtree* task, which walks each of its subtrees to
   the bottom with ``FileSystems.walk`` (many READDIRPLUS / ListObjects
   calls in flight, the single-process walker) -- a few at once on threads.
3. Dask places the tasks and moves queued ones from busy workers to idle
   ones (work stealing); partitions stay on the workers that made them.

Why the client fans out (``as_completed``) instead of tasks submitting
tasks (``worker_client``): a task that waits on tasks it submitted holds a
worker thread (or must secede), and the split decision needs a global view
(how much work is already out) that only the client has cheaply. The
client handles one small message per listed directory, not per entry.

What is not split: a subtree handed to one subtree task is walked there
whole, so one subtree much larger than the rest of the tree is a long tail
on one worker (the split goes ``max_split_depth`` levels deep at most, and
stops early once there is enough work out).
"""

import concurrent.futures
import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import ferry
from ferry.dist import _urls
from ferry.dist._worker import WorkerOptions, filesystems
from ferry import records_pb2
from ferry.records_pb2 import WalkEntry

Entry = Dict[str, Any]
"""One walked entry: ``path`` (bytes, '/'-separated, relative to the walk's
root, as the server sent it), ``type`` ("file", "directory", "symlink",
"block_device", "char_device", "socket", "fifo", "other"), ``size``, ``mode``, ``uid``, ``gid``, ``mtime_ns``, ``fileid``
(the fields of ``ferry.records_pb2.WalkEntry``)."""

WalkError = Dict[str, Any]
"""A directory that could not be read: ``path`` (bytes, relative to the
root), ``code`` (the absl status code number, as in records.proto),
``message``. The walk goes on past it, as the single-process walk does."""

_TYPE_NAMES = {records_pb2.FILE_TYPE_REGULAR: "file",
               records_pb2.FILE_TYPE_DIRECTORY: "directory",
               records_pb2.FILE_TYPE_SYMLINK: "symlink",
               records_pb2.FILE_TYPE_BLOCK_DEVICE: "block_device",
               records_pb2.FILE_TYPE_CHAR_DEVICE: "char_device",
               records_pb2.FILE_TYPE_SOCKET: "socket",
               records_pb2.FILE_TYPE_FIFO: "fifo"}

# absl::StatusCode numbers by the names ferry.Error.code carries.
_STATUS_CODES = {"Cancelled": 1, "Unknown": 2, "InvalidArgument": 3, "DeadlineExceeded": 4,
                 "NotFound": 5, "AlreadyExists": 6, "PermissionDenied": 7,
                 "ResourceExhausted": 8, "FailedPrecondition": 9, "Aborted": 10,
                 "OutOfRange": 11, "Unimplemented": 12, "Internal": 13, "Unavailable": 14,
                 "DataLoss": 15, "Unauthenticated": 16}

# Subtrees one subtree task walks at once (each walk keeps many listing
# calls in flight itself; a few at once cover small subtrees' latency).
_WALKS_PER_TASK = 4


@dataclasses.dataclass(frozen=True)
class SplitOptions:
    """How a tree is cut into tasks."""

    # Tasks out at once that stop further splitting; None: 4 per worker
    # thread, enough queued work for Dask to balance by stealing.
    split_target: Optional[int] = None
    # Levels below the root that may be listed one by one at most.
    max_split_depth: int = 8
    worker: WorkerOptions = WorkerOptions()


@dataclasses.dataclass
class Listing:
    """What a listing task found in one directory."""

    rel: bytes
    entries: List[Entry]
    subdirs: List[bytes]
    errors: List[WalkError]


@dataclasses.dataclass
class Partition:
    """One piece of a walk's result, held on the worker that made it."""

    entries: List[Entry]
    errors: List[WalkError]


def entry_record(e: WalkEntry, parent: bytes) -> Entry:
    return {"path": _urls.join_rel(parent, e.path), "type": _TYPE_NAMES.get(e.type, "other"),
            "size": e.size, "mode": e.mode, "uid": e.uid, "gid": e.gid,
            "mtime_ns": e.mtime_ns, "fileid": e.fileid}


def error_record(rel: bytes, exc: BaseException) -> WalkError:
    return {"path": rel, "code": _STATUS_CODES.get(getattr(exc, "code", ""), 2),
            "message": str(exc)}


def list_task(root: _urls.Url, rel: bytes, options: WorkerOptions) -> Listing:
    """Lists directory `rel` below `root`. A subdirectory that cannot be
    listed is an error record (the walk goes on); the root raises."""
    url = _urls.join(root, rel)
    try:
        listed = filesystems(options).list(url)
    except (ferry.Error, OSError) as e:
        if not rel:
            _urls.add_context(e, f"ferry.dist: listing the root {_urls.show(url)}")
            raise
        return Listing(rel, [], [], [error_record(rel, e)])
    entries = [entry_record(e, rel) for e in listed]
    subdirs = [r["path"] for r in entries if r["type"] == "directory"]
    return Listing(rel, entries, subdirs, [])


def subdirs_of(listing: Listing) -> List[bytes]:
    return listing.subdirs


def listing_partition(listing: Listing) -> Partition:
    return Partition(listing.entries, listing.errors)


def _walk_one(fs: ferry.FileSystems, root: _urls.Url, rel: bytes) -> Partition:
    entries: List[Entry] = []
    errors: List[WalkError] = []
    try:
        with fs.walk(_urls.join(root, rel)) as w:
            for batch in w:
                entries.extend(entry_record(e, rel) for e in batch.entries)
                errors.extend({"path": _urls.join_rel(rel, err.path), "code": err.code,
                               "message": err.message} for err in batch.errors)
    except (ferry.Error, OSError) as e:
        # As the single-process walk reports an unreadable directory and
        # goes on (it was listed a moment ago: it may be gone or locked).
        errors.append(error_record(rel, e))
    return Partition(entries, errors)


def walk_subtrees_task(root: _urls.Url, rels: Sequence[bytes],
                       options: WorkerOptions) -> Partition:
    """Every entry below each subtree `rels` of `root` (not the subtrees'
    own entries: their parents' listings hold them)."""
    fs = filesystems(options)
    out = Partition([], [])
    with concurrent.futures.ThreadPoolExecutor(min(_WALKS_PER_TASK, max(1, len(rels)))) as pool:
        for part in pool.map(lambda rel: _walk_one(fs, root, rel), rels):
            out.entries.extend(part.entries)
            out.errors.extend(part.errors)
    return out


def worker_threads(client: Any) -> int:
    """Threads across the cluster's workers (at least 1)."""
    workers = client.scheduler_info()["workers"].values()
    return max(1, sum(w.get("nthreads", 1) for w in workers))


def _groups(rels: Sequence[bytes], n: int) -> Iterable[List[bytes]]:
    """`rels` in `n` runs of neighbours (nearly equal lengths)."""
    n = max(1, min(n, len(rels)))
    size, extra = divmod(len(rels), n)
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        yield list(rels[start:end])
        start = end


def fan_out(client: Any, root: _urls.Url, split: SplitOptions,
            on_listing: Callable[[Any], None],
            on_subtrees: Callable[[List[bytes]], None]) -> None:
    """Splits the tree at `root` (see the module's docstring): calls
    `on_listing(future of a Listing)` for each listed directory and
    `on_subtrees(rels)` for each group of subtrees left whole. Returns when
    every listing is done (the work handed out may still be running)."""
    from distributed import as_completed

    target = split.split_target or 4 * worker_threads(client)
    pending = as_completed()
    depth: Dict[bytes, int] = {}

    def list_dir(rel: bytes, level: int) -> None:
        listing = client.submit(list_task, root, rel, split.worker, pure=False)
        on_listing(listing)
        names = client.submit(subdirs_of, listing, pure=False)
        depth[names.key] = level
        pending.add(names)

    list_dir(b"", 0)
    for done in pending:
        subdirs = done.result()
        level = depth.pop(done.key)
        if not subdirs:
            continue
        in_flight = pending.count()
        if in_flight + len(subdirs) <= target and level < split.max_split_depth:
            for rel in subdirs:
                list_dir(rel, level + 1)
        else:
            for group in _groups(subdirs, target - in_flight):
                on_subtrees(group)
