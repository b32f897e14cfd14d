"""ferry's iRODS test peer, proven by clients ferry did not write:
python-irodsclient 3.3.0 (prc) and irods4j 0.6.0-java8 (j4). What one
client writes, the other reads byte for byte."""

import hashlib
import os
import socket
import struct
import uuid

import pytest
from conftest import ZONE, J4Error

import irods.client_configuration as prc_config
import irods.exception as ex
from irods.access import iRODSAccess

CAT_INVALID_AUTHENTICATION = -826000
CAT_INVALID_USER = -827000
CAT_NO_ACCESS_PERMISSION = -818000
SIZES = [0, 1, 1 << 20, 40 << 20]


@pytest.fixture
def legacy_auth():
    prc_config.legacy_auth.force_legacy_auth = True
    yield
    prc_config.legacy_auth.force_legacy_auth = False


# --- authentication ---------------------------------------------------------

def test_prc_logs_in_with_the_4_3_auth_framework(prc, peer):
    assert prc("alice").collections.get(f"/{ZONE}/home/alice").name == "alice"


def test_prc_logs_in_with_legacy_native_auth(prc, legacy_auth):
    assert prc("alice").collections.get(f"/{ZONE}/home/alice").name == "alice"


def test_irods4j_logs_in_with_the_auth_framework(j4):
    assert j4("login", user="alice") == ["ok"]


@pytest.mark.parametrize("flow", ["framework", "legacy"])
def test_prc_wrong_password_is_CAT_INVALID_AUTHENTICATION(prc, flow, request):
    if flow == "legacy":
        request.getfixturevalue("legacy_auth")
    with pytest.raises(ex.CAT_INVALID_AUTHENTICATION):
        prc("alice", password="wrong").collections.get(f"/{ZONE}/home/alice")


def test_irods4j_wrong_password_is_CAT_INVALID_AUTHENTICATION(j4):
    with pytest.raises(J4Error) as e:
        j4("login", user="alice", password="wrong")
    assert e.value.code == CAT_INVALID_AUTHENTICATION


def test_prc_unknown_user_is_CAT_INVALID_USER(prc):
    with pytest.raises(ex.CAT_INVALID_USER):
        prc("mallory", password="x").collections.get(f"/{ZONE}/home")


# --- collections ------------------------------------------------------------

def test_prc_creates_lists_and_removes_collections(prc, coll):
    s = prc()
    s.collections.create(f"{coll}/a/b/c")  # parents made as needed
    assert [c.name for c in s.collections.get(coll).subcollections] == ["a"]
    assert [c.name for c in s.collections.get(f"{coll}/a").subcollections] == ["b"]
    s.collections.remove(f"{coll}/a", recurse=True, force=True)
    assert not s.collections.exists(f"{coll}/a")


def test_irods4j_creates_lists_and_removes_collections(j4, coll):
    assert j4("mkdir", f"{coll}/x", "--", "mkdir", f"{coll}/y", "--", "ls", coll) == ["x/", "y/"]
    assert j4("rmdir", f"{coll}/x", "--", "ls", coll) == ["y/"]


def test_prc_removes_a_collection_of_250_objects_through_interim_stat_replies(prc, coll, j4, peer):
    j4("mkdir", f"{coll}/big", "--", "fill", f"{coll}/big", "500")
    prc().collections.remove(f"{coll}/big", recurse=True, force=True)
    assert not prc().collections.exists(f"{coll}/big")


def test_collections_made_by_one_client_are_listed_by_the_other(prc, j4, coll):
    prc().collections.create(f"{coll}/from-prc")
    j4("mkdir", f"{coll}/from-j4")
    assert sorted(j4("ls", coll)) == ["from-j4/", "from-prc/"]
    assert sorted(c.name for c in prc().collections.get(coll).subcollections) == ["from-j4", "from-prc"]


# --- data ------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}B")
def test_prc_put_and_get_round_trip(prc, coll, payload, tmp_path, size):
    src, data = payload(size)
    s = prc()
    s.data_objects.put(str(src), f"{coll}/obj")
    assert s.data_objects.get(f"{coll}/obj").size == size
    out = tmp_path / "out"
    s.data_objects.get(f"{coll}/obj", str(out))
    assert out.read_bytes() == data


@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}B")
def test_irods4j_reads_what_prc_wrote(prc, j4, coll, payload, tmp_path, size):
    src, data = payload(size)
    prc().data_objects.put(str(src), f"{coll}/obj")
    out = tmp_path / "out"
    j4("get", f"{coll}/obj", str(out))
    assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(data).digest()


@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}B")
def test_prc_reads_what_irods4j_wrote(prc, j4, coll, payload, tmp_path, size):
    src, data = payload(size)
    j4("put", str(src), f"{coll}/obj")
    assert j4("stat", f"{coll}/obj") == [f"data {size}"]
    out = tmp_path / "out"
    prc().data_objects.get(f"{coll}/obj", str(out))
    assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(data).digest()


def test_prc_moves_40_MiB_over_parallel_replica_token_streams(prc, coll, payload, tmp_path, peer):
    src, data = payload(40 << 20)
    before = {m: peer.log().count(f"(big) joined replica ({m})") for m in ("write", "read")}
    s = prc()
    s.data_objects.put(str(src), f"{coll}/big")
    out = tmp_path / "out"
    s.data_objects.get(f"{coll}/big", str(out))
    assert out.read_bytes() == data
    # Over 32 MiB PRC opens extra connections that join the first stream's
    # replica by its token, each way.
    for m in ("write", "read"):
        assert peer.log().count(f"(big) joined replica ({m})") > before[m]


def test_prc_overwrites_an_object_with_shorter_content(prc, coll, payload, tmp_path):
    s = prc()
    big, _ = payload(1 << 20)
    small, data = payload(10)
    s.data_objects.put(str(big), f"{coll}/obj")
    s.data_objects.put(str(small), f"{coll}/obj", **{"forceFlag": ""})
    out = tmp_path / "out"
    s.data_objects.get(f"{coll}/obj", str(out))
    assert out.read_bytes() == data


def test_prc_reads_at_an_offset(prc, coll, payload):
    src, data = payload(100_000)
    s = prc()
    s.data_objects.put(str(src), f"{coll}/obj")
    with s.data_objects.open(f"{coll}/obj", "r") as f:
        f.seek(12345)
        assert f.read(1000) == data[12345:13345]


def test_irods4j_renames_and_removes_a_data_object(j4, coll, payload):
    src, _ = payload(5)
    j4("put", str(src), f"{coll}/a", "--", "rename", f"{coll}/a", f"{coll}/b")
    assert j4("ls", coll) == ["b"]
    j4("rm", f"{coll}/b")
    assert j4("ls", coll) == []


# --- listing ---------------------------------------------------------------

def test_a_20000_entry_collection_lists_every_name_exactly_once(prc, j4, coll):
    j4("fill", coll, "20000")
    s = prc()
    c = s.collections.get(coll)
    names = [o.name for o in c.data_objects] + [x.name for x in c.subcollections]
    assert len(names) == 20000 and len(set(names)) == 20000
    assert names[0] == "d00000" and "c09999" in names
    j4_names = j4("ls", coll)
    assert len(j4_names) == 20000 and len(set(j4_names)) == 20000
    assert {n.rstrip("/") for n in j4_names} == set(names)


# --- metadata and permissions ---------------------------------------------

def test_metadata_added_by_prc_is_listed_by_irods4j(prc, j4, coll, payload):
    src, _ = payload(1)
    s = prc()
    s.data_objects.put(str(src), f"{coll}/obj")
    s.data_objects.get(f"{coll}/obj").metadata.add("color", "blue", "nm")
    s.collections.get(coll).metadata.add("project", "ferry")
    assert j4("meta-ls", f"{coll}/obj") == ["color=blue=nm"]
    assert j4("meta-ls", coll) == ["project=ferry="]


def test_metadata_added_by_irods4j_is_listed_by_prc(prc, j4, coll, payload):
    src, _ = payload(1)
    j4("put", str(src), f"{coll}/obj", "--", "meta-add", f"{coll}/obj", "k", "v", "u")
    items = prc().data_objects.get(f"{coll}/obj").metadata.items()
    assert [(m.name, m.value, m.units) for m in items] == [("k", "v", "u")]


def test_an_object_without_a_grant_is_denied_to_another_user(prc, coll, payload, tmp_path):
    src, _ = payload(10)
    prc().data_objects.put(str(src), f"{coll}/obj")
    with pytest.raises(ex.CAT_NO_ACCESS_PERMISSION):
        with prc("alice").data_objects.open(f"{coll}/obj", "r") as f:
            f.read()


def test_a_read_grant_by_prc_lets_alice_read_and_bob_is_still_denied(prc, j4, coll, payload, tmp_path):
    src, data = payload(1000)
    s = prc()
    s.data_objects.put(str(src), f"{coll}/obj")
    s.acls.set(iRODSAccess("read", f"{coll}/obj", "alice"))
    out = tmp_path / "out"
    j4("get", f"{coll}/obj", str(out), user="alice")
    assert out.read_bytes() == data
    with pytest.raises(J4Error) as e:
        j4("get", f"{coll}/obj", str(tmp_path / "bob"), user="bob")
    assert e.value.code == CAT_NO_ACCESS_PERMISSION


def test_a_grant_by_irods4j_is_seen_by_prc(prc, j4, coll, payload):
    src, _ = payload(1)
    j4("put", str(src), f"{coll}/obj", "--", "chmod", "read_object", "alice", f"{coll}/obj")
    acl = {(a.user_name, a.access_name) for a in prc().acls.get(prc().data_objects.get(f"{coll}/obj"))}
    assert ("alice", "read_object") in acl and ("rods", "own") in acl
    assert "alice READ_OBJECT" in j4("perms", f"{coll}/obj")


def test_alice_cannot_write_into_rods_collection(prc, coll, payload):
    src, _ = payload(1)
    with pytest.raises(ex.CAT_NO_ACCESS_PERMISSION):
        prc("alice").data_objects.put(str(src), f"{coll}/intruder")


# --- errors clients expect ---------------------------------------------------

def test_prc_missing_paths_raise_does_not_exist(prc, coll):
    with pytest.raises(ex.DataObjectDoesNotExist):
        prc().data_objects.get(f"{coll}/nope")
    with pytest.raises(ex.CollectionDoesNotExist):
        prc().collections.get(f"{coll}/nope")


def test_irods4j_sees_a_missing_path_as_nonexistent(j4, coll):
    assert j4("stat", f"{coll}/nope") == ["none 0"]


# --- durability --------------------------------------------------------------

def test_a_restart_keeps_every_object(tmp_path_factory, payload):
    from conftest import Peer
    from irods.session import iRODSSession

    p = Peer(tmp_path_factory.mktemp("restart"))
    p.start()
    src, data = payload(70_000)
    try:
        with iRODSSession(host="127.0.0.1", port=p.port, user="rods", password="rods", zone=ZONE) as s:
            s.collections.create(f"/{ZONE}/home/rods/keep")
            s.data_objects.put(str(src), f"/{ZONE}/home/rods/keep/obj")
            s.data_objects.get(f"/{ZONE}/home/rods/keep/obj").metadata.add("a", "1")
        p.stop()
        p.start()
        with iRODSSession(host="127.0.0.1", port=p.port, user="rods", password="rods", zone=ZONE) as s:
            o = s.data_objects.get(f"/{ZONE}/home/rods/keep/obj")
            with o.open("r") as f:
                assert f.read() == data
            assert [(m.name, m.value) for m in o.metadata.items()] == [("a", "1")]
    finally:
        p.stop()


# --- bad input ---------------------------------------------------------------

def frame(header_xml, body=b""):
    h = header_xml.encode()
    return struct.pack(">I", len(h)) + h + body


def header(typ, msg_len=0, int_info=0, bs_len=0):
    return (f"<MsgHeader_PI><type>{typ}</type><msgLen>{msg_len}</msgLen><errorLen>0</errorLen>"
            f"<bsLen>{bs_len}</bsLen><intInfo>{int_info}</intInfo></MsgHeader_PI>")


def read_frame(sock):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    (n,) = struct.unpack(">I", exact(4))
    h = exact(n).decode()
    import xml.etree.ElementTree as ET

    root = ET.fromstring(h)
    lens = [int(root.findtext(t)) for t in ("msgLen", "errorLen", "bsLen")]
    body = exact(sum(lens))
    return root.findtext("type"), int(root.findtext("intInfo")), body


def logged_in_socket(peer):
    """A raw connection past start-up and legacy native authentication."""
    import base64
    import hashlib as hl

    s = socket.create_connection(("127.0.0.1", peer.port), timeout=10)
    sp = ("<StartupPack_PI><irodsProt>1</irodsProt><reconnFlag>0</reconnFlag><connectCnt>0</connectCnt>"
          "<proxyUser>rods</proxyUser><proxyRcatZone>tempZone</proxyRcatZone><clientUser>rods</clientUser>"
          "<clientRcatZone>tempZone</clientRcatZone><relVersion>rods4.3.2</relVersion><apiVersion>d</apiVersion>"
          "<option>raw</option></StartupPack_PI>").encode()
    s.sendall(frame(header("RODS_CONNECT", len(sp)), sp))
    assert read_frame(s)[0] == "RODS_VERSION"
    s.sendall(frame(header("RODS_API_REQ", 0, 703)))
    _, status, body = read_frame(s)
    import re

    challenge = base64.b64decode(re.search(rb"<challenge>(.*)</challenge>", body).group(1))
    digest = bytearray(hl.md5(challenge[:64] + b"rods".ljust(50, b"\0")).digest())
    digest = bytes(b if b else 1 for b in digest)
    resp = (f"<authResponseInp_PI><response>{base64.b64encode(digest).decode()}</response>"
            f"<username>rods</username></authResponseInp_PI>").encode()
    s.sendall(frame(header("RODS_API_REQ", len(resp), 704), resp))
    assert read_frame(s)[1] == 0
    return s


def assert_closed(sock):
    sock.settimeout(10)
    assert sock.recv(1) == b""


def test_a_malformed_header_closes_the_connection_and_the_peer_serves_on(peer, prc):
    s = socket.create_connection(("127.0.0.1", peer.port), timeout=10)
    s.sendall(frame("<MsgHeader_PI><type>RODS_CONNECT</type><msgLen>abc"))
    assert_closed(s)
    assert "header" in peer.log()
    assert prc().collections.get(f"/{ZONE}/home").name == "home"


def test_an_oversized_length_closes_the_connection_without_allocating_it(peer):
    s = logged_in_socket(peer)
    s.sendall(frame(header("RODS_API_REQ", 2**31 - 1, 633)))
    assert_closed(s)
    big = socket.create_connection(("127.0.0.1", peer.port), timeout=10)
    big.sendall(struct.pack(">I", 0x7FFFFFFF))
    assert_closed(big)
    assert "outside" in peer.log()


def test_invalid_xml_in_a_request_gets_SYS_API_INPUT_ERR(peer):
    s = logged_in_socket(peer)
    body = b"<DataObjInp_PI><objPath>/tempZone</objPath"
    s.sendall(frame(header("RODS_API_REQ", len(body), 633), body))
    _, status, _ = read_frame(s)
    assert status == -14000
    # The connection is still usable.
    ok = b"<DataObjInp_PI><objPath>/tempZone</objPath></DataObjInp_PI>"
    s.sendall(frame(header("RODS_API_REQ", len(ok), 633), ok))
    assert read_frame(s)[1] == 2  # a collection


def test_an_unknown_api_number_gets_SYS_UNMATCHED_API_NUM(peer):
    s = logged_in_socket(peer)
    s.sendall(frame(header("RODS_API_REQ", 0, 123456)))
    assert read_frame(s)[1] == -12000
    assert "unknown API number 123456" in peer.log()


def test_a_truncated_stream_is_dropped_without_a_hang(peer, prc):
    s = logged_in_socket(peer)
    h = header("RODS_API_REQ", 100, 633)
    s.sendall(frame(h, b"<DataObjInp_PI>"))
    s.shutdown(socket.SHUT_WR)
    assert_closed(s)
    assert prc().collections.get(f"/{ZONE}/home").name == "home"


def test_requests_before_authentication_are_refused(peer):
    s = socket.create_connection(("127.0.0.1", peer.port), timeout=10)
    sp = b"<StartupPack_PI><proxyUser>rods</proxyUser><clientUser>rods</clientUser></StartupPack_PI>"
    s.sendall(frame(header("RODS_CONNECT", len(sp)), sp))
    read_frame(s)
    body = b"<DataObjInp_PI><objPath>/tempZone</objPath></DataObjInp_PI>"
    s.sendall(frame(header("RODS_API_REQ", len(body), 633), body))
    assert read_frame(s)[1] == -13000


def test_a_writer_that_vanishes_before_close_leaves_a_stale_replica(peer, prc, coll):
    from irods.models import DataObject, Collection

    s = logged_in_socket(peer)
    inp = (f"<DataObjInp_PI><objPath>{coll}/cut</objPath><createMode>0</createMode><openFlags>577</openFlags>"
           "<offset>0</offset><dataSize>-1</dataSize><numThreads>0</numThreads><oprType>0</oprType>"
           "<KeyValPair_PI><ssLen>0</ssLen></KeyValPair_PI></DataObjInp_PI>").encode()
    s.sendall(frame(header("RODS_API_REQ", len(inp), 602), inp))
    _, fd, _ = read_frame(s)
    assert fd >= 3
    w = (f"<OpenedDataObjInp_PI><l1descInx>{fd}</l1descInx><len>5</len><whence>0</whence><oprType>0</oprType>"
         "<offset>0</offset><bytesWritten>0</bytesWritten><KeyValPair_PI><ssLen>0</ssLen></KeyValPair_PI>"
         "</OpenedDataObjInp_PI>").encode()
    s.sendall(frame(header("RODS_API_REQ", len(w), 676, bs_len=5), w + b"half!"))
    assert read_frame(s)[1] == 5
    s.close()  # no close call: the writer is gone
    import time

    for _ in range(50):
        rows = list(prc().query(DataObject.replica_status).filter(Collection.name == coll)
                    .filter(DataObject.name == "cut"))
        if rows and rows[0][DataObject.replica_status] == "0":
            break
        time.sleep(0.05)
    assert rows[0][DataObject.replica_status] == "0"
    assert "left stale" in peer.log()
