"""FileSystems.sync: the engine's sync (ferry-sync's) from Python, local ->
s3:// (the session versitygw) and local -> nfs:// (the session ganesha):
what is up to date stays, what changed is copied, what the source lacks is
deleted, as rclone sync does."""

import base64
import hashlib
import os
import uuid

import pytest

import ferry
from conftest import S3_BUCKET, boto3_client, nfs_url, read_tree


@pytest.fixture
def fs(s3_env, ganesha):
    with ferry.Runtime(blocking_threads=16) as rt, ferry.FileSystems(runtime=rt) as fsys:
        yield fsys


def make_tree(root):
    files = {"a.txt": b"alpha", "d/b.txt": b"beta" * 100, "d/e/c.tmp": b"scratch"}
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (1_700_000_000, 1_700_000_000))
    return files


@pytest.fixture(params=["s3", "nfs"])
def target(request, ganesha):
    if request.param == "s3":
        return f"s3://{S3_BUCKET}/sync/{uuid.uuid4().hex}"
    name = f"sync-{uuid.uuid4().hex}"
    (ganesha / name).mkdir()
    return nfs_url(name)


def test_a_second_sync_copies_nothing(fs, target, tmp_path):
    make_tree(tmp_path / "src")
    first = fs.sync(str(tmp_path / "src"), target)
    again = fs.sync(str(tmp_path / "src"), target)
    assert (first["copied"], first["skipped"]) == (3, 0)
    assert (again["copied"], again["skipped"], again["bytes"]) == (0, 3, 0)


def test_a_sync_copies_what_changed_and_deletes_what_the_source_lacks(fs, target, tmp_path):
    src = tmp_path / "src"
    make_tree(src)
    fs.sync(str(src), target)
    (src / "a.txt").write_bytes(b"ALPHA")
    (src / "d" / "b.txt").unlink()
    report = fs.sync(str(src), target)
    assert report["copied_files"] == ["a.txt"]
    assert report["deleted_files"] == ["d/b.txt"]
    fs.copy(target, str(tmp_path / "back"), recursive=True)
    assert read_tree(tmp_path / "back") == read_tree(src)


def test_a_dry_run_reports_and_changes_nothing(fs, target, tmp_path):
    make_tree(tmp_path / "src")
    report = fs.sync(str(tmp_path / "src"), target, dry_run=True)
    assert report["dry_run"] and report["copied"] == 3
    assert sorted(report["copied_files"]) == ["a.txt", "d/b.txt", "d/e/c.tmp"]
    assert fs.sync(str(tmp_path / "src"), target)["copied"] == 3


def test_excluded_files_are_neither_copied_nor_deleted(fs, target, tmp_path):
    make_tree(tmp_path / "src")
    report = fs.sync(str(tmp_path / "src"), target, exclude=["*.tmp"])
    assert (report["copied"], report["excluded"]) == (2, 1)


def test_checksum_compares_content(fs, target, tmp_path):
    make_tree(tmp_path / "src")
    fs.sync(str(tmp_path / "src"), target)
    assert fs.sync(str(tmp_path / "src"), target, compare="checksum")["copied"] == 0


def test_an_unknown_compare_rule_is_a_value_error(fs, tmp_path):
    with pytest.raises(ValueError, match="compare='mtime'"):
        fs.sync(str(tmp_path), str(tmp_path / "x"), compare="mtime")


def test_max_delete_deletes_nothing_when_more_would_go(fs, target, tmp_path):
    src = tmp_path / "src"
    make_tree(src)
    fs.sync(str(src), target)
    for rel in ("a.txt", "d/b.txt"):
        (src / rel).unlink()
    with pytest.raises(ferry.Error, match="more than the 1 allowed"):
        fs.sync(str(src), target, max_delete=1)
    assert fs.sync(str(src), target, dry_run=True)["deleted"] == 2


def child(url, name):
    """`url`/`name`, before an NFS URL's query."""
    base, sep, query = url.partition("?")
    return f"{base}/{name}{sep}{query}"


def test_a_single_file_is_synced_by_the_same_rules(fs, target, tmp_path):
    src = tmp_path / "one.txt"
    src.write_bytes(b"once")
    os.utime(src, (1_700_000_000, 1_700_000_000))
    dst = child(target, "one.txt")
    first = fs.sync(str(src), dst)
    again = fs.sync(str(src), dst)
    src.write_bytes(b"twice")
    changed = fs.sync(str(src), dst)
    assert (first["copied"], again["copied"], again["skipped"]) == (1, 0, 1)
    assert (changed["copied"], changed["bytes"]) == (1, 5)
    assert (first["copied_files"], again["copied_files"]) == (["one.txt"], [])
    with fs.open(dst, "rb") as f:
        assert f.read() == b"twice"


def test_checksum_sync_to_s3_keeps_hashes_boto3_agrees_with(fs, tmp_path):
    """What a --checksum sync stored and compares by is what boto3 reads
    back: a single-part object's ETag and a multipart one's md5chksum are
    the MD5 of the bytes boto3 gets."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "small.bin").write_bytes(os.urandom(100_000))
    (src / "nine.bin").write_bytes(os.urandom(9 << 20))  # over one 8 MiB part
    prefix = f"sync/{uuid.uuid4().hex}"
    first = fs.sync(str(src), f"s3://{S3_BUCKET}/{prefix}", compare="checksum")
    again = fs.sync(str(src), f"s3://{S3_BUCKET}/{prefix}", compare="checksum")
    s3 = boto3_client()
    small = s3.get_object(Bucket=S3_BUCKET, Key=f"{prefix}/small.bin")
    nine = s3.get_object(Bucket=S3_BUCKET, Key=f"{prefix}/nine.bin")
    small_body, nine_body = small["Body"].read(), nine["Body"].read()
    assert small["ETag"].strip('"') == hashlib.md5(small_body).hexdigest()
    assert nine["ETag"].strip('"').endswith("-2")  # multipart: no content hash
    assert nine["Metadata"]["md5chksum"] == base64.b64encode(hashlib.md5(nine_body).digest()).decode()
    assert (small_body, nine_body) == ((src / "small.bin").read_bytes(), (src / "nine.bin").read_bytes())
    assert (first["copied"], again["copied"], again["skipped"]) == (2, 0, 2)
