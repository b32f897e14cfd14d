"""ferry: async parallel-transfer and caching primitives, from Python.

A thin layer over ferry's C++ library (the compiled ``ferry._core``):

- :class:`Runtime` -- the threads and memory budget everything runs on;
  a context manager.
- :class:`TtlCache` -- a thread-safe TTL cache of Python objects with
  single-flight loading, negative caching and refresh-ahead.
- :class:`Error` and its subclasses -- every C++ status becomes one of them,
  also an instance of the matching builtin (``FileNotFoundError``,
  ``PermissionError``, ``TimeoutError``, ``ConnectionError``, ``ValueError``).
- :mod:`ferry.nfs` -- ``walk`` / ``walk_entries``: a parallel NFS tree walk
  streaming ``WalkBatch`` records.
- :mod:`ferry.records_pb2` -- the cross-language records (walk batches,
  transfer stats, bench results), generated from ``records.proto``.

The GIL is released around every blocking call; Python callbacks run with
the GIL held and their exceptions propagate to the caller.
"""

from ferry._core import (
    DeadlineExceededError,
    Error,
    InvalidArgumentError,
    ManualClock,
    MemoryBudget,
    MemoryTicket,
    NotFoundError,
    PermissionDeniedError,
    ProtocolError,
    Runtime,
    TtlCache,
    TtlCacheStats,
    UnauthenticatedError,
    UnavailableError,
)

from ferry import nfs  # noqa: E402  (after _core: it imports from it)

__version__ = "0.1.0"

__all__ = [
    "DeadlineExceededError",
    "Error",
    "InvalidArgumentError",
    "ManualClock",
    "MemoryBudget",
    "MemoryTicket",
    "NotFoundError",
    "PermissionDeniedError",
    "ProtocolError",
    "Runtime",
    "TtlCache",
    "TtlCacheStats",
    "UnauthenticatedError",
    "UnavailableError",
    "__version__",
]
