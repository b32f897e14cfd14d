"""ferry-bench: measure ferry and each protocol's usual client side by side
against your own NFS, S3 and iRODS servers (and local disks).

    ferry-bench nfs://host/export/scratch s3://bucket/scratch \\
                irods://alice@host:1247/tempZone/home/alice/scratch --out=bench-out
    ferry-bench --from-records=bench-out/records.jsonl --out=again

Scenarios (``--scenarios``; all by default), after Hünich and
Müller-Pfefferkorn's iRODS benchmark: stages of one transfer, many files
in parallel, directory transfers, a size sweep, metadata, stress, catalog
size. Peers where installed: libnfs's nfs-cp/nfs-ls, the AWS CLI, boto3,
rclone, python-irodsclient. Output in ``--out``: ``records.jsonl`` (one
``ferry.records_pb2.BenchRecord`` per line, protobuf JSON form),
``report.md`` and ``plots/*.png`` (with matplotlib: ``pip install
ferry[bench]``). Ctrl-C stops after the current step and still writes the
report from what was measured.
"""

from ferry.bench.cli import main

__all__ = ["main"]
