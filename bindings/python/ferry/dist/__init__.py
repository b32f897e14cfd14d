"""ferry.dist: walks and copies sharded over a Dask cluster (dask.distributed).

Every place ferry reaches (nfs://, s3://, irods://, file:// and local
paths), split by subtree (a directory, an S3 prefix, an iRODS collection)
as the tree is discovered, each worker process running ferry on its own
Runtime and memory budget (made at its first task, kept for its life):

    from distributed import Client, LocalCluster
    import ferry.dist

    with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, Client(cluster) as client:
        w = ferry.dist.walk("nfs://host/export/tree", client=client)
        print(w.entries, w.errors)          # counted on the workers
        bag = w.to_bag()                    # a dask.bag of entry dicts
        ferry.dist.walk_to_parquet("s3://bucket/tree/", "/data/tree.parquet", client=client)
        report = ferry.dist.copy("s3://bucket/tree", "nfs://host/export/copy",
                                 recursive=True, client=client)

``python -m ferry.dist walk|cp ...`` does the same from a shell (a
LocalCluster unless ``--scheduler`` names one). How trees are split is in
``ferry/dist/_walk.py``; how copies are sharded, resumed and published in
``ferry/dist/_copy.py``; docs/scale-out.md has the design and figures.
Workers need ``ferry`` importable and the same credentials (the AWS and
iRODS environment) as a single-process copy would.
"""

import dataclasses
from typing import Any, Dict, List

from ferry.dist import _copy, _urls, _walk
from ferry.dist._copy import CopyError, CopyOptions, CopyReport
from ferry.dist._walk import Entry, SplitOptions, WalkError
from ferry.dist._worker import WorkerOptions

__all__ = ["CopyError", "CopyOptions", "CopyReport", "DistWalk", "Entry", "SplitOptions",
           "WalkError", "WorkerOptions", "copy", "walk", "walk_to_parquet"]


def _client(client: Any) -> Any:
    if client is not None:
        return client
    from distributed import get_client

    return get_client()  # the default client; ValueError if there is none


# ---------------------------------------------------------------- walk


def _count_task(partition: _walk.Partition) -> Dict[str, Any]:
    return {"entries": partition.entries, "errors": partition.errors}


def _entries_task(partition: _walk.Partition) -> List[Entry]:
    return partition.records()


@dataclasses.dataclass
class DistWalk:
    """A finished distributed walk whose entries stay on the workers, in
    ``partitions`` (futures of ``_walk.Partition``)."""

    partitions: List[Any]
    entries: int
    errors: List[WalkError]

    def to_bag(self) -> Any:
        """The entries as a ``dask.bag.Bag`` (one partition per task)."""
        import dask
        import dask.bag

        return dask.bag.from_delayed([dask.delayed(_entries_task)(p) for p in self.partitions])

    def gather(self) -> List[Entry]:
        """Every entry, brought to this process (mind the size)."""
        client = self.partitions[0].client if self.partitions else None
        if client is None:
            return []
        out: List[Entry] = []
        for part in client.gather(client.map(_entries_task, self.partitions, pure=False)):
            out.extend(part)
        return out


def walk(url: str, *, client: Any = None, split: SplitOptions = SplitOptions()) -> DistWalk:
    """Walks the tree at ``url`` on the cluster: every entry below it, once,
    as ``ferry.FileSystems.walk`` gives them (paths relative to ``url``).
    Returns when the walk is done; unreadable directories are in
    ``errors``, as the single-process walk reports them. The root not
    being there raises (FileNotFoundError, ...)."""
    client = _client(client)
    partitions: List[Any] = []
    counted: List[Any] = []

    def add(partition: Any) -> None:
        # Counted as soon as it is made (not after the fan-out): the last
        # partition's count is then one scheduler round trip away.
        partitions.append(partition)
        counted.append(client.submit(_count_task, partition, pure=False))

    _walk.fan_out(
        client, url, split,
        on_listing=lambda listing: add(
            client.submit(_walk.listing_partition, listing, pure=False)),
        on_subtrees=lambda rels: add(
            client.submit(_walk.walk_subtrees_task, url, rels, split.worker, pure=False)),
        whole_walk_entries=split.whole_walk_entries)
    counts = client.gather(counted)
    return DistWalk(partitions, sum(c["entries"] for c in counts),
                    [e for c in counts for e in c["errors"]])


_PARQUET_COLUMNS = ("path", "type", "size", "mode", "uid", "gid", "mtime_ns", "fileid")


def _write_parquet_task(partition: _walk.Partition, out: str, index: int,
                        options: WorkerOptions) -> Dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ferry.dist._worker import filesystems

    schema = pa.schema([("path", pa.binary()), ("type", pa.string()), ("size", pa.uint64()),
                        ("mode", pa.uint32()), ("uid", pa.uint32()), ("gid", pa.uint32()),
                        ("mtime_ns", pa.int64()), ("fileid", pa.uint64())])
    entries = partition.records()
    if entries:
        table = pa.table({c: [e[c] for e in entries] for c in _PARQUET_COLUMNS}, schema=schema)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        target = _urls.join(out, b"part-%06d.parquet" % index)
        with filesystems(options).open(target, "wb") as f:  # type: ignore[arg-type]
            f.write(sink.getvalue())
    return {"entries": len(entries), "errors": partition.errors}


def walk_to_parquet(url: str, out: str, *, client: Any = None,
                    split: SplitOptions = SplitOptions()) -> Dict[str, Any]:
    """Walks ``url`` (as :func:`walk`) and writes its entries as a Parquet
    dataset, one ``part-NNNNNN.parquet`` per task, into directory ``out``
    (any place ferry writes to; ``path`` is a binary column, as names need
    not be UTF-8). Each part is written by the worker that walked it and
    then dropped, so a walk of any size holds only the parts in flight.
    Returns ``{"entries", "errors", "parts"}``."""
    client = _client(client)
    from ferry.dist._worker import filesystems

    filesystems(split.worker).mkdir(out, parents=True)
    writes: List[Any] = []

    def write(partition: Any) -> None:
        writes.append(client.submit(_write_parquet_task, partition, out, len(writes),
                                    split.worker, pure=False))

    _walk.fan_out(
        client, url, split,
        on_listing=lambda listing: write(client.submit(_walk.listing_partition, listing,
                                                       pure=False)),
        on_subtrees=lambda rels: write(client.submit(_walk.walk_subtrees_task, url, rels,
                                                     split.worker, pure=False)),
        whole_walk_entries=split.whole_walk_entries)
    done = client.gather(writes)
    return {"entries": sum(d["entries"] for d in done),
            "errors": [e for d in done for e in d["errors"]],
            "parts": sum(1 for d in done if d["entries"])}


# ---------------------------------------------------------------- copy


def copy(src: str, dst: str, *, recursive: bool = False, client: Any = None,
         options: CopyOptions = CopyOptions()) -> CopyReport:
    """Copies file ``src`` to ``dst`` or, with ``recursive``, every file
    below directory ``src`` to the same path below ``dst``, between any two
    places ferry reaches, sharded over the cluster (see ``_copy``). Files
    already complete and correct at the destination are skipped, so
    running it again after an interruption finishes the job. Raises
    :class:`CopyError` (with the report) if any file could not be copied,
    after copying all the others; the source missing raises
    FileNotFoundError."""
    from distributed import as_completed

    client = _client(client)
    info = client.submit(_copy.stat_task, src, options.worker, pure=False).result()
    report = CopyReport()
    described: Dict[str, str] = {}
    parts = as_completed()

    def add(future: Any, what: str) -> None:
        described[future.key] = what
        parts.add(future)

    if info["kind"] == "file":
        add(client.submit(_copy.copy_file_task, src, dst, info["size"], options, pure=False),
            f"copy {src} -> {dst}")
    elif info["kind"] != "directory":
        raise ValueError(f"ferry.dist copy {src}: a {info['kind']}, not a file or directory")
    elif not recursive:
        raise IsADirectoryError(f"ferry.dist copy {src}: a directory (copy it with recursive=True)")
    else:
        _walk.fan_out(
            client, src, options.split,
            on_listing=lambda listing: add(
                client.submit(_copy.copy_listing_task, listing, src, dst, options, pure=False),
                f"copying the files of a listed directory below {src}"),
            on_subtrees=lambda rels: add(
                client.submit(_copy.copy_subtrees_task, src, dst, rels, options, pure=False),
                f"copying subtrees {[_urls.show(r) for r in rels[:3]]}"
                f"{'...' if len(rels) > 3 else ''} of {src}"))

    for future in parts:
        what = described.pop(future.key, "a copy task")
        if future.status == "error":
            exc = future.exception()
            report.failures.append(f"{what}: {type(exc).__name__}: {exc}")
            continue
        result = future.result()
        if isinstance(result, int):  # a published large file
            report.files_copied += 1
            report.bytes_copied += result
            continue
        report.add(result.report)
        for rel, size in result.large:
            plan = _copy.plan_ranges(_urls.join(src, rel),
                                     _urls.local_path(_urls.join(dst, rel)), size,
                                     options.range_bytes)
            prepared = client.submit(_copy.prepare_ranges_task, plan, pure=False)
            digests = [client.submit(_copy.copy_range_task, prepared, i, options, pure=False)
                       for i in range(len(plan.ranges))]
            report.ranges += len(plan.ranges)
            add(client.submit(_copy.publish_ranges_task, plan, digests, pure=False),
                f"copy {_urls.show(plan.src)} -> {_urls.show(plan.dst)} "
                f"in {len(plan.ranges)} ranges")
    if report.failures:
        shown = "; ".join(report.failures[:5])
        more = f" (and {len(report.failures) - 5} more)" if len(report.failures) > 5 else ""
        raise CopyError(f"ferry.dist copy {src} -> {dst}: {len(report.failures)} failed: "
                        f"{shown}{more}", report)
    return report
