"""ferry: async parallel-transfer and caching primitives, from Python.

A thin layer over ferry's C++ library (the compiled ``ferry._core``):

- :class:`Runtime` -- the threads and memory budget everything runs on;
  a context manager.
- :class:`TtlCache` -- a thread-safe TTL cache of Python objects with
  single-flight loading, negative caching and refresh-ahead; a
  ``collections.abc.MutableMapping``.
- :class:`Error` and its subclasses -- every C++ status becomes one of them,
  also an instance of the matching builtin (``FileNotFoundError``,
  ``FileExistsError``, ``IsADirectoryError``, ``NotADirectoryError``,
  ``PermissionError``, ``TimeoutError``, ``ConnectionError``, ``ValueError``).
- :mod:`ferry.nfs` -- ``walk`` / ``walk_entries``: a parallel NFS tree walk
  streaming ``WalkBatch`` records; ``NfsClient``, ``open``, ``download``,
  ``upload``: NFS files and parallel whole-file copies.
- :mod:`ferry.s3` -- ``S3Client``, ``open``, ``download``, ``upload``: S3
  objects as files and parallel multipart transfers.
- :mod:`ferry.irods` -- ``IrodsClient``: iRODS data objects as files,
  parallel transfers, metadata (AVUs) and ACLs.
- :class:`ObjectFile` -- the binary file (``io.RawIOBase``) both open.
- :class:`FileSystems`, :func:`copy`, :func:`open`, :func:`walk`,
  :func:`walk_entries`, :func:`stat` -- one front for every place ferry
  reaches, by URL (local paths, s3://, nfs://, irods://): files, walks, and
  copies of files and trees between any two of them on the C++ engine.
- :class:`Entry`, :class:`Kind` -- what walks, listings and stat answer:
  ``str`` paths (``path_bytes`` for the exact bytes), kinds by name.
- :mod:`ferry.fsspec` -- ``FerryFileSystem``: ferry as an fsspec
  filesystem (``irods://``, ``nfs://``, ``ferry+s3://`` in pandas, pyarrow,
  Dask).
- :mod:`ferry.records_pb2` -- the cross-language records (walk batches,
  transfer stats, bench results), generated from ``records.proto``.

The GIL is released around every blocking call; Python callbacks (loaders,
progress) run with the GIL held and their exceptions propagate to the
caller. Transfers return ``ferry.records_pb2.TransferStats``.
"""

from ferry._core import (
    AlreadyExistsError,
    DeadlineExceededError,
    Error,
    InvalidArgumentError,
    IsDirectoryError,
    ManualClock,
    MemoryBudget,
    MemoryTicket,
    NotDirectoryError,
    NotFoundError,
    PermissionDeniedError,
    ProtocolError,
    Runtime,
    TtlCacheStats,
    UnauthenticatedError,
    UnavailableError,
)

from ferry._files import ObjectFile  # noqa: E402  (after _core: these import from it)
from ferry._cache import TtlCache  # noqa: E402
from ferry._records import Entry, Kind  # noqa: E402
from ferry import _pb, irods, nfs, s3  # noqa: E402
from ferry._fs import (FileSystems, RefusedEntryWarning, Walk, copy, open, stat, walk,  # noqa: E402
                       walk_entries)

__version__ = "0.1.0"


def __getattr__(name: str):  # PEP 562
    # ferry.records_pb2 without an import of it: loaded on first use
    # (ferry/_pb.py says why it is not imported with the package).
    if name == "records_pb2":
        return _pb.records()
    raise AttributeError(f"module 'ferry' has no attribute {name!r}")

__all__ = [
    "AlreadyExistsError",
    "DeadlineExceededError",
    "Entry",
    "Error",
    "FileSystems",
    "InvalidArgumentError",
    "IsDirectoryError",
    "Kind",
    "ManualClock",
    "MemoryBudget",
    "MemoryTicket",
    "NotDirectoryError",
    "NotFoundError",
    "ObjectFile",
    "PermissionDeniedError",
    "ProtocolError",
    "RefusedEntryWarning",
    "Runtime",
    "TtlCache",
    "TtlCacheStats",
    "UnauthenticatedError",
    "UnavailableError",
    "Walk",
    "__version__",
    "copy",
    "irods",
    "nfs",
    "open",
    "s3",
    "stat",
    "walk",
    "walk_entries",
]
