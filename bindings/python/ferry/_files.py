"""ObjectFile: a binary file object (io.RawIOBase) over one descriptor of
a C++ fd table -- an S3 object (ferry::ObjectFileTable) or an NFS file
(ferry::FdTable<NfsFile>). ferry.s3.open and ferry.nfs.open return them.

The offset lives in C++; every method is one call into ferry._core, with
the GIL released while it waits on the network. Wrap one in
io.BufferedReader / io.BufferedWriter (or io.TextIOWrapper over that) for
line-by-line or text access.
"""

import io
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, TypeVar

from ferry import _core

Progress = Callable[[int, Optional[int]], Any]
"""progress(bytes_done, bytes_total): bytes written to the destination so
far and the whole size (None if unknown)."""

_MODES = {"rb": "r", "wb": "w"}


def _close_all(owned: Iterable[Any]) -> None:
    """Closes what a call opened for itself (a client, a runtime), in order."""
    for thing in owned:
        thing.close()


_C = TypeVar("_C", bound="Closing")


class Closing:
    """A mixin for what has ``close()``: ``with thing:`` closes it at the end."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> bool:
        self.close()
        return False


class ClientWrapper(Closing):
    """A Python client over one _core client (``self._client``): ``close()``
    lets it go (open files keep what they need until they are closed) and
    ``closed`` says whether it was."""

    _client: Any

    def close(self) -> None:
        self._client.close()

    @property
    def closed(self) -> bool:
        return self._client.closed


def _connect_target(target: Any, client_type: type, scheme: str,
                    runtime: Optional[_core.Runtime], blocking_threads: int,
                    make: Callable[[str, _core.Runtime], Any]) -> Tuple[Any, List[Any]]:
    """The client for `target` (a `client_type`, or a URL that `make(url,
    runtime)` connects, on a Runtime of its own unless `runtime` is given),
    and what was made for it, to close after (see _close_all)."""
    if isinstance(target, client_type):
        return target, []
    if not isinstance(target, str):
        raise TypeError(f"expected an {client_type.__name__} or an {scheme}:// URL, "
                        f"got {type(target).__name__}")
    owned: List[Any] = []
    if runtime is None:
        runtime = _core.Runtime(blocking_threads=blocking_threads)
        owned.append(runtime)
    try:
        client = make(target, runtime)
    except BaseException:
        _close_all(owned)
        raise
    return client, [client] + owned


_R = TypeVar("_R")


def _calling(connected: Tuple[Any, List[Any]], call: Callable[[Any], _R]) -> _R:
    """`call(client)` on a (client, owned) pair from _connect_target; then
    closes what was made for the call."""
    client, owned = connected
    try:
        return call(client)
    finally:
        _close_all(owned)


def _open_owning(owned: List[Any], mode: str, open_raw: Callable[[], Any]) -> "ObjectFile":
    """An ObjectFile over `open_raw()` that closes `owned` when it closes
    (or at once, if opening fails)."""
    try:
        raw = open_raw()
    except BaseException:
        _close_all(owned)
        raise
    return ObjectFile(raw, mode, _owned=owned)


def _core_mode(mode: str) -> str:
    """"rb" -> "r", "wb" -> "w"; ValueError for any other mode."""
    try:
        return _MODES[mode]
    except KeyError:
        raise ValueError(f"mode must be 'rb' or 'wb' (binary, read or write), got {mode!r}") \
            from None


class ObjectFile(io.RawIOBase):
    """A binary, unbuffered file on S3 or NFS; a context manager.

    read / readinto / readall / write / seek / tell / close as for a file
    opened with ``open(path, "rb" or "wb", buffering=0)``: a short read means
    end of file, and ``seek`` may go past the end. Closing a written file
    finishes it -- an S3 upload completes (only then does the object
    exist), an NFS file is COMMITted -- and raises if that fails.
    """

    def __init__(self, raw: "_core._OpenFile", mode: str, _owned: Sequence[Any] = ()) -> None:
        super().__init__()
        self._raw = raw
        self._mode = mode
        # What this file alone uses (a client and Runtime made for it),
        # closed after it, in order.
        self._owned = list(_owned)

    @property
    def name(self) -> str:
        """The object's URL (s3://bucket/key, nfs://host/export/path)."""
        return self._raw.name

    @property
    def mode(self) -> str:
        return self._mode

    def readable(self) -> bool:
        self._checkClosed()
        return self._raw.readable

    def writable(self) -> bool:
        self._checkClosed()
        return self._raw.writable

    def seekable(self) -> bool:
        self._checkClosed()
        return True

    def _check(self, readable: bool) -> None:
        self._checkClosed()
        if readable and not self._raw.readable:
            raise io.UnsupportedOperation(f"{self.name}: not open for reading")
        if not readable and not self._raw.writable:
            raise io.UnsupportedOperation(f"{self.name}: not open for writing")

    def read(self, size: Optional[int] = -1) -> bytes:
        self._check(readable=True)
        return self._raw.read(-1 if size is None else size)

    def readall(self) -> bytes:
        self._check(readable=True)
        return self._raw.readall()

    def readinto(self, buffer) -> int:  # type: ignore[override]
        self._check(readable=True)
        return self._raw.readinto(buffer)

    def write(self, data) -> int:  # type: ignore[override]
        self._check(readable=False)
        return self._raw.write(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._checkClosed()
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        self._checkClosed()
        return self._raw.seek(0, io.SEEK_CUR)

    def truncate(self, size: Optional[int] = None) -> int:
        raise io.UnsupportedOperation(f"{self.name}: truncate is not supported")

    def fileno(self) -> int:
        raise io.UnsupportedOperation(f"{self.name}: not an OS file descriptor")

    def close(self) -> None:
        """Closes the descriptor; for a written file, finishes the upload
        (S3) or COMMITs (NFS) and raises if that fails. Idempotent."""
        if self.closed:
            return
        try:
            self._raw.close()
        finally:
            super().close()
            owned, self._owned = self._owned, []
            _close_all(owned)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"fd={self._raw.fd}"
        return f"<ferry.ObjectFile name={self.name!r} mode={self._mode!r} {state}>"
