"""The iRODS peer with its catalog in PostgreSQL (-db postgres://...), the
mode for concurrency tests: real clients write from many connections at
once and every object lands once."""

import concurrent.futures
import os
import subprocess

import pytest
from conftest import ROOT, ZONE, Peer

POSTGRES = ROOT / "tests" / "peers" / "postgres"


@pytest.fixture(scope="module")
def pg_peer(tmp_path_factory):
    if not list(__import__("pathlib").Path("/usr/lib/postgresql").glob("*/bin/postgres")):
        pytest.fail("PostgreSQL server missing: scripts/install-deps installs postgresql")
    pg_state = tmp_path_factory.mktemp("postgres")
    subprocess.run([str(POSTGRES), "start", str(pg_state)], check=True)
    os.environ["IRODS_PEER_DB"] = (pg_state / "url").read_text().strip()
    p = Peer(tmp_path_factory.mktemp("irods-pg"))
    try:
        p.start()
    finally:
        del os.environ["IRODS_PEER_DB"]
    yield p
    p.stop()
    subprocess.run([str(POSTGRES), "stop", str(pg_state)], check=True)


def session(peer, user="rods", password="rods"):
    from irods.session import iRODSSession

    return iRODSSession(host="127.0.0.1", port=peer.port, user=user, password=password, zone=ZONE)


def test_the_peer_serves_its_catalog_from_postgresql(pg_peer):
    assert "catalog postgres://" in pg_peer.log()


def test_eight_concurrent_writers_each_land_every_object_once(pg_peer, tmp_path):
    base = f"/{ZONE}/home/rods/concurrent"
    with session(pg_peer) as s:
        s.collections.create(base)
    payloads = {f"w{w}-{i:02d}": os.urandom(1000 + w * 37 + i) for w in range(8) for i in range(25)}

    def writer(w):
        with session(pg_peer) as s:
            for name, data in payloads.items():
                if name.startswith(f"w{w}-"):
                    with s.data_objects.open(f"{base}/{name}", "w") as f:
                        f.write(data)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(writer, range(8)))
    with session(pg_peer) as s:
        names = [o.name for o in s.collections.get(base).data_objects]
        assert sorted(names) == sorted(payloads)
        for name in ("w0-00", "w7-24", "w3-11"):
            with s.data_objects.open(f"{base}/{name}", "r") as f:
                assert f.read() == payloads[name]


def test_a_40_MiB_parallel_put_and_get_round_trip_on_postgresql(pg_peer, tmp_path):
    data = os.urandom(40 << 20)
    src, out = tmp_path / "src", tmp_path / "out"
    src.write_bytes(data)
    with session(pg_peer) as s:
        s.data_objects.put(str(src), f"/{ZONE}/home/rods/big")
        s.data_objects.get(f"/{ZONE}/home/rods/big", str(out))
    assert out.read_bytes() == data
