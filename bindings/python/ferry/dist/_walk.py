"""The distributed walk: a tree split into subtrees as they are discovered,
each walked by ferry's own parallel walker inside a Dask worker.

How a tree is split (the client drives, the workers list and walk):

0. The first task walks the whole tree with ferry's walker and stops if it
   finds more than ``whole_walk_entries`` (250,000) entries: a tree one
   worker walks in about a second is walked fastest by one worker, and the
   most that is thrown away when the tree is bigger is that second.
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

import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import ferry
from ferry.dist import _urls
from ferry.dist._worker import WorkerOptions, filesystems, thread_map
from ferry import records_pb2
from ferry.records_pb2 import WalkBatch, WalkEntry

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

# Listings or walks one subtree task has going at once (a walk keeps many
# listing calls in flight itself; this covers small subtrees' latency).
_CALLS_PER_TASK = 16


@dataclasses.dataclass(frozen=True)
class SplitOptions:
    """How a tree is cut into tasks."""

    # Tasks out at once that stop further splitting; None: 4 per worker
    # thread, enough queued work for Dask to balance by stealing.
    split_target: Optional[int] = None
    # Levels below the root that may be listed one by one at most.
    max_split_depth: int = 8
    # A walk first tries the whole tree as one task and splits only when
    # it finds more entries than this (the partial walk is dropped): a tree
    # one worker walks in about a second is walked fastest by one worker.
    # 0: split from the start. (Copies always split: they are bound by
    # per-file latency, which more workers hide.)
    whole_walk_entries: int = 250_000
    worker: WorkerOptions = WorkerOptions()


@dataclasses.dataclass
class Listing:
    """What a listing task found in one directory."""

    rel: bytes
    entries: List[Entry]
    subdirs: List[bytes]
    errors: List[WalkError]
    # Set instead when the whole tree below `rel` was walked within budget.
    whole: Optional["Partition"] = None


@dataclasses.dataclass
class Partition:
    """One piece of a walk's result, held on the worker that made it.

    A subtree's entries stay the records.proto WalkBatch bytes ferry's
    walker made (``batches``: (subtree path, bytes) pairs), decoded only
    when asked (:meth:`records`): a walk that counts, filters or writes
    Parquet pays no Python object per entry, and bytes pickle in one copy
    when Dask moves a partition."""

    batches: List[Tuple[bytes, bytes]]
    decoded: List[Entry]  # a listing's entries (decoded to find subdirectories)
    entries: int
    errors: List[WalkError]

    def records(self) -> List[Entry]:
        """Every entry of the partition as an :data:`Entry` dict."""
        out = list(self.decoded)
        for rel, raw in self.batches:
            out.extend(entry_record(e, rel) for e in WalkBatch.FromString(raw).entries)
        return out


def entry_record(e: WalkEntry, parent: bytes) -> Entry:
    return {"path": _urls.join_rel(parent, e.path), "type": _TYPE_NAMES.get(e.type, "other"),
            "size": e.size, "mode": e.mode, "uid": e.uid, "gid": e.gid,
            "mtime_ns": e.mtime_ns, "fileid": e.fileid}


def error_record(rel: bytes, exc: BaseException) -> WalkError:
    return {"path": rel, "code": _STATUS_CODES.get(getattr(exc, "code", ""), 2),
            "message": str(exc)}


def list_task(root: _urls.Url, rel: bytes, options: WorkerOptions,
              whole_walk_entries: int = 0) -> Listing:
    """Lists directory `rel` below `root` -- or, given `whole_walk_entries`,
    walks all of it if it holds no more entries than that. A subdirectory
    that cannot be listed is an error record (the walk goes on); the root
    raises."""
    url = _urls.join(root, rel)
    if whole_walk_entries > 0:
        try:
            whole = _walk_within(filesystems(options), root, rel, whole_walk_entries)
        except (ferry.Error, OSError):
            whole = None  # the listing below says what is wrong, with context
        if whole is not None:
            return Listing(rel, [], [], [], whole)
    try:
        listed = WalkBatch.FromString(filesystems(options).list_serialized(url))
    except (ferry.Error, OSError) as e:
        if not rel:
            _urls.add_context(e, f"ferry.dist: listing the root {_urls.show(url)}")
            raise
        return Listing(rel, [], [], [error_record(rel, e)])
    entries = [entry_record(e, rel) for e in listed.entries]
    subdirs = [r["path"] for r in entries if r["type"] == "directory"]
    # Names the listing refused (never walked into) are reported, not lost.
    refused = [{"path": _urls.join_rel(rel, err.path), "code": err.code, "message": err.message}
               for err in listed.errors]
    return Listing(rel, entries, subdirs, refused)


def subdirs_of(listing: Listing) -> List[bytes]:
    return listing.subdirs


def listing_partition(listing: Listing) -> Partition:
    if listing.whole is not None:
        return listing.whole
    return Partition([], listing.entries, len(listing.entries), listing.errors)


def _walk_within(fs: ferry.FileSystems, root: _urls.Url, rel: bytes,
                 limit: int) -> Optional[Partition]:
    """The whole walk of `rel` if it has at most `limit` entries, else None
    (stopped as soon as it has more). Errors raise: the caller lists."""
    out = Partition([], [], 0, [])
    with fs.walk(_urls.join(root, rel)) as w:  # type: ignore[arg-type]
        for raw in w.serialized():
            batch = WalkBatch.FromString(raw)
            out.entries += len(batch.entries)
            if out.entries > limit:
                return None  # closing the walk stops it
            out.batches.append((rel, raw))
            out.errors.extend({"path": _urls.join_rel(rel, err.path), "code": err.code,
                               "message": err.message} for err in batch.errors)
    return out


def _walk_one(fs: ferry.FileSystems, root: _urls.Url, rel: bytes) -> Partition:
    """Every entry below `rel`, by one ferry walk."""
    out = Partition([], [], 0, [])
    try:
        with fs.walk(_urls.join(root, rel)) as w:  # type: ignore[arg-type]
            out.batches = [(rel, raw) for raw in w.serialized()]
            stats = w.stats
        out.entries = stats["entries"] if stats else 0
        if stats and stats["errors"]:  # rare: only then are the batches read here
            for _, raw in out.batches:
                out.errors.extend({"path": _urls.join_rel(rel, err.path), "code": err.code,
                                   "message": err.message}
                                  for err in WalkBatch.FromString(raw).errors)
    except (ferry.Error, OSError) as e:
        # As the single-process walk reports an unreadable directory and
        # goes on (it was listed a moment ago: it may be gone or locked).
        out.errors.append(error_record(rel, e))
    return out


def _list_one(fs: ferry.FileSystems, root: _urls.Url, rel: bytes) -> Tuple[Partition, List[bytes]]:
    """The entries directly in `rel`, and its subdirectories."""
    out = Partition([], [], 0, [])
    try:
        raw = fs.list_serialized(_urls.join(root, rel))  # type: ignore[arg-type]
    except (ferry.Error, OSError) as e:
        out.errors.append(error_record(rel, e))
        return out, []
    batch = WalkBatch.FromString(raw)
    entries = batch.entries
    out.batches.append((rel, raw))
    out.entries = len(entries)
    # Names the listing refused (empty, "..", '/' inside: never walked
    # into), reported as the single-process walk reports them.
    out.errors.extend({"path": _urls.join_rel(rel, err.path), "code": err.code,
                       "message": err.message} for err in batch.errors)
    return out, [_urls.join_rel(rel, e.path) for e in entries
                 if e.type == records_pb2.FILE_TYPE_DIRECTORY]


def walk_subtrees_task(root: _urls.Url, rels: Sequence[bytes],
                       options: WorkerOptions) -> Partition:
    """Every entry below each subtree `rels` of `root` (not the subtrees'
    own entries: their parents' listings hold them).

    Each subtree is listed first and only its subdirectories are walked:
    at a wide frontier most subtrees are single directories, and a listing
    is one call where a walk also starts (and stops) a walker."""
    fs = filesystems(options)
    out = Partition([], [], 0, [])

    def add(part: Partition) -> None:
        out.batches.extend(part.batches)
        out.entries += part.entries
        out.errors.extend(part.errors)

    below: List[bytes] = []
    for part, subdirs in thread_map(lambda rel: _list_one(fs, root, rel), rels,
                                    _CALLS_PER_TASK, options):
        add(part)
        below.extend(subdirs)
    for part in thread_map(lambda rel: _walk_one(fs, root, rel), below, _CALLS_PER_TASK, options):
        add(part)
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
            on_subtrees: Callable[[List[bytes]], None], whole_walk_entries: int = 0) -> None:
    """Splits the tree at `root` (see the module's docstring): calls
    `on_listing(future of a Listing)` for each listed directory and
    `on_subtrees(rels)` for each group of subtrees left whole; with
    `whole_walk_entries`, the first task walks the whole tree if it is that
    small (its Listing's `whole`), and nothing is split. Returns when
    every listing is done (the work handed out may still be running)."""
    from distributed import as_completed

    target = split.split_target or 4 * worker_threads(client)
    pending = as_completed()
    depth: Dict[bytes, int] = {}

    def list_dir(rel: bytes, level: int, whole_walk_entries: int = 0) -> None:
        listing = client.submit(list_task, root, rel, split.worker, whole_walk_entries,
                                pure=False)
        on_listing(listing)
        names = client.submit(subdirs_of, listing, pure=False)
        depth[names.key] = level
        pending.add(names)

    list_dir(b"", 0, whole_walk_entries)
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
