"""S3 objects as files, and whole-file transfers, through ferry's C++
S3Client (one endpoint: the store, shared parallel downloads, a table of
open objects and multipart uploads).

    import ferry, ferry.s3

    with ferry.Runtime() as rt, ferry.s3.S3Client(runtime=rt) as s3:   # AWS_* variables
        with s3.open("s3://bucket/big.bin", "rb") as f:    # io.RawIOBase
            f.seek(1 << 20)
            chunk = f.read(4096)
        with ferry.s3.open(s3, "s3://bucket/new.bin", "wb") as f:
            f.write(b"data")                   # uploaded when closed; raises if that fails
        stats = s3.download("s3://bucket/big.bin", "/tmp/big.bin",
                            progress=lambda done, total: print(done, total))
        s3.upload("/tmp/big.bin", "s3://bucket/copy.bin")   # records_pb2.TransferStats

Configuration is the C++ one (ferry/s3/s3_config.h): the AWS variables
(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_REGION, AWS_PROFILE) and profile files, or an
iRODS-style ``context`` string ("S3_DEFAULT_HOSTNAME=host:port;S3_PROTO=HTTP;
..."), with the keyword arguments standing in for the variables they name.

Errors: a missing object or bucket raises ``FileNotFoundError``, refused
access ``PermissionError`` (also for bad credentials), an unreachable
endpoint ``ConnectionError`` (ferry's error classes, see ``ferry.Error``).
A download lands in a temporary file renamed over the destination only when
complete; an upload that fails is aborted (no object, no orphan parts).
``progress(bytes_done, bytes_total)`` runs on the calling thread; an
exception raised there stops the transfer and is re-raised unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ferry import _core, _pb
from ferry._files import ClientWrapper, ObjectFile, Progress, _core_mode

if TYPE_CHECKING:  # decoded on first use only (ferry/_pb.py)
    from ferry.records_pb2 import TransferStats

__all__ = ["S3Client", "download", "open", "upload", "TransferStats"]
# The record classes, decoded on first access (ferry/_pb.py).
__getattr__ = _pb.reexport(__name__, ("TransferStats",))



class S3Client(ClientWrapper):
    """One S3 endpoint; a context manager. Closing it while files are open
    is safe: they keep what they need until they are closed. ``ValueError``
    for an unusable configuration (a bad endpoint URL or context value). No
    endpoint means AWS's for the region, as with the AWS CLI."""

    def __init__(self, *, runtime: _core.Runtime, endpoint: Optional[str] = None,
                 access_key_id: Optional[str] = None, secret_access_key: Optional[str] = None,
                 session_token: Optional[str] = None, region: Optional[str] = None,
                 profile: Optional[str] = None, context: Optional[str] = None) -> None:
        self._client = _core._S3Client(
            runtime=runtime, endpoint=endpoint, access_key_id=access_key_id,
            secret_access_key=secret_access_key, session_token=session_token, region=region,
            profile=profile, context=context)
        self.runtime = runtime

    @property
    def endpoint(self) -> str:
        return self._client.endpoint

    def open(self, url: str, mode: str = "rb", *, size: Optional[int] = None) -> ObjectFile:
        """Opens object ``url`` (s3://bucket/key) as a binary file. "rb":
        ``FileNotFoundError`` if it does not exist; "wb": the object is
        created or replaced when the file is closed (``size``, if known,
        is its final size). Offsets live in the C++ ObjectFileTable."""
        return ObjectFile(self._client.open(url, _core_mode(mode), size), mode)

    def download(self, url: str, local_path: str, *,
                 progress: Optional[Progress] = None) -> TransferStats:
        """Downloads object ``url`` to ``local_path`` (created or replaced)."""
        return _pb.records().TransferStats.FromString(
            self._client.download(url, local_path, progress=progress))

    def upload(self, local_path: str, url: str, *,
               progress: Optional[Progress] = None) -> TransferStats:
        """Uploads ``local_path`` as object ``url`` (created or replaced)."""
        return _pb.records().TransferStats.FromString(
            self._client.upload(local_path, url, progress=progress))

    def __repr__(self) -> str:
        return f"<ferry.s3.S3Client {self.endpoint}{' closed' if self.closed else ''}>"


def open(client: S3Client, url: str, mode: str = "rb", *,  # noqa: A001 (like io.open)
         size: Optional[int] = None) -> ObjectFile:
    """``client.open(url, mode, size=size)``."""
    return client.open(url, mode, size=size)


def download(client: S3Client, url: str, local_path: str, *,
             progress: Optional[Progress] = None) -> TransferStats:
    """``client.download(url, local_path, progress=progress)``."""
    return client.download(url, local_path, progress=progress)


def upload(client: S3Client, local_path: str, url: str, *,
           progress: Optional[Progress] = None) -> TransferStats:
    """``client.upload(local_path, url, progress=progress)``."""
    return client.upload(local_path, url, progress=progress)
