"""The measuring half of `scripts/bench s3` (tests/bench/s3.sh sets up).

Times ferry-cp, `/usr/bin/aws s3 cp` and boto3's TransferManager on the
same files against the same S3 server, each run under /usr/bin/time for the
client's peak RSS, its CPU (user+sys) from the children's rusage, and reads
the server's CPU from /proc around every run. Prints a table and one line
`RESULT {json}`; per size label (64m, 256m, 1g) and direction (upload,
download):
  DIRECTION_speedup_vs_aws_LABEL, ..._vs_boto3_...: the peer's median wall
    over ferry-cp's;
  the same keys + _cpu_ratio: the peer's median client CPU over ferry-cp's
    (> 1: ferry-cp uses less; the convention of every bench's *_cpu_ratio);
  cpu_ratio_vs_aws_LABEL_DIRECTION, cpu_ratio_vs_boto3_LABEL_DIRECTION and,
    download + upload, cpu_ratio_vs_aws_LABEL, ...: the older keys, the
    other way round: ferry-cp's CPU over the peer's (< 1: ferry-cp uses
    less; target <= 1/3 of the CLI's);
  per_size: every tool's medians (s, cpu_s, rss_mib, server_cpu_s, ...).

Also the boto3 client itself, run as its own process so that it is timed
like the other two (interpreter start and imports included, as for the CLI):
    s3_bench.py boto3 upload|download LOCAL_PATH BUCKET KEY
"""

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time

BUCKET = "ferry-bench"
ACCESS_KEY, SECRET_KEY, REGION = "AKIDLOCAL", "SECRETLOCAL", "us-east-1"
MIB = 1 << 20
TOOLS = ("ferry", "aws", "boto3")


def boto3_client(endpoint):
    import boto3  # only the boto3 runs and the set-up need it

    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


def boto3_main(argv):
    direction, local, bucket, key = argv
    s3 = boto3_client(os.environ["AWS_ENDPOINT_URL"])
    if direction == "upload":
        s3.upload_file(local, bucket, key)  # default TransferConfig: 8 MiB, 10 threads
    else:
        s3.download_file(bucket, key, local)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 * MIB):
            h.update(chunk)
    return h.hexdigest()


def cpu_seconds(pid):
    """utime + stime of `pid` in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    """user + sys of the children this process has waited for."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.env = dict(os.environ)
        # Every client gets the same credentials and endpoint, and no
        # ~/.aws of the user's to change its defaults.
        for name, text in (("aws-config", f"[default]\nregion = {REGION}\n"), ("aws-credentials", "")):
            with open(os.path.join(self.work, name), "w") as f:
                f.write(text)
        self.env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
                        AWS_REGION=REGION, AWS_DEFAULT_REGION=REGION,
                        AWS_ENDPOINT_URL=args.endpoint, AWS_EC2_METADATA_DISABLED="true",
                        AWS_CONFIG_FILE=os.path.join(self.work, "aws-config"),
                        AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.work, "aws-credentials"),
                        AWS_PAGER="")
        self.rows = {}  # (size_mib, direction, tool) -> list of run dicts

    def command(self, tool, direction, local, key):
        url = f"s3://{BUCKET}/{key}"
        if tool == "ferry":
            src, dst = (local, url) if direction == "upload" else (url, local)
            return [self.args.ferry_cp, src, dst, "--json"]
        if tool == "aws":
            src, dst = (local, url) if direction == "upload" else (url, local)
            # awscli 2.9 predates AWS_ENDPOINT_URL: say it on the command line.
            return ["/usr/bin/aws", "s3", "cp", src, dst, "--endpoint-url", self.args.endpoint,
                    "--only-show-errors", "--no-progress"]
        return [sys.executable, os.path.abspath(__file__), "boto3", direction, local, BUCKET, key]

    def run_once(self, tool, direction, local, key):
        """Runs one transfer; returns wall, client CPU, RSS, server CPU."""
        os.sync()  # no write-back of the previous run's file during this one
        timing = os.path.join(self.work, "time.out")
        cmd = ["/usr/bin/time", "-f", "%M", "-o", timing] + self.command(tool, direction, local, key)
        server_before = cpu_seconds(self.args.server_pid)
        children_before = children_cpu_seconds()
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        server = cpu_seconds(self.args.server_pid) - server_before
        if p.returncode != 0:
            sys.exit(f"s3_bench: {tool} {direction} failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
        with open(timing) as f:
            rss_kib = f.read().split()[-1]
        # CPU from this process's children's rusage (microseconds: time's
        # %U %S print hundredths, too coarse for a 64 MiB copy): the tool's,
        # plus about 2 ms alike for every tool (the fork from this Python and
        # /usr/bin/time's own run; it weighs on ferry-cp's small CPU most).
        # RSS from time's %M: a child forked from this Python starts with
        # its pages, so only time's child reports the tool's own peak.
        run = {"s": wall, "cpu_s": children_cpu_seconds() - children_before, "rss_mib": int(rss_kib) / 1024,
               "server_cpu_s": server}
        if tool == "ferry":
            stats = json.loads(p.stdout.strip().splitlines()[-1])
            run["peak_budget_mib"] = stats["peak_memory_bytes"] / MIB
            run["budget_mib"] = stats["memory_budget_bytes"] / MIB
            run["requests"] = stats["requests"]
            run["retries"] = stats["retries"]
        return run

    def check(self, tool, direction, size_mib, local, key, want):
        got_path = local if direction == "download" else os.path.join(self.args.server_data, BUCKET, key)
        got = sha256(got_path)
        if got != want:
            sys.exit(f"s3_bench: {tool} {direction} of {size_mib} MiB: sha256 {got}, want {want}")

    def bench_size(self, size_mib):
        src = os.path.join(self.work, f"src-{size_mib}.bin")
        with open(src, "wb") as f:
            for _ in range(size_mib):
                f.write(os.urandom(MIB))
        want = sha256(src)
        source_key = f"obj-{size_mib}.bin"
        # The object every tool downloads, put there once, untimed.
        subprocess.run([self.args.ferry_cp, src, f"s3://{BUCKET}/{source_key}", "--quiet"],
                       env=self.env, check=True)
        for direction in ("upload", "download"):
            for r in range(self.args.runs):
                # Rotate the order so no tool always runs after the same one.
                order = TOOLS[r % 3:] + TOOLS[:r % 3]
                for tool in order:
                    if direction == "upload":
                        local, key = src, f"up-{tool}-{size_mib}.bin"
                    else:
                        local, key = os.path.join(self.work, f"down-{tool}.bin"), source_key
                        if os.path.exists(local):
                            os.unlink(local)
                    run = self.run_once(tool, direction, local, key)
                    if r == 0:
                        self.check(tool, direction, size_mib, local, key, want)
                    self.rows.setdefault((size_mib, direction, tool), []).append(run)
                    print(f"  {size_mib:5d} MiB {direction:8s} run {r + 1}/{self.args.runs} {tool:5s} "
                          f"{run['s']:7.3f} s  cpu {run['cpu_s']:6.2f} s  rss {run['rss_mib']:6.0f} MiB",
                          file=sys.stderr)
        for tool in TOOLS:
            down = os.path.join(self.work, f"down-{tool}.bin")
            if os.path.exists(down):
                os.unlink(down)
        os.unlink(src)

    def medians(self, size_mib, direction, tool):
        runs = self.rows[(size_mib, direction, tool)]
        m = {k: statistics.median(r[k] for r in runs) for k in ("s", "cpu_s", "rss_mib", "server_cpu_s")}
        m["rss_mib_max"] = max(r["rss_mib"] for r in runs)
        m["mib_s"] = size_mib / m["s"]
        if tool == "ferry":
            m["peak_budget_mib"] = max(r["peak_budget_mib"] for r in runs)
            m["budget_mib"] = runs[0]["budget_mib"]
            m["retries"] = sum(r["retries"] for r in runs)
        return m

    def report(self, versions):
        print()
        print(f"== s3: ferry-cp vs aws s3 cp ({versions['aws']}) vs boto3 {versions['boto3']} "
              f"upload_file/download_file; versitygw on loopback; medians of {self.args.runs} ==")
        print(f"{'size':>8} {'direction':9} {'tool':6} {'wall s':>8} {'MiB/s':>8} {'client CPU s':>13} "
              f"{'peak RSS MiB':>13} {'server CPU s':>13} {'aws/tool':>9} {'CPU aws/tool':>13}")
        result = {"bench": "s3", "runs": self.args.runs, "sizes_mib": self.args.sizes,
                  "peer": "versitygw 1.8.0", "aws_cli": versions["aws"], "boto3": versions["boto3"],
                  "per_size": {}}
        for size in self.args.sizes:
            label = "1g" if size == 1024 else f"{size}m"
            per = result["per_size"][label] = {}
            cpu = {t: 0.0 for t in TOOLS}
            for direction in ("upload", "download"):
                m = {t: self.medians(size, direction, t) for t in TOOLS}
                per[direction] = {t: {k: round(v, 4) for k, v in m[t].items()} for t in TOOLS}
                for t in TOOLS:
                    cpu[t] += m[t]["cpu_s"]
                    print(f"{size:>4} MiB {direction:9} {t:6} {m[t]['s']:8.3f} {m[t]['mib_s']:8.1f} "
                          f"{m[t]['cpu_s']:13.2f} {m[t]['rss_mib_max']:13.0f} {m[t]['server_cpu_s']:13.2f} "
                          f"{m['aws']['s'] / m[t]['s']:8.2f}x {m['aws']['cpu_s'] / max(m[t]['cpu_s'], 1e-9):12.2f}x")
                result[f"{direction}_speedup_vs_aws_{label}"] = round(m["aws"]["s"] / m["ferry"]["s"], 3)
                result[f"{direction}_speedup_vs_boto3_{label}"] = round(m["boto3"]["s"] / m["ferry"]["s"], 3)
                # Beside each wall ratio, the same ratio of client CPU (the
                # peer tool's over ferry-cp's: > 1, ferry-cp uses less).
                for peer in ("aws", "boto3"):
                    result[f"{direction}_speedup_vs_{peer}_{label}_cpu_ratio"] = round(
                        m[peer]["cpu_s"] / max(m["ferry"]["cpu_s"], 1e-9), 3)
                result[f"cpu_ratio_vs_aws_{label}_{direction}"] = round(m["ferry"]["cpu_s"] / m["aws"]["cpu_s"], 3)
                result[f"cpu_ratio_vs_boto3_{label}_{direction}"] = round(
                    m["ferry"]["cpu_s"] / m["boto3"]["cpu_s"], 3)
            # Download + upload together: the CPU a round trip costs.
            result[f"cpu_ratio_vs_aws_{label}"] = round(cpu["ferry"] / cpu["aws"], 3)
            result[f"cpu_ratio_vs_boto3_{label}"] = round(cpu["ferry"] / cpu["boto3"], 3)
            result[f"ferry_peak_rss_mib_{label}"] = round(
                max(per[d]["ferry"]["rss_mib_max"] for d in ("upload", "download")), 1)
            result[f"ferry_peak_budget_mib_{label}"] = round(
                max(per[d]["ferry"]["peak_budget_mib"] for d in ("upload", "download")), 1)
        result["ferry_memory_budget_mib"] = self.medians(self.args.sizes[0], "upload", "ferry")["budget_mib"]
        big = "1g" if 1024 in self.args.sizes else f"{max(self.args.sizes)}m"
        d, u, c = (result[f"download_speedup_vs_aws_{big}"], result[f"upload_speedup_vs_aws_{big}"],
                   result[f"cpu_ratio_vs_aws_{big}"])
        rss = result[f"ferry_peak_rss_mib_{big}"]
        budget = result["ferry_memory_budget_mib"]
        result["targets_met"] = {"download_2x_aws": d >= 2, "upload_1x_aws": u >= 1,
                                 "cpu_third_of_aws": c <= 1 / 3, "rss_within_budget": rss <= budget}
        print()
        print(f"{big}: ferry-cp download {d:.2f}x the CLI's speed (target >= 2), upload {u:.2f}x "
              f"(target >= 1), client CPU {c:.2f} of the CLI's, download+upload (target <= 0.33)")
        print(f"{big}: ferry-cp peak RSS {rss:.0f} MiB, memory budget {budget:.0f} MiB, "
              f"budget peak {result[f'ferry_peak_budget_mib_{big}']:.0f} MiB")
        print("RESULT " + json.dumps(result, separators=(",", ":")))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "boto3":
        return boto3_main(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry-cp", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--server-pid", type=int, required=True)
    ap.add_argument("--server-data", required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--sizes", default="64 256 1024")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split()]
    bench = Bench(args)
    boto3_client(args.endpoint).create_bucket(Bucket=BUCKET)
    import boto3

    aws_version = subprocess.run(["/usr/bin/aws", "--version"], capture_output=True, text=True,
                                 env=bench.env).stdout.split()[0]
    for size in args.sizes:
        print(f"s3_bench: {size} MiB ...", file=sys.stderr)
        bench.bench_size(size)
    bench.report({"aws": aws_version, "boto3": boto3.__version__})


if __name__ == "__main__":
    main()
