"""NFS files (ferry.nfs.open / NfsClient.open: io.RawIOBase over a C++
FdTable<NfsFile>) and whole-file copies with progress, against the session
nfs-ganesha (its export is a local folder, so results are checked on disk)."""

import io
import os
import uuid

import pytest

import ferry
import ferry.nfs
from ferry import records_pb2
from conftest import (DirectoryWatcher, assert_open_file_outlives_its_client,
                      assert_reads_like_bytes, nfs_url, raising)

SIZE = 3 * (1 << 20) + 12345  # several READ calls and chunks, and a ragged end


@pytest.fixture(scope="module")
def data(ganesha):
    """(name relative to the export, bytes) of a file to read."""
    (ganesha / "files").mkdir(exist_ok=True)
    payload = os.urandom(SIZE)
    (ganesha / "files" / "data.bin").write_bytes(payload)
    return "files/data.bin", payload


@pytest.fixture
def rt():
    with ferry.Runtime(io_threads=1, blocking_threads=8) as r:
        yield r


@pytest.fixture
def nfs(ganesha, rt):
    with ferry.nfs.NfsClient(nfs_url(), runtime=rt) as c:
        yield c


def fresh(ganesha, suffix=".bin"):
    """A new name under files/ (ganesha caches lookups: never reuse names)."""
    (ganesha / "files").mkdir(exist_ok=True)
    return f"files/{uuid.uuid4().hex}{suffix}"


# ---------------------------------------------------------------- files


def test_read_whole_file(nfs, data):
    name, payload = data
    with nfs.open(name, "rb") as f:
        assert isinstance(f, io.RawIOBase)
        assert f.readable() and f.seekable() and not f.writable()
        assert f.read() == payload
        assert f.read() == b""
    assert f.closed


def test_partial_reads_move_the_offset(nfs, data):
    name, payload = data
    with nfs.open(name, "rb") as f:
        assert_reads_like_bytes(f, payload, [("read", 10), ("tell",), ("read", 1 << 20), ("tell",)])


@pytest.mark.parametrize("piece", [4096, 64 << 10, 1 << 20])
def test_a_file_read_to_its_end_in_pieces_gives_every_byte_in_order(nfs, data, piece):
    # Pieces of up to 1 MiB read in order are read ahead (windows of READs
    # sent before they are asked for); a seek back then reads from there.
    name, payload = data
    got = bytearray()
    with nfs.open(name, "rb") as f:
        while chunk := f.read(piece):
            got += chunk
        f.seek(7)
        assert f.read(piece) == payload[7:7 + piece]
    assert bytes(got) == payload


def test_seek_and_tell(nfs, data):
    name, payload = data
    with nfs.open(name, "rb") as f:
        assert_reads_like_bytes(f, payload, [
            ("seek", 1000), ("read", 5), ("seek", -5, io.SEEK_CUR), ("seek", -7, io.SEEK_END),
            ("read", 100),  # short read at the end
            ("tell",)])


def test_read_at_and_past_eof_is_empty(nfs, data):
    name, _ = data
    with nfs.open(name, "rb") as f:
        f.seek(SIZE)
        assert f.read(10) == b""
        f.seek(SIZE + 100)
        assert f.read(10) == b""
        assert f.readall() == b""


def test_negative_seek_is_a_value_error(nfs, data):
    with nfs.open(data[0], "rb") as f:
        with pytest.raises(ValueError):
            f.seek(-1)
        assert f.tell() == 0


def test_readinto_fills_the_callers_buffer(nfs, data):
    name, payload = data
    buf = bytearray(4096)
    with nfs.open(name, "rb") as f:
        f.seek(SIZE - 100)
        assert f.readinto(buf) == 100
        assert buf[:100] == payload[-100:]
        view = memoryview(buf)[10:20]
        f.seek(0)
        assert f.readinto(view) == 10
        assert buf[10:20] == payload[:10]


def test_readall_from_the_middle(nfs, data):
    name, payload = data
    with nfs.open(name, "rb") as f:
        f.seek(123)
        assert f.readall() == payload[123:]


def test_buffered_reader_over_a_file(nfs, ganesha):
    name = fresh(ganesha, ".txt")
    (ganesha / name).write_bytes(b"one\ntwo\nthree\n")
    with io.BufferedReader(nfs.open(name, "rb")) as f:
        assert f.readlines() == [b"one\n", b"two\n", b"three\n"]


def test_write_then_close_commits(nfs, ganesha):
    name = fresh(ganesha)
    payload = os.urandom(2 * (1 << 20) + 7)
    with nfs.open(name, "wb") as f:
        assert f.writable() and not f.readable()
        assert f.write(payload[:1000]) == 1000
        assert f.write(memoryview(payload)[1000:]) == len(payload) - 1000
        assert f.tell() == len(payload)
    assert (ganesha / name).read_bytes() == payload


def test_write_replaces_an_existing_file(nfs, ganesha):
    name = fresh(ganesha)
    (ganesha / name).write_bytes(b"x" * 10000)
    with nfs.open(name, "wb") as f:
        f.write(b"short")
    assert (ganesha / name).read_bytes() == b"short"


def test_write_at_an_offset_after_seek(nfs, ganesha):
    name = fresh(ganesha)
    with nfs.open(name, "wb") as f:
        f.write(b"abcdef")
        f.seek(2)
        f.write(b"XY")
    assert (ganesha / name).read_bytes() == b"abXYef"


def test_module_open_with_a_url_owns_its_client(ganesha, data):
    name, payload = data
    with ferry.nfs.open(nfs_url(), name, "rb") as f:
        assert f.read(100) == payload[:100]
        assert f.name.startswith("nfs://127.0.0.1/export/files/data.bin")


def test_reading_a_write_only_file_is_unsupported(nfs, ganesha):
    with nfs.open(fresh(ganesha), "wb") as f:
        with pytest.raises(io.UnsupportedOperation):
            f.read(1)


def test_writing_a_read_only_file_is_unsupported(nfs, data):
    with nfs.open(data[0], "rb") as f:
        with pytest.raises(io.UnsupportedOperation):
            f.write(b"x")


def test_closed_file_raises_value_error(nfs, data):
    f = nfs.open(data[0], "rb")
    f.close()
    f.close()  # idempotent
    with pytest.raises(ValueError):
        f.read(1)


@pytest.mark.parametrize("mode", ["r", "w", "r+b", "ab", "rt"])
def test_other_modes_are_a_value_error(nfs, data, mode):
    with pytest.raises(ValueError, match="mode"):
        nfs.open(data[0], mode)


def test_missing_file_is_file_not_found(nfs):
    with pytest.raises(FileNotFoundError):
        nfs.open("files/no-such-file.bin", "rb")


def test_open_file_survives_closing_its_client(ganesha, rt, data):
    name, payload = data
    client = ferry.nfs.NfsClient(nfs_url(), runtime=rt)
    assert_open_file_outlives_its_client(client, name, payload)
    assert client.closed


def test_open_file_keeps_the_runtime_from_closing(nfs, rt, data):
    f = nfs.open(data[0], "rb")
    with pytest.raises(ferry.Error):
        rt.close()
    f.close()


# ---------------------------------------------------------------- copies


def test_download_copies_every_byte_and_returns_stats(nfs, data, tmp_path):
    name, payload = data
    dst = tmp_path / "out.bin"
    stats = nfs.download(name, str(dst))
    assert dst.read_bytes() == payload
    assert isinstance(stats, records_pb2.TransferStats)
    assert stats.operation == records_pb2.TransferStats.OPERATION_DOWNLOAD
    assert stats.bytes == SIZE and stats.bytes_fetched == SIZE
    assert stats.source.startswith("nfs://127.0.0.1/export/files/data.bin")
    assert stats.destination == str(dst)
    assert stats.requests >= 1 and stats.elapsed_ns > 0
    assert stats.code == 0


def test_upload_copies_every_byte(nfs, ganesha, tmp_path):
    name = fresh(ganesha)
    src = tmp_path / "in.bin"
    payload = os.urandom(SIZE)
    src.write_bytes(payload)
    stats = nfs.upload(str(src), name, chunk_bytes=1 << 18)
    assert (ganesha / name).read_bytes() == payload
    assert stats.operation == records_pb2.TransferStats.OPERATION_UPLOAD
    assert stats.bytes == SIZE and stats.bytes_uploaded == SIZE


def test_progress_increases_to_the_size(nfs, data, tmp_path):
    calls = []
    nfs.download(data[0], str(tmp_path / "out.bin"), chunk_bytes=1 << 16,
                 progress=lambda done, total: calls.append((done, total)))
    assert calls, "progress was never called"
    assert all(total == SIZE for _, total in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done)
    assert done[-1] == SIZE


def test_upload_progress_ends_at_the_size(nfs, ganesha, tmp_path):
    src = tmp_path / "in.bin"
    src.write_bytes(os.urandom(SIZE))
    calls = []
    nfs.upload(str(src), fresh(ganesha), progress=lambda done, total: calls.append(done))
    assert calls == sorted(calls) and calls[-1] == SIZE


def test_progress_of_an_empty_file_is_called_once_with_zero(nfs, ganesha, tmp_path):
    name = fresh(ganesha)
    (ganesha / name).write_bytes(b"")
    calls = []
    nfs.download(name, str(tmp_path / "out.bin"), progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, 0)]


def test_exception_in_progress_propagates_unchanged(nfs, data, tmp_path):
    boom = KeyError("stop here")
    with pytest.raises(KeyError) as info:
        nfs.download(data[0], str(tmp_path / "out.bin"), progress=raising(boom))
    assert info.value is boom


def test_progress_must_be_callable(nfs, data, tmp_path):
    with pytest.raises(TypeError):
        nfs.download(data[0], str(tmp_path / "out.bin"), progress=42)


def test_download_releases_the_gil(ganesha, data, tmp_path):
    # 64 MiB in 64 KiB chunks: long enough that the watcher, if it runs at
    # all during the call, sees the partial copy.
    big = "files/big-gil.bin"
    size = 64 << 20
    if not (ganesha / big).exists():
        (ganesha / big).write_bytes(os.urandom(size))
    out = tmp_path / "out"
    out.mkdir()
    with ferry.Runtime(blocking_threads=2) as rt, ferry.nfs.NfsClient(nfs_url(), runtime=rt) as c:
        with DirectoryWatcher(out) as w:
            c.download(big, str(out / "big.bin"), parallelism=2, chunk_bytes=1 << 16)
    # The copy lands in a temporary file beside the destination (renamed
    # over it when complete): seeing that file proves the call let go of
    # the GIL while it ran.
    assert w.saw(lambda name, sz: name != "big.bin")


def test_download_of_a_missing_file_is_file_not_found(nfs, tmp_path):
    with pytest.raises(FileNotFoundError):
        nfs.download("files/absent.bin", str(tmp_path / "x"))


def test_module_download_and_upload_take_a_url(ganesha, data, tmp_path):
    name, payload = data
    ferry.nfs.download(nfs_url(), name, str(tmp_path / "a.bin"))
    assert (tmp_path / "a.bin").read_bytes() == payload
    up = fresh(ganesha)
    ferry.nfs.upload(nfs_url(), str(tmp_path / "a.bin"), up)
    assert (ganesha / up).read_bytes() == payload


def test_copy_picks_nfs_by_scheme(ganesha, data, tmp_path):
    name, payload = data
    calls = []
    stats = ferry.copy(nfs_url(name), str(tmp_path / "c.bin"), progress=lambda d, t: calls.append(d))
    assert (tmp_path / "c.bin").read_bytes() == payload
    assert stats.operation == records_pb2.TransferStats.OPERATION_DOWNLOAD
    assert calls[-1] == SIZE
    up = fresh(ganesha)
    stats = ferry.copy(str(tmp_path / "c.bin"), nfs_url(up))
    assert (ganesha / up).read_bytes() == payload
    assert stats.operation == records_pb2.TransferStats.OPERATION_UPLOAD


def test_copy_between_two_local_paths_copies_the_file(tmp_path):
    (tmp_path / "a").write_bytes(b"local to local")
    ferry.copy(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_bytes() == b"local to local"


def test_copy_of_an_unknown_scheme_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="ftp://"):
        ferry.copy("ftp://host/x", str(tmp_path / "b"))
