"""ferry.irods against ferry's iRODS test peer, cross-checked with
python-irodsclient where it is installed (scripts/test-irods puts it in the
project's .venv)."""

import os
import uuid

import pytest

import ferry
import ferry.irods


@pytest.fixture
def rt():
    with ferry.Runtime() as r:
        yield r


@pytest.fixture
def client(rt, irods_env):
    coll = f"t-{uuid.uuid4().hex[:8]}"
    c = ferry.irods.IrodsClient(irods_env, runtime=rt)
    yield c, coll
    c.close()


def test_upload_then_download_round_trips_bytes(client, tmp_path):
    c, coll = client
    data = os.urandom(3 * (8 << 20) + 123)  # several 8 MiB chunks: joined streams
    src, back = tmp_path / "src", tmp_path / "back"
    src.write_bytes(data)
    c.upload(str(tmp_path), coll, recursive=True)
    stats = c.download(f"{coll}/src", str(back))
    assert back.read_bytes() == data
    assert stats.bytes == len(data)


def test_open_reads_at_an_offset_and_writes_a_new_object(client, tmp_path):
    c, coll = client
    (tmp_path / "seed").write_bytes(b"x")
    c.upload(str(tmp_path), coll, recursive=True)
    with c.open(f"{coll}/new.bin", "wb") as f:
        f.write(b"hello irods")
    with c.open(f"{coll}/new.bin", "rb") as f:
        f.seek(6)
        assert f.read() == b"irods"
    assert c.stat(f"{coll}/new.bin")["size"] == 11


def test_walk_entries_lists_a_collection_tree(client, tmp_path):
    c, coll = client
    (tmp_path / "d").mkdir()
    (tmp_path / "a").write_bytes(b"1")
    (tmp_path / "d" / "b").write_bytes(b"22")
    c.upload(str(tmp_path), coll, recursive=True)
    paths = sorted(os.fsdecode(e.path) for e in c.walk_entries(coll))
    assert paths == ["a", "d", "d/b"]


def test_a_missing_path_is_file_not_found(client, tmp_path):
    c, coll = client
    with pytest.raises(FileNotFoundError, match="USER_FILE_DOES_NOT_EXIST"):
        c.download(f"{coll}/nope", str(tmp_path / "x"))


def test_a_wrong_password_is_unauthenticated(rt, irods_env, monkeypatch):
    monkeypatch.setenv("IRODS_PASSWORD", "wrong")
    with pytest.raises(ferry.UnauthenticatedError, match="CAT_INVALID_AUTHENTICATION"):
        ferry.irods.IrodsClient(irods_env, runtime=rt)


def test_ferry_copy_takes_irods_urls(irods_env, tmp_path):
    (tmp_path / "f").write_bytes(b"via ferry.copy")
    coll = f"t-{uuid.uuid4().hex[:8]}"
    ferry.copy(str(tmp_path), f"{irods_env}/{coll}", recursive=True)
    ferry.copy(f"{irods_env}/{coll}/f", str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == b"via ferry.copy"


def test_what_ferry_writes_python_irodsclient_reads(client, tmp_path, irods_peer):
    session_mod = pytest.importorskip("irods.session")
    c, coll = client
    data = os.urandom(100_000)
    (tmp_path / "obj").write_bytes(data)
    c.upload(str(tmp_path), coll, recursive=True)
    with session_mod.iRODSSession(host="127.0.0.1", port=irods_peer, user="rods", password="rods",
                                  zone="tempZone") as s:
        with s.data_objects.open(f"/tempZone/home/rods/{coll}/obj", "r") as f:
            assert f.read() == data
