"""Shared helpers for ferry's Python tests.

Tests never sleep to test logic: expiry is driven by ferry.ManualClock, and
concurrency by events plus the cache's own counters (a thread waiting on a
single-flight load has already counted its miss). NFS tests share one
nfs-ganesha per session (the `ganesha` fixture).
"""

import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time

import pytest

# Upper bound for waiting on another thread; a correct run never gets close.
WAIT_S = 30.0


def wait_until(predicate, what):
    """Polls `predicate` until it holds (bounded: fails the test after WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.001)


class Gate:
    """A loader that blocks until opened, then returns or raises."""

    def __init__(self, result=None, exc=None):
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.calls = 0
        self.result = result
        self.exc = exc

    def __call__(self, key):
        self.calls += 1
        self.entered.set()
        assert self.opened.wait(WAIT_S), "gate never opened"
        if self.exc is not None:
            raise self.exc
        return self.result if self.result is not None else {"key": key}


def run_threads(n, fn):
    """Runs fn(i) on n threads; returns [(value, exception)] in thread order."""
    results = [None] * n

    def body(i):
        try:
            results[i] = (fn(i), None)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            results[i] = (None, e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, results


def join_all(threads):
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive(), "thread did not finish"


# ---------------------------------------------------------------- nfs-ganesha

# The repository's peer scripts (tests run from the source tree, importing
# the installed package).
REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
GANESHA = REPO_ROOT / "tests" / "peers" / "ganesha"
NFS_PORT = 2049        # fixed by tests/peers/ganesha.conf.in
MOUNT_PORT = 20048
PEER_TIMEOUT_S = 120   # start waits up to 20 s for ganesha; a loaded box is slower
# Owner of the unreadable directory's test walk (not root: root reads mode 000).
OTHER_UID = 1000


def nfs_url(sub=""):
    """The URL of `sub` (relative to the export) on the fixture's ganesha."""
    path = "/export" + (f"/{sub}" if sub else "")
    return f"nfs://127.0.0.1{path}?nfsport={NFS_PORT}&mountport={MOUNT_PORT}"


def _port_taken(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _make_tree(root):
    """A small tree with what walks get wrong: empty and deep directories,
    a wide one, sizes, a symlink, a name that is not UTF-8."""
    (root / "empty").mkdir(parents=True)
    deep = root / "deep"
    for i in range(6):
        deep = deep / f"level{i}"
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_bytes(b"x" * 17)
    wide = root / "wide"
    wide.mkdir()
    for i in range(300):
        (wide / f"f{i:03d}").write_bytes(b"y" * i)
    (root / "sizes").mkdir()
    for size in (0, 1, 4095, 4096, 65537):
        (root / "sizes" / f"s{size}").write_bytes(b"z" * size)
    os.symlink("sizes/s1", root / "link")
    os.symlink("nowhere", root / "dangling")
    (root / os.fsdecode(b"caf\xe9.bin")).write_bytes(b"not utf-8")


def _make_permission_tree(root):
    """Readable directories around one that only its owner (root) may list."""
    for name in ("open", "locked", "after"):
        (root / name).mkdir(parents=True)
        (root / name / "inside").write_bytes(b"data")
    for d in (root, root / "open", root / "after"):
        d.chmod(0o755)
    (root / "locked").chmod(0o000)


@pytest.fixture(scope="session")
def ganesha(tmp_path_factory):
    """nfs-ganesha serving a generated tree, started and stopped by
    tests/peers/ganesha (FERRY_PEERS_NETNS and the rest of the environment
    pass through). Yields the export folder: `tree/` holds the walk tree,
    `perm/` the unreadable directory."""
    if shutil.which("ganesha.nfsd") is None:
        pytest.skip("nfs-ganesha is not installed (scripts/install-deps installs it)")
    for port, what in ((NFS_PORT, "NFS"), (MOUNT_PORT, "MOUNT")):
        if _port_taken(port):
            pytest.fail(f"the nfs-ganesha fixture needs TCP port {port} ({what}) on 127.0.0.1, which "
                        "is in use (another ganesha?). Stop it, or run the tests in a private network "
                        "namespace: unshare -n bash -c 'ip link set lo up; FERRY_PEERS_NETNS=1 "
                        "scripts/test-python'")
    base = tmp_path_factory.mktemp("ganesha")
    export, state = base / "export", base / "state"
    export.mkdir()
    export.chmod(0o755)
    _make_tree(export / "tree")
    _make_permission_tree(export / "perm")
    started = subprocess.run([str(GANESHA), "start", str(export), str(state)],
                             capture_output=True, text=True, timeout=PEER_TIMEOUT_S)
    if started.returncode != 0:
        subprocess.run([str(GANESHA), "stop", str(export), str(state)], timeout=PEER_TIMEOUT_S)
        pytest.fail(f"tests/peers/ganesha start failed:\n{started.stdout}{started.stderr}")
    try:
        yield export
    finally:
        stopped = subprocess.run([str(GANESHA), "stop", str(export), str(state)],
                                 capture_output=True, text=True, timeout=PEER_TIMEOUT_S)
        (export / "perm" / "locked").chmod(0o755)  # so tmp_path can clean it up
        if stopped.returncode != 0:
            print(f"tests/peers/ganesha stop failed:\n{stopped.stdout}{stopped.stderr}")
