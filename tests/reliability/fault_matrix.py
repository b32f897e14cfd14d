#!/usr/bin/env python3
"""The fault matrix (issue #18): ferry-cp and ferry-walk against each
adapter's real peer, through toxiproxy, under each fault, with the outcome
of every case checked rather than assumed.

    scripts/faults [--only TEXT] [--size-mib N] [--repeat N] [--no-docs]

Adapters and operations: NFS (nfs-ganesha) get / put / walk, S3
(versitygw) get / put / list, iRODS (ferry's test peer) get / put / list.
Faults (toxiproxy v2.5.0 toxics on the adapter's data connection):

    baseline      none
    latency       +25 ms each way, throughout
    bandwidth     16 MB/s each way per connection, throughout
    slow_close    every close delayed 2 s
    slicer        replies cut into ~1 KiB pieces 20 us apart
    reset_blip    every connection reset, for 2 s mid-operation
    stall_blip    no byte passes (connections stay open), for 3 s mid-operation
    stall         no byte passes, ever: the peer stops answering
    limit_data    each connection closed after 1 MiB from the peer
    refused       the proxy closed: every connect refused
    kill_restart  the server SIGKILLed mid-operation, restarted 2 s later

Mid-operation faults start 0.3 s in, on an operation slowed to last a few
seconds (8 MB/s per connection for transfers, +50 ms for listings), and the record says
whether the operation was still running when the fault began.

Each case ends as one of:
    ok     exit 0 and the result verified (sha256 of the copy, entry count)
    error  a non-zero exit with a message, and nothing partial presented as
           complete (the destination absent, or whole and correct)
    WRONG  exit 0 with a wrong result, or a wrong destination after an error
    HANG   still running at the deadline (killed)
    CRASH  ended by a signal, or a sanitizer report
plus, for S3 uploads, the multipart uploads left open (orphans), and for
every destination the ferry temporaries left behind.

Records go to build/faults/records.jsonl (one JSON object per case); the
table in docs/reliability.md between the `faults` markers is rewritten from
them. Needs the release build (scripts/build release), the peers
(tests/peers/install-peers) and a private network namespace (scripts/faults
makes one): the peers' ports are fixed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers"
TOXI_PORT = int(os.environ.get("TOXIPROXY_PORT", "18478"))
TOXI = f"http://127.0.0.1:{TOXI_PORT}"
BUCKET = "faults"
IRODS_COLL = "/tempZone/home/rods/faults"
SECRET = "SECRETLOCAL"
IRODS_PASSWORD = "rods"
MIB = 1 << 20


# ---------------------------------------------------------------------------
# toxiproxy's HTTP API

def api(method: str, path: str, body: Optional[dict] = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(TOXI + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read()
    return json.loads(text) if text else {}


def make_proxy(name: str, upstream_port: int) -> int:
    try:
        api("DELETE", f"/proxies/{name}")
    except Exception:
        pass
    p = api("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0",
                                 "upstream": f"127.0.0.1:{upstream_port}", "enabled": True})
    return int(p["listen"].rsplit(":", 1)[1])


def add_toxic(proxy: str, name: str, kind: str, stream: str, **attributes) -> None:
    api("POST", f"/proxies/{proxy}/toxics",
        {"name": name, "type": kind, "stream": stream, "attributes": attributes})


def add_both(proxy: str, name: str, kind: str, **attributes) -> None:
    """The toxic `kind` on both directions, named NAME_upstream and NAME_downstream."""
    for stream in ("upstream", "downstream"):
        add_toxic(proxy, f"{name}_{stream}", kind, stream, **attributes)


def remove_both(proxy: str, name: str) -> None:
    for stream in ("upstream", "downstream"):
        api("DELETE", f"/proxies/{proxy}/toxics/{name}_{stream}")


PROXIES = ("f_nfs", "f_mount", "f_s3", "f_irods")


def clear_toxics(proxy: str) -> None:
    for t in api("GET", f"/proxies/{proxy}/toxics"):
        api("DELETE", f"/proxies/{proxy}/toxics/{t['name']}")
    api("POST", f"/proxies/{proxy}", {"enabled": True})


def set_enabled(proxy: str, enabled: bool) -> None:
    api("POST", f"/proxies/{proxy}", {"enabled": enabled})


# ---------------------------------------------------------------------------
# Peers

@dataclass
class Peer:
    script: str       # tests/peers/<script>
    state: Path
    pidfile: str      # its PID file inside state
    env: dict = field(default_factory=dict)

    def start(self) -> None:
        subprocess.run([str(PEERS / self.script), "start", *self.start_args()], check=True,
                       env={**os.environ, **self.env}, stdout=subprocess.DEVNULL)

    def start_args(self) -> list[str]:
        return [str(self.state)]

    def stop(self) -> None:
        subprocess.run([str(PEERS / self.script), "stop", str(self.state)],
                       env={**os.environ, **self.env}, stdout=subprocess.DEVNULL)

    def kill(self) -> None:
        """SIGKILL, as a crash: no goodbye to the clients."""
        pid = int((self.state / self.pidfile).read_text())
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


class Ganesha(Peer):
    def __init__(self, export: Path, state: Path):
        super().__init__("ganesha", state, "ganesha.pid")
        self.export = export

    def start_args(self) -> list[str]:
        return [str(self.export), str(self.state)]


# ---------------------------------------------------------------------------
# Cases

@dataclass
class Record:
    adapter: str
    op: str
    fault: str
    outcome: str = ""
    exit_code: Optional[int] = None
    seconds: float = 0.0
    fault_hit: Optional[bool] = None  # still running when a timed fault began
    message: str = ""
    temporaries_left: int = 0
    orphan_uploads: Optional[int] = None
    credential_in_output: bool = False
    detail: str = ""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ferry_temporaries(directory: Path) -> int:
    if not directory.exists():
        return 0
    return sum(1 for p in directory.rglob(".*.ferry-*"))


class Matrix:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.build = Path(args.build)
        self.cp = self.build / "examples" / "ferry-cp"
        self.walk = self.build / "examples" / "ferry-walk"
        self.work = Path(tempfile.mkdtemp(prefix="ferry-faults."))
        self.export = self.work / "export"
        self.state = self.work / "state"
        self.local = self.work / "local"
        for d in (self.export, self.state, self.local):
            d.mkdir(parents=True)
        self.toxiproxy = Peer("toxiproxy", self.state / "toxiproxy", "toxiproxy.pid",
                              {"TOXIPROXY_PORT": str(TOXI_PORT)})
        self.ganesha = Ganesha(self.export, self.state / "ganesha")
        self.versitygw = Peer("versitygw", self.state / "versitygw", "versitygw.pid",
                              {"VERSITYGW_KEEP_DATA": "1"})
        self.irods = Peer("irods", self.state / "irods", "irods.pid")
        self.size = args.size_mib * MIB
        self.records: list[Record] = []

    # -- environment --------------------------------------------------------
    def env(self, s3_port: int) -> dict:
        home = self.work / "home"
        home.mkdir(exist_ok=True)
        return {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s3_port}",
                "AWS_ACCESS_KEY_ID": "AKIDLOCAL", "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_REGION": "us-east-1", "HOME": str(home), "AWS_CONFIG_FILE": "/dev/null",
                "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "IRODS_PASSWORD": IRODS_PASSWORD}

    def tool(self, argv: list[str], s3_port: int = 7070, check: bool = True,
             timeout: float = 600) -> subprocess.CompletedProcess:
        r = subprocess.run(argv, env=self.env(s3_port), capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
        return r

    def nfs_url(self, path: str, proxied: bool = True) -> str:
        nfs, mount = (self.nfs_port, self.mount_port) if proxied else (2049, 20048)
        return f"nfs://127.0.0.1/export/{path}?nfsport={nfs}&mountport={mount}"

    def irods_url(self, path: str, proxied: bool = True) -> str:
        port = self.irods_port if proxied else 1247
        return f"irods://rods@127.0.0.1:{port}{IRODS_COLL}/{path}"

    # -- set-up -------------------------------------------------------------
    def setup(self) -> None:
        for peer in (self.toxiproxy, self.ganesha, self.versitygw, self.irods):
            peer.start()
        self.nfs_port = make_proxy("f_nfs", 2049)
        self.mount_port = make_proxy("f_mount", 20048)
        self.s3_port = make_proxy("f_s3", 7070)
        self.irods_port = make_proxy("f_irods", 1247)
        # Sources: one random file (local, in the export, in S3, in iRODS)
        # and a tree of small files (the export; S3 and iRODS from it).
        self.source = self.local / "source.bin"
        with open(self.source, "wb") as f:
            f.write(os.urandom(self.size))
        self.source_sha = sha256(self.source)
        shutil.copy(self.source, self.export / "big.bin")
        tree = self.export / "tree"
        self.tree_entries = 0
        for d in range(self.args.tree_dirs):
            (tree / f"d{d:03d}").mkdir(parents=True)
            self.tree_entries += 1
            for i in range(self.args.tree_files // self.args.tree_dirs):
                (tree / f"d{d:03d}" / f"f{i:04d}").write_bytes(b"x" * (i % 7))
                self.tree_entries += 1
        self.tool([str(self.cp), "--quiet", "--make-bucket", str(self.source),
                   f"s3://{BUCKET}/big.bin"])
        self.tool([str(self.cp), "--quiet", "-r", "--jobs=16", str(tree), f"s3://{BUCKET}/tree/"])
        self.tool([str(self.cp), "--quiet", str(self.source), self.irods_url("big.bin", False)])
        self.tool([str(self.cp), "--quiet", "-r", "--jobs=16", str(tree),
                   self.irods_url("tree", False)])
        (self.export / "put").mkdir()

    def teardown(self) -> None:
        for peer in (self.irods, self.versitygw, self.ganesha, self.toxiproxy):
            peer.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    # -- operations -----------------------------------------------------------
    # Each returns (argv, verify, proxy, peer): verify(exit_code) says
    # whether the result is right (True), or, after an error, whether what
    # is left is not presented as complete; it may fill record fields.
    def operation(self, adapter: str, op: str, case: str):
        t = self.args.timeout
        cp = [str(self.cp), "--quiet", f"--timeout={t}"]
        walk = [str(self.walk), "--json", f"--timeout={t}"]
        proxy = {"nfs": "f_nfs", "s3": "f_s3", "irods": "f_irods"}[adapter]
        peer = {"nfs": self.ganesha, "s3": self.versitygw, "irods": self.irods}[adapter]
        remote_big = {"nfs": self.nfs_url("big.bin"), "s3": f"s3://{BUCKET}/big.bin",
                      "irods": self.irods_url("big.bin")}[adapter]
        remote_tree = {"nfs": self.nfs_url("tree"), "s3": f"s3://{BUCKET}/tree/",
                       "irods": self.irods_url("tree")}[adapter]
        if op == "get":
            out_dir = self.local / "get" / case
            out_dir.mkdir(parents=True)
            dest = out_dir / "big.bin"

            def verify(rec: Record, ok: bool) -> bool:
                rec.temporaries_left = ferry_temporaries(out_dir)
                if not dest.exists():
                    return not ok
                return sha256(dest) == self.source_sha
            return cp + [remote_big, str(dest)], verify, proxy, peer
        if op == "put":
            name = f"put/{case}.bin"
            target = {"nfs": self.nfs_url(name), "s3": f"s3://{BUCKET}/{name}",
                      "irods": self.irods_url(name)}[adapter]

            def verify(rec: Record, ok: bool) -> bool:
                back = self.local / "check" / case
                back.mkdir(parents=True, exist_ok=True)
                if adapter == "nfs":
                    rec.temporaries_left = ferry_temporaries(self.export / "put")
                    landed = self.export / name
                    present = landed.exists()
                    right = present and sha256(landed) == self.source_sha
                else:
                    direct = (f"s3://{BUCKET}/{name}" if adapter == "s3"
                              else self.irods_url(name, False))
                    r = self.tool([str(self.cp), "--quiet", direct, str(back / "x")], check=False)
                    present = r.returncode == 0
                    right = present and sha256(back / "x") == self.source_sha
                    if adapter == "s3":
                        rec.orphan_uploads = self.open_uploads(name)
                if ok:
                    return right
                return right or not present
            return cp + [str(self.source), target], verify, proxy, peer
        if op in ("walk", "list"):
            def verify(rec: Record, ok: bool) -> bool:
                out = rec.detail
                try:
                    summary = json.loads(out.strip().splitlines()[-1])
                    entries = summary["entries"]
                except Exception:
                    return not ok  # no summary after an error: nothing claimed
                rec.detail = f"entries {entries}, errors {summary.get('errors')}"
                if not ok:
                    # A walk that exits non-zero has said it is incomplete
                    # (its summary counts the errors): nothing is claimed.
                    return True
                # S3 lists no directory entries of its own: keys only.
                want = (self.tree_entries - self.args.tree_dirs if adapter == "s3"
                        else self.tree_entries)
                return entries >= want if adapter == "s3" else entries == want
            return walk + [remote_tree], verify, proxy, peer
        raise ValueError(op)

    def open_uploads(self, key: str) -> Optional[int]:
        """Multipart uploads still open under `key` (boto3 from the .venv)."""
        py = ROOT / ".venv" / "bin" / "python"
        if not py.exists():
            return None
        script = ("import boto3,sys;c=boto3.client('s3',endpoint_url='http://127.0.0.1:7070',"
                  "aws_access_key_id='AKIDLOCAL',aws_secret_access_key='" + SECRET + "',"
                  "region_name='us-east-1');"
                  "r=c.list_multipart_uploads(Bucket='" + BUCKET + "',Prefix=sys.argv[1]);"
                  "print(len(r.get('Uploads',[])))")
        r = subprocess.run([str(py), "-c", script, key], capture_output=True, text=True)
        return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip() else None

    # -- faults ---------------------------------------------------------------
    def apply(self, fault: str, proxy: str, peer: Peer, slow: Callable[[], None],
              started: threading.Event, rec: Record, proc_done: threading.Event) -> None:
        """Runs in a thread beside the operation: sets up or times the fault."""
        def at_mid(action: Callable[[], None]):
            started.wait()
            time.sleep(0.3)
            rec.fault_hit = not proc_done.is_set()
            action()

        if fault == "reset_blip":
            slow()
            at_mid(lambda: add_toxic(proxy, "reset", "reset_peer", "downstream", timeout=0))
            time.sleep(2)
            api("DELETE", f"/proxies/{proxy}/toxics/reset")
        elif fault == "stall_blip":
            slow()
            at_mid(lambda: add_both(proxy, fault, "timeout", timeout=0))
            time.sleep(3)
            remove_both(proxy, fault)
        elif fault == "kill_restart":
            slow()
            at_mid(peer.kill)
            time.sleep(2)
            peer.start()

    def static_fault(self, fault: str, proxy: str) -> None:
        """Faults present from the start to the end of the operation."""
        def both(kind: str, **a):
            add_both(proxy, fault, kind, **a)
        if fault == "latency":
            both("latency", latency=25)
        elif fault == "bandwidth":
            both("bandwidth", rate=16 * 1024)
        elif fault == "slow_close":
            both("slow_close", delay=2000)
        elif fault == "slicer":
            add_toxic(proxy, "slicer", "slicer", "downstream", average_size=1024,
                      size_variation=512, delay=20)
        elif fault == "stall":
            both("timeout", timeout=0)
        elif fault == "limit_data":
            add_toxic(proxy, "limit", "limit_data", "downstream", bytes=MIB)
        elif fault == "refused":
            set_enabled(proxy, False)

    def run_case(self, adapter: str, op: str, fault: str, n: int) -> Record:
        rec = Record(adapter, op, fault)
        case = f"{adapter}-{op}-{fault}-{n}"
        argv, verify, proxy, peer = self.operation(adapter, op, case)
        for p in PROXIES:
            clear_toxics(p)

        def slow():
            if op in ("get", "put"):
                add_both(proxy, "slow", "bandwidth", rate=8 * 1024)
            else:
                add_both(proxy, "slow", "latency", latency=50)

        self.static_fault(fault, proxy)
        started, done = threading.Event(), threading.Event()
        fault_thread = threading.Thread(
            target=self.apply, args=(fault, proxy, peer, slow, started, rec, done), daemon=True)
        fault_thread.start()
        if fault in ("reset_blip", "stall_blip", "kill_restart"):
            time.sleep(0.1)  # the slowing toxics are in place before the run
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=self.env(self.s3_port), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        started.set()
        try:
            out, err = proc.communicate(timeout=self.args.deadline)
            hung = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            hung = True
        done.set()
        rec.seconds = round(time.monotonic() - t0, 2)
        fault_thread.join(timeout=30)
        for p in PROXIES:
            clear_toxics(p)
        if fault == "kill_restart":
            peer.start()  # idempotent: running again for the next case
        rec.exit_code = proc.returncode
        lines = [l for l in err.strip().splitlines() if l.strip()]
        rec.message = lines[-1][:300] if lines else ""
        rec.credential_in_output = SECRET in out + err
        rec.detail = out
        if hung:
            rec.outcome = "HANG"
        elif proc.returncode < 0 or "Sanitizer" in err or "runtime error:" in err:
            rec.outcome = "CRASH"
        else:
            ok = proc.returncode == 0
            right = verify(rec, ok)
            if ok:
                rec.outcome = "ok" if right else "WRONG"
            else:
                rec.outcome = "error" if right and rec.message else "WRONG"
        if op not in ("walk", "list"):
            rec.detail = ""
        return rec

    def run(self) -> None:
        ops = {"nfs": ["get", "put", "walk"], "s3": ["get", "put", "list"],
               "irods": ["get", "put", "list"]}
        faults = ["baseline", "latency", "bandwidth", "slow_close", "slicer", "reset_blip",
                  "stall_blip", "stall", "limit_data", "refused", "kill_restart"]
        cases = [(a, o, f) for a in ops for o in ops[a] for f in faults
                 if not self.args.only or self.args.only in f"{a}.{o}.{f}"]
        out = Path(self.args.out)
        out.mkdir(parents=True, exist_ok=True)
        records_path = out / "records.jsonl"
        with open(records_path, "w") as f:
            for i, (a, o, fl) in enumerate(cases):
                for n in range(self.args.repeat):
                    rec = self.run_case(a, o, fl, n)
                    self.records.append(rec)
                    f.write(json.dumps(asdict(rec)) + "\n")
                    f.flush()
                    print(f"[{i + 1}/{len(cases)}] {a}.{o} {fl}: {rec.outcome} "
                          f"({rec.seconds} s) {rec.message[:120]}", file=sys.stderr)
        print(f"records: {records_path}", file=sys.stderr)


# ---------------------------------------------------------------------------
# The page

BEGIN, END = "<!-- faults:begin (scripts/faults writes this part) -->", "<!-- faults:end -->"


def render(records: list[dict], size_mib: int, timeout: int, deadline: int) -> str:
    faults = list(dict.fromkeys(r["fault"] for r in records))
    rows = list(dict.fromkeys(f"{r['adapter']}.{r['op']}" for r in records))
    cell: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        cell.setdefault((f"{r['adapter']}.{r['op']}", r["fault"]), []).append(r)
    outcomes = [r["outcome"] for r in records]
    lines = [BEGIN, "",
             f"{len(records)} cases: " + ", ".join(
                 f"{outcomes.count(o)} {o}" for o in ("ok", "error", "WRONG", "HANG", "CRASH")) +
             f"; {sum(1 for r in records if r['temporaries_left'])} left a temporary behind, "
             f"{sum(r['orphan_uploads'] or 0 for r in records)} multipart uploads left open, "
             f"{sum(1 for r in records if r['credential_in_output'])} printed a credential. "
             f"Transfers of {size_mib} MiB, listings of a 2,000-entry tree; "
             f"`--timeout={timeout}`; deadline {deadline} s a case. "
             "A cell: outcome and seconds (`*`: the operation ended before a mid-operation "
             "fault began).", "",
             "| case | " + " | ".join(faults) + " |",
             "|---|" + "---|" * len(faults)]
    for row in rows:
        cells = []
        for fl in faults:
            rs = cell.get((row, fl), [])
            cells.append(", ".join(
                f"{r['outcome']} {r['seconds']:.1f}" + ("*" if r["fault_hit"] is False else "")
                for r in rs) or "")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    errors = [r for r in records if r["outcome"] != "ok"]
    if errors:
        lines += ["", "What each case that did not succeed said (the last line on stderr):", "",
                  "| case | fault | outcome | message |", "|---|---|---|---|"]
        for r in errors:
            msg = r["message"].replace("|", "\\|")
            msg = re.sub(r"/tmp/ferry-faults\.[^/ ]+", "$WORK", msg)
            lines.append(f"| {r['adapter']}.{r['op']} | {r['fault']} | {r['outcome']} | "
                         f"{msg[:220]} |")
    lines += ["", END]
    return "\n".join(lines)


def write_docs(docs: Path, section: str) -> None:
    text = docs.read_text() if docs.exists() else "# Reliability\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n## Faults (`scripts/faults`)\n\n" + section + "\n"
    docs.write_text(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build" / "release"))
    ap.add_argument("--out", default=str(ROOT / "build" / "faults"))
    ap.add_argument("--only", default="", help="cases whose 'adapter.op.fault' contains TEXT")
    ap.add_argument("--size-mib", type=int, default=32)
    ap.add_argument("--tree-dirs", type=int, default=20)
    ap.add_argument("--tree-files", type=int, default=1980)
    ap.add_argument("--timeout", type=int, default=5, help="ferry's --timeout=S")
    ap.add_argument("--deadline", type=int, default=180, help="seconds before a case is a HANG")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--docs", default=str(ROOT / "docs" / "reliability.md"))
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the page from --out's records.jsonl, run nothing")
    args = ap.parse_args()
    if not args.render_only:
        if os.environ.get("FERRY_PEERS_NETNS") != "1":
            print("fault_matrix: run through scripts/faults (a private network namespace)",
                  file=sys.stderr)
            return 2
        m = Matrix(args)
        try:
            m.setup()
            m.run()
        except KeyboardInterrupt:
            print("interrupted: keeping the cases measured so far", file=sys.stderr)
        finally:
            m.teardown()
    records = [json.loads(l) for l in open(Path(args.out) / "records.jsonl")]
    bad = [r for r in records if r["outcome"] in ("WRONG", "HANG", "CRASH") or
           r["orphan_uploads"] or r["credential_in_output"]]
    if not args.no_docs and not args.only:
        write_docs(Path(args.docs), render(records, args.size_mib, args.timeout, args.deadline))
    summary = {o: sum(1 for r in records if r["outcome"] == o)
               for o in ("ok", "error", "WRONG", "HANG", "CRASH")}
    print("RESULT " + json.dumps({"cases": len(records), **summary, "bad": len(bad)}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
