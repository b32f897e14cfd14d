"""Walking NFS trees with ferry's parallel READDIRPLUS walker.

    import ferry, ferry.nfs

    with ferry.Runtime() as rt:
        for entry in ferry.nfs.walk_entries("nfs://server/export/dir", runtime=rt):
            print(entry.path, entry.kind, entry.size)    # ferry.Entry

        with ferry.nfs.walk("nfs://server/export", runtime=rt, uid=1000, gid=1000) as w:
            for batch in w:                    # ferry.records_pb2.WalkBatch
                handle(batch.entries, batch.errors)
            print(w.stats)

Batches are ``ferry.records_pb2.WalkBatch`` records (the bytes C++ wrote,
decoded: Java reads the same; their ``WalkEntry`` paths are bytes);
``walk_entries`` gives each entry as a :class:`ferry.Entry`, its ``path`` a
str (``path_bytes``: the bytes). Paths are relative to the URL's path; every object below it is listed once, in no particular order; symlinks
are listed, never followed. A directory that cannot be read is a
``WalkError`` record and the walk goes on.

The walk runs on the Runtime's threads with the GIL released and pauses
while Python is behind (memory stays bounded). Stopping early -- ``break``,
``close()``, leaving a ``with`` block, dropping the iterator -- stops the
walk. A bad URL raises ``ValueError`` and an unreachable server
``ConnectionError`` (ferry's error classes, see ``ferry.Error``) when the walk
is made; an error reading the root is raised by the iteration.

Files and whole-file copies go through an :class:`NfsClient` (one mounted
export; a context manager) or the module functions, which take a client or
a URL::

    with ferry.nfs.NfsClient("nfs://server/export", runtime=rt) as nfs:
        with nfs.open("dir/big.bin", "rb") as f:      # io.RawIOBase
            f.seek(1 << 20)
            head = f.read(4096)
        stats = nfs.download("dir/big.bin", "/tmp/big.bin",
                             progress=lambda done, total: print(done, total))
        nfs.upload("/tmp/big.bin", "dir/copy.bin")    # ferry.records_pb2.TransferStats

    with ferry.nfs.open("nfs://server/export", "dir/new.bin", "wb") as f:
        f.write(b"data")                               # COMMITted at close

Paths are relative to the URL's path. Files are ``ferry.ObjectFile``
objects whose offsets live in a C++ ``FdTable``; copies run
``parallelism`` chunks at once on the Runtime's blocking threads (which cap
it) and call ``progress(bytes_done, bytes_total)`` on the calling thread; an
exception raised there stops the copy and is re-raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional, Tuple, Union

from ferry import _core, _fs, _pb
from ferry._files import (ClientWrapper, ObjectFile, Progress, _calling, _connect_target,
                          _core_mode, _open_owning)
from ferry._records import Entry

__all__ = ["NfsClient", "Walk", "download", "open", "upload", "walk", "walk_entries",
           "TransferStats", "WalkBatch", "WalkEntry", "WalkError"]
# The record classes, decoded on first access (ferry/_pb.py).
__getattr__ = _pb.reexport(__name__, ("TransferStats", "WalkBatch", "WalkEntry", "WalkError"))

if TYPE_CHECKING:  # decoded on first use only (ferry/_pb.py)
    from ferry.records_pb2 import TransferStats, WalkBatch, WalkEntry, WalkError


# Defaults of the C++ walker (ferry::nfs::WalkOptions / NfsClientOptions).
DEFAULT_BATCH_ENTRIES = 4096
DEFAULT_MAX_DIRECTORIES_IN_FLIGHT = 256
DEFAULT_CONNECTIONS = 4
# Defaults of ferry::nfs::CopyOptions.
DEFAULT_PARALLELISM = 16
DEFAULT_FILE_MODE = 0o644


# A walk of an NFS tree is the protocol-neutral walk (ferry.Walk).
Walk = _fs.Walk

_MAX_ID = 1 << 32


def _with_ids(url: str, uid: Optional[int], gid: Optional[int]) -> str:
    """`url` with uid= / gid= query options added; ValueError naming the
    option for one out of AUTH_SYS's 32-bit range."""
    extra = []
    for name, value in (("uid", uid), ("gid", gid)):
        if value is None:
            continue
        if not 0 <= value < _MAX_ID:
            raise _core.InvalidArgumentError(f"nfs.walk: {name} {value} is not in [0, 2**32)")
        extra.append(f"{name}={value}")
    if not extra:
        return url
    return url + ("&" if "?" in url else "?") + "&".join(extra)


def walk(url: str, *, runtime: _core.Runtime, batch_entries: int = DEFAULT_BATCH_ENTRIES,
         uid: Optional[int] = None, gid: Optional[int] = None,
         max_directories_in_flight: int = DEFAULT_MAX_DIRECTORIES_IN_FLIGHT,
         connections: int = DEFAULT_CONNECTIONS) -> Walk:
    """Walks the tree at ``url`` (``nfs://host[:port]/export/path?...``, see
    nfs_url.h for the options); returns an iterator of ``WalkBatch``.

    ``uid``/``gid`` set the AUTH_SYS identity (else the URL's, else the
    process's). Connects before returning: raises ``ValueError`` for a bad
    URL, ``ConnectionError`` when the server does not answer."""
    if connections <= 0:
        raise _core.InvalidArgumentError(f"nfs.walk: connections must be > 0, got {connections}")
    fsys = _core._FileSystems(runtime=runtime, nfs_connections=connections)
    try:
        return Walk(fsys.walk(_with_ids(url, uid, gid), batch_entries=batch_entries,
                              max_in_flight=max_directories_in_flight))
    finally:
        fsys.close()  # the walk holds what it needs


def walk_entries(url: str, *, runtime: _core.Runtime,
                 batch_entries: int = DEFAULT_BATCH_ENTRIES,
                 uid: Optional[int] = None, gid: Optional[int] = None,
                 onerror: Optional[Callable[[WalkError], None]] = None,
                 max_directories_in_flight: int = DEFAULT_MAX_DIRECTORIES_IN_FLIGHT,
                 connections: int = DEFAULT_CONNECTIONS) -> Iterator[Entry]:
    """As :func:`walk`, one :class:`ferry.Entry` at a time. As with ``os.walk``,
    unreadable directories are skipped unless ``onerror`` is given: it is
    called with each ``WalkError`` record (raising from it stops the walk).
    Connects before returning, as :func:`walk` does."""
    w = walk(url, runtime=runtime, batch_entries=batch_entries, uid=uid, gid=gid,
             max_directories_in_flight=max_directories_in_flight, connections=connections)
    return _fs._entries(w, onerror)


# ---------------------------------------------------------------- files, copies


class NfsClient(ClientWrapper):
    """One mounted NFS export: open files and whole-file copies; a context
    manager. Connects in the constructor (``ValueError``: bad URL;
    ``ConnectionError``: server unreachable; ``FileNotFoundError``: no such
    path). Closing it while files are open is safe: they keep the
    connection until they are closed."""

    def __init__(self, url: str, *, runtime: _core.Runtime, uid: Optional[int] = None,
                 gid: Optional[int] = None, connections: int = DEFAULT_CONNECTIONS) -> None:
        self._client = _core._NfsClient(url, runtime=runtime, uid=uid, gid=gid,
                                        connections=connections)
        self.runtime = runtime

    @classmethod
    def _of_file(cls, url: str, *, runtime: _core.Runtime, uid: Optional[int] = None,
                 gid: Optional[int] = None) -> Tuple["NfsClient", str]:
        """A client of the directory holding the file at ``url``, and the
        file's name in it."""
        self = cls.__new__(cls)
        self._client = _core._NfsClient(url, runtime=runtime, uid=uid, gid=gid, split_file=True)
        self.runtime = runtime
        return self, self._client.file_name

    @property
    def url(self) -> str:
        """nfs://host/export/path (without options)."""
        return self._client.url

    def open(self, path: str, mode: str = "rb", *, file_mode: int = DEFAULT_FILE_MODE) -> ObjectFile:
        """Opens ``path`` as a binary file: "rb" an existing regular file
        (``FileNotFoundError`` if there is none), "wb" creates or truncates
        it with permission bits ``file_mode`` (the directory must exist)."""
        return ObjectFile(self._client.open(path, _core_mode(mode), file_mode), mode)

    def download(self, path: str, local_path: str, *, progress: Optional[Progress] = None,
                 parallelism: int = DEFAULT_PARALLELISM, chunk_bytes: int = 0) -> TransferStats:
        """Copies NFS ``path`` to ``local_path`` (created or truncated)."""
        return _pb.records().TransferStats.FromString(self._client.download(
            path, local_path, progress=progress, parallelism=parallelism,
            chunk_bytes=chunk_bytes))

    def upload(self, local_path: str, path: str, *, progress: Optional[Progress] = None,
               parallelism: int = DEFAULT_PARALLELISM, chunk_bytes: int = 0,
               file_mode: int = DEFAULT_FILE_MODE) -> TransferStats:
        """Copies ``local_path`` to NFS ``path`` (created or truncated;
        COMMITted before it returns)."""
        return _pb.records().TransferStats.FromString(self._client.upload(
            local_path, path, progress=progress, parallelism=parallelism,
            chunk_bytes=chunk_bytes, file_mode=file_mode))

    def __repr__(self) -> str:
        return f"<ferry.nfs.NfsClient {self._client.url}{' closed' if self.closed else ''}>"


Target = Union[NfsClient, str]
"""An NfsClient, or an nfs:// URL to connect to for one call."""


def _connect(target: Target, runtime: Optional[_core.Runtime], uid: Optional[int],
             gid: Optional[int], blocking_threads: int) -> Tuple[NfsClient, List[Any]]:
    """The client for `target`, and what was made for it (to close after)."""
    return _connect_target(target, NfsClient, "nfs", runtime, blocking_threads,
                           lambda url, rt: NfsClient(url, runtime=rt, uid=uid, gid=gid))


def open(target: Target, path: str, mode: str = "rb", *,  # noqa: A001 (like io.open)
         runtime: Optional[_core.Runtime] = None, uid: Optional[int] = None,
         gid: Optional[int] = None, file_mode: int = DEFAULT_FILE_MODE) -> ObjectFile:
    """Opens ``path`` (relative to the client's or URL's path) as a binary
    file, see :meth:`NfsClient.open`. Given a URL, connects a client (on a
    Runtime of its own unless ``runtime`` is given) that the file closes."""
    core_mode = _core_mode(mode)
    client, owned = _connect(target, runtime, uid, gid, blocking_threads=1)
    return _open_owning(owned, mode, lambda: client._client.open(path, core_mode, file_mode))


def download(target: Target, path: str, local_path: str, *, progress: Optional[Progress] = None,
             runtime: Optional[_core.Runtime] = None, uid: Optional[int] = None,
             gid: Optional[int] = None, parallelism: int = DEFAULT_PARALLELISM,
             chunk_bytes: int = 0) -> TransferStats:
    """:meth:`NfsClient.download` on a client or a URL."""
    return _calling(_connect(target, runtime, uid, gid, blocking_threads=parallelism),
                    lambda c: c.download(path, local_path, progress=progress,
                                         parallelism=parallelism, chunk_bytes=chunk_bytes))


def upload(target: Target, local_path: str, path: str, *, progress: Optional[Progress] = None,
           runtime: Optional[_core.Runtime] = None, uid: Optional[int] = None,
           gid: Optional[int] = None, parallelism: int = DEFAULT_PARALLELISM,
           chunk_bytes: int = 0, file_mode: int = DEFAULT_FILE_MODE) -> TransferStats:
    """:meth:`NfsClient.upload` on a client or a URL."""
    return _calling(_connect(target, runtime, uid, gid, blocking_threads=parallelism),
                    lambda c: c.upload(local_path, path, progress=progress, parallelism=parallelism,
                                       chunk_bytes=chunk_bytes, file_mode=file_mode))
