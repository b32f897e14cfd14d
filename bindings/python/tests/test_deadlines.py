"""A server that accepts requests and never answers ends every call with
TimeoutError (ferry.Error code "DeadlineExceeded") within about twice
FileSystems' timeout, on NFS, S3 and iRODS alike: never a hang (issue #28).

Each protocol's peer sits behind a toxiproxy proxy; the test first makes
what it needs through it, then stalls the proxy (its `timeout` toxic: the
server's bytes never reach the client and no connection is closed) and
runs one call. Two timeouts, because a request that is safe to repeat is
sent once more before it fails; the slack is for a loaded 2-core machine,
the point is "bounded", not "how fast".
"""

import time
import uuid

import pytest

import ferry
from conftest import MOUNT_PORT, NFS_PORT, S3_BUCKET, S3_PORT, boto3_client

TIMEOUT_S = 2.0
BOUND_S = 2 * TIMEOUT_S + 30.0


class Target:
    """A FileSystems on a proxied peer, with a directory holding one file."""

    def __init__(self, fs, proxy, dir_url, file_url, new_url):
        self.fs, self.proxy = fs, proxy
        self.dir_url, self.file_url, self.new_url = dir_url, file_url, new_url


@pytest.fixture
def rt():
    with ferry.Runtime(blocking_threads=16) as runtime:
        yield runtime


def _nfs(rt, proxy_of, request):
    ganesha = request.getfixturevalue("ganesha")
    proxy = proxy_of("nfs", NFS_PORT)
    name = f"deadline-{uuid.uuid4().hex}"
    (ganesha / name).mkdir()
    (ganesha / name / "f").write_bytes(b"x" * 5000)

    def url(sub):  # MOUNT goes straight to ganesha, every NFS call through the proxy
        return f"nfs://127.0.0.1/export/{sub}?nfsport={proxy.port}&mountport={MOUNT_PORT}"

    fs = ferry.FileSystems(runtime=rt, timeout=TIMEOUT_S)
    return Target(fs, proxy, url(name), url(f"{name}/f"), url(f"{name}/new"))


def _s3(rt, proxy_of, request):
    request.getfixturevalue("s3_env")
    proxy = proxy_of("s3", S3_PORT)
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    prefix = f"deadline-{uuid.uuid4().hex}"
    boto3_client().put_object(Bucket=S3_BUCKET, Key=f"{prefix}/f", Body=b"x" * 5000)
    base = f"s3://{S3_BUCKET}/{prefix}"
    fs = ferry.FileSystems(runtime=rt, timeout=TIMEOUT_S)
    return Target(fs, proxy, base + "/", base + "/f", base + "/new")


def _irods(rt, proxy_of, request):
    request.getfixturevalue("irods_env")
    port = request.getfixturevalue("irods_peer")
    proxy = proxy_of("irods", port)
    base = f"irods://rods@127.0.0.1:{proxy.port}/tempZone/home/rods/deadline-{uuid.uuid4().hex}"
    fs = ferry.FileSystems(runtime=rt, timeout=TIMEOUT_S)
    fs.mkdir(base)
    with fs.open(base + "/f", "wb") as f:
        f.write(b"x" * 5000)
    return Target(fs, proxy, base, base + "/f", base + "/new")


@pytest.fixture(params=["nfs", "s3", "irods"])
def stalled(request, rt, toxiproxy):
    """A Target whose server stops answering once the FileSystems is
    connected to it."""
    target = {"nfs": _nfs, "s3": _s3, "irods": _irods}[request.param](rt, toxiproxy, request)
    with target.fs:
        target.fs.stat(target.file_url)  # connected (mounted, logged in) before the stall
        target.proxy.stall()
        yield target


def _walk(t):
    with t.fs.walk(t.dir_url) as w:
        errors = [e for batch in w for e in batch.errors]
    # A walk that did not raise reports an unreadable directory in its
    # batches and carries on: the stalled root is such an error.
    assert errors and all(e.code == 4 for e in errors), errors  # 4: DeadlineExceeded
    raise TimeoutError(errors[0].message)


def _read(t):
    with t.fs.open(t.file_url, "rb") as f:
        f.read()


def _write(t):
    with t.fs.open(t.new_url, "wb") as f:
        f.write(b"y" * 5000)


CALLS = {
    "stat": lambda t: t.fs.stat(t.file_url),
    "list": lambda t: t.fs.list(t.dir_url),
    "walk": _walk,
    "read": _read,
    "write": _write,
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_call_on_a_server_that_never_answers_ends_with_timeout_error(stalled, call):
    start = time.monotonic()
    with pytest.raises(TimeoutError) as raised:
        CALLS[call](stalled)
    took = time.monotonic() - start
    assert took < BOUND_S, f"{call} took {took:.1f} s"
    if isinstance(raised.value, ferry.Error):
        assert raised.value.code == "DeadlineExceeded"


def test_timeout_must_be_positive_seconds_or_none(rt):
    for bad in (0, -1, float("inf"), "soon"):
        with pytest.raises(ValueError, match="timeout"):
            ferry.FileSystems(runtime=rt, timeout=bad)
    ferry.FileSystems(runtime=rt, timeout=None).close()


def test_dist_walk_of_a_server_that_never_answers_ends_with_timeout_error(toxiproxy, ganesha):
    distributed = pytest.importorskip("distributed")
    import ferry.dist
    proxy = toxiproxy("dist", NFS_PORT)
    proxy.stall()
    url = f"nfs://127.0.0.1/export/tree?nfsport={proxy.port}&mountport={MOUNT_PORT}"
    split = ferry.dist.SplitOptions(worker=ferry.dist.WorkerOptions(timeout=TIMEOUT_S))
    # A cluster of its own: a worker process's FileSystems takes the options
    # of the first task that needs it.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            ferry.dist.walk(url, client=client, split=split)
        took = time.monotonic() - start
    # The first task tries a whole walk, then lists the root: two calls.
    assert took < 2 * BOUND_S, f"the walk took {took:.1f} s"
