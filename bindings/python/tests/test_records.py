"""records.proto round trips through the generated Python module."""

from google.protobuf import json_format

from ferry import records_pb2 as records


def make_batch():
    return records.WalkBatch(
        walk_id=7, sequence=0, last=True,
        entries=[
            records.WalkEntry(path=b"/export/dir", type=records.FILE_TYPE_DIRECTORY, mode=0o755,
                              uid=1000, gid=1000, mtime_ns=1_700_000_000_123_456_789, fileid=2),
            # Not UTF-8: NFS names are bytes, and the schema keeps them so.
            records.WalkEntry(path=b"/export/dir/caf\xe9", type=records.FILE_TYPE_REGULAR,
                              size=1 << 40, mode=0o644, fileid=3),
        ],
        errors=[records.WalkError(path=b"/export/secret", code=7, message="READDIRPLUS: NFS3ERR_ACCES")],
    )


def test_walk_batch_round_trips_through_bytes():
    batch = make_batch()
    data = batch.SerializeToString()
    back = records.WalkBatch.FromString(data)
    assert back == batch
    assert back.entries[1].path == b"/export/dir/caf\xe9"
    assert back.entries[1].size == 1 << 40
    assert back.errors[0].code == 7


def test_file_type_numbers_are_nfs_ftype3():
    # RFC 1813 2.5: NF3REG=1 NF3DIR=2 NF3BLK=3 NF3CHR=4 NF3LNK=5 NF3SOCK=6 NF3FIFO=7
    assert [records.FILE_TYPE_REGULAR, records.FILE_TYPE_DIRECTORY, records.FILE_TYPE_BLOCK_DEVICE,
            records.FILE_TYPE_CHAR_DEVICE, records.FILE_TYPE_SYMLINK, records.FILE_TYPE_SOCKET,
            records.FILE_TYPE_FIFO] == [1, 2, 3, 4, 5, 6, 7]


def test_entry_kinds_follow_the_proto_file_type_numbers():
    # ferry._records writes the numbers out (it does not import records_pb2).
    from ferry import Entry, Kind
    kinds = {records.FILE_TYPE_REGULAR: Kind.FILE, records.FILE_TYPE_DIRECTORY: Kind.DIRECTORY,
             records.FILE_TYPE_BLOCK_DEVICE: Kind.BLOCK_DEVICE,
             records.FILE_TYPE_CHAR_DEVICE: Kind.CHAR_DEVICE, records.FILE_TYPE_SYMLINK: Kind.SYMLINK,
             records.FILE_TYPE_SOCKET: Kind.SOCKET, records.FILE_TYPE_FIFO: Kind.FIFO}
    for number, kind in kinds.items():
        entry = Entry.from_record(records.WalkEntry(path=b"x", type=number))
        assert entry.kind is kind
        assert entry.type == number
    assert Entry("x", Kind.OTHER).type == records.FILE_TYPE_UNSPECIFIED


def test_transfer_stats_round_trip_through_bytes_and_json():
    stats = records.TransferStats(
        operation=records.TransferStats.OPERATION_DOWNLOAD, source="s3://bucket/key",
        destination="/tmp/key", bytes=123, bytes_fetched=130, requests=4, retries=1,
        elapsed_ns=5_000_000, peak_memory_bytes=64 << 20)
    assert records.TransferStats.FromString(stats.SerializeToString()) == stats
    again = json_format.Parse(json_format.MessageToJson(stats), records.TransferStats())
    assert again == stats


def test_bench_result_figures_round_trip():
    result = records.BenchResult(name="cache", peer="absl::flat_hash_map", runs=5,
                                 figures={"hits_per_s_1t": 2.1e7, "p99_us": 3.5})
    back = records.BenchResult.FromString(result.SerializeToString())
    assert dict(back.figures) == {"hits_per_s_1t": 2.1e7, "p99_us": 3.5}


def test_unknown_fields_from_a_newer_writer_are_kept():
    # A newer schema adds field 99 to WalkEntry; this reader keeps the bytes.
    entry = records.WalkEntry(path=b"/a", size=1).SerializeToString()
    newer = entry + bytes([0x98, 0x06, 0x2A])  # field 99, varint 42
    back = records.WalkEntry.FromString(newer)
    assert back.size == 1
    assert back.SerializeToString() == newer
