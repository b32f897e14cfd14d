"""Targets (the URL a user points ferry-bench at) and the tools that reach
them: ferry itself (its Python binding in this process, its C++ tools as
processes) and each protocol's usual client, so every scenario can run
them side by side on the same paths.

A tool is a set of operations on paths relative to the run's directory on
the target. An operation a tool does not have raises ``Unsupported``; the
scenario then skips that tool for that operation (and says so once).
"""

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Tuple

S3_REGION_DEFAULT = "us-east-1"


class Unsupported(Exception):
    """The tool has no such operation (or it is not installed)."""


@dataclass(frozen=True)
class Target:
    """Where to measure: ``scheme`` (nfs, s3, irods, local) and the URL of
    the directory (prefix, collection) under which the bench makes its own
    run directory."""

    url: str
    scheme: str
    host: str = ""
    port: int = 0
    path: str = ""       # NFS: export + path; S3: bucket/prefix; iRODS: /zone/...; local: abs path
    query: str = ""      # NFS options (nfsport=...&mountport=...)
    user: str = ""

    @staticmethod
    def parse(url: str) -> "Target":
        if "://" not in url or url.startswith("file://"):
            path = os.path.abspath(url[len("file://"):] if url.startswith("file://") else url)
            return Target(url=path, scheme="local", path=path)
        u = urllib.parse.urlsplit(url)
        if u.scheme == "nfs":
            q = urllib.parse.parse_qs(u.query)
            port = int(q.get("nfsport", ["2049"])[0])
            return Target(url=url, scheme="nfs", host=u.hostname or "", port=port,
                          path=u.path.rstrip("/"), query=u.query)
        if u.scheme == "s3":
            endpoint = urllib.parse.urlsplit(os.environ.get("AWS_ENDPOINT_URL", "https://s3.amazonaws.com"))
            return Target(url=url, scheme="s3", host=endpoint.hostname or "",
                          port=endpoint.port or (443 if endpoint.scheme == "https" else 80),
                          path=(u.netloc + u.path).rstrip("/"))
        if u.scheme == "irods":
            return Target(url=url, scheme="irods", host=u.hostname or "", port=u.port or 1247,
                          path=u.path.rstrip("/"), user=u.username or os.environ.get("IRODS_USER_NAME", "rods"))
        raise ValueError(f"ferry-bench: unsupported target {url!r} (nfs://, s3://, irods:// or a local path)")

    def child(self, rel: str) -> "Target":
        """The target of a sub-directory (the run directory)."""
        return Target(url=self.ferry_url(rel), scheme=self.scheme, host=self.host, port=self.port,
                      path=self.join(rel), query=self.query, user=self.user)

    def join(self, rel: str) -> str:
        return f"{self.path}/{rel}".rstrip("/") if rel else self.path

    def ferry_url(self, rel: str = "") -> str:
        """``rel`` below the target as ferry (and libnfs) spell it."""
        p = self.join(rel)
        if self.scheme == "local":
            return p
        if self.scheme == "nfs":
            return f"nfs://{self.host}{p}" + (f"?{self.query}" if self.query else "")
        if self.scheme == "s3":
            return f"s3://{p}"
        return f"irods://{self.user}@{self.host}:{self.port}{p}"

    @property
    def bucket(self) -> str:
        return self.path.split("/", 1)[0]

    def key(self, rel: str) -> str:
        """S3: the object key of ``rel``."""
        return self.join(rel).split("/", 1)[1] if "/" in self.join(rel) else ""


@dataclass
class Usage:
    """What one operation cost: wall seconds, client CPU seconds, peak RSS."""

    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    stages: Dict[str, float] = field(default_factory=dict)


def self_cpu() -> float:
    """This process's CPU seconds, user + system, at ns resolution (os.times
    counts 10 ms ticks, coarser than a small operation)."""
    return time.process_time()


_peak_lock = threading.Lock()
_peak_windows = 0


@contextlib.contextmanager
def peak_window() -> Iterator[None]:
    """While open, this process's peak RSS (VmHWM) counts from its RSS at
    the start of the outermost window (Linux resets it by /proc clear_refs;
    concurrent operations share one window instead of resetting each
    other's)."""
    global _peak_windows
    with _peak_lock:
        if _peak_windows == 0:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:  # not Linux >= 4.0: the run's high-water mark
                pass
        _peak_windows += 1
    try:
        yield
    finally:
        with _peak_lock:
            _peak_windows -= 1


def self_peak_rss() -> int:
    """This process's VmHWM (its peak RSS since the last reset), in bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(fn: Callable[[], Optional[Dict[str, float]]]) -> Usage:
    """Runs ``fn`` in this process; its CPU is the whole process's (the
    bench is idle meanwhile), its RSS the process's peak during it (the
    interpreter and every library it loaded included)."""
    with peak_window():
        c0, t0 = self_cpu(), time.perf_counter()
        stages = fn() or {}
        return Usage(time.perf_counter() - t0, self_cpu() - c0, self_peak_rss(), stages)


_TIME = "/usr/bin/time"  # GNU time: the child's own peak RSS


def run_process(argv: List[str], env: Optional[Dict[str, str]] = None) -> Usage:
    """Runs a tool as its own process: wall time, its CPU from wait4, its
    peak RSS from GNU time when installed (wait4's ru_maxrss alone would be
    this interpreter's: Python spawns by vfork, and the kernel counts the
    memory a process had before its exec)."""
    rss_file = None
    if os.access(_TIME, os.X_OK):
        fd, rss_file = tempfile.mkstemp(prefix="ferry-bench-rss-")
        os.close(fd)
        argv = [_TIME, "-q", "-f", "%M", "-o", rss_file, *argv]
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env)
        err = p.stderr.read() if p.stderr else b""
        _, status, ru = os.wait4(p.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        rss = ru.ru_maxrss * 1024
        if rss_file:
            with open(rss_file) as f:
                words = f.read().split()
            rss = int(words[-1]) * 1024 if words and words[-1].isdigit() else 0
    finally:
        if rss_file:
            os.unlink(rss_file)
    if code != 0:
        name = os.path.basename(argv[6] if rss_file else argv[0])
        raise RuntimeError(f"{name} exited {code}: {err.decode(errors='replace').strip()[-400:]}")
    return Usage(wall, ru.ru_utime + ru.ru_stime, rss)


def tcp_connect_s(target: Target) -> float:
    """One plain TCP connect to the target's server: the network's share of
    a session's set-up, the same for every tool."""
    if target.scheme == "local":
        return 0.0
    t0 = time.perf_counter()
    with socket.create_connection((target.host, target.port), timeout=10):
        pass
    return time.perf_counter() - t0


class Tool:
    """A client of one target. Paths are relative to the target's run
    directory. Thread-safe where a scenario runs it from many threads:
    ``new_client`` gives each simulated client its own connections."""

    name = "?"
    in_process = True
    #: false for a process tool whose start-up (an interpreter) would be
    #: all that one process per file measures; it has a tree mode instead
    per_file_processes = True
    #: operations this tool has; the others raise Unsupported
    ops: Tuple[str, ...] = ()

    def __init__(self, target: Target) -> None:
        self.target = target

    def close(self) -> None:
        pass

    def new_client(self) -> "Tool":
        return self

    # transfers: local <-> target
    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        raise Unsupported("put")

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        raise Unsupported("get")

    def put_tree(self, local_dir: str, rel: str, jobs: int) -> Usage:
        raise Unsupported("put_tree")

    def get_tree(self, rel: str, local_dir: str, jobs: int) -> Usage:
        raise Unsupported("get_tree")

    # one whole transfer from nothing, stage by stage (its own session)
    def staged(self, direction: str, local: str, rel: str) -> Dict[str, float]:
        raise Unsupported("stages")

    # metadata
    def stat(self, rel: str) -> None:
        raise Unsupported("stat")

    def list(self, rel: str) -> int:
        raise Unsupported("list")

    def mkdir(self, rel: str) -> None:
        raise Unsupported("mkdir")

    def rmdir(self, rel: str) -> None:
        raise Unsupported("rmdir")

    def remove(self, rel: str) -> None:
        raise Unsupported("remove")

    def meta_add(self, rel: str, name: str, value: str) -> None:
        raise Unsupported("meta_add")

    def touch(self, rel: str) -> None:
        raise Unsupported("touch")


def _timed_stages() -> Tuple[Dict[str, float], Callable[[str], None]]:
    out: Dict[str, float] = {}
    last = [time.perf_counter()]

    def mark(stage: str) -> None:
        now = time.perf_counter()
        out[stage] = now - last[0]
        last[0] = now

    return out, mark


CHUNK = 8 << 20


def _stream_staged(f, direction: str, local: str, mark: Callable[[str], None]) -> None:
    """Moves a whole file through the open file object `f`: read to the end
    for "get", written from `local` for "put". Marks first_byte after the
    first byte and transfer after the rest, as every tool's staged() counts
    them."""
    if direction == "get":
        f.read(1)
        mark("first_byte")
        while f.read(CHUNK):
            pass
    else:
        with open(local, "rb") as src:
            f.write(src.read(1))
            mark("first_byte")
            while data := src.read(CHUNK):
                f.write(data)
    mark("transfer")


# ------------------------------------------------------------------ ferry


class FerryPy(Tool):
    """ferry's Python binding (``ferry.FileSystems``) in this process: the
    C++ engine and adapters, with Python only around each call."""

    name = "ferry-py"

    def __init__(self, target: Target, runtime=None) -> None:
        import ferry

        super().__init__(target)
        self._own_runtime = runtime is None
        self.runtime = runtime or ferry.Runtime(blocking_threads=16)
        self.fs = ferry.FileSystems(runtime=self.runtime)

    def close(self) -> None:
        self.fs.close()
        if self._own_runtime:
            self.runtime.close()

    def new_client(self) -> "FerryPy":
        return FerryPy(self.target, runtime=self.runtime)

    def u(self, rel: str) -> str:
        return self.target.ferry_url(rel)

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        return measure(lambda: self.fs.copy(local, self.u(rel), parallelism=threads) and None)

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        return measure(lambda: self.fs.copy(self.u(rel), local, parallelism=threads) and None)

    def put_tree(self, local_dir: str, rel: str, jobs: int) -> Usage:
        return measure(lambda: self.fs.copy(local_dir, self.u(rel), recursive=True, jobs=jobs) and None)

    def get_tree(self, rel: str, local_dir: str, jobs: int) -> Usage:
        return measure(lambda: self.fs.copy(self.u(rel), local_dir, recursive=True, jobs=jobs) and None)

    def staged(self, direction: str, local: str, rel: str) -> Dict[str, float]:
        import ferry

        out, mark = _timed_stages()
        with ferry.Runtime(blocking_threads=4) as rt, ferry.FileSystems(runtime=rt) as fs:
            mark("setup")
            try:  # the first round trip: connect, mount / log in
                fs.stat(self.u(""))
            except FileNotFoundError:  # an S3 prefix with nothing below it yet: a round trip all the same
                pass
            mark("session")
            if direction == "get":
                f = fs.open(self.u(rel), "rb")
            else:
                f = fs.open(self.u(rel), "wb", size=os.path.getsize(local))
            _stream_staged(f, direction, local, mark)
            f.close()
            mark("close")
        return out

    def stat(self, rel: str) -> None:
        self.fs.stat(self.u(rel))

    def list(self, rel: str) -> int:
        url = self.u(rel)
        if self.target.scheme == "s3":
            url += "/"
        n = 0
        with self.fs.walk(url) as w:
            for batch in w:
                n += len(batch.entries)
        return n

    def mkdir(self, rel: str) -> None:
        self.fs.mkdir(self.u(rel))

    def rmdir(self, rel: str) -> None:
        self.fs.rmdir(self.u(rel))

    def remove(self, rel: str) -> None:
        self.fs.remove(self.u(rel))

    def touch(self, rel: str) -> None:
        with self.fs.open(self.u(rel), "wb", size=0):
            pass


class FerryCli(Tool):
    """ferry's C++ tools as processes (``ferry-cp``, ``ferry-walk``): what a
    user runs beside ``nfs-cp``, ``aws s3 cp`` or ``rclone``."""

    name = "ferry-cp"
    in_process = False

    def __init__(self, target: Target, ferry_cp: str, ferry_walk: Optional[str], env: Dict[str, str]) -> None:
        super().__init__(target)
        self.cp, self.walk, self.env = ferry_cp, ferry_walk, env

    def u(self, rel: str) -> str:
        return self.target.ferry_url(rel)

    def _cp(self, src: str, dst: str, extra: List[str]) -> Usage:
        return run_process([self.cp, "--quiet", *extra, src, dst], self.env)

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        return self._cp(local, self.u(rel), [f"--parallelism={threads}"] if threads else [])

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        return self._cp(self.u(rel), local, [f"--parallelism={threads}"] if threads else [])

    def put_tree(self, local_dir: str, rel: str, jobs: int) -> Usage:
        return self._cp(local_dir, self.u(rel), ["-r", f"--jobs={jobs}"])

    def get_tree(self, rel: str, local_dir: str, jobs: int) -> Usage:
        return self._cp(self.u(rel), local_dir, ["-r", f"--jobs={jobs}"])

    def list_process(self, rel: str) -> Usage:
        if not self.walk:
            raise Unsupported("list (no ferry-walk)")
        url = self.u(rel) + ("/" if self.target.scheme == "s3" else "")
        return run_process([self.walk, url], self.env)


# ------------------------------------------------------------------ local


class Coreutils(Tool):
    """``cp`` / ``cp -r`` for a local target: the floor a local copy sits on."""

    name = "cp"
    in_process = False

    def _p(self, rel: str) -> str:
        return self.target.join(rel)

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        return run_process(["cp", local, self._p(rel)])

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        return run_process(["cp", self._p(rel), local])

    def put_tree(self, local_dir: str, rel: str, jobs: int) -> Usage:
        return run_process(["cp", "-r", local_dir, self._p(rel)])

    def get_tree(self, rel: str, local_dir: str, jobs: int) -> Usage:
        return run_process(["cp", "-r", self._p(rel), local_dir])


class PythonOs(Tool):
    """``os`` calls for a local target: the metadata floor."""

    name = "python-os"

    def _p(self, rel: str) -> str:
        return self.target.join(rel)

    def stat(self, rel: str) -> None:
        os.stat(self._p(rel))

    def list(self, rel: str) -> int:
        return sum(1 for _ in os.scandir(self._p(rel)))

    def mkdir(self, rel: str) -> None:
        os.mkdir(self._p(rel))

    def rmdir(self, rel: str) -> None:
        os.rmdir(self._p(rel))

    def remove(self, rel: str) -> None:
        os.remove(self._p(rel))

    def meta_add(self, rel: str, name: str, value: str) -> None:
        os.setxattr(self._p(rel), f"user.{name}", value.encode())

    def touch(self, rel: str) -> None:
        open(self._p(rel), "wb").close()

    def staged(self, direction: str, local: str, rel: str) -> Dict[str, float]:
        out, mark = _timed_stages()
        mark("setup")
        os.stat(self.target.path)
        mark("session")
        src, dst = (self._p(rel), local) if direction == "get" else (local, self._p(rel))
        with open(src, "rb") as i, open(dst, "wb") as o:
            o.write(i.read(1))
            mark("first_byte")
            shutil.copyfileobj(i, o, CHUNK)
            mark("transfer")
        mark("close")
        return out


# ------------------------------------------------------------------ NFS


class Libnfs(Tool):
    """libnfs's ``nfs-cp`` and ``nfs-ls`` (one file per process; no tree
    copy, no threads option)."""

    name = "nfs-cp"
    in_process = False

    def __init__(self, target: Target, nfs_cp: str, nfs_ls: Optional[str]) -> None:
        super().__init__(target)
        self.cp, self.ls = nfs_cp, nfs_ls

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        if threads > 1:
            raise Unsupported("threads")
        return run_process([self.cp, local, self.target.ferry_url(rel)])

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        if threads > 1:
            raise Unsupported("threads")
        return run_process([self.cp, self.target.ferry_url(rel), local])

    def list_process(self, rel: str) -> Usage:
        if not self.ls:
            raise Unsupported("nfs-ls")
        return run_process([self.ls, self.target.ferry_url(rel)])


# ------------------------------------------------------------------ S3


def _boto3_client(max_pool: int = 64):
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL"),
                        region_name=os.environ.get("AWS_REGION", S3_REGION_DEFAULT),
                        config=Config(s3={"addressing_style": "path"}, max_pool_connections=max_pool))


class Boto3(Tool):
    """boto3 in this process: ``upload_file``/``download_file`` (its
    TransferManager; ``threads`` sets max_concurrency) and the plain calls."""

    name = "boto3"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.s3 = _boto3_client()

    def new_client(self) -> "Boto3":
        return Boto3(self.target)

    def _k(self, rel: str) -> str:
        return self.target.key(rel)

    def _config(self, threads: int):
        from boto3.s3.transfer import TransferConfig

        return TransferConfig(max_concurrency=threads) if threads else TransferConfig()

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        return measure(lambda: self.s3.upload_file(local, self.target.bucket, self._k(rel),
                                                   Config=self._config(threads)))

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        return measure(lambda: self.s3.download_file(self.target.bucket, self._k(rel), local,
                                                     Config=self._config(threads)))

    def staged(self, direction: str, local: str, rel: str) -> Dict[str, float]:
        out, mark = _timed_stages()
        s3 = _boto3_client()
        mark("setup")
        s3.head_bucket(Bucket=self.target.bucket)
        mark("session")
        if direction == "get":
            body = s3.get_object(Bucket=self.target.bucket, Key=self._k(rel))["Body"]
            _stream_staged(body, "get", local, mark)
            body.close()
        else:
            # A PUT has no first byte of its own: the whole request is the transfer.
            with open(local, "rb") as f:
                s3.put_object(Bucket=self.target.bucket, Key=self._k(rel), Body=f)
            mark("transfer")
        mark("close")
        return out

    def stat(self, rel: str) -> None:
        self.s3.head_object(Bucket=self.target.bucket, Key=self._k(rel))

    def list(self, rel: str) -> int:
        n = 0
        for page in self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.target.bucket, Prefix=self._k(rel).rstrip("/") + "/"):
            n += page.get("KeyCount", 0)
        return n

    def remove(self, rel: str) -> None:
        self.s3.delete_object(Bucket=self.target.bucket, Key=self._k(rel))

    def meta_add(self, rel: str, name: str, value: str) -> None:
        self.s3.put_object_tagging(Bucket=self.target.bucket, Key=self._k(rel),
                                   Tagging={"TagSet": [{"Key": name, "Value": value}]})

    def touch(self, rel: str) -> None:
        self.s3.put_object(Bucket=self.target.bucket, Key=self._k(rel), Body=b"")


class AwsCli(Tool):
    """The AWS CLI (``aws s3 cp``, ``aws s3 cp --recursive``) as processes;
    ``threads``/``jobs`` set its max_concurrent_requests."""

    name = "aws"
    in_process = False
    per_file_processes = False  # its many-files form is `cp --recursive` (the tree scenario)

    def __init__(self, target: Target, aws: str, work: str) -> None:
        super().__init__(target)
        self.aws, self.work = aws, work

    def _env(self, concurrency: int) -> Dict[str, str]:
        cfg = os.path.join(self.work, f"aws-config-{concurrency}")
        if not os.path.exists(cfg):
            with open(cfg, "w") as f:
                f.write(f"[default]\nregion = {os.environ.get('AWS_REGION', S3_REGION_DEFAULT)}\n")
                if concurrency:
                    f.write(f"s3 =\n  max_concurrent_requests = {concurrency}\n")
        return dict(os.environ, AWS_CONFIG_FILE=cfg, AWS_PAGER="", AWS_EC2_METADATA_DISABLED="true")

    def _u(self, rel: str) -> str:
        return f"s3://{self.target.join(rel)}"

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        return run_process([self.aws, "s3", "cp", "--only-show-errors", local, self._u(rel)], self._env(threads))

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        return run_process([self.aws, "s3", "cp", "--only-show-errors", self._u(rel), local], self._env(threads))

    def put_tree(self, local_dir: str, rel: str, jobs: int) -> Usage:
        return run_process([self.aws, "s3", "cp", "--only-show-errors", "--recursive", local_dir,
                            self._u(rel)], self._env(jobs))

    def get_tree(self, rel: str, local_dir: str, jobs: int) -> Usage:
        return run_process([self.aws, "s3", "cp", "--only-show-errors", "--recursive", self._u(rel),
                            local_dir], self._env(jobs))

    def list_process(self, rel: str) -> Usage:
        return run_process([self.aws, "s3", "ls", self._u(rel) + "/"], self._env(0))


class Rclone(Tool):
    """rclone (``copyto``, ``copy``; ``--transfers``, ``--multi-thread-streams``)
    with an on-the-fly S3 remote from the AWS environment, less
    AWS_CA_BUNDLE: rclone refuses to start with one for an http:// endpoint
    (LoadCustomCABundleError), which failed every rclone record of the
    2026-11-28 run on a machine that exports it."""

    name = "rclone"
    in_process = False
    per_file_processes = False

    def __init__(self, target: Target, rclone: str) -> None:
        super().__init__(target)
        self.rclone = rclone
        endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
        self.remote = (":s3,provider=Other,env_auth=true"
                       + (f",endpoint='{endpoint}'" if endpoint else "") + ":")

    def _u(self, rel: str) -> str:
        return self.remote + self.target.join(rel)

    def _run(self, *args: str) -> Usage:
        env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
        return run_process([self.rclone, "--config", "/dev/null", *args], env)

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        return self._run("copyto", *([f"--multi-thread-streams={threads}"] if threads else []), local, self._u(rel))

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        return self._run("copyto", *([f"--multi-thread-streams={threads}"] if threads else []), self._u(rel), local)

    def put_tree(self, local_dir: str, rel: str, jobs: int) -> Usage:
        return self._run("copy", f"--transfers={jobs}", local_dir, self._u(rel))

    def get_tree(self, rel: str, local_dir: str, jobs: int) -> Usage:
        return self._run("copy", f"--transfers={jobs}", self._u(rel), local_dir)

    def list_process(self, rel: str) -> Usage:
        return self._run("lsf", self._u(rel))


# ------------------------------------------------------------------ iRODS


def _prc_session(t: Target):
    from irods.session import iRODSSession

    zone = t.path.strip("/").split("/", 1)[0]
    return iRODSSession(host=t.host, port=t.port, user=t.user, zone=zone,
                        password=os.environ.get("IRODS_PASSWORD", ""))


class Prc(Tool):
    """python-irodsclient in this process (one session per simulated client;
    ``threads`` is its num_threads for one data object)."""

    name = "prc"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.s = _prc_session(target)

    def close(self) -> None:
        self.s.cleanup()

    def new_client(self) -> "Prc":
        return Prc(self.target)

    def _p(self, rel: str) -> str:
        return self.target.join(rel)

    def put(self, local: str, rel: str, threads: int = 0) -> Usage:
        kw = {"num_threads": threads} if threads else {}
        return measure(lambda: self.s.data_objects.put(local, self._p(rel), **kw) and None)

    def get(self, rel: str, local: str, threads: int = 0) -> Usage:
        kw = {"num_threads": threads} if threads else {}
        return measure(lambda: self.s.data_objects.get(self._p(rel), local, **kw) and None)

    def staged(self, direction: str, local: str, rel: str) -> Dict[str, float]:
        out, mark = _timed_stages()
        s = _prc_session(self.target)
        try:
            mark("setup")
            s.collections.get(self.target.path)  # connects and logs in on first use
            mark("session")
            f = s.data_objects.open(self._p(rel), "r" if direction == "get" else "w")
            _stream_staged(f, direction, local, mark)
            f.close()
            mark("close")
        finally:
            s.cleanup()
        return out

    def stat(self, rel: str) -> None:
        self.s.data_objects.get(self._p(rel))

    def list(self, rel: str) -> int:
        c = self.s.collections.get(self._p(rel))
        return len(c.data_objects) + len(c.subcollections)

    def mkdir(self, rel: str) -> None:
        self.s.collections.create(self._p(rel))

    def rmdir(self, rel: str) -> None:
        self.s.collections.remove(self._p(rel))

    def remove(self, rel: str) -> None:
        self.s.data_objects.unlink(self._p(rel), force=True)

    def meta_add(self, rel: str, name: str, value: str) -> None:
        from irods.models import DataObject

        self.s.metadata.add(DataObject, self._p(rel), _avu(name, value))

    def touch(self, rel: str) -> None:
        self.s.data_objects.create(self._p(rel))


def _avu(name: str, value: str):
    from irods.meta import iRODSMeta

    return iRODSMeta(name, value)


# ------------------------------------------------------------------ which tools


@dataclass
class Programs:
    """Where the programs are (None: not found, skipped with a note)."""

    ferry_cp: Optional[str] = None
    ferry_walk: Optional[str] = None
    nfs_cp: Optional[str] = None
    nfs_ls: Optional[str] = None
    aws: Optional[str] = None
    rclone: Optional[str] = None

    @staticmethod
    def find(overrides: Dict[str, Optional[str]], search: List[str]) -> "Programs":
        """Each program from its flag, else ``search`` dirs, else PATH."""
        found = {}
        for attr in Programs.__dataclass_fields__:
            exe = attr.replace("_", "-")
            given = overrides.get(attr)
            if given:
                found[attr] = given if os.path.exists(given) else shutil.which(given)
                continue
            found[attr] = next((os.path.join(d, exe) for d in search
                                if os.access(os.path.join(d, exe), os.X_OK)), None) or shutil.which(exe)
        return Programs(**found)


def tools_for(target: Target, programs: Programs, work: str, notes: List[str],
              want: Optional[List[str]] = None) -> List[Tool]:
    """Every tool that reaches ``target`` and is installed: ferry's first."""
    out: List[Tool] = [FerryPy(target)]
    if programs.ferry_cp:
        out.append(FerryCli(target, programs.ferry_cp, programs.ferry_walk, dict(os.environ)))
    else:
        notes.append("ferry-cp not found (--ferry-cp): the CLI comparisons ran without it")

    def optional(name: str, make: Callable[[], Tool]) -> None:
        try:
            out.append(make())
        except Exception as e:  # an uninstalled module or program: say so, go on
            notes.append(f"{name} skipped: {e}")

    if target.scheme == "local":
        out += [Coreutils(target), PythonOs(target)]
    elif target.scheme == "nfs":
        if programs.nfs_cp:
            out.append(Libnfs(target, programs.nfs_cp, programs.nfs_ls))
        else:
            notes.append("nfs-cp (libnfs-utils) not found: NFS ran without a peer tool")
    elif target.scheme == "s3":
        optional("boto3", lambda: Boto3(target))
        if programs.aws:
            out.append(AwsCli(target, programs.aws, work))
        else:
            notes.append("aws (the AWS CLI) not found: skipped")
        if programs.rclone:
            out.append(Rclone(target, programs.rclone))
        else:
            notes.append("rclone not found (--rclone): skipped")
    elif target.scheme == "irods":
        optional("python-irodsclient", lambda: Prc(target))
    if want:
        out = [t for t in out if t.name in want]
    return out
