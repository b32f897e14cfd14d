"""One front for every place ferry reaches: local paths, ``s3://``,
``nfs://`` and every scheme an adapter registers, chosen by URL (as
``fsspec.open`` and Arrow's ``FileSystemFromUri`` do). Nothing here names a
protocol: the C++ registry resolves the URL, the C++ engine copies.

    import ferry

    with ferry.Runtime() as rt, ferry.FileSystems(runtime=rt) as fs:
        fs.copy("s3://bucket/big.bin", "/tmp/big.bin",
                progress=lambda done, total: print(done, total))
        fs.copy("nfs://host/export/tree", "s3://bucket/tree", recursive=True)
        for entry in fs.walk_entries("s3://bucket/tree/"):   # ferry.Entry
            print(entry.path, entry.kind, entry.size)      # 'a/b.bin' Kind.FILE 42
        with fs.open("nfs://host/export/a.bin") as f:     # ferry.ObjectFile
            f.seek(1 << 20); head = f.read(4096)

    ferry.copy(src, dst)    # the same, with a Runtime made for the call

S3 credentials, region and endpoint come from the AWS environment (as the
AWS CLI reads them) unless given to :class:`FileSystems` (``endpoint_url``,
``profile``, ``region``, ``anon``: fsspec's storage_options names); NFS
options from the URL. Copies return
``ferry.records_pb2.TransferStats``; a tree copy with failed files raises
the first failure (saying how many failed). Names a server lists that
are not one safe component (``..``, empty, ``/`` inside, NUL) are refused:
never walked into nor written, counted and warned about.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence

from ferry import _core, _pb
from ferry._files import Closing, ObjectFile, Progress, _core_mode
from ferry._records import Entry

__all__ = ["FileSystems", "RefusedEntryWarning", "Walk", "copy", "open", "stat", "walk",
           "walk_entries"]

if TYPE_CHECKING:  # decoded on first use only (ferry/_pb.py)
    from ferry.records_pb2 import TransferStats, WalkBatch, WalkError


class RefusedEntryWarning(UserWarning):
    """An entry a tree copy did not copy: a listed name refused as unsafe
    (empty, ``..``, ``/`` inside, a directory listed twice) or a symlink or
    special file. The stats count them; the copy of the rest went on."""

DEFAULT_BATCH_ENTRIES = 4096
DEFAULT_MAX_IN_FLIGHT = 256
DEFAULT_JOBS = 16  # CopyOptions::jobs
# Blocking threads of a Runtime made for one call: the engine's chunk
# workers run there (16: the NFS default of chunks in flight).
_CALL_THREADS = 16


class Walk(Closing):
    """A walk of a tree: iterate for ``ferry.records_pb2.WalkBatch`` records;
    a context manager. ``stats`` is a dict once the walk ended."""

    def __init__(self, raw: "_core._Walk") -> None:
        self._raw = raw

    def __iter__(self) -> "Walk":
        return self

    def __next__(self) -> WalkBatch:
        return _pb.records().WalkBatch.FromString(next(self._raw))

    def serialized(self) -> Iterator[bytes]:
        """The batches undecoded, as records.proto WalkBatch bytes (to pass
        on to another process or language without a decode here)."""
        return iter(self._raw)

    def close(self) -> None:
        self._raw.close()

    @property
    def closed(self) -> bool:
        return self._raw.closed

    @property
    def stats(self) -> Optional[dict]:
        return self._raw.stats


def _entries(w: Walk, onerror: Optional[Callable[[WalkError], None]]) -> Iterator[Entry]:
    # A generator: closed (and so the walk) when the caller drops it.
    with w:
        for batch in w:
            if onerror is not None:
                for error in batch.errors:
                    onerror(error)
            yield from map(Entry.from_record, batch.entries)


class FileSystems(Closing):
    """Every filesystem ferry reaches, by URL, on one Runtime; a context
    manager. Filesystems are made at first use and shared (one S3 client
    per endpoint, one NFS mount per export, one iRODS login pool per host,
    port and user).

    ``timeout`` (seconds; None: 60) bounds every request on every protocol:
    a request unanswered that long after it was sent fails with
    TimeoutError (a ferry.Error with code "DeadlineExceeded"); one that is
    safe to repeat is first sent once more, on a fresh connection when its
    own went silent. A call on a server that stops answering ends within
    about twice the timeout; it never hangs."""

    def __init__(self, *, runtime: Optional[_core.Runtime] = None, s3_chunk_bytes: int = 0,
                 s3_concurrency: int = 0, s3_make_bucket: bool = False,
                 nfs_parallelism: int = 0, nfs_connections: int = 0,
                 irods_parallelism: int = 0, irods_connections: int = 0,
                 timeout: Optional[float] = None, endpoint_url: Optional[str] = None,
                 profile: Optional[str] = None, region: Optional[str] = None,
                 anon: bool = False, key: Optional[str] = None, secret: Optional[str] = None,
                 token: Optional[str] = None, irods_password: Optional[str] = None,
                 irods_client_user: Optional[str] = None) -> None:
        """``runtime``: the Runtime everything runs on (None: one made for
        this FileSystems and closed with it). S3, as the AWS CLI's flags
        (None: the AWS environment and ``~/.aws`` decide; fsspec's
        storage_options names): ``endpoint_url`` (``scheme://host[:port]``),
        ``profile``, ``region``, ``anon`` (unsigned requests, public
        buckets), ``key``/``secret``/``token`` (an access key id and secret
        access key, both or neither, and a session token; they win over the
        environment). iRODS: ``irods_password`` (instead of
        ``IRODS_PASSWORD`` / ``IRODS_PASSWORD_FILE``), ``irods_client_user``
        acts for that user (a proxy login by a rodsadmin)."""
        # A Runtime made here lives as long as this and what it opened.
        self._own_runtime = None
        if runtime is None:
            runtime = self._own_runtime = _core.Runtime(blocking_threads=_CALL_THREADS)
        self._raw = _core._FileSystems(
            runtime=runtime, s3_chunk_bytes=s3_chunk_bytes, s3_concurrency=s3_concurrency,
            s3_make_bucket=s3_make_bucket, nfs_parallelism=nfs_parallelism,
            nfs_connections=nfs_connections, irods_parallelism=irods_parallelism,
            irods_connections=irods_connections, timeout=timeout,
            s3_endpoint_url=endpoint_url or "", s3_profile=profile or "",
            s3_region=region or "", s3_no_sign_request=anon, s3_access_key_id=key or "",
            s3_secret_access_key=secret or "", s3_session_token=token or "",
            irods_client_user=irods_client_user or "", irods_password=irods_password or "")

    def stat(self, url: str) -> Entry:
        """The :class:`ferry.Entry` at ``url`` (its ``path`` is ``url``;
        ``st["kind"]``, ``st["size"]``... still answer as the dict it
        was); FileNotFoundError if nothing is there."""
        return Entry.from_stat(self._raw.stat(url))

    def open(self, url: str, mode: str = "rb", *, size: Optional[int] = None) -> ObjectFile:
        """A binary file (``io.RawIOBase``): "rb" reads (positional, only
        the bytes asked for move), "wb" writes (published at close:
        atomically, the old file stays until then). ``size``: the final
        size of a written file if known (object stores lay parts out by it)."""
        raw = self._raw.open(url, _core_mode(mode), size=-1 if size is None else size)
        return ObjectFile(raw, mode)

    def list(self, url: str) -> List[Entry]:
        """The entries directly in directory ``url`` (paths are their
        names), as the protocol lists them: one level, where :meth:`walk`
        goes all the way down. FileNotFoundError for a missing directory,
        NotADirectoryError for a file."""
        batch = _pb.records().WalkBatch.FromString(self._raw.list(url))
        return [Entry.from_record(e) for e in batch.entries]

    def list_serialized(self, url: str) -> bytes:
        """:meth:`list`'s entries undecoded, as one records.proto WalkBatch
        (as :meth:`Walk.serialized` gives a walk's)."""
        return self._raw.list(url)

    def walk(self, url: str, *, batch_entries: int = DEFAULT_BATCH_ENTRIES,
             max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> Walk:
        """Every entry below ``url``, once, in batches (see :class:`Walk`)."""
        return Walk(self._raw.walk(url, batch_entries=batch_entries, max_in_flight=max_in_flight))

    def walk_entries(self, url: str, *, onerror: Optional[Callable[[WalkError], None]] = None,
                     **kwargs: Any) -> Iterator[Entry]:
        """The entries of :meth:`walk`, one by one, as :class:`ferry.Entry`
        (paths relative to ``url``); unreadable directories go to
        ``onerror`` (skipped if None). NotADirectoryError if ``url`` is a
        file."""
        return _entries(self.walk(url, **kwargs), onerror)

    def copy(self, src: str, dst: str, *, recursive: bool = False,
             progress: Optional[Progress] = None, jobs: int = DEFAULT_JOBS,
             chunk_bytes: int = 0, parallelism: int = 0) -> TransferStats:
        """Copies file ``src`` to ``dst`` (or, with ``recursive``, every file
        below directory ``src`` to the same path below ``dst``), between any
        two places, remote to remote straight through. A directory without
        ``recursive`` raises IsADirectoryError.
        ``progress(bytes_done, bytes_total)`` runs on this thread; an
        exception raised there stops the copy and is re-raised. A tree is
        copied while it is listed: ``bytes_total`` is None until the
        listing ends. Entries the source lists but that are never copied
        (names refused as unsafe, symlinks) are counted in the stats'
        ``entries_refused`` and ``files_skipped`` and each is warned
        about (:class:`RefusedEntryWarning`)."""
        stats = _pb.records().TransferStats.FromString(self._raw.copy(
            src, dst, recursive=recursive, progress=progress, jobs=jobs,
            chunk_bytes=chunk_bytes, parallelism=parallelism))
        for line in stats.warnings:
            warnings.warn(line, RefusedEntryWarning, stacklevel=2)
        return stats

    def sync(self, src: str, dst: str, *, compare: str = "size_and_time",
             delete: bool = True, dry_run: bool = False, max_delete: int = -1,
             include: Sequence[str] = (), exclude: Sequence[str] = (),
             filter: Sequence[str] = (),  # noqa: A002 (rclone's word)
             progress: Optional[Progress] = None, jobs: int = DEFAULT_JOBS) -> Dict[str, Any]:
        """Makes the tree ``dst`` a copy of the tree ``src``, as ``rclone
        sync`` does (the same engine as ferry-sync): copies the files that
        are missing or changed and, with ``delete``, then removes those
        ``src`` lacks (never after a failure; never more than
        ``max_delete`` when it is not negative). ``compare`` decides what
        is up to date: ``"size_and_time"`` (rclone's default; the same
        bytes under another time only get their time set), ``"size"``,
        ``"checksum"`` (content hashes: MD5, or SHA-256 where iRODS is a
        side; ones the servers keep or compute, else both files read),
        ``"existing"`` (anything there), ``"never"`` (copy everything).
        ``include``/``exclude``/``filter`` are rclone's filter rules
        (``filter`` entries are ``"+ PATTERN"``/``"- PATTERN"``). With
        ``dry_run`` nothing is written. Returns a dict: ``copied``,
        ``skipped`` (up to date), ``times_updated``, ``deleted``,
        ``excluded``, ``refused``, ``failed``, ``bytes``, ``copied_files``,
        ``deleted_files`` (relative paths, the first 10,000), ``dry_run``,
        ``warnings``. Files that fail raise :class:`ferry.Error`."""
        report = self._raw.sync(src, dst, compare=compare, delete=delete, dry_run=dry_run,
                                max_delete=max_delete, include=list(include),
                                exclude=list(exclude), filter=list(filter),
                                progress=progress, jobs=jobs)
        for line in report["warnings"]:
            warnings.warn(line, RefusedEntryWarning, stacklevel=2)
        return report

    def mkdir(self, url: str, *, parents: bool = False) -> None:
        """Creates the directory (collection, prefix) ``url`` names; with
        ``parents``, the missing ones above it too, and an existing
        directory is not an error."""
        self._raw.mkdir(url, parents=parents)

    def remove(self, url: str) -> None:
        """Removes the file ``url`` names."""
        self._raw.remove(url)

    def rmdir(self, url: str) -> None:
        """Removes the empty directory ``url`` names."""
        self._raw.rmdir(url)

    def rename(self, src: str, dst: str) -> None:
        """Renames ``src`` to ``dst`` on one filesystem (ValueError when
        they are on different ones)."""
        self._raw.rename(src, dst)

    def close(self) -> None:
        self._raw.close()
        # A Runtime made here is let go, not closed: a file or walk still
        # open holds it (a pin) and it stops when the last of them closes.
        self._own_runtime = None

    @property
    def closed(self) -> bool:
        return self._raw.closed


@contextlib.contextmanager
def _filesystems(runtime: Optional[_core.Runtime],
                 filesystems: Optional[FileSystems]) -> Iterator[FileSystems]:
    """The caller's FileSystems, or one (and a Runtime) made for one call."""
    if filesystems is not None:
        yield filesystems
        return
    with contextlib.ExitStack() as stack:
        if runtime is None:
            runtime = stack.enter_context(_core.Runtime(blocking_threads=_CALL_THREADS))
        yield stack.enter_context(FileSystems(runtime=runtime))


def copy(src: str, dst: str, *, recursive: bool = False, progress: Optional[Progress] = None,
         runtime: Optional[_core.Runtime] = None, filesystems: Optional[FileSystems] = None,
         jobs: int = DEFAULT_JOBS) -> TransferStats:
    """:meth:`FileSystems.copy` with ``filesystems``, or with a FileSystems
    (on ``runtime``, or a Runtime made for the call) that lives for it."""
    with _filesystems(runtime, filesystems) as fs:
        return fs.copy(src, dst, recursive=recursive, progress=progress, jobs=jobs)


def stat(url: str, *, runtime: Optional[_core.Runtime] = None,
         filesystems: Optional[FileSystems] = None) -> Entry:
    """:meth:`FileSystems.stat`, as :func:`copy` chooses the FileSystems."""
    with _filesystems(runtime, filesystems) as fs:
        return fs.stat(url)


def open(url: str, mode: str = "rb", *, runtime: _core.Runtime,  # noqa: A001 (like io.open)
         size: Optional[int] = None) -> ObjectFile:
    """:meth:`FileSystems.open` on ``runtime``; the file keeps what it
    needs alive until it is closed."""
    fs = FileSystems(runtime=runtime)
    try:
        return fs.open(url, mode, size=size)
    finally:
        fs.close()  # the open file holds the registry and runtime pin itself


def walk(url: str, *, runtime: _core.Runtime, **kwargs: Any) -> Walk:
    """:meth:`FileSystems.walk` on ``runtime`` (the walk keeps what it needs)."""
    fs = FileSystems(runtime=runtime)
    try:
        return fs.walk(url, **kwargs)
    finally:
        fs.close()


def walk_entries(url: str, *, runtime: _core.Runtime,
                 onerror: Optional[Callable[[WalkError], None]] = None,
                 **kwargs: Any) -> Iterator[Entry]:
    """:meth:`FileSystems.walk_entries` on ``runtime``."""
    return _entries(walk(url, runtime=runtime, **kwargs), onerror)
