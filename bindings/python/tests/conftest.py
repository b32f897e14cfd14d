"""Shared helpers for ferry's Python tests.

Tests never sleep to test logic: expiry is driven by ferry.ManualClock, and
concurrency by events plus the cache's own counters (a thread waiting on a
single-flight load has already counted its miss). NFS tests share one
nfs-ganesha per session (the `ganesha` fixture).
"""

import io
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


def raising(exc):
    """A progress callback that raises `exc` itself on its first call."""
    def progress(done, total):
        raise exc
    return progress


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


def assert_open_file_outlives_its_client(client, name, payload):
    """A file `client` opened still reads after the client is closed, while
    the closed client refuses to open another (FailedPrecondition)."""
    import ferry
    f = client.open(name, "rb")
    client.close()
    with pytest.raises(ferry.Error) as info:
        client.open(name, "rb")
    assert info.value.code == "FailedPrecondition"
    assert f.read(10) == payload[:10]
    f.close()


def assert_reads_like_bytes(f, payload, calls):
    """Makes each call, ("read", n), ("seek", offset[, whence]) or ("tell",),
    on the open file f and on io.BytesIO(payload): every answer must be the
    same, as f reads, seeks and tells like any file holding payload."""
    model = io.BytesIO(payload)
    for name, *args in calls:
        want = getattr(model, name)(*args)
        assert getattr(f, name)(*args) == want, f"{name}{tuple(args)}"


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


class DirectoryWatcher:
    """Proves the GIL is released during a blocking call: a Python thread
    lists `directory` while the call runs and records what it saw then. It
    can only see a transfer's partial output (a temporary file, or the
    destination before it is complete) if it ran during the call. An
    unnamed temporary (O_TMPFILE, the local default where the filesystem
    has it) is seen through this process's open descriptors, as
    "#<inode> (deleted)" in `directory`.

        with DirectoryWatcher(tmp_path) as w:
            client.download(..., str(tmp_path / "out.bin"))
        assert w.saw(lambda name, size: ...)
    """

    def __init__(self, directory):
        self.directory = directory
        self.seen = []  # (name, size) pairs listed while the call ran
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                for entry in os.scandir(self.directory):
                    self.seen.append((entry.name, entry.stat().st_size))
            except FileNotFoundError:
                pass  # an entry renamed away between list and stat
            self._scan_unnamed()
            time.sleep(0.0005)

    def _scan_unnamed(self):
        prefix = os.path.join(str(self.directory), "")
        for fd in os.listdir("/proc/self/fd"):
            link = f"/proc/self/fd/{fd}"
            try:
                target = os.readlink(link)
                if target.startswith(prefix) and target.endswith(" (deleted)"):
                    self.seen.append((os.path.basename(target), os.stat(link).st_size))
            except OSError:
                pass  # closed between the listing and the look

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(WAIT_S)
        return False

    def saw(self, predicate):
        return any(predicate(name, size) for name, size in self.seen)


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


def read_tree(root):
    """{relative path: bytes} of every regular file under `root` (symlinks
    left out: no copy makes them)."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = f.read()
    return out


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


# ---------------------------------------------------------------- versitygw

VERSITYGW = REPO_ROOT / "tests" / "peers" / "versitygw"
S3_PORT = 7070          # tests/peers/versitygw's default
S3_ENDPOINT = f"http://127.0.0.1:{S3_PORT}"
S3_ACCESS_KEY = "AKIDLOCAL"
S3_SECRET_KEY = "SECRETLOCAL"
S3_REGION = "us-east-1"
S3_BUCKET = "ferry-py"


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory):
    """versitygw on 127.0.0.1:7070, started and stopped by
    tests/peers/versitygw, with bucket S3_BUCKET created. Yields the
    endpoint URL."""
    if not (REPO_ROOT / ".peers" / "bin" / "versitygw").exists():
        pytest.skip("versitygw is not installed (tests/peers/install-peers installs it)")
    if _port_taken(S3_PORT):
        pytest.fail(f"the versitygw fixture needs TCP port {S3_PORT} on 127.0.0.1, which is in "
                    "use. Run the tests in a private network namespace: unshare -n bash -c "
                    "'ip link set lo up; FERRY_PEERS_NETNS=1 scripts/test-python'")
    state = tmp_path_factory.mktemp("versitygw")
    started = subprocess.run([str(VERSITYGW), "start", str(state)],
                             capture_output=True, text=True, timeout=PEER_TIMEOUT_S)
    if started.returncode != 0:
        subprocess.run([str(VERSITYGW), "stop", str(state)], timeout=PEER_TIMEOUT_S)
        pytest.fail(f"tests/peers/versitygw start failed:\n{started.stdout}{started.stderr}")
    try:
        boto3_client(endpoint=S3_ENDPOINT).create_bucket(Bucket=S3_BUCKET)
        yield S3_ENDPOINT
    finally:
        stopped = subprocess.run([str(VERSITYGW), "stop", str(state)],
                                 capture_output=True, text=True, timeout=PEER_TIMEOUT_S)
        if stopped.returncode != 0:
            print(f"tests/peers/versitygw stop failed:\n{stopped.stdout}{stopped.stderr}")


def make_s3_client(rt, endpoint, secret=S3_SECRET_KEY, **kw):
    """A ferry.s3.S3Client of `endpoint` with the fixture's credentials."""
    import ferry.s3

    return ferry.s3.S3Client(runtime=rt, endpoint=endpoint, access_key_id=S3_ACCESS_KEY,
                             secret_access_key=secret, region=S3_REGION, **kw)


@pytest.fixture
def s3(versitygw, rt):
    """A client of the fixture's versitygw on the test module's `rt`."""
    with make_s3_client(rt, versitygw) as c:
        yield c


def boto3_client(endpoint=S3_ENDPOINT, secret=S3_SECRET_KEY):
    """boto3's S3 client for the fixture's versitygw (the reference reader
    and writer); skips the test if boto3 is missing."""
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_ACCESS_KEY,
                        aws_secret_access_key=secret, region_name=S3_REGION,
                        config=Config(s3={"addressing_style": "path"}))


@pytest.fixture
def s3_env(versitygw, monkeypatch, tmp_path):
    """The AWS environment pointing at the fixture's versitygw, as
    ferry.FileSystems and ferry.copy read it (and nobody's ~/.aws)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", versitygw)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", S3_REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    return versitygw


IRODS_PEER = REPO_ROOT / "tests" / "peers" / "irods"


@pytest.fixture(scope="session")
def irods_peer(tmp_path_factory):
    """ferry's iRODS test peer on a free port (tests/peers/irods; users
    rods/rods, alice/apass). Yields the port."""
    if not (REPO_ROOT / ".peers" / "bin" / "ferry-irods-peer").exists():
        pytest.fail("the iRODS peer is not built: run tests/peers/install-peers")
    state = tmp_path_factory.mktemp("irods-peer")
    env = dict(os.environ, IRODS_PEER_PORT="0")
    subprocess.run([str(IRODS_PEER), "start", str(state)], check=True, env=env)
    yield int((state / "port").read_text())
    subprocess.run([str(IRODS_PEER), "stop", str(state)], check=True)


@pytest.fixture
def irods_env(monkeypatch, tmp_path, irods_peer):
    """rods's password in the environment, no ~/.irods; yields the base URL."""
    monkeypatch.setenv("IRODS_PASSWORD", "rods")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return f"irods://rods@127.0.0.1:{irods_peer}/tempZone/home/rods"


# ---------------------------------------------------------------- toxiproxy

TOXIPROXY = REPO_ROOT / "tests" / "peers" / "toxiproxy"
TOXIPROXY_API = "http://127.0.0.1:18474"  # tests/peers/toxiproxy's default


def _toxiproxy_call(method, path, body=None):
    import json
    import urllib.request
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(TOXIPROXY_API + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read()
    return json.loads(text) if text else None


class Proxy:
    """A toxiproxy proxy on a free port of 127.0.0.1 in front of
    127.0.0.1:`upstream`, deleted by close()."""

    def __init__(self, name, upstream):
        self.name = name
        made = _toxiproxy_call("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0",
                                                    "upstream": f"127.0.0.1:{upstream}",
                                                    "enabled": True})
        self.port = int(made["listen"].rsplit(":", 1)[1])

    def stall(self):
        """From now on the server's bytes never reach the client and no
        connection is closed: every request is accepted and never answered
        (toxiproxy's `timeout` toxic with timeout 0)."""
        _toxiproxy_call("POST", f"/proxies/{self.name}/toxics",
                        {"name": "stall", "type": "timeout", "stream": "downstream",
                         "toxicity": 1.0, "attributes": {"timeout": 0}})

    def limit_upstream(self, kb_per_s):
        """From now on the client's bytes reach the server at `kb_per_s`
        KB/s (toxiproxy's `bandwidth` toxic)."""
        _toxiproxy_call("POST", f"/proxies/{self.name}/toxics",
                        {"name": "slow", "type": "bandwidth", "stream": "upstream",
                         "toxicity": 1.0, "attributes": {"rate": kb_per_s}})

    def close(self):
        _toxiproxy_call("DELETE", f"/proxies/{self.name}")


@pytest.fixture(scope="session")
def toxiproxy(tmp_path_factory):
    """toxiproxy-server (API on 127.0.0.1:18474), started and stopped by
    tests/peers/toxiproxy. Yields a factory: proxy(name, upstream_port)."""
    if not (REPO_ROOT / ".peers" / "bin" / "toxiproxy-server").exists():
        pytest.skip("toxiproxy is not installed (tests/peers/install-peers installs it)")
    state = tmp_path_factory.mktemp("toxiproxy")
    started = subprocess.run([str(TOXIPROXY), "start", str(state)],
                             capture_output=True, text=True, timeout=PEER_TIMEOUT_S)
    if started.returncode != 0:
        pytest.fail(f"tests/peers/toxiproxy start failed:\n{started.stdout}{started.stderr}")
    proxies = []

    def proxy(name, upstream):
        p = Proxy(f"{name}-{os.getpid()}-{len(proxies)}", upstream)
        proxies.append(p)
        return p

    try:
        yield proxy
    finally:
        for p in proxies:
            try:
                p.close()
            except OSError:
                pass
        subprocess.run([str(TOXIPROXY), "stop", str(state)], capture_output=True,
                       timeout=PEER_TIMEOUT_S)
