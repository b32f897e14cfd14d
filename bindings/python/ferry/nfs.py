"""Walking NFS trees with ferry's parallel READDIRPLUS walker.

    import ferry, ferry.nfs

    with ferry.Runtime() as rt:
        for entry in ferry.nfs.walk_entries("nfs://server/export/dir", runtime=rt):
            print(os.fsdecode(entry.path), entry.size)

        with ferry.nfs.walk("nfs://server/export", runtime=rt, uid=1000, gid=1000) as w:
            for batch in w:                    # ferry.records_pb2.WalkBatch
                handle(batch.entries, batch.errors)
            print(w.stats)

Entries are ``ferry.records_pb2.WalkEntry`` records (the bytes C++ wrote,
decoded: Java reads the same). Their ``path`` is bytes relative to the URL's
path; every object below it is listed once, in no particular order; symlinks
are listed, never followed. A directory that cannot be read is a
``WalkError`` record and the walk goes on.

The walk runs on the Runtime's threads with the GIL released and pauses
while Python is behind (memory stays bounded). Stopping early -- ``break``,
``close()``, leaving a ``with`` block, dropping the iterator -- stops the
walk. A bad URL raises ``ValueError`` and an unreachable server
``ConnectionError`` (ferry's error classes, see ``ferry.Error``) when the walk
is made; an error reading the root is raised by the iteration.
"""

from typing import Callable, Iterator, Optional

from ferry import _core
from ferry.records_pb2 import WalkBatch, WalkEntry, WalkError

__all__ = ["Walk", "walk", "walk_entries", "WalkBatch", "WalkEntry", "WalkError"]

# Defaults of the C++ walker (ferry::nfs::WalkOptions / NfsClientOptions).
DEFAULT_BATCH_ENTRIES = 4096
DEFAULT_MAX_DIRECTORIES_IN_FLIGHT = 256
DEFAULT_CONNECTIONS = 4


class Walk:
    """An iterator of ``WalkBatch`` records; a context manager.

    Batches of one walk share ``walk_id``, count up in ``sequence``, and the
    final batch of a walk that completed has ``last`` set. ``stats`` is a
    dict (directories, entries, bytes, errors, rpcs, retries, elapsed,
    stopped_early) once the walk ended, else None.
    """

    def __init__(self, url: str, *, runtime: _core.Runtime,
                 batch_entries: int = DEFAULT_BATCH_ENTRIES,
                 uid: Optional[int] = None, gid: Optional[int] = None,
                 max_directories_in_flight: int = DEFAULT_MAX_DIRECTORIES_IN_FLIGHT,
                 connections: int = DEFAULT_CONNECTIONS) -> None:
        self._walk = _core._NfsWalk(
            url, runtime=runtime, batch_entries=batch_entries, uid=uid, gid=gid,
            max_directories_in_flight=max_directories_in_flight, connections=connections)

    def __iter__(self) -> "Walk":
        return self

    def __next__(self) -> WalkBatch:
        return WalkBatch.FromString(next(self._walk))

    def close(self) -> None:
        """Stops the walk (if still running) and waits until it has stopped."""
        self._walk.close()

    @property
    def closed(self) -> bool:
        return self._walk.closed

    @property
    def stats(self) -> Optional[dict]:
        return self._walk.stats

    def __enter__(self) -> "Walk":
        return self

    def __exit__(self, *exc: object) -> bool:
        self.close()
        return False


def walk(url: str, *, runtime: _core.Runtime, batch_entries: int = DEFAULT_BATCH_ENTRIES,
         uid: Optional[int] = None, gid: Optional[int] = None,
         max_directories_in_flight: int = DEFAULT_MAX_DIRECTORIES_IN_FLIGHT,
         connections: int = DEFAULT_CONNECTIONS) -> Walk:
    """Walks the tree at ``url`` (``nfs://host[:port]/export/path?...``, see
    nfs_url.h for the options); returns an iterator of ``WalkBatch``.

    ``uid``/``gid`` set the AUTH_SYS identity (else the URL's, else the
    process's). Connects before returning: raises ``ValueError`` for a bad
    URL, ``ConnectionError`` when the server does not answer."""
    return Walk(url, runtime=runtime, batch_entries=batch_entries, uid=uid, gid=gid,
                max_directories_in_flight=max_directories_in_flight, connections=connections)


def walk_entries(url: str, *, runtime: _core.Runtime,
                 batch_entries: int = DEFAULT_BATCH_ENTRIES,
                 uid: Optional[int] = None, gid: Optional[int] = None,
                 onerror: Optional[Callable[[WalkError], None]] = None,
                 max_directories_in_flight: int = DEFAULT_MAX_DIRECTORIES_IN_FLIGHT,
                 connections: int = DEFAULT_CONNECTIONS) -> Iterator[WalkEntry]:
    """As :func:`walk`, one ``WalkEntry`` at a time. As with ``os.walk``,
    unreadable directories are skipped unless ``onerror`` is given: it is
    called with each ``WalkError`` record (raising from it stops the walk).
    Connects before returning, as :func:`walk` does."""
    w = walk(url, runtime=runtime, batch_entries=batch_entries, uid=uid, gid=gid,
             max_directories_in_flight=max_directories_in_flight, connections=connections)
    return _entries(w, onerror)


def _entries(w: Walk, onerror: Optional[Callable[[WalkError], None]]) -> Iterator[WalkEntry]:
    # A generator: closed (and so the walk) when the caller breaks out and
    # drops it, or calls its close().
    with w:
        for batch in w:
            if onerror is not None:
                for error in batch.errors:
                    onerror(error)
            yield from batch.entries
