"""Fixtures for proving ferry's iRODS test peer with clients ferry did not
write: python-irodsclient (in-process) and irods4j (a JVM per call, through
tests/interop/irods4j's command-line driver).

The peer runs from tests/peers/irods on a free port, one per test module,
with users rods/rods (admin), alice/apass and bob/bpass."""

import os
import pathlib
import subprocess
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
PEER = ROOT / "tests" / "peers" / "irods"
J4_DIR = ROOT / "tests" / "interop" / "irods4j" / "target"
ZONE = "tempZone"
PASSWORDS = {"rods": "rods", "alice": "apass", "bob": "bpass"}


class Peer:
    def __init__(self, state):
        self.state = state
        self.port = None

    def start(self):
        env = dict(os.environ, IRODS_PEER_PORT="0")
        subprocess.run([str(PEER), "start", str(self.state)], check=True, env=env)
        self.port = int((self.state / "port").read_text())

    def stop(self):
        subprocess.run([str(PEER), "stop", str(self.state)], check=True)

    def log(self):
        return (self.state / "irods.log").read_text()


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    p = Peer(tmp_path_factory.mktemp("irods-peer"))
    p.start()
    yield p
    p.stop()


@pytest.fixture
def prc(peer):
    """prc(user="rods", password=None) -> an iRODSSession (closed at teardown)."""
    from irods.session import iRODSSession

    sessions = []

    def make(user="rods", password=None):
        s = iRODSSession(host="127.0.0.1", port=peer.port, user=user,
                         password=PASSWORDS.get(user) if password is None else password, zone=ZONE)
        sessions.append(s)
        return s

    yield make
    for s in sessions:
        s.cleanup()


class J4Error(Exception):
    def __init__(self, code, text):
        super().__init__(f"{code} {text}")
        self.code = code


@pytest.fixture(scope="session")
def j4_classpath():
    jar = J4_DIR / "ferry-irods4j-cli-0.1.0.jar"
    cp = J4_DIR / "classpath.txt"
    if not jar.exists() or not cp.exists():
        pytest.fail("irods4j driver not built: scripts/test-irods builds it (mvn package)")
    return f"{jar}:{cp.read_text().strip()}"


@pytest.fixture
def j4(peer, j4_classpath):
    """j4(*command_words, user="rods", password=None) -> output lines.
    Commands are separated by "--" (see Irods4jCli); an iRODS error raises
    J4Error with its code."""

    def run(*words, user="rods", password=None):
        pw = PASSWORDS.get(user) if password is None else password
        cmd = ["java", "-cp", j4_classpath, "io.ferry.interop.Irods4jCli", "127.0.0.1", str(peer.port),
               user, pw, ZONE, *words]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        lines = [l for l in res.stdout.splitlines() if l]
        if res.returncode == 3 and lines and lines[-1].startswith("ERROR "):
            _, code, text = (lines[-1] + " ").split(" ", 2)
            raise J4Error(int(code), text.strip())
        if res.returncode != 0:
            raise RuntimeError(f"irods4j driver failed ({res.returncode}): {res.stderr[-2000:]}")
        return lines

    return run


@pytest.fixture
def coll(prc):
    """A fresh collection under rods's home, readable by nobody else."""
    path = f"/{ZONE}/home/rods/t-{uuid.uuid4().hex[:10]}"
    prc().collections.create(path)
    return path


@pytest.fixture
def payload(tmp_path):
    """payload(size) -> (local path, bytes) of random content."""

    def make(size, name=None):
        data = os.urandom(size)
        p = tmp_path / (name or f"src-{size}-{uuid.uuid4().hex[:6]}")
        p.write_bytes(data)
        return p, data

    return make
