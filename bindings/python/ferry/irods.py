"""iRODS through ferry: a pooled, logged-in C++ client on the one transfer
engine (large objects move over several streams joined to one replica, as
python-irodsclient does; trees many files at once).

    import ferry, ferry.irods

    with ferry.Runtime() as rt, ferry.irods.IrodsClient(
            "irods://alice@irods.example.org:1247/tempZone/home/alice", runtime=rt) as ir:
        ir.upload("/tmp/big.bin", "big.bin")          # ferry.records_pb2.TransferStats
        ir.download("big.bin", "/tmp/back.bin", progress=lambda done, total: ...)
        ir.upload("/tmp/tree", "tree", recursive=True)
        with ir.open("big.bin", "rb") as f:           # ferry.ObjectFile
            f.seek(1 << 20); head = f.read(4096)
        for entry in ir.walk_entries("tree"):         # ferry.Entry
            print(entry.path, entry.kind, entry.size)
        ir.add_metadata("big.bin", "experiment", "42", "run")
        print(ir.metadata("big.bin"))                 # [Avu('experiment', '42', 'run')]
        ir.set_access("big.bin", "bob", "read")
        print(ir.access("big.bin"))                   # [..., Access('bob', 'read_object')]

The account is the iCommands' (``~/.irods/irods_environment.json``, the
``IRODS_*`` variables); the password comes from ``IRODS_PASSWORD`` or the
file ``IRODS_PASSWORD_FILE``; the URL's host, port and user override the
environment. Paths are relative to the URL's path. A wrong password raises
``ferry.UnauthenticatedError``, a missing path ``FileNotFoundError``, a
denied one ``PermissionError``, each naming the iRODS error code.
``irods://`` URLs also work with ``ferry.copy``, ``ferry.open`` and
``ferry.FileSystems``; this module is that front with a base URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, List, NamedTuple, Optional, Tuple, Union

from ferry import _core, _fs, _pb
from ferry._files import (Closing, ObjectFile, Progress, _calling, _connect_target, _core_mode,
                          _open_owning)
from ferry._records import Entry

__all__ = ["Access", "Avu", "IrodsClient", "download", "open", "upload", "walk", "walk_entries",
           "TransferStats", "WalkBatch", "WalkEntry", "WalkError"]
# The record classes, decoded on first access (ferry/_pb.py).
__getattr__ = _pb.reexport(__name__, ("TransferStats", "WalkBatch", "WalkEntry", "WalkError"))

if TYPE_CHECKING:  # decoded on first use only (ferry/_pb.py)
    from ferry.records_pb2 import TransferStats, WalkBatch, WalkEntry, WalkError

# Defaults of ferry::irods::IrodsFileSystemOptions.
DEFAULT_CONNECTIONS = 8
DEFAULT_PARALLELISM = 4


class Avu(NamedTuple):
    """One metadata triple (attribute, value, units) on a data object or collection."""
    attribute: str
    value: str
    units: str = ""


class Access(NamedTuple):
    """One user's access as the catalog names it: "own", "modify_object", "read_object"..."""
    user: str
    level: str


class IrodsClient(Closing):
    """One iRODS zone endpoint and user (a pool of logged-in connections);
    a context manager. Logs in in the constructor."""

    def __init__(self, url: str, *, runtime: _core.Runtime, connections: int = DEFAULT_CONNECTIONS,
                 parallelism: int = DEFAULT_PARALLELISM) -> None:
        if not url.startswith("irods://"):
            raise _core.InvalidArgumentError(f"not an irods:// URL: {url}")
        self.runtime = runtime
        self._base = url.rstrip("/")
        self._fs = _fs.FileSystems(runtime=runtime, irods_connections=connections,
                                   irods_parallelism=parallelism)
        try:
            self._fs.stat(self._base)  # logs in; raises for a bad account or path
        except BaseException:
            self._fs.close()
            raise

    def url(self, path: str = "") -> str:
        """The irods:// URL of ``path`` (relative to the client's URL)."""
        return self._base if not path else f"{self._base}/{path.lstrip('/')}"

    @property
    def closed(self) -> bool:
        return self._fs.closed

    def stat(self, path: str = "") -> Entry:
        """See ``ferry.FileSystems.stat``: kind ``Kind.FILE`` (data object) or
        ``Kind.DIRECTORY`` (collection)."""
        return self._fs.stat(self.url(path))

    def open(self, path: str, mode: str = "rb") -> ObjectFile:
        """Opens a data object: "rb" reads, "wb" writes a new version that
        replaces the object only when the file is closed."""
        return self._fs.open(self.url(path), mode)

    def download(self, path: str, local_path: str, *, recursive: bool = False,
                 progress: Optional[Progress] = None, jobs: int = _fs.DEFAULT_JOBS) -> TransferStats:
        """Copies a data object (or, ``recursive``, a collection) to ``local_path``."""
        return self._fs.copy(self.url(path), local_path, recursive=recursive, progress=progress,
                             jobs=jobs)

    def upload(self, local_path: str, path: str, *, recursive: bool = False,
               progress: Optional[Progress] = None, jobs: int = _fs.DEFAULT_JOBS) -> TransferStats:
        """Copies ``local_path`` (a file, or ``recursive`` a tree) to ``path``."""
        return self._fs.copy(local_path, self.url(path), recursive=recursive, progress=progress,
                             jobs=jobs)

    def walk(self, path: str = "", **options: Any) -> _fs.Walk:
        """Every entry below ``path``, in ``WalkBatch`` records."""
        return self._fs.walk(self.url(path), **options)

    def walk_entries(self, path: str = "", *, onerror: Optional[Callable[[WalkError], None]] = None,
                     **options: Any) -> Iterator[Entry]:
        """As :meth:`walk`, one :class:`ferry.Entry` at a time."""
        return self._fs.walk_entries(self.url(path), onerror=onerror, **options)

    def metadata(self, path: str = "") -> List[Avu]:
        """The AVUs on a data object or collection."""
        return [Avu(*t) for t in self._fs._raw.irods_metadata(self.url(path))]

    def add_metadata(self, path: str, attribute: str, value: str, units: str = "") -> None:
        """Adds one AVU (not sent twice: a failure after sending may leave it added)."""
        self._fs._raw.irods_add_metadata(self.url(path), attribute, value, units)

    def remove_metadata(self, path: str, attribute: str, value: str, units: str = "") -> None:
        """Removes one AVU."""
        self._fs._raw.irods_remove_metadata(self.url(path), attribute, value, units)

    def access(self, path: str = "") -> List[Access]:
        """Who may do what on a data object or collection."""
        return [Access(*t) for t in self._fs._raw.irods_access(self.url(path))]

    def set_access(self, path: str, user: str, level: str, *, recursive: bool = False) -> None:
        """Gives ``user`` "read", "write" or "own" on ``path`` ("null" takes it away);
        ``recursive`` for a collection and everything in it."""
        self._fs._raw.irods_set_access(self.url(path), user, level, recursive=recursive)

    def close(self) -> None:
        """Lets go of the connections (open files keep theirs until closed)."""
        self._fs.close()

    def __repr__(self) -> str:
        return f"<ferry.irods.IrodsClient {self._base}{' closed' if self.closed else ''}>"


Target = Union[IrodsClient, str]
"""An IrodsClient, or an irods:// URL to connect to for one call."""


def _connect(target: Target, runtime: Optional[_core.Runtime]) -> Tuple[IrodsClient, List[Any]]:
    return _connect_target(target, IrodsClient, "irods", runtime, _fs._CALL_THREADS,
                           lambda url, rt: IrodsClient(url, runtime=rt))


def open(target: Target, path: str, mode: str = "rb", *,  # noqa: A001 (like io.open)
         runtime: Optional[_core.Runtime] = None) -> ObjectFile:
    """:meth:`IrodsClient.open` on a client or a URL (the file closes what was made for it)."""
    core_mode = _core_mode(mode)
    client, owned = _connect(target, runtime)
    return _open_owning(owned, mode, lambda: client._fs._raw.open(client.url(path), core_mode))


def download(target: Target, path: str, local_path: str, *, recursive: bool = False,
             progress: Optional[Progress] = None,
             runtime: Optional[_core.Runtime] = None) -> TransferStats:
    """:meth:`IrodsClient.download` on a client or a URL."""
    return _calling(_connect(target, runtime),
                    lambda c: c.download(path, local_path, recursive=recursive, progress=progress))


def upload(target: Target, local_path: str, path: str, *, recursive: bool = False,
           progress: Optional[Progress] = None,
           runtime: Optional[_core.Runtime] = None) -> TransferStats:
    """:meth:`IrodsClient.upload` on a client or a URL."""
    return _calling(_connect(target, runtime),
                    lambda c: c.upload(local_path, path, recursive=recursive, progress=progress))


# A walk of irods:// URLs is the protocol-neutral one.
walk = _fs.walk
walk_entries = _fs.walk_entries
