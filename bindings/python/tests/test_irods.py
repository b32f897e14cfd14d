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


@pytest.mark.parametrize("piece", [64 << 10, 1 << 20, 8 << 20])
def test_a_file_read_to_its_end_in_pieces_gives_every_byte_in_order(client, tmp_path, piece):
    # Sequential reads are read ahead (several requests in flight): the
    # pieces must still come back in order, and end exactly at the end.
    c, coll = client
    data = os.urandom((18 << 20) + 777)
    (tmp_path / "seq").write_bytes(data)
    c.upload(str(tmp_path), coll, recursive=True)
    got = bytearray()
    with c.open(f"{coll}/seq", "rb") as f:
        while chunk := f.read(piece):
            got += chunk
        f.seek(5)
        assert f.read(10) == data[5:15]
    assert bytes(got) == data


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


def test_metadata_is_added_listed_and_removed_on_objects_and_collections(client, tmp_path):
    c, coll = client
    (tmp_path / "obj").write_bytes(b"x")
    c.upload(str(tmp_path), coll, recursive=True)
    for path in (f"{coll}/obj", coll):
        c.add_metadata(path, "experiment", "42", "run")
        assert c.metadata(path) == [ferry.irods.Avu("experiment", "42", "run")]
        c.remove_metadata(path, "experiment", "42", "run")
        assert c.metadata(path) == []


def test_metadata_of_a_missing_path_is_file_not_found(client):
    c, coll = client
    with pytest.raises(FileNotFoundError):
        c.metadata(f"{coll}/nope")


def test_set_access_grants_another_user_read(client, tmp_path, rt, irods_peer, monkeypatch):
    c, coll = client
    (tmp_path / "shared").write_bytes(b"for bob")
    c.upload(str(tmp_path), coll, recursive=True)
    c.set_access(f"{coll}/shared", "bob", "read")
    assert ferry.irods.Access("bob", "read_object") in c.access(f"{coll}/shared")
    monkeypatch.setenv("IRODS_PASSWORD", "bpass")
    with ferry.irods.IrodsClient(f"irods://bob@127.0.0.1:{irods_peer}/tempZone/home/rods",
                                 runtime=rt) as bob:
        with bob.open(f"{coll}/shared") as f:
            assert f.read() == b"for bob"


def test_metadata_calls_refuse_a_url_that_is_not_irods(rt, tmp_path):
    with ferry.FileSystems(runtime=rt) as fss:
        with pytest.raises(ferry.InvalidArgumentError, match="not an irods:// URL"):
            fss._raw.irods_metadata(str(tmp_path))


def test_python_irodsclient_reads_ferrys_metadata_and_ferry_reads_its_acls(client, tmp_path, irods_peer):
    session_mod = pytest.importorskip("irods.session")
    access_mod = pytest.importorskip("irods.access")
    c, coll = client
    (tmp_path / "obj").write_bytes(b"x")
    c.upload(str(tmp_path), coll, recursive=True)
    c.add_metadata(f"{coll}/obj", "origin", "ferry")
    logical = f"/tempZone/home/rods/{coll}/obj"
    with session_mod.iRODSSession(host="127.0.0.1", port=irods_peer, user="rods", password="rods",
                                  zone="tempZone") as s:
        obj = s.data_objects.get(logical)
        assert [(m.name, m.value) for m in obj.metadata.items()] == [("origin", "ferry")]
        s.acls.set(access_mod.iRODSAccess("read", logical, "alice", "tempZone"))
    assert ferry.irods.Access("alice", "read_object") in c.access(f"{coll}/obj")
