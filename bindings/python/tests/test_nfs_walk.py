"""ferry.nfs.walk against a real nfs-ganesha (the session `ganesha`
fixture): what it lists equals os.walk + lstat of the exported folder;
stopping early stops the walk; errors are records or exceptions."""

import os
import stat

import pytest

import ferry
import ferry.nfs
from ferry import records_pb2
from conftest import OTHER_UID, nfs_url

TYPE_OF_MODE = {
    stat.S_IFREG: records_pb2.FILE_TYPE_REGULAR,
    stat.S_IFDIR: records_pb2.FILE_TYPE_DIRECTORY,
    stat.S_IFLNK: records_pb2.FILE_TYPE_SYMLINK,
}


@pytest.fixture
def rt():
    with ferry.Runtime(io_threads=2, blocking_threads=2) as r:
        yield r


def local_listing(root):
    """{relative path bytes: (type, size)} of everything below `root`, lstat'ed."""
    out = {}
    root_b = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(root_b):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            out[os.path.relpath(full, root_b)] = (TYPE_OF_MODE[stat.S_IFMT(st.st_mode)], st.st_size)
    return out


def test_walk_lists_what_lstat_sees(ganesha, rt):
    listed = {}
    with ferry.nfs.walk(nfs_url("tree"), runtime=rt, batch_entries=64) as w:
        for batch in w:
            assert isinstance(batch, records_pb2.WalkBatch)
            assert not batch.errors
            for e in batch.entries:
                assert e.path not in listed, e.path
                listed[e.path] = (e.type, e.size)
    assert listed == local_listing(ganesha / "tree")
    assert w.stats["entries"] == len(listed)
    assert not w.stats["stopped_early"]


def test_batches_are_numbered_and_the_last_is_marked(ganesha, rt):
    batches = list(ferry.nfs.walk(nfs_url("tree"), runtime=rt, batch_entries=50))
    assert [b.sequence for b in batches] == list(range(len(batches)))
    assert len({b.walk_id for b in batches}) == 1
    assert [b.last for b in batches] == [False] * (len(batches) - 1) + [True]
    assert all(len(b.entries) <= 50 for b in batches)


def test_batches_are_full_but_the_last(ganesha, rt):
    # Not one batch per directory page: each batch costs a crossing.
    sizes = [len(b.entries) for b in ferry.nfs.walk(nfs_url("tree"), runtime=rt, batch_entries=50)]
    assert len(sizes) > 2
    assert sizes[:-1] == [50] * (len(sizes) - 1)
    assert 0 < sizes[-1] <= 50


def test_entries_carry_attributes(ganesha, rt):
    by_path = {e.path_bytes: e for e in ferry.nfs.walk_entries(nfs_url("tree"), runtime=rt)}
    st = os.lstat(ganesha / "tree" / "sizes" / "s4095")
    e = by_path[b"sizes/s4095"]
    assert (e.size, e.mode, e.uid, e.gid, e.fileid) == (
        4095, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_ino)
    assert e.mtime_ns == st.st_mtime_ns
    assert by_path[os.fsencode("caf\udce9.bin")].size == len(b"not utf-8")


def test_walk_of_an_empty_directory_is_one_empty_last_batch(ganesha, rt):
    batches = list(ferry.nfs.walk(nfs_url("tree/empty"), runtime=rt))
    assert len(batches) == 1
    assert batches[0].last and not batches[0].entries


def test_close_stops_the_walk_and_bounds_what_was_read(ganesha, rt):
    w = ferry.nfs.walk(nfs_url("tree"), runtime=rt, batch_entries=1)
    first = next(w)
    assert len(first.entries) == 1
    w.close()
    assert w.closed
    assert w.stats["stopped_early"]
    # The walker paused while Python held back: a few batches of one entry
    # (queued, held back, in the callback), not the tree's ~330.
    assert w.stats["entries"] <= 8
    with pytest.raises(StopIteration):
        next(w)
    w.close()  # idempotent


def test_break_out_of_walk_entries_stops_the_walk(ganesha, rt):
    entries = ferry.nfs.walk_entries(nfs_url("tree"), runtime=rt, batch_entries=1)
    for _ in entries:
        break
    entries.close()
    rt.close()  # would raise FailedPrecondition while the walk held the Runtime


def test_an_open_walk_keeps_the_runtime_from_closing(ganesha, rt):
    w = ferry.nfs.walk(nfs_url("tree"), runtime=rt, batch_entries=1)
    with pytest.raises(ferry.Error) as info:
        rt.close()
    assert info.value.code == "FailedPrecondition"
    w.close()
    rt.close()


def test_unreadable_directory_is_an_error_record_and_the_rest_is_listed(ganesha, rt):
    entries, errors = [], []
    for batch in ferry.nfs.walk(nfs_url("perm"), runtime=rt, uid=OTHER_UID, gid=OTHER_UID):
        entries += [e.path for e in batch.entries]
        errors += list(batch.errors)
    assert sorted(entries) == [b"after", b"after/inside", b"locked", b"open", b"open/inside"]
    assert len(errors) == 1
    assert errors[0].path == b"locked"
    assert errors[0].code == 7  # absl::StatusCode::kPermissionDenied
    assert "locked" in errors[0].message


def test_walk_entries_passes_errors_to_onerror(ganesha, rt):
    errors = []
    paths = {e.path_bytes for e in ferry.nfs.walk_entries(nfs_url("perm"), runtime=rt, uid=OTHER_UID,
                                                    gid=OTHER_UID, onerror=errors.append)}
    assert b"after/inside" in paths and b"locked" in paths
    assert [e.path for e in errors] == [b"locked"]


def test_bad_url_is_a_value_error(rt):
    with pytest.raises(ValueError) as info:
        ferry.nfs.walk("http://127.0.0.1/export", runtime=rt)
    assert isinstance(info.value, ferry.InvalidArgumentError)


def test_closed_port_is_a_connection_error(rt):
    # Port 1 (tcpmux) has no listener: the connection is refused at once.
    with pytest.raises(ConnectionError):
        ferry.nfs.walk("nfs://127.0.0.1/export?nfsport=1&mountport=1", runtime=rt)


def test_missing_root_raises_not_found(ganesha, rt):
    with pytest.raises(FileNotFoundError):
        list(ferry.nfs.walk(nfs_url("tree/no-such-dir"), runtime=rt))


def test_batch_entries_must_be_positive(rt):
    with pytest.raises(ValueError):
        ferry.nfs.walk(nfs_url(), runtime=rt, batch_entries=0)


@pytest.mark.parametrize("uid", [-1, 1 << 32])
def test_uid_out_of_range_is_a_value_error(rt, uid):
    with pytest.raises(ValueError, match="uid"):
        ferry.nfs.walk(nfs_url(), runtime=rt, uid=uid)
