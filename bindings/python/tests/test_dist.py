"""ferry.dist: walks and copies on a LocalCluster of 4 worker processes give
what the single-process ferry.FileSystems gives; a worker killed mid-copy
costs nothing but time; a rerun finishes an interrupted copy. Trees are a
few thousand entries made straight in ganesha's export (the 100k tree is
scripts/bench dist's)."""

import os
import signal
import subprocess
import sys
import threading
import uuid

import pytest

import ferry
from conftest import (REPO_ROOT, S3_ACCESS_KEY, S3_BUCKET, S3_REGION, S3_SECRET_KEY, nfs_url,
                      read_tree, wait_until)

distributed = pytest.importorskip("distributed")
import ferry.dist  # noqa: E402  (needs distributed's import to have worked)
from ferry.dist import _copy  # noqa: E402

WORKERS = 4
# Trees this small are walked whole by one task unless told otherwise.
SPLIT_AT_ONCE = ferry.dist.SplitOptions(whole_walk_entries=0)


@pytest.fixture(scope="module")
def client(versitygw, ganesha):
    """A Client of a LocalCluster of 4 worker processes, started with the
    AWS environment pointing at the test versitygw (workers inherit it)."""
    env = {"AWS_ENDPOINT_URL": versitygw, "AWS_ACCESS_KEY_ID": S3_ACCESS_KEY,
           "AWS_SECRET_ACCESS_KEY": S3_SECRET_KEY, "AWS_REGION": S3_REGION,
           "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        with distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as c:
            yield c


@pytest.fixture
def fs(client):
    with ferry.Runtime(blocking_threads=16) as rt, ferry.FileSystems(runtime=rt) as fsys:
        yield fsys


def make_tree(root, *, dirs=8, subdirs=4, files=60, size=lambda i: i % 97, non_utf8=True):
    """dirs x subdirs folders of `files` files (sizes from `size`), plus what
    walks get wrong: an empty folder, a symlink, a name that is not UTF-8
    (unless not `non_utf8`). Returns {relative path: bytes} of the regular
    files."""
    made = {}
    for d in range(dirs):
        for s in range(subdirs):
            folder = root / f"d{d:02d}" / f"s{s:02d}"
            folder.mkdir(parents=True)
            for f in range(files):
                data = os.urandom(size(f))
                (folder / f"f{f:03d}").write_bytes(data)
                made[f"d{d:02d}/s{s:02d}/f{f:03d}"] = data
    (root / "empty").mkdir()
    os.symlink("d00", root / "link")
    if non_utf8:
        name = os.fsdecode(b"caf\xe9.bin")
        (root / name).write_bytes(b"not utf-8")
        made[name] = b"not utf-8"
    return made


def single_walk(fs, url):
    return sorted((e.path_bytes, e.type, e.size, e.mode, e.uid, e.gid, e.mtime_ns, e.fileid)
                  for e in fs.walk_entries(url))


def dist_walk(entries):
    types = {"file": ferry.records_pb2.FILE_TYPE_REGULAR,
             "directory": ferry.records_pb2.FILE_TYPE_DIRECTORY,
             "symlink": ferry.records_pb2.FILE_TYPE_SYMLINK}
    return sorted((e["path"], types[e["type"]], e["size"], e["mode"], e["uid"], e["gid"],
                   e["mtime_ns"], e["fileid"]) for e in entries)


def new_dir(base, prefix):
    path = base / f"{prefix}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    return path


def upload(fs, tmp_path, **tree):
    """A tree made locally and copied to a fresh S3 prefix (single process);
    returns (prefix URL, {path: bytes})."""
    # S3 keys are UTF-8 (a listing could not give such a name back).
    files = make_tree(tmp_path / "up", non_utf8=False, **tree)
    prefix = f"s3://{S3_BUCKET}/dist/{uuid.uuid4().hex}"
    # S3 has no symlinks or empty folders: ferry skips them as ferry-cp does.
    fs.copy(str(tmp_path / "up"), prefix, recursive=True)
    return prefix, files


# ---------------------------------------------------------------- walk


def test_walk_on_four_workers_gives_the_entries_of_a_single_process_walk(client, fs, ganesha):
    root = new_dir(ganesha, "walk")
    make_tree(root, dirs=10, subdirs=5, files=50)  # 2,500 files, 61 folders
    url = nfs_url(root.name)
    w = ferry.dist.walk(url, client=client, split=SPLIT_AT_ONCE)
    assert w.errors == []
    assert w.entries == len(single_walk(fs, url))
    assert dist_walk(w.gather()) == single_walk(fs, url)
    assert len(w.partitions) > WORKERS  # it was split, so Dask had work to balance


def test_walk_of_an_s3_prefix_splits_by_prefix_and_matches_a_single_process_walk(
        client, fs, tmp_path):
    prefix, _ = upload(fs, tmp_path, dirs=4, subdirs=3, files=10)
    w = ferry.dist.walk(prefix, client=client, split=SPLIT_AT_ONCE)
    assert dist_walk(w.gather()) == single_walk(fs, prefix)
    assert len(w.partitions) > 1


def test_a_tree_within_the_whole_walk_budget_is_walked_by_one_task(client, fs, ganesha):
    root = new_dir(ganesha, "walk-whole")
    make_tree(root, dirs=3, subdirs=2, files=10)
    url = nfs_url(root.name)
    w = ferry.dist.walk(url, client=client, split=ferry.dist.SplitOptions(whole_walk_entries=100))
    assert len(w.partitions) == 1
    assert dist_walk(w.gather()) == single_walk(fs, url)
    split = ferry.dist.walk(url, client=client, split=ferry.dist.SplitOptions(whole_walk_entries=20))
    assert len(split.partitions) > 1
    assert dist_walk(split.gather()) == single_walk(fs, url)


def test_walk_gives_a_dask_bag_of_entries(client, tmp_path):
    make_tree(tmp_path / "t", dirs=2, subdirs=2, files=5)
    bag = ferry.dist.walk(str(tmp_path / "t"), client=client).to_bag()
    files = bag.filter(lambda e: e["type"] == "file").count().compute()
    assert files == 2 * 2 * 5 + 1


def test_walk_to_parquet_writes_every_entry_with_binary_paths(client, fs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    make_tree(tmp_path / "t", dirs=3, subdirs=2, files=7)
    summary = ferry.dist.walk_to_parquet(str(tmp_path / "t"), str(tmp_path / "out"),
                                         client=client)
    table = pq.read_table(str(tmp_path / "out"))
    assert summary["entries"] == table.num_rows == len(single_walk(fs, str(tmp_path / "t")))
    assert b"caf\xe9.bin" in table.column("path").to_pylist()


def test_walk_of_a_missing_root_raises_file_not_found(client, tmp_path):
    with pytest.raises(FileNotFoundError):
        ferry.dist.walk(str(tmp_path / "missing"), client=client)


# ---------------------------------------------------------------- copy


def test_copy_s3_tree_to_nfs_gives_what_a_single_process_copy_gives(client, fs, ganesha,
                                                                    tmp_path):
    prefix, files = upload(fs, tmp_path, dirs=6, subdirs=4, files=20,
                           size=lambda i: (i * 7919) % 70000)
    dist_dir, single_dir = new_dir(ganesha, "cp-dist"), new_dir(ganesha, "cp-single")
    report = ferry.dist.copy(prefix, nfs_url(dist_dir.name), recursive=True, client=client)
    fs.copy(prefix, nfs_url(single_dir.name), recursive=True)
    assert report.files_copied == len(files) and report.failures == []
    assert read_tree(dist_dir) == read_tree(single_dir) == files


def test_a_worker_killed_mid_copy_has_its_tasks_rerun_and_the_copy_completes(
        client, ganesha, tmp_path):
    files = make_tree(tmp_path / "src", dirs=8, subdirs=2, files=6, size=lambda i: 1 << 20)
    dst = new_dir(ganesha, "cp-kill")
    pids = client.run(os.getpid)  # worker address -> process id
    outcome = []
    copying = threading.Thread(target=lambda: outcome.append(ferry.dist.copy(
        str(tmp_path / "src"), nfs_url(dst.name), recursive=True, client=client)))
    copying.start()

    def busy_copying():
        return [w for w, keys in client.processing().items()
                if any(str(k).startswith("copy_") for k in keys)]

    # The worker seen copying is the one killed: asking again could find
    # its task already done and no worker busy.
    seen = []

    def found_one():
        seen[:] = busy_copying()
        return bool(seen)

    wait_until(found_one, "a worker copying")
    victim = seen[0]
    os.kill(pids[victim], signal.SIGKILL)
    copying.join(120)
    assert not copying.is_alive()
    assert outcome and outcome[0].failures == []
    assert read_tree(dst) == files  # nothing missing, nothing short, no temporaries left
    client.wait_for_workers(WORKERS, timeout=60)  # the nanny restarts it, for later tests


def test_rerunning_an_interrupted_copy_copies_only_what_is_missing_or_wrong(client, ganesha,
                                                                          tmp_path):
    files = make_tree(tmp_path / "src", dirs=3, subdirs=2, files=10, size=lambda i: 100 + i)
    dst = new_dir(ganesha, "cp-resume")
    ferry.dist.copy(str(tmp_path / "src"), nfs_url(dst.name), recursive=True, client=client)
    # As a killed job leaves it: some files never written, one of the right
    # size but stale content.
    (dst / "d00/s00/f000").unlink()
    (dst / "d02/s01/f009").unlink()
    (dst / "d01/s01/f005").write_bytes(b"x" * len(files["d01/s01/f005"]))
    report = ferry.dist.copy(str(tmp_path / "src"), nfs_url(dst.name), recursive=True,
                             client=client)
    assert report.files_copied == 3
    assert report.files_skipped == len(files) - 3
    assert read_tree(dst) == files


def test_a_rerun_with_size_and_time_skips_same_size_files_of_the_sources_time_unread(
        client, ganesha, tmp_path):
    files = make_tree(tmp_path / "src", dirs=1, subdirs=1, files=4, size=lambda i: 100 + i)
    dst = new_dir(ganesha, "cp-times")
    ferry.dist.copy(str(tmp_path / "src"), nfs_url(dst.name), recursive=True, client=client)
    # Same size, same time as the copy kept: rclone's rule calls it up to
    # date without reading it; the default ("checksum") reads and recopies.
    stale = dst / "d00/s00/f001"
    times = os.stat(stale).st_mtime_ns
    stale.write_bytes(b"y" * len(files["d00/s00/f001"]))
    os.utime(stale, ns=(times, times))
    by_time = ferry.dist.copy(str(tmp_path / "src"), nfs_url(dst.name), recursive=True,
                              client=client, options=ferry.dist.CopyOptions(compare="size_and_time"))
    by_content = ferry.dist.copy(str(tmp_path / "src"), nfs_url(dst.name), recursive=True,
                                 client=client)
    assert (by_time.files_copied, by_time.files_skipped) == (0, len(files))
    assert (by_content.files_copied, by_content.files_skipped) == (1, len(files) - 1)
    assert read_tree(dst) == files


def test_a_large_file_to_a_local_path_is_copied_in_byte_ranges_by_several_workers(
        client, fs, tmp_path):
    data = os.urandom((5 << 20) + 12345)
    (tmp_path / "big.bin").write_bytes(data)
    prefix = f"s3://{S3_BUCKET}/dist/{uuid.uuid4().hex}/big.bin"
    fs.copy(str(tmp_path / "big.bin"), prefix)
    options = ferry.dist.CopyOptions(range_threshold=1 << 20, range_bytes=1 << 20)
    report = ferry.dist.copy(prefix, str(tmp_path / "out.bin"), client=client, options=options)
    assert report.ranges == 6 and report.files_copied == 1
    assert (tmp_path / "out.bin").read_bytes() == data
    assert sorted(os.listdir(tmp_path)) == ["big.bin", "out.bin"]  # no temporary left


def test_a_single_file_goes_to_nfs_whole_and_a_rerun_skips_it(client, ganesha, tmp_path):
    data = os.urandom((2 << 20) + 5)
    (tmp_path / "one.bin").write_bytes(data)
    name = f"one-{uuid.uuid4().hex[:8]}.bin"
    options = ferry.dist.CopyOptions(range_threshold=1 << 20)  # ranges go to local paths only
    first = ferry.dist.copy(str(tmp_path / "one.bin"), nfs_url(name), client=client,
                            options=options)
    again = ferry.dist.copy(str(tmp_path / "one.bin"), nfs_url(name), client=client,
                            options=options)
    assert (first.files_copied, first.ranges, again.files_skipped) == (1, 0, 1)
    assert (ganesha / name).read_bytes() == data


def test_a_file_whose_ranges_did_not_all_land_is_never_published(fs, tmp_path):
    data = os.urandom(3 << 20)
    (tmp_path / "src.bin").write_bytes(data)
    plan = _copy.plan_ranges(str(tmp_path / "src.bin").encode(),
                             str(tmp_path / "dst.bin").encode(), len(data), 1 << 20)
    _copy.prepare_ranges_task(plan)
    digests = [_copy.copy_range_task(plan, i, ferry.dist.CopyOptions()) for i in (0, 2)]
    missing = _copy.digest(fs, str(tmp_path / "src.bin"), 1 << 20, 1 << 20)
    with pytest.raises(OSError, match=r"range 2/3 \[1048576, 2097152\)"):
        _copy.publish_ranges_task(plan, [digests[0], missing, digests[1]])
    assert not (tmp_path / "dst.bin").exists()


def test_copy_of_a_missing_source_raises_file_not_found_naming_it(client, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        ferry.dist.copy(str(tmp_path / "nowhere"), str(tmp_path / "x"), recursive=True,
                        client=client)


def test_copy_of_a_directory_without_recursive_is_refused(client, tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        ferry.dist.copy(str(tmp_path / "d"), str(tmp_path / "x"), client=client)


def test_command_line_copies_a_tree_on_a_given_scheduler(client, tmp_path):
    files = make_tree(tmp_path / "src", dirs=2, subdirs=2, files=5)
    run = subprocess.run(
        [sys.executable, "-m", "ferry.dist", "cp", str(tmp_path / "src"), str(tmp_path / "dst"),
         "-r", "--scheduler", client.scheduler.address],
        capture_output=True, text=True, timeout=120, cwd=str(REPO_ROOT))
    assert run.returncode == 0, run.stderr
    assert read_tree(tmp_path / "dst") == files
