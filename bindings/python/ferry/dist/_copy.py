"""The distributed copy: files, and byte ranges of large files, sharded over
Dask workers, each copying through ferry's engine on its own Runtime.

Sharding. The source tree is split as the walk splits it (``_walk.fan_out``):
each listed directory's files are one task, each group of subtrees left
whole is another. A subtree whose destination does not exist yet is copied
by the engine's own tree copy (``FileSystems.copy(recursive=True)``: its
walk, its directory creation, its pipeline of open files), which is what a
single-process ``ferry-cp -r`` runs; anywhere else files are compared and
copied one by one, ``jobs`` at a time.

Byte ranges. A file of ``range_threshold`` bytes or more going to a local
path (``file://`` or a bare path: on a cluster, a disk every worker mounts)
is split into ``range_bytes`` ranges: one task creates a hidden temporary
beside the target (``.<name>.ferry-dist-<token>``, sized), one task per
range reads its range from the source and writes it at its offset
(``os.pwrite``), and a last task checks that every range landed (each
range's BLAKE2b as read from the source against the temporary's bytes) and
renames the temporary over the target. So the target is never seen with a
range missing. Other destinations get whole-file tasks: ferry's binding
publishes a written file at ``close()`` from the one process that wrote
it (NFS: a temporary renamed; S3: a multipart upload completed), and has no
way for several processes to write one file; inside that task the engine
still moves the file's chunks in parallel.

Resuming. A file already at the destination with the source's size is
compared by the engine's sync rules (``FileSystems.sync`` of the one file,
the comparison ferry-cp and ferry-sync make), ``compare="checksum"`` by
default: MD5s, taken from what the servers keep where they keep one (an S3
single-part ETag, rclone's ``md5chksum``), else read from both sides. One
comparison for every front end, so a tree ferry-sync or rclone wrote is
recognised too; ``"size_and_time"`` (rclone's default) trusts size and
modification time instead and reads nothing. Since ferry publishes files
atomically, a target of the right size is almost always a finished copy.
"""

import dataclasses
import hashlib
import os
import re
import stat as stat_module
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from google.protobuf.message import DecodeError

import ferry
from ferry.dist import _urls
from ferry.dist._walk import Listing, SplitOptions
from ferry.dist._worker import WorkerOptions, filesystems, thread_map

_READ_BYTES = 8 << 20  # one read when hashing or copying a range
# A temporary of ferry's file writers (core/src/io/temp_file.cc TempNameFor):
# `<dir>/.<name>.ferry-<16 hex>`; groups: the directory part, the name.
_TEMPORARY = re.compile(rb"((?:.*/)?)\.(.+)\.ferry-[0-9a-f]{16}", re.DOTALL)


@dataclasses.dataclass(frozen=True)
class CopyOptions:
    """How a distributed copy is cut up (defaults suit 10^5-10^9 files)."""

    # Files one task copies at once (the engine's `jobs` in a subtree copy).
    jobs: int = 4
    # Files this large or larger, going to a local path, are split into
    # byte ranges of `range_bytes` across workers.
    range_threshold: int = 256 << 20
    range_bytes: int = 64 << 20
    split: SplitOptions = SplitOptions()
    # What makes a file already at the destination up to date: the engine's
    # rules, as FileSystems.sync's `compare` ("checksum", "size_and_time",
    # "size", "existing").
    compare: str = "checksum"

    @property
    def worker(self) -> WorkerOptions:
        return self.split.worker


class CopyError(Exception):
    """Some files were not copied; ``report`` says which and why (the rest
    were copied). Never raised for a copy that left nothing out."""

    def __init__(self, message: str, report: "CopyReport") -> None:
        super().__init__(message)
        self.report = report


@dataclasses.dataclass
class CopyReport:
    """What a distributed copy did."""

    files_copied: int = 0
    files_skipped: int = 0      # already complete and correct at the destination
    bytes_copied: int = 0
    ranges: int = 0             # byte-range shards of large files
    not_copied: int = 0         # symlinks and special files, as ferry-cp skips them
    failures: List[str] = dataclasses.field(default_factory=list)

    def add(self, other: "CopyReport") -> None:
        self.files_copied += other.files_copied
        self.files_skipped += other.files_skipped
        self.bytes_copied += other.bytes_copied
        self.ranges += other.ranges
        self.not_copied += other.not_copied
        self.failures.extend(other.failures)


@dataclasses.dataclass
class PartResult:
    """A task's report, and the large files it left for range tasks."""

    report: CopyReport
    large: List[Tuple[bytes, int]]  # (path relative to the copy's root, size)


def _safe(rel: bytes) -> bool:
    """As ferry's SafeRelativePath: no empty, absolute, '.' or '..' name."""
    return (bool(rel) and not rel.startswith(b"/") and b"\0" not in rel
            and all(part not in (b"", b".", b"..") for part in rel.split(b"/")))


def digest(fs: ferry.FileSystems, url: _urls.Url, offset: int = 0,
           length: Optional[int] = None) -> bytes:
    """BLAKE2b of `length` bytes (all, if None) of `url` from `offset`."""
    h = hashlib.blake2b(digest_size=32)
    buf = bytearray(_READ_BYTES)
    view = memoryview(buf)
    left = length
    with fs.open(url, "rb") as f:  # type: ignore[arg-type]  (the binding takes bytes too)
        f.seek(offset)
        while left is None or left > 0:
            want = _READ_BYTES if left is None else min(_READ_BYTES, left)
            n = f.readinto(view[:want])
            if not n:
                break
            h.update(view[:n])
            if left is not None:
                left -= n
    return h.digest()


def _existing(fs: ferry.FileSystems, url: bytes, *, whole_tree: bool) -> Optional[Dict[bytes, int]]:
    """Files below `url` (every level, or one) by path relative to it and
    their sizes, directories as -1; None if `url` does not exist."""
    try:
        if whole_tree:
            found: Dict[bytes, int] = {}
            with fs.walk(url) as w:
                for batch in w:
                    for e in batch.entries:
                        found[e.path] = e.size if e.type == ferry.records_pb2.FILE_TYPE_REGULAR else -1
            return found
        return {e.path_bytes: (e.size if e.kind is ferry.Kind.FILE else -1) for e in fs.list(url)}
    except FileNotFoundError:
        return None


class _Sync:
    """Brings files of one task to the destination: skips those already
    there and correct, copies the rest `jobs` at a time, leaves large ones
    to range tasks."""

    def __init__(self, src_root: _urls.Url, dst_root: _urls.Url, options: CopyOptions) -> None:
        self.fs = filesystems(options.worker)
        self.src_root, self.dst_root, self.options = src_root, dst_root, options
        self.ranges_ok = _urls.is_local(dst_root)
        self.result = PartResult(CopyReport(), [])

    def fail(self, what: str, exc: BaseException) -> None:
        self.result.report.failures.append(f"{what}: {type(exc).__name__}: {exc}")

    def mkdirs(self, rels: Sequence[bytes]) -> None:
        for rel in sorted(set(rels)):  # parents before children
            try:
                self.fs.mkdir(_urls.join(self.dst_root, rel), parents=True)
            except (ferry.Error, OSError) as e:
                self.fail(f"mkdir {_urls.show(_urls.join(self.dst_root, rel))}", e)

    def one(self, rel: bytes, size: int, have: Optional[int]) -> CopyReport:
        src, dst = _urls.join(self.src_root, rel), _urls.join(self.dst_root, rel)
        out = CopyReport()
        try:
            if have == size and self.up_to_date(src, dst):
                out.files_skipped = 1
                return out
            if self.ranges_ok and size >= self.options.range_threshold:
                self.result.large.append((rel, size))
                return out
            try:
                out.bytes_copied = self.fs.copy(src, dst).bytes  # type: ignore[arg-type]
            except DecodeError:
                # The copy succeeded (a failure raises before any stats):
                # TransferStats names the URLs in proto `string` fields,
                # which refuse a name that is not UTF-8.
                out.bytes_copied = size
            out.files_copied = 1
        except (ferry.Error, OSError) as e:
            out.failures.append(f"copy {_urls.show(src)} -> {_urls.show(dst)}: "
                                f"{type(e).__name__}: {e}")
        return out

    def up_to_date(self, src: _urls.Url, dst: _urls.Url) -> bool:
        """Whether `dst` (of the source's size) needs no copy, by the
        engine's sync rules (options.compare); a time to set is set."""
        report = self.fs.sync(src, dst, compare=self.options.compare,  # type: ignore[arg-type]
                              delete=False, dry_run=True)
        if report["copied"] or not report["times_updated"]:
            return not report["copied"]
        self.fs.sync(src, dst, compare=self.options.compare, delete=False)  # type: ignore[arg-type]
        return True

    def files(self, files: Sequence[Tuple[bytes, int]], existing: Dict[bytes, int],
              base: bytes) -> None:
        """`files` (paths relative to the copy's root) whose names below
        `base` are the keys of `existing`."""
        cut = len(base) + 1 if base else 0
        self.remove_leftovers({f[0][cut:] for f in files}, existing, base)
        for r in thread_map(lambda f: self.one(f[0], f[1], existing.get(f[0][cut:])), files,
                            max(1, self.options.jobs), self.options.worker):
            self.result.report.add(r)

    def remove_leftovers(self, names: Set[bytes], existing: Dict[bytes, int], base: bytes) -> None:
        """Removes the temporaries of a killed earlier writer of `names`
        (keys of `existing`, relative to `base`): ferry writes
        `.<name>.ferry-<16 hex>` beside a target and renames it at close, so
        a SIGKILLed worker leaves one behind (the local disk reclaims its
        own; NFS cannot). A live writer's would be removed too: two copies
        into one destination at once are not supported."""
        for key in existing:
            m = _TEMPORARY.fullmatch(key)
            if m and (m.group(1) + m.group(2)) in names:
                url = _urls.join(self.dst_root, _urls.join_rel(base, key))
                try:
                    self.fs.remove(url)  # type: ignore[arg-type]
                except FileNotFoundError:
                    pass
                except (ferry.Error, OSError) as e:
                    self.fail(f"remove leftover temporary {_urls.show(url)}", e)

    def subtree(self, rel: bytes) -> None:
        """Every file below `rel`."""
        dst = _urls.join(self.dst_root, rel)
        src = _urls.join(self.src_root, rel)
        if not self.ranges_ok and _existing(self.fs, dst, whole_tree=False) is None:
            # Nothing there yet: the engine's own tree copy, as ferry-cp -r.
            try:
                stats = self.fs.copy(src, dst, recursive=True, jobs=self.options.jobs)  # type: ignore[arg-type]
                self.result.report.files_copied += stats.files
                self.result.report.bytes_copied += stats.bytes
            except (ferry.Error, OSError) as e:
                self.fail(f"copy -r {_urls.show(src)} -> {_urls.show(dst)}", e)
            return
        files: List[Tuple[bytes, int]] = []
        dirs: List[bytes] = [rel]
        try:
            with self.fs.walk(src) as w:
                for batch in w:
                    for e in batch.entries:
                        path = _urls.join_rel(rel, e.path)
                        if not _safe(e.path):
                            self.result.report.failures.append(
                                f"{_urls.show(src)}: unsafe name {e.path!r} not copied")
                        elif e.type == ferry.records_pb2.FILE_TYPE_REGULAR:
                            files.append((path, e.size))
                            dirs.append(path.rpartition(b"/")[0])
                        elif e.type == ferry.records_pb2.FILE_TYPE_DIRECTORY:
                            dirs.append(path)
                        else:
                            self.result.report.not_copied += 1
                    for err in batch.errors:
                        self.result.report.failures.append(
                            f"walk {_urls.show(_urls.join(src, err.path))}: {err.message}")
        except (ferry.Error, OSError) as e:
            self.fail(f"walk {_urls.show(src)}", e)
            return
        existing = _existing(self.fs, dst, whole_tree=True) or {}
        self.mkdirs([d for d in dirs if d and existing.get(d[len(rel) + 1:] if rel else d) != -1]
                    + ([rel] if rel else []))
        self.files(files, existing, rel)


def copy_listing_task(listing: Listing, src_root: _urls.Url, dst_root: _urls.Url,
                      options: CopyOptions) -> PartResult:
    """The files directly in one listed directory."""
    sync = _Sync(src_root, dst_root, options)
    for err in listing.errors:
        sync.result.report.failures.append(
            f"list {_urls.show(_urls.join(src_root, err['path']))}: {err['message']}")
    files = []
    for e in listing.entries:
        name = e["path"].rpartition(b"/")[2]
        if not _safe(name):
            sync.result.report.failures.append(
                f"{_urls.show(src_root)}: unsafe name {e['path']!r} not copied")
        elif e["type"] == "file":
            files.append((e["path"], e["size"]))
        elif e["type"] != "directory":
            sync.result.report.not_copied += 1
    if listing.rel or files:
        sync.mkdirs([listing.rel])
    existing = _existing(sync.fs, _urls.join(dst_root, listing.rel), whole_tree=False) or {}
    sync.files(files, existing, listing.rel)
    return sync.result


def copy_subtrees_task(src_root: _urls.Url, dst_root: _urls.Url, rels: Sequence[bytes],
                       options: CopyOptions) -> PartResult:
    """Every file below each of `rels`."""
    sync = _Sync(src_root, dst_root, options)
    for rel in rels:
        sync.subtree(rel)
    return sync.result


def copy_file_task(src: _urls.Url, dst: _urls.Url, size: int, options: CopyOptions) -> PartResult:
    """One file (a copy of a single file, not a tree)."""
    sync = _Sync(src, dst, options)
    fs = sync.fs
    try:
        st = fs.stat(dst)  # type: ignore[arg-type]
        have = st["size"] if st["kind"] == "file" else None
    except FileNotFoundError:
        have = None
    sync.result.report.add(sync.one(b"", size, have))
    return sync.result


def stat_task(url: _urls.Url, options: WorkerOptions) -> Dict[str, Any]:
    return filesystems(options).stat(url)  # type: ignore[arg-type]


# ---------------------------------------------------------------- byte ranges


@dataclasses.dataclass(frozen=True)
class RangePlan:
    """One large file's ranges: where they are read and where they land."""

    src: bytes
    dst: bytes        # the local target path
    temporary: bytes  # beside it, hidden, renamed over it when complete
    size: int
    ranges: Tuple[Tuple[int, int], ...]  # (offset, length), covering [0, size)


def plan_ranges(src: bytes, dst_path: bytes, size: int, range_bytes: int) -> RangePlan:
    # The temporary's name depends on the source and size only, so a rerun
    # of an interrupted job writes over the same one instead of leaving it.
    token = hashlib.blake2b(src + b"\0" + str(size).encode(), digest_size=8).hexdigest()
    head, _, name = dst_path.rpartition(b"/")
    temporary = (head + b"/" if head else b"") + b"." + name + b".ferry-dist-" + token.encode()
    step = max(1, range_bytes)
    ranges = tuple((off, min(step, size - off)) for off in range(0, size, step)) or ((0, 0),)
    return RangePlan(src, dst_path, temporary, size, ranges)


def prepare_ranges_task(plan: RangePlan) -> RangePlan:
    """Creates the temporary at its final size (ranges are written into it)."""
    fd = os.open(plan.temporary, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.ftruncate(fd, plan.size)
    finally:
        os.close(fd)
    return plan


def copy_range_task(plan: RangePlan, index: int, options: CopyOptions) -> bytes:
    """Copies range `index` of the plan into the temporary; its BLAKE2b as
    read from the source."""
    offset, length = plan.ranges[index]
    where = (f"range {index + 1}/{len(plan.ranges)} [{offset}, {offset + length}) of "
             f"{_urls.show(plan.src)} -> {_urls.show(plan.temporary)}")
    h = hashlib.blake2b(digest_size=32)
    buf = bytearray(min(_READ_BYTES, max(1, length)))
    view = memoryview(buf)
    try:
        # No O_CREAT: a temporary missing here means this worker does not
        # see the disk the preparing worker wrote to.
        fd = os.open(plan.temporary, os.O_WRONLY)
        try:
            with filesystems(options.worker).open(plan.src, "rb") as f:  # type: ignore[arg-type]
                f.seek(offset)
                done = 0
                while done < length:
                    n = f.readinto(view[:min(len(buf), length - done)])
                    if not n:
                        raise EOFError(f"the source ended at byte {offset + done}, "
                                       f"expected {plan.size} bytes (did it change?)")
                    os.pwrite(fd, view[:n], offset + done)
                    h.update(view[:n])
                    done += n
        finally:
            os.close(fd)
    except (ferry.Error, OSError, EOFError) as e:
        _urls.add_context(e, f"ferry.dist copy: {where}")
        raise
    return h.digest()


def publish_ranges_task(plan: RangePlan, digests: Sequence[bytes]) -> int:
    """Checks every range of the temporary against its digest, then renames
    it over the target. Returns the bytes published."""
    fd = os.open(plan.temporary, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode) or st.st_size != plan.size:
            raise OSError(f"ferry.dist copy {_urls.show(plan.src)}: the temporary "
                          f"{_urls.show(plan.temporary)} holds {st.st_size} bytes, "
                          f"expected {plan.size}; not published")
        for i, ((offset, length), want) in enumerate(zip(plan.ranges, digests)):
            h = hashlib.blake2b(digest_size=32)
            done = 0
            while done < length:
                chunk = os.pread(fd, min(_READ_BYTES, length - done), offset + done)
                if not chunk:
                    break
                h.update(chunk)
                done += len(chunk)
            if h.digest() != want:
                raise OSError(f"ferry.dist copy {_urls.show(plan.src)}: range {i + 1}/"
                              f"{len(plan.ranges)} [{offset}, {offset + length}) of "
                              f"{_urls.show(plan.temporary)} does not hold what was read "
                              "from the source; not published")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(plan.temporary, plan.dst)
    return plan.size
