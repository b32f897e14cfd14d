"""ferry.s3 download/upload and ferry.copy with progress callbacks against
a real versitygw: progress increases to the size, an exception raised in
the callback stops the transfer and comes out unchanged with no file left,
and the GIL is released while a transfer runs."""

import os
import uuid

import pytest

import ferry
import ferry.s3
from conftest import (DirectoryWatcher, S3_ACCESS_KEY, S3_BUCKET, S3_REGION, S3_SECRET_KEY,
                      boto3_client, raising)

SIZE = 24 << 20  # several ranged GETs and multipart parts


@pytest.fixture
def rt():
    with ferry.Runtime(io_threads=1, blocking_threads=4) as r:
        yield r



@pytest.fixture(scope="module")
def big(versitygw):
    key = f"py/{uuid.uuid4().hex}.bin"
    payload = os.urandom(SIZE)
    boto3_client(versitygw).put_object(Bucket=S3_BUCKET, Key=key, Body=payload)
    return f"s3://{S3_BUCKET}/{key}", payload


def test_download_progress_increases_to_the_size(s3, big, tmp_path):
    calls = []
    stats = s3.download(big[0], str(tmp_path / "out.bin"),
                        progress=lambda done, total: calls.append((done, total)))
    assert (tmp_path / "out.bin").read_bytes() == big[1]
    assert calls, "progress was never called"
    done = [d for d, _ in calls]
    assert done == sorted(done)
    assert done[-1] == SIZE == stats.bytes
    assert calls[-1][1] == SIZE


def test_upload_progress_increases_to_the_size(s3, tmp_path):
    src = tmp_path / "in.bin"
    src.write_bytes(os.urandom(SIZE))
    calls = []
    s3.upload(str(src), f"s3://{S3_BUCKET}/py/{uuid.uuid4().hex}.bin",
              progress=lambda done, total: calls.append(done))
    assert calls == sorted(calls) and calls[-1] == SIZE


def test_exception_in_progress_stops_the_download_and_leaves_no_file(s3, big, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    boom = RuntimeError("user pressed stop")
    with pytest.raises(RuntimeError) as info:
        s3.download(big[0], str(out / "big.bin"), progress=raising(boom))
    assert info.value is boom
    assert list(out.iterdir()) == []  # neither the file nor a temporary


def test_exception_in_progress_of_an_upload_propagates_and_leaves_no_partial_object(
        s3, tmp_path, versitygw):
    payload = os.urandom(SIZE)
    src = tmp_path / "in.bin"
    src.write_bytes(payload)
    key = f"py/{uuid.uuid4().hex}.bin"
    boom = ZeroDivisionError("stop")
    with pytest.raises(ZeroDivisionError) as info:
        s3.upload(str(src), f"s3://{S3_BUCKET}/{key}", progress=raising(boom))
    assert info.value is boom
    # Stopped before the object was complete: no object (the multipart
    # upload was aborted). Raised by the final report, made once the object
    # exists (a fast upload): the object is whole. Never anything between.
    boto = boto3_client(versitygw)
    if boto.list_objects_v2(Bucket=S3_BUCKET, Prefix=key).get("KeyCount", 0):
        assert boto.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read() == payload
    assert not boto.list_multipart_uploads(Bucket=S3_BUCKET, Prefix=key).get("Uploads")


def test_download_releases_the_gil(s3, big, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with DirectoryWatcher(out) as w:
        s3.download(big[0], str(out / "big.bin"))
    # Only a thread that ran during the call can have seen the temporary.
    assert w.saw(lambda name, size: name != "big.bin")


def test_copy_picks_s3_by_scheme(s3, s3_env, big, tmp_path):
    stats = ferry.copy(big[0], str(tmp_path / "c.bin"))
    assert (tmp_path / "c.bin").read_bytes() == big[1]
    assert stats.operation == ferry.records_pb2.TransferStats.OPERATION_DOWNLOAD
    dst = f"s3://{S3_BUCKET}/py/{uuid.uuid4().hex}.bin"
    calls = []
    ferry.copy(str(tmp_path / "c.bin"), dst, progress=lambda d, t: calls.append(d))
    assert calls[-1] == SIZE
    with s3.open(dst, "rb") as f:
        assert f.read() == big[1]


def test_copy_configures_s3_from_the_environment(versitygw, big, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", versitygw)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", S3_REGION)
    ferry.copy(big[0], str(tmp_path / "e.bin"))
    assert (tmp_path / "e.bin").read_bytes() == big[1]


def test_copy_of_a_missing_key_is_file_not_found(s3_env, tmp_path):
    with pytest.raises(FileNotFoundError):
        ferry.copy(f"s3://{S3_BUCKET}/py/absent", str(tmp_path / "x"))
