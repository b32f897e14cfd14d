"""Type stubs for ferry._core, the compiled half of the ferry package."""

from datetime import timedelta
from typing import Any, Callable, Optional, TypeVar, Union, overload

_Seconds = Union[int, float, timedelta]
"""A duration: seconds (int or float) or a datetime.timedelta."""

_T = TypeVar("_T")

# ---------------------------------------------------------------- errors

class Error(Exception):
    """Base of every error ferry raises. `code` names the absl status code
    ("NotFound", "Unavailable", ...); str(e) is the C++ status message."""

    code: str
    def __init__(self, *args: object) -> None: ...

class NotFoundError(Error, FileNotFoundError): ...
class AlreadyExistsError(Error, FileExistsError): ...
class IsDirectoryError(Error, IsADirectoryError): ...
class NotDirectoryError(Error, NotADirectoryError): ...
class PermissionDeniedError(Error, PermissionError): ...
class UnauthenticatedError(Error, PermissionError): ...
class DeadlineExceededError(Error, TimeoutError): ...
class UnavailableError(Error, ConnectionError): ...
class InvalidArgumentError(Error, ValueError): ...
class ProtocolError(Error):
    """DataLoss: a malformed or truncated reply from a peer."""

def _raise_status(code: str, message: str) -> None:
    """Raises the exception ferry raises for status (code name, message)."""

# ---------------------------------------------------------------- clock

class ManualClock:
    """A clock that moves only when told to (for TtlCache tests)."""

    def __init__(self, start: float = 3600.0) -> None: ...
    def now(self) -> float: ...
    def advance(self, by: _Seconds) -> None: ...
    def set(self, seconds: float) -> None: ...

# ---------------------------------------------------------------- runtime

class MemoryTicket:
    """Bytes held under a MemoryBudget until release()."""

    @property
    def nbytes(self) -> int: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> None: ...
    def __enter__(self) -> "MemoryTicket": ...
    def __exit__(self, *exc: object) -> bool: ...

class MemoryBudget:
    """The bound on bytes held by all transfers of a Runtime."""

    @property
    def capacity(self) -> int: ...
    @property
    def in_use(self) -> int: ...
    @property
    def peak(self) -> int: ...
    @property
    def waiters(self) -> int: ...
    def acquire(self, nbytes: int, timeout: Optional[_Seconds] = None) -> MemoryTicket:
        """Blocks (GIL released) until `nbytes` are free. TimeoutError after
        `timeout`; ValueError if `nbytes` can never fit."""
    def try_acquire(self, nbytes: int) -> Optional[MemoryTicket]: ...

class Runtime:
    """ferry's threads and memory budget; a context manager."""

    def __init__(
        self,
        *,
        io_threads: int = 1,
        blocking_threads: int = 4,
        memory_budget_bytes: int = 512 << 20,
        idle_buffer_bytes: int = -1,
        read_ahead_bytes: int = -1,
    ) -> None: ...
    def close(self) -> None:
        """Stops the threads now. Raises ferry.Error (FailedPrecondition)
        while a MemoryTicket, a walk, a client or an open file uses it."""
    @property
    def closed(self) -> bool: ...
    @property
    def io_threads(self) -> int: ...
    @property
    def blocking_threads(self) -> int: ...
    @property
    def memory_budget_bytes(self) -> int: ...
    @property
    def idle_buffer_bytes(self) -> int:
        """Cap on idle transfer buffers kept for reuse (-1: a quarter of
        the budget; 0: none)."""
    @property
    def read_ahead_bytes(self) -> int:
        """Cap on the bytes all open files' read-ahead holds, taken only
        when free (-1: a quarter of the budget; 0: no read-ahead)."""
    @property
    def memory_budget(self) -> MemoryBudget: ...
    def __enter__(self) -> "Runtime": ...
    def __exit__(self, *exc: object) -> bool: ...

# ---------------------------------------------------------------- cache

class TtlCacheStats:
    """What a TtlCache counted since it was made (a snapshot)."""

    @property
    def hits(self) -> int: ...
    @property
    def negative_hits(self) -> int: ...
    @property
    def misses(self) -> int: ...
    @property
    def loads(self) -> int: ...
    @property
    def load_failures(self) -> int: ...
    @property
    def refreshes(self) -> int: ...
    @property
    def evictions(self) -> int: ...
    @property
    def expirations(self) -> int: ...
    @property
    def invalidations(self) -> int: ...
    @property
    def loads_in_flight(self) -> int: ...
    def _asdict(self) -> dict[str, int]: ...

_Loader = Callable[[str], Any]

class TtlCache:
    """A thread-safe, bounded TTL cache of Python objects keyed by str, with
    single-flight loading, negative caching of FileNotFoundError and
    optional refresh-ahead on a Runtime's threads."""

    def __init__(
        self,
        loader: Optional[_Loader] = None,
        *,
        refresh_time: Optional[_Seconds] = 30.0,
        refresh_after: Optional[_Seconds] = None,
        negative_refresh_time: Optional[_Seconds] = 1.0,
        max_entries: int = 100_000,
        max_weight: Optional[int] = None,
        weigher: Optional[Callable[[str, Any], int]] = None,
        refresh_time_for: Optional[Callable[[str, Any], Optional[_Seconds]]] = None,
        runtime: Optional[Runtime] = None,
        clock: Optional[ManualClock] = None,
        shards: int = 0,
    ) -> None: ...
    def get(self, key: str, loader: Optional[_Loader] = None) -> Any: ...
    @overload
    def get_if_present(self, key: str) -> Any: ...
    @overload
    def get_if_present(self, key: str, default: _T) -> Any: ...
    def put(self, key: str, value: Any, refresh_time: Optional[_Seconds] = None) -> None: ...
    def invalidate(self, key: str) -> bool: ...
    def invalidate_prefix(self, prefix: str) -> int: ...
    def invalidate_if(self, predicate: Callable[[str], bool]) -> int: ...
    def invalidate_all(self) -> int: ...
    def purge_expired(self) -> int: ...
    def stats(self) -> TtlCacheStats: ...
    def __len__(self) -> int: ...
    @property
    def weight(self) -> int: ...
    @property
    def shard_count(self) -> int: ...

# ---------------------------------------------------------------- nfs walk

# ---------------------------------------------------------------- filesystems

class _Walk:
    """A walk yielding records.proto WalkBatch bytes; use ferry.walk(),
    which decodes them."""

    def __iter__(self) -> "_Walk": ...
    def __next__(self) -> bytes:
        """The next serialized WalkBatch (GIL released while waiting);
        raises the walk's error, if any, at the end."""
    def close(self) -> None:
        """Stops the walk and waits until it has stopped. Idempotent."""
    @property
    def closed(self) -> bool: ...
    @property
    def stats(self) -> Optional[dict[str, Any]]:
        """directories, entries, bytes, errors, requests, retries, elapsed
        (seconds), stopped_early: once the walk ended, else None."""

class _FileSystems:
    """Every filesystem ferry reaches, by URL; use ferry.FileSystems."""

    def __init__(
        self,
        *,
        runtime: Runtime,
        s3_chunk_bytes: int = 0,
        s3_concurrency: int = 0,
        s3_make_bucket: bool = False,
        nfs_parallelism: int = 0,
        nfs_connections: int = 0,
        irods_parallelism: int = 0,
        irods_connections: int = 0,
        timeout: Optional[float] = None,
        s3_endpoint_url: str = "",
        s3_profile: str = "",
        s3_region: str = "",
        s3_no_sign_request: bool = False,
        s3_access_key_id: str = "",
        s3_secret_access_key: str = "",
        s3_session_token: str = "",
        irods_client_user: str = "",
        irods_password: str = "",
    ) -> None: ...
    def stat(self, url: str) -> dict[str, Any]: ...
    def open(self, url: str, mode: str = "r", *, size: int = -1) -> _OpenFile: ...
    def list(self, url: str) -> bytes:
        """The directory's own entries as one records.proto WalkBatch."""
    def walk(self, url: str, *, batch_entries: int = 4096, max_in_flight: int = 256) -> _Walk: ...
    def mkdir(self, url: str, *, parents: bool = False) -> None: ...
    def remove(self, url: str) -> None: ...
    def rmdir(self, url: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...
    def copy(
        self,
        src: str,
        dst: str,
        *,
        recursive: bool = False,
        progress: Optional[Callable[[int, Optional[int]], Any]] = None,
        jobs: int = 16,
        chunk_bytes: int = 0,
        parallelism: int = 0,
    ) -> bytes: ...
    def sync(
        self,
        src: str,
        dst: str,
        *,
        compare: str = "size_and_time",
        delete: bool = True,
        dry_run: bool = False,
        max_delete: int = -1,
        include: list[str] = ...,
        exclude: list[str] = ...,
        filter: list[str] = ...,
        progress: Optional[Callable[[int, Optional[int]], Any]] = None,
        jobs: int = 16,
    ) -> dict[str, Any]: ...
    # iRODS's own calls (an irods:// URL, else InvalidArgumentError).
    def irods_add_metadata(self, url: str, attribute: str, value: str, units: str = "") -> None: ...
    def irods_remove_metadata(self, url: str, attribute: str, value: str, units: str = "") -> None: ...
    def irods_metadata(self, url: str) -> list[tuple[str, str, str]]: ...
    def irods_set_access(self, url: str, user: str, level: str, *, recursive: bool = False) -> None: ...
    def irods_access(self, url: str) -> list[tuple[str, str]]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

# ---------------------------------------------------------------- files

class _OpenFile:
    """One descriptor of a C++ fd table (S3 ObjectFileTable or NFS
    FdTable<NfsFile>); the offset lives in C++. Wrapped by
    ferry.ObjectFile (io.RawIOBase). Calls release the GIL."""

    def read(self, size: int = -1) -> bytes: ...
    def readall(self) -> bytes: ...
    def readinto(self, buffer: Any) -> int: ...
    def write(self, data: Any) -> int: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def close(self) -> None:
        """Idempotent. For a written file: completes the S3 upload / NFS
        COMMIT and raises if that fails."""
    @property
    def closed(self) -> bool: ...
    @property
    def readable(self) -> bool: ...
    @property
    def writable(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def fd(self) -> int: ...

_Progress = Callable[[int, Optional[int]], Any]
"""progress(bytes_done, bytes_total or None), called on the calling thread."""

# ---------------------------------------------------------------- nfs files

class _NfsClient:
    """A mounted NFS export (ferry::nfs::NfsClient + FdTable<NfsFile>); use
    ferry.nfs.NfsClient. Connects in the constructor."""

    def __init__(
        self,
        url: str,
        *,
        runtime: Runtime,
        uid: Optional[int] = None,
        gid: Optional[int] = None,
        connections: int = 4,
        split_file: bool = False,
    ) -> None: ...
    def open(self, path: str, mode: str, file_mode: int = 0o644) -> _OpenFile:
        """mode "r" (existing file) or "w" (create or truncate)."""
    def download(
        self,
        path: str,
        local_path: str,
        *,
        progress: Optional[_Progress] = None,
        parallelism: int = 16,
        chunk_bytes: int = 0,
    ) -> bytes:
        """records.proto TransferStats bytes."""
    def upload(
        self,
        local_path: str,
        path: str,
        *,
        progress: Optional[_Progress] = None,
        parallelism: int = 16,
        chunk_bytes: int = 0,
        file_mode: int = 0o644,
    ) -> bytes:
        """records.proto TransferStats bytes."""
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def url(self) -> str: ...
    @property
    def file_name(self) -> str:
        """With split_file: the file's name in the connected directory."""

# ---------------------------------------------------------------- s3

class _S3Client:
    """ferry::s3::S3Client (store, downloads, ObjectFileTable, transfers);
    use ferry.s3.S3Client. Keyword arguments stand in for the AWS
    variables they name; `context` is an iRODS-style "K=V;K=V" string."""

    def __init__(
        self,
        *,
        runtime: Runtime,
        endpoint: Optional[str] = None,
        access_key_id: Optional[str] = None,
        secret_access_key: Optional[str] = None,
        session_token: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        context: Optional[str] = None,
    ) -> None: ...
    def open(self, url: str, mode: str, size: Optional[int] = None) -> _OpenFile:
        """mode "r" or "w"; url s3://bucket/key."""
    def download(
        self, url: str, local_path: str, *, progress: Optional[_Progress] = None
    ) -> bytes:
        """records.proto TransferStats bytes."""
    def upload(
        self, local_path: str, url: str, *, progress: Optional[_Progress] = None
    ) -> bytes:
        """records.proto TransferStats bytes."""
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def endpoint(self) -> str: ...
