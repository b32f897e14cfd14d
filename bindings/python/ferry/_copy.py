"""ferry.copy: one file between a local path and S3 or NFS, picked by the
URL scheme; the transfer itself is the C++ one (S3Client::Download/Upload,
nfs::CopyNfsToLocal/CopyLocalToNfs)."""

import contextlib
from typing import Optional

from ferry import _core, nfs, s3
from ferry._files import Progress
from ferry.records_pb2 import TransferStats

# Blocking threads of the Runtime ferry.copy makes when given none: one
# per NFS chunk in flight (ferry::nfs::CopyOptions::parallelism's default).
_COPY_THREADS = nfs.DEFAULT_PARALLELISM


def _scheme(location: str) -> str:
    for scheme in ("s3", "nfs"):
        if location.startswith(scheme + "://"):
            return scheme
    if "://" in location:
        raise ValueError(f"copy: unsupported URL scheme in {location!r} (s3://, nfs:// or a path)")
    return "local"


def copy(src: str, dst: str, *, progress: Optional[Progress] = None,
         runtime: Optional[_core.Runtime] = None,
         s3_client: Optional["s3.S3Client"] = None) -> TransferStats:
    """Copies ``src`` to ``dst``: one is a local path, the other an
    ``s3://bucket/key`` or ``nfs://host/export/path?...`` URL. Returns the
    transfer's ``records_pb2.TransferStats``.

    S3 goes through ``s3_client`` if given, else a client configured from
    the AWS variables. Without ``runtime``, a Runtime is made for the call.
    ``progress(bytes_done, bytes_total)`` runs on this thread; an exception
    raised there stops the copy and is re-raised."""
    kinds = (_scheme(src), _scheme(dst))
    if (kinds[0] == "local") == (kinds[1] == "local"):
        raise ValueError(f"copy: exactly one of {src!r} and {dst!r} must be an s3:// or nfs:// URL")
    remote = kinds[0] if kinds[0] != "local" else kinds[1]
    downloading = kinds[0] != "local"
    with contextlib.ExitStack() as stack:
        if remote == "s3":
            client = s3_client
            if client is None:
                if runtime is None:
                    runtime = stack.enter_context(_core.Runtime())
                client = stack.enter_context(s3.S3Client(runtime=runtime))
            if downloading:
                return client.download(src, dst, progress=progress)
            return client.upload(src, dst, progress=progress)
        if runtime is None:
            runtime = stack.enter_context(_core.Runtime(blocking_threads=_COPY_THREADS))
        nfs_client, name = nfs.NfsClient._of_file(src if downloading else dst, runtime=runtime)
        stack.enter_context(nfs_client)
        if downloading:
            return nfs_client.download(name, dst, progress=progress)
        return nfs_client.upload(src, name, progress=progress)
