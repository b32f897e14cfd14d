"""ferry as an fsspec filesystem: what pandas, pyarrow, Dask and xarray
read and write through.

    import pandas as pd
    df = pd.read_parquet("irods://rods@irods.example.org:1247/tempZone/home/rods/t.parquet",
                         storage_options={"timeout": 30})
    pd.read_csv("nfs://server/export/data.csv")
    fs = fsspec.filesystem("ferry+s3", endpoint_url="http://127.0.0.1:7070")

    import pyarrow.dataset as ds, pyarrow.fs
    from fsspec.implementations.arrow import ArrowFSWrapper  # noqa (the other way round)
    arrow_fs = pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fsspec.filesystem("nfs")))
    ds.dataset("server/export/tables", filesystem=arrow_fs, format="parquet")

Protocols (registered through the ``fsspec.specs`` entry points of the
package): ``irods``, ``nfs``, ``ferry+s3`` (ferry's S3 client; ``s3`` stays
s3fs's) and ``ferry+file`` (local paths, through ferry's own local
filesystem). As fsspec's own filesystems do, paths inside one are the URL
without its scheme (``host:port/zone/home/rods/t.parquet``,
``server/export/a.bin``, ``bucket/key``, ``/tmp/x``).

Everything goes to :class:`ferry.FileSystems`: files are ferry's files
(reads move only the bytes asked for), ``find`` is ferry's parallel walk,
``cat_ranges`` reads its ranges in parallel, ``put``/``get``/``copy`` each
file through the C++ copy engine (remote to remote straight through).
storage_options are FileSystems' arguments (``endpoint_url``, ``key``,
``secret``, ``token``, ``profile``, ``region``, ``anon``, ``timeout``,
``irods_password``, ``irods_client_user``, the
``*_parallelism``/``*_connections``...; s3fs's ``client_kwargs`` with
``endpoint_url``/``region_name`` too) and ``url_options``, the query every
URL gets (``{"mountport": 20048}`` for an NFS server without portmapper).
"""

import concurrent.futures
import datetime
import io
import os
from typing import Any, Dict, List, Optional

from fsspec.spec import AbstractFileSystem
from fsspec.utils import stringify_path

from ferry import _core
from ferry._fs import FileSystems
from ferry._records import Entry, Kind

__all__ = ["FerryFileSystem", "FerryLocalFileSystem", "FerryS3FileSystem", "IrodsFileSystem",
           "NfsFileSystem"]

# Read buffer of a file opened "rb" (a seek drops it; a read larger than
# it goes straight through): large enough that line-by-line reading costs
# few requests, small enough that a random read moves little extra.
DEFAULT_BLOCK_SIZE = 1 << 20
# Ranges of one cat_ranges call read at once (each on its own open file).
RANGE_THREADS = 16

_TYPES = {Kind.FILE: "file", Kind.DIRECTORY: "directory"}


class FerryFileSystem(AbstractFileSystem):
    """The base of ferry's fsspec filesystems: one protocol each (ferry's
    URL scheme is ``_scheme``); thread-safe as :class:`ferry.FileSystems`."""

    protocol: Any = ("ferry",)
    _scheme = ""  # prefix turning a path of this filesystem into a ferry URL
    root_marker = ""

    def __init__(self, *, filesystems: Optional[FileSystems] = None,
                 runtime: Optional[_core.Runtime] = None, client_kwargs: Optional[dict] = None,
                 url_options: Optional[Dict[str, Any]] = None, **storage_options: Any) -> None:
        """``url_options``: the query every URL gets (NFS:
        ``{"mountport": 20048, "uid": 1000}``...: ferry's nfs:// options)."""
        super().__init__(filesystems=filesystems, runtime=runtime, client_kwargs=client_kwargs,
                         url_options=url_options, **storage_options)
        self._query = "" if not url_options else "?" + "&".join(
            f"{k}={v}" for k, v in url_options.items())
        if filesystems is None:
            options = dict(storage_options)
            for ours, theirs in (("endpoint_url", "endpoint_url"), ("region", "region_name")):
                if client_kwargs and theirs in client_kwargs:
                    options.setdefault(ours, client_kwargs[theirs])
            filesystems = FileSystems(runtime=runtime, **options)
        self.filesystems = filesystems

    # Paths and URLs.

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = stringify_path(path)
        protocols = (cls.protocol,) if isinstance(cls.protocol, str) else cls.protocol
        for prefix in [f"{p}://" for p in protocols] + ([cls._scheme] if cls._scheme else []):
            if path.startswith(prefix):
                path = path[len(prefix):]
                break
        return path.rstrip("/") or cls.root_marker

    def _url(self, path: str) -> str:
        return self._scheme + self._strip_protocol(path) + self._query

    def _join(self, parent: str, name: str) -> str:
        return f"{parent.rstrip('/')}/{name}" if parent else name

    def _details(self, name: str, e: Entry) -> Dict[str, Any]:
        return {"name": name, "size": e.size, "type": _TYPES.get(e.kind, "other"),
                "kind": e.kind, "mtime": e.mtime_ns / 1e9, "mode": e.mode, "uid": e.uid,
                "gid": e.gid, "ino": e.fileid}

    # Reading the tree.

    def info(self, path: str, **kwargs: Any) -> Dict[str, Any]:
        path = self._strip_protocol(path)
        return self._details(path, self.filesystems.stat(self._url(path)))

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> List[Any]:
        path = self._strip_protocol(path)
        try:
            entries = self.filesystems.list(self._url(path))
        except NotADirectoryError:
            out = [self.info(path)]
        else:
            out = [self._details(self._join(path, e.path), e) for e in entries]
        return out if detail else sorted(o["name"] for o in out)

    def find(self, path: str, maxdepth: Optional[int] = None, withdirs: bool = False,
             detail: bool = False, **kwargs: Any) -> Any:
        if maxdepth is not None:  # ferry's walk goes all the way down
            return super().find(path, maxdepth=maxdepth, withdirs=withdirs, detail=detail,
                                **kwargs)
        path = self._strip_protocol(path)
        out: Dict[str, Dict[str, Any]] = {}
        try:
            for e in self.filesystems.walk_entries(self._url(path)):
                if withdirs or e.kind is not Kind.DIRECTORY:
                    name = self._join(path, e.path)
                    out[name] = self._details(name, e)
            if withdirs and path:
                out[path] = self.info(path)
        except NotADirectoryError:
            out[path] = self.info(path)
        except FileNotFoundError:
            pass
        names = sorted(out)
        return {n: out[n] for n in names} if detail else names

    def modified(self, path: str) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.info(path)["mtime"], tz=datetime.timezone.utc)

    # Files.

    def _open(self, path: str, mode: str = "rb", block_size: Optional[int] = None,
              autocommit: bool = True, cache_options: Optional[dict] = None,
              **kwargs: Any) -> Any:
        if not autocommit:
            raise NotImplementedError("ferry's filesystems have no transactions")
        url = self._url(path)
        if mode == "rb":
            return io.BufferedReader(self.filesystems.open(url, "rb"),
                                     buffer_size=block_size or DEFAULT_BLOCK_SIZE)
        if mode == "xb":
            if self.exists(path):
                raise FileExistsError(f"{url}: exists")
            mode = "wb"
        if mode != "wb":
            raise NotImplementedError(f"{url}: mode {mode!r} (ferry opens 'rb', 'wb' and 'xb')")
        try:
            raw = self.filesystems.open(url, "wb")
        except FileNotFoundError:
            # As ferry-cp and fsspec's local auto_mkdir: the parents are made.
            self.makedirs(self._parent(path), exist_ok=True)
            raw = self.filesystems.open(url, "wb")
        return io.BufferedWriter(raw, buffer_size=block_size or DEFAULT_BLOCK_SIZE)

    def cat_file(self, path: str, start: Optional[int] = None, end: Optional[int] = None,
                 **kwargs: Any) -> bytes:
        with self.filesystems.open(self._url(path), "rb") as f:
            if start is None and end is None:
                return f.readall()
            size = f.seek(0, io.SEEK_END) if (start or 0) < 0 or end is None or end < 0 else None
            start = start or 0
            if start < 0:
                start = max(size + start, 0)
            if end is None:
                end = size
            elif end < 0:
                end = size + end
            if end <= start:
                return b""
            f.seek(start)
            buf = bytearray(end - start)
            view, got = memoryview(buf), 0
            while got < len(buf):
                n = f.readinto(view[got:])
                if not n:
                    break
                got += n
            return bytes(buf[:got])

    def cat_ranges(self, paths: List[str], starts: Any, ends: Any, max_gap: Any = None,
                   on_error: str = "return", **kwargs: Any) -> List[Any]:
        """The ranges read in parallel (each on its own open file; the GIL
        is released while ferry reads)."""
        if not isinstance(paths, list):
            raise TypeError("paths must be a list")
        if not isinstance(starts, list):
            starts = [starts] * len(paths)
        if not isinstance(ends, list):
            ends = [ends] * len(paths)
        if not len(paths) == len(starts) == len(ends):
            raise ValueError("paths, starts and ends must be as long")

        def one(i: int) -> Any:
            try:
                return self.cat_file(paths[i], starts[i], ends[i])
            except Exception as e:  # noqa: BLE001 - fsspec's on_error contract
                if on_error == "return":
                    return e
                raise

        with concurrent.futures.ThreadPoolExecutor(min(RANGE_THREADS, max(len(paths), 1))) as pool:
            return list(pool.map(one, range(len(paths))))

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        with self.open(path, "xb" if mode == "create" else "wb") as f:
            f.write(value)

    # Copies through the engine, one file each (fsspec's put/get/copy
    # expand the paths and call these).

    def put_file(self, lpath: str, rpath: str, callback: Any = None, mode: str = "overwrite",
                 **kwargs: Any) -> None:
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
            return
        if mode == "create" and self.exists(rpath):
            raise FileExistsError(rpath)
        self._copy(os.fspath(lpath), self._url(rpath), self._parent(rpath), callback)

    def get_file(self, rpath: str, lpath: str, callback: Any = None, outfile: Any = None,
                 **kwargs: Any) -> None:
        if outfile is not None:
            return super().get_file(rpath, lpath, callback=callback, outfile=outfile, **kwargs)
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return None
        os.makedirs(os.path.dirname(os.path.abspath(lpath)), exist_ok=True)
        self._copy(self._url(rpath), os.fspath(lpath), None, callback)
        return None

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        if self.isdir(path1):
            self.makedirs(path2, exist_ok=True)
            return
        self._copy(self._url(path1), self._url(path2), self._parent(path2), None)

    def _copy(self, src: str, dst: str, dst_parent: Optional[str], callback: Any) -> None:
        progress = None
        if callback is not None:
            def progress(done: int, total: Optional[int]) -> None:
                if total is not None:
                    callback.set_size(total)
                callback.absolute_update(done)
        try:
            self.filesystems.copy(src, dst, progress=progress)
        except FileNotFoundError:
            # A missing parent is made, as ferry-cp does; a missing source
            # (or a parent that exists) is the error it says.
            if dst_parent is None or self.exists(dst_parent):
                raise
            self.makedirs(dst_parent, exist_ok=True)
            self.filesystems.copy(src, dst, progress=progress)

    # Changes.

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self.filesystems.mkdir(self._url(path), parents=create_parents)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        if not exist_ok and self.exists(path):
            raise FileExistsError(self._url(path))
        self.filesystems.mkdir(self._url(path), parents=True)

    def rmdir(self, path: str) -> None:
        self.filesystems.rmdir(self._url(path))

    def rm_file(self, path: str) -> None:
        try:
            self.filesystems.remove(self._url(path))
        except (IsADirectoryError, PermissionError, _core.Error):
            # fsspec's rm hands directories here too (after their files).
            if not self.isdir(path):
                raise
            self.filesystems.rmdir(self._url(path))

    def _rm(self, path: str) -> None:
        self.rm_file(path)

    def mv(self, path1: str, path2: str, recursive: bool = False, maxdepth: Any = None,
           **kwargs: Any) -> None:
        if not recursive and self.isfile(path1):
            try:
                self.filesystems.rename(self._url(path1), self._url(path2))
                return
            except _core.Error:
                pass  # not a rename this filesystem makes: copy and remove
        super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def sync(self, lpath: str, rpath: str, **kwargs: Any) -> Any:
        """ferry's sync (:meth:`ferry.FileSystems.sync`: rclone's rules) of
        the tree at ``lpath`` (a URL or local path, as ferry takes them)
        to the tree at ``rpath`` on this filesystem; fsspec has no sync of
        its own, so this is ferry's, with its keyword arguments."""
        return self.filesystems.sync(lpath, self._url(rpath), **kwargs)


class IrodsFileSystem(FerryFileSystem):
    """``irods://[user@]host[:port]/zone/path``; paths ``host:port/zone/...``."""

    protocol = ("irods",)
    _scheme = "irods://"


class NfsFileSystem(FerryFileSystem):
    """``nfs://server[:port]/export/path``; paths ``server/export/...``."""

    protocol = ("nfs",)
    _scheme = "nfs://"


class FerryS3FileSystem(FerryFileSystem):
    """``ferry+s3://bucket/key`` (``s3://`` URLs are taken too); paths ``bucket/key``."""

    protocol = ("ferry+s3",)
    _scheme = "s3://"


class FerryLocalFileSystem(FerryFileSystem):
    """``ferry+file:///abs/path`` or plain paths, through ferry's local
    filesystem (for tests and for copies between local and remote)."""

    protocol = ("ferry+file",)
    _scheme = ""
    root_marker = "/"

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = stringify_path(path)
        for prefix in ("ferry+file://", "file://"):
            if path.startswith(prefix):
                path = path[len(prefix):]
                break
        return os.path.abspath(os.path.expanduser(path)) if path else cls.root_marker

    def _join(self, parent: str, name: str) -> str:
        return os.path.join(parent, name)

    def unstrip_protocol(self, name: str) -> str:
        return name if name.startswith("ferry+file://") else f"ferry+file://{name}"
