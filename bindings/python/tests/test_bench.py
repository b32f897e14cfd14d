"""ferry-bench (ferry.bench): every scenario at tiny sizes against a local
directory and against versitygw, the records it writes, the report and
plots made from them, and what the page splicing keeps."""

import collections
import json
import os
import shutil

import pytest

from ferry.bench import cli, report, scenarios, targets
from ferry.records_pb2 import BenchRecord

# Small enough that both runs together take a few seconds.
TINY = ["--runs=1", "--stage-sizes=1,64K", "--parallel-files=4", "--parallelism=1,2", "--tree-files=3",
        "--tree-size=1K", "--sweep-max=1K", "--sweep-threads=1", "--meta-ops=3", "--meta-parallel=2",
        "--stress-clients=1,2", "--stress-seconds=0.1", "--catalog-sizes=10,30", "--catalog-stats=3",
        "--no-progress"]


def _run(out, *args):
    assert cli.main([*args, f"--out={out}", *TINY]) == 0
    return report.read_records(os.path.join(out, "records.jsonl"))


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("bench-local")
    (base / "target").mkdir()
    out = base / "out"
    return out, _run(out, str(base / "target"), "--tools=ferry-py,python-os,cp")


@pytest.fixture(scope="module")
def s3_run(tmp_path_factory, versitygw):
    from conftest import S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY, boto3_client

    boto3_client(endpoint=versitygw).create_bucket(Bucket="ferry-bench")
    env = dict(AWS_ENDPOINT_URL=versitygw, AWS_ACCESS_KEY_ID=S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY=S3_SECRET_KEY,
               AWS_REGION=S3_REGION, AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        out = tmp_path_factory.mktemp("bench-s3") / "out"
        # The AWS CLI starts an interpreter per command: left to the published run.
        yield out, _run(out, "s3://ferry-bench/t", "--tools=ferry-py,boto3")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _measured(records):
    return [r for r in records if r.scenario != "note"]


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS)
def test_every_scenario_records_ferry_and_the_local_peer(local_run, scenario):
    _, records = local_run
    tools = {r.tool for r in records if r.scenario == scenario}
    assert "ferry-py" in tools
    assert tools & {"python-os", "cp"}


# boto3 has no directory copy: the tree scenario's S3 peers are the AWS
# CLI and rclone, processes, left to the published run.
@pytest.mark.parametrize("scenario", [s for s in scenarios.SCENARIOS if s != "tree"])
def test_every_scenario_records_ferry_and_boto3_on_versitygw(s3_run, scenario):
    _, records = s3_run
    tools = {r.tool for r in records if r.scenario == scenario}
    assert {"ferry-py", "boto3"} <= tools


def test_a_run_against_real_peers_has_no_failed_measurement(local_run, s3_run):
    failed = [(r.scenario, r.target, r.tool, r.error) for _, rs in (local_run, s3_run) for r in rs if r.errors]
    assert failed == []


@pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone not installed")
def test_rclone_puts_and_gets_on_versitygw_with_a_ca_bundle_in_the_environment(s3_run, tmp_path, monkeypatch):
    # Machines that export AWS_CA_BUNDLE made every rclone record of a run an
    # error (rclone refuses a CA bundle for an http:// endpoint).
    monkeypatch.setenv("AWS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    rclone = targets.Rclone(targets.Target.parse("s3://ferry-bench/rclone"), shutil.which("rclone"))
    (tmp_path / "one.bin").write_bytes(b"x" * 1000)
    rclone.put(str(tmp_path / "one.bin"), "one.bin")
    rclone.get("one.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == b"x" * 1000


def test_no_time_is_negative(local_run, s3_run):
    for _, records in (local_run, s3_run):
        for r in _measured(records):
            assert all(v >= 0 for v in r.times_s.values()), r
            assert r.cpu_s >= 0


def test_transfers_have_a_wall_time_and_their_byte_count(local_run):
    _, records = local_run
    for r in records:
        if r.scenario in ("stages", "parallel", "tree", "sweep"):
            assert r.times_s["wall"] > 0
            assert r.bytes > 0 and r.ops > 0


def test_sweep_byte_counts_grow_with_the_size(s3_run):
    _, records = s3_run
    by_tool = collections.defaultdict(list)
    for r in records:
        if r.scenario == "sweep":
            by_tool[(r.tool, r.parameters["direction"])].append((int(r.parameters["size_bytes"]), r.bytes))
    assert by_tool
    for points in by_tool.values():
        points.sort()
        assert [b for _, b in points] == [s for s, _ in points]
        assert len(points) == 6  # 1 B .. 1 KiB in powers of 4


def test_stages_time_each_stage_of_a_remote_transfer(s3_run):
    _, records = s3_run
    r = next(r for r in records if r.scenario == "stages" and r.tool == "ferry-py" and r.parameters["direction"] == "get")
    assert {"setup", "tcp_connect", "session", "first_byte", "transfer", "close", "wall"} <= set(r.times_s)
    assert r.times_s["tcp_connect"] > 0


def test_stress_reports_latency_percentiles_in_order(s3_run):
    _, records = s3_run
    for r in records:
        if r.scenario == "stress":
            assert r.ops > 0
            assert 0 < r.figures["p50_s"] <= r.figures["p99_s"] <= r.figures["p999_s"]


def test_catalog_lists_every_entry_at_each_size(s3_run):
    _, records = s3_run
    listed = {(r.tool, r.parameters["entries"]): r.ops for r in records
              if r.scenario == "catalog" and r.parameters["op"] == "list"}
    assert listed == {(t, n): int(n) for t in ("ferry-py", "boto3") for n in ("10", "30")}


def test_what_a_tool_lacks_is_a_note_not_an_error(s3_run):
    _, records = s3_run
    notes = [r.error for r in records if r.scenario == "note"]
    assert "metadata: ferry-py on s3 has no meta_add" in notes


def test_records_are_benchrecord_json_lines(local_run):
    out, _ = local_run
    with open(os.path.join(out, "records.jsonl")) as f:
        lines = f.read().splitlines()
    assert lines
    for line in lines:
        assert json.loads(line)["scenario"]


def test_the_report_has_every_scenario_and_its_plots(local_run):
    out, _ = local_run
    text = (out / "report.md").read_text()
    for heading in ("Stages", "Many files in parallel", "Directory (tree)", "Size sweep", "Metadata",
                    "Stress", "Catalog size", "ferry against each peer tool"):
        assert f"### {heading}" in text
    for plot in ("local-parallel.png", "local-sweep-put.png", "local-sweep-get.png", "local-stress.png",
                 "local-catalog.png"):
        assert (out / "plots" / plot).stat().st_size > 1000
        assert f"(plots/{plot})" in text


def test_the_report_is_the_same_from_the_same_records(local_run, tmp_path):
    out, _ = local_run
    records = str(out / "records.jsonl")
    for name in ("a", "b"):
        assert cli.main([f"--from-records={records}", f"--out={tmp_path / name}"]) == 0
    assert (tmp_path / "a" / "report.md").read_bytes() == (tmp_path / "b" / "report.md").read_bytes()
    plots = sorted(os.listdir(tmp_path / "a" / "plots"))
    assert plots and plots == sorted(os.listdir(tmp_path / "b" / "plots"))
    for p in plots:
        assert (tmp_path / "a" / "plots" / p).read_bytes() == (tmp_path / "b" / "plots" / p).read_bytes()


def test_ctrl_c_keeps_what_was_measured_and_still_writes_the_report(tmp_path, monkeypatch):
    def interrupted(ctx):
        yield from list(scenarios.plan_sweep(ctx))[:2]

        def stop():
            raise KeyboardInterrupt

        yield scenarios.Step("sweep", "Ctrl-C", stop)
        yield scenarios.Step("sweep", "never run", lambda: pytest.fail("ran after Ctrl-C"))

    monkeypatch.setitem(scenarios.PLANNERS, "sweep", interrupted)
    (tmp_path / "target").mkdir()
    code = cli.main([str(tmp_path / "target"), f"--out={tmp_path / 'out'}", "--scenarios=sweep",
                     "--tools=ferry-py", *TINY])
    assert code == 130
    records = report.read_records(str(tmp_path / "out" / "records.jsonl"))
    assert len([r for r in records if r.scenario == "sweep"]) == 4  # 2 steps x put and get
    assert "interrupted" in (tmp_path / "out" / "report.md").read_text()


def test_the_run_directory_is_removed_from_the_target(local_run):
    out, _ = local_run
    assert os.listdir(out.parent / "target") == []


def test_splice_replaces_only_the_marked_section():
    page = f"# Page\nhand\n{report.BEGIN_MARK}\nold figures\n{report.END_MARK}\nmore hand\n"
    new = report.splice(page, "new figures\n")
    assert new == f"# Page\nhand\n{report.BEGIN_MARK}\nnew figures\n{report.END_MARK}\nmore hand\n"


def test_splice_appends_the_section_to_a_page_without_markers():
    assert report.splice("# Page\n", "figures") == f"# Page\n\n{report.BEGIN_MARK}\nfigures\n{report.END_MARK}\n"


def test_splice_twice_gives_the_same_page():
    once = report.splice("# Page\n", "figures")
    assert report.splice(once, "figures") == once


@pytest.mark.parametrize("text,value", [("1", 1), ("64K", 65536), ("64KiB", 65536), ("16M", 16 << 20),
                                        ("1GiB", 1 << 30), ("1e5", 100000)])
def test_sizes_take_binary_suffixes(text, value):
    assert cli.parse_size(text) == value


def test_percentile_is_nearest_rank():
    values = [float(i) for i in range(1, 1001)]
    assert (scenarios.percentile(values, 0.5), scenarios.percentile(values, 0.99),
            scenarios.percentile(values, 0.999)) == (500.0, 990.0, 999.0)


def test_ratios_compare_programs_with_programs_and_libraries_with_libraries():
    recs = []
    for tool, wall in (("ferry-py", 1.0), ("ferry-cp", 2.0), ("boto3", 3.0), ("aws", 8.0)):
        r = BenchRecord(scenario="tree", target="s3", tool=tool, ops=1, bytes=1)
        r.parameters["files"], r.parameters["direction"] = "1", "put"
        r.times_s["wall"] = wall
        recs.append(r)
    rep = report.Report(recs, "", "", plots=False)
    rep.render(None)
    assert [(f, p, round(v, 2)) for _, _, f, p, v in rep.ratios] == [("ferry-py", "boto3", 3.0),
                                                                     ("ferry-cp", "aws", 4.0)]


def test_ratio_summary_counts_the_comparisons_ferry_loses_per_target():
    recs = []
    for target, tool, wall in (("s3", "ferry-cp", 2.0), ("s3", "aws", 8.0),
                               ("nfs", "ferry-cp", 4.0), ("nfs", "nfs-cp", 1.0)):
        r = BenchRecord(scenario="tree", target=target, tool=tool, ops=1, bytes=1)
        r.parameters["files"], r.parameters["direction"] = "1", "put"
        r.times_s["wall"] = wall
        recs.append(r)
    rep = report.Report(recs, "", "", plots=False)
    rep.render(None)
    assert rep.ratio_summary() == {"s3": {"rows": 1, "rows_below_1": 0, "min_ratio": 4.0},
                                   "nfs": {"rows": 1, "rows_below_1": 1, "min_ratio": 0.25}}


def test_the_run_prefix_is_removed_from_the_bucket(s3_run, versitygw):
    from conftest import boto3_client

    listed = boto3_client(endpoint=versitygw).list_objects_v2(Bucket="ferry-bench", Prefix="t/")
    assert listed.get("KeyCount", 0) == 0


def test_a_process_tool_peak_rss_is_its_own_not_the_bench_process():
    assert targets.self_peak_rss() > 32 << 20  # this interpreter, ferry and boto3 loaded
    assert targets.run_process(["true"]).peak_rss_bytes < 16 << 20


def test_a_failing_process_tool_raises_naming_the_program():
    with pytest.raises(RuntimeError, match="^false exited 1"):
        targets.run_process(["false"])


def test_a_record_line_parses_back_to_the_same_benchrecord():
    r = BenchRecord(scenario="sweep", target="s3", tool="ferry-cp", bytes=1 << 40, ops=1, cpu_s=0.5,
                    peak_rss_bytes=123 << 20, run=2)
    r.parameters["size_bytes"] = str(1 << 40)
    r.times_s["wall"] = 1.25
    line = report.to_json_line(r)
    assert "\n" not in line
    assert report.read_records_text(line) == [r]


def test_help_describes_every_flag_on_stdout_and_exits_0(capsys):
    with pytest.raises(SystemExit) as ended:
        cli.main(["--help"])
    assert ended.value.code == 0
    out = capsys.readouterr().out
    assert "--endpoint-url" in out and "--profile" in out and "--region" in out
    parser = cli.build_parser()
    undocumented = [a.option_strings for a in parser._actions if a.option_strings and not a.help]
    assert undocumented == []


def test_version_prints_the_package_version(capsys):
    import ferry
    with pytest.raises(SystemExit) as ended:
        cli.main(["--version"])
    assert ended.value.code == 0
    assert capsys.readouterr().out.strip() == f"ferry-bench {ferry.__version__}"


def test_an_unsupported_url_is_a_one_line_usage_error(capsys):
    with pytest.raises(SystemExit) as ended:
        cli.main(["gs://bucket/x"])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "unsupported target 'gs://bucket/x'" in err and "Traceback" not in err
