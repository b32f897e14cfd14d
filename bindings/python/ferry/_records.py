"""Python records for what ferry lists: :class:`Kind` and :class:`Entry`.

The wire records (``ferry.records_pb2.WalkEntry``, bytes paths and integer
file types, as C++ and Java share them) stay the fast path of
``FileSystems.walk`` batches; these are what a Python user gets one entry
at a time: ``str`` paths (``os.fsdecode``: a name that is not UTF-8 keeps
its bytes as surrogate escapes, and ``path_bytes`` gives them back
exactly), the kind as an enum with names, a readable repr. This module only
adapts types; every field comes from C++ unchanged.
"""

import enum
import os
from typing import TYPE_CHECKING, Any, Dict, NamedTuple

if TYPE_CHECKING:
    from ferry import records_pb2

__all__ = ["Entry", "Kind"]


class Kind(str, enum.Enum):
    """What an entry is. A ``str`` too (``Kind.FILE == "file"``), so code
    comparing with the names ``stat()`` used to answer keeps working."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    BLOCK_DEVICE = "block_device"
    CHAR_DEVICE = "char_device"
    SOCKET = "socket"
    FIFO = "fifo"
    OTHER = "other"  # something else the protocol has (stat() of a device on some)
    UNKNOWN = "unknown"

    def __repr__(self) -> str:
        return f"Kind.{self.name}"

    __str__ = str.__str__  # "file", as format() and f-strings show it


# records.proto's FileType numbers (NFS's ftype3; wire numbers, never
# renumbered) <-> Kind. Written out rather than read from records_pb2, which
# this module does not import (ferry/_pb.py says why); test_records checks
# them against it.
_FILE_TYPE_UNSPECIFIED = 0
_KIND_OF_TYPE = {
    1: Kind.FILE,  # FILE_TYPE_REGULAR
    2: Kind.DIRECTORY,  # FILE_TYPE_DIRECTORY
    3: Kind.BLOCK_DEVICE,  # FILE_TYPE_BLOCK_DEVICE
    4: Kind.CHAR_DEVICE,  # FILE_TYPE_CHAR_DEVICE
    5: Kind.SYMLINK,  # FILE_TYPE_SYMLINK
    6: Kind.SOCKET,  # FILE_TYPE_SOCKET
    7: Kind.FIFO,  # FILE_TYPE_FIFO
}
_TYPE_OF_KIND = {kind: number for number, kind in _KIND_OF_TYPE.items()}

# The keys stat() answered as a dict before it answered an Entry.
_STAT_KEYS = {"url": "path", "kind": "kind", "size": "size", "mtime_ns": "mtime_ns",
              "mode": "mode", "id": "fileid"}


class Entry(NamedTuple):
    """One file, directory or other entry: what ``walk_entries``, ``list``
    and ``stat`` answer. ``path``: relative to the walked directory (walk),
    the name (list), the URL asked about (stat)."""

    path: str
    kind: Kind
    size: int = 0
    mtime_ns: int = 0  # nanoseconds since the Unix epoch; 0 where unknown
    mode: int = 0  # permission bits
    uid: int = 0
    gid: int = 0
    fileid: int = 0  # the server's inode number, 0 where there is none

    @property
    def path_bytes(self) -> bytes:
        """The path exactly as the server listed it."""
        return os.fsencode(self.path)

    @property
    def name(self) -> str:
        """The last component of ``path``."""
        return self.path.rstrip("/").rpartition("/")[2]

    @property
    def type(self) -> int:
        """``kind`` as records.proto's FileType number (0 for OTHER/UNKNOWN)."""
        return _TYPE_OF_KIND.get(self.kind, _FILE_TYPE_UNSPECIFIED)

    def is_dir(self) -> bool:
        return self.kind is Kind.DIRECTORY

    def is_file(self) -> bool:
        return self.kind is Kind.FILE

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        # entry["size"], as stat()'s dict answered; e[0] still indexes.
        if isinstance(key, str):
            try:
                return getattr(self, _STAT_KEYS[key])
            except KeyError:
                raise KeyError(key) from None
        return tuple.__getitem__(self, key)

    @classmethod
    def from_record(cls, e: "records_pb2.WalkEntry") -> "Entry":
        """The entry a records.proto WalkEntry describes."""
        return cls(os.fsdecode(e.path), _KIND_OF_TYPE.get(e.type, Kind.UNKNOWN), e.size,
                   e.mtime_ns, e.mode, e.uid, e.gid, e.fileid)

    @classmethod
    def from_stat(cls, d: Dict[str, Any]) -> "Entry":
        """The entry of ``_core._FileSystems.stat``'s dict."""
        return cls(d["url"], Kind(d["kind"]), d["size"], d["mtime_ns"], d["mode"],
                   fileid=d["id"])
