"""ferry.s3 against a real versitygw (the session `versitygw` fixture):
objects as io.RawIOBase files over the C++ ObjectFileTable, cross-checked
byte for byte with boto3 in both directions, and S3 errors as exceptions."""

import io
import os
import uuid

import pytest

import ferry
import ferry.s3
from conftest import (S3_ACCESS_KEY, S3_BUCKET, S3_REGION, S3_SECRET_KEY,
                      assert_open_file_outlives_its_client, assert_reads_like_bytes, boto3_client,
                      make_s3_client)

SIZE = 5 * (1 << 20) + 4321  # more than one part at 5 MiB parts, and a ragged end


@pytest.fixture
def rt():
    with ferry.Runtime(io_threads=1, blocking_threads=4) as r:
        yield r


@pytest.fixture
def boto(versitygw):
    return boto3_client(versitygw)


def fresh_key(suffix=".bin"):
    return f"py/{uuid.uuid4().hex}{suffix}"


def url(key):
    return f"s3://{S3_BUCKET}/{key}"


@pytest.fixture(scope="module")
def stored(versitygw):
    """(url, bytes) of an object boto3 wrote."""
    key = fresh_key()
    payload = os.urandom(SIZE)
    boto3_client(versitygw).put_object(Bucket=S3_BUCKET, Key=key, Body=payload)
    return url(key), payload


# ---------------------------------------------------------------- cross-read


def test_ferry_reads_what_boto3_wrote(s3, stored):
    u, payload = stored
    with s3.open(u, "rb") as f:
        assert f.read() == payload


def test_boto3_reads_what_ferry_wrote(s3, boto):
    key = fresh_key()
    payload = os.urandom(SIZE)
    with ferry.s3.open(s3, url(key), "wb") as f:
        for i in range(0, SIZE, 1 << 20):
            f.write(payload[i:i + (1 << 20)])
    assert boto.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read() == payload


def test_write_with_a_declared_size(s3, boto):
    key = fresh_key()
    payload = os.urandom(12345)
    with s3.open(url(key), "wb", size=len(payload)) as f:
        f.write(payload)
    assert boto.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read() == payload


def test_empty_object_round_trip(s3, boto):
    key = fresh_key()
    with s3.open(url(key), "wb"):
        pass
    assert boto.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read() == b""
    with s3.open(url(key), "rb") as f:
        assert f.read() == b""


def test_upload_then_boto3_reads_it(s3, boto, tmp_path):
    src = tmp_path / "in.bin"
    payload = os.urandom(SIZE)
    src.write_bytes(payload)
    key = fresh_key()
    stats = s3.upload(str(src), url(key))
    assert boto.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read() == payload
    assert stats.operation == ferry.records_pb2.TransferStats.OPERATION_UPLOAD
    assert stats.bytes == SIZE and stats.destination == url(key) and stats.source == str(src)


def test_download_of_what_boto3_wrote(s3, stored, tmp_path):
    u, payload = stored
    dst = tmp_path / "out.bin"
    stats = s3.download(u, str(dst))
    assert dst.read_bytes() == payload
    assert stats.operation == ferry.records_pb2.TransferStats.OPERATION_DOWNLOAD
    assert stats.bytes == SIZE and stats.source == u and stats.destination == str(dst)
    assert stats.bytes_fetched >= SIZE and stats.requests >= 1 and stats.elapsed_ns > 0


# ---------------------------------------------------------------- file semantics


def test_file_object_flags(s3, stored):
    with s3.open(stored[0], "rb") as f:
        assert isinstance(f, io.RawIOBase)
        assert f.readable() and f.seekable() and not f.writable()
        assert f.name == stored[0] and f.mode == "rb"
    assert f.closed


def test_partial_reads_seek_and_tell(s3, stored):
    u, payload = stored
    with s3.open(u, "rb") as f:
        assert_reads_like_bytes(f, payload, [
            ("read", 7), ("tell",), ("seek", 1 << 20), ("read", 100), ("seek", -50, io.SEEK_CUR),
            ("read", 10), ("seek", -10, io.SEEK_END), ("read", 1000), ("read", 1000), ("tell",)])


def test_read_past_the_end_is_empty(s3, stored):
    with s3.open(stored[0], "rb") as f:
        f.seek(SIZE + 10)
        assert f.read(5) == b""
        assert f.readall() == b""


def test_readinto_and_readall(s3, stored):
    u, payload = stored
    buf = bytearray(1000)
    with s3.open(u, "rb") as f:
        assert f.readinto(buf) == 1000
        assert buf == payload[:1000]
        f.seek(SIZE - 10)
        assert f.readinto(buf) == 10
        assert buf[:10] == payload[-10:]
        f.seek(100)
        assert f.readall() == payload[100:]


def test_buffered_reader_reads_lines(s3, boto):
    key = fresh_key(".txt")
    boto.put_object(Bucket=S3_BUCKET, Key=key, Body=b"a\nbb\nccc\n")
    with io.BufferedReader(s3.open(url(key), "rb")) as f:
        assert list(f) == [b"a\n", b"bb\n", b"ccc\n"]


def test_write_only_and_read_only_misuse(s3, stored):
    with s3.open(stored[0], "rb") as f:
        with pytest.raises(io.UnsupportedOperation):
            f.write(b"x")
    with s3.open(url(fresh_key()), "wb") as f:
        with pytest.raises(io.UnsupportedOperation):
            f.read(1)


def test_closed_file_raises_value_error(s3, stored):
    f = s3.open(stored[0], "rb")
    f.close()
    f.close()
    with pytest.raises(ValueError):
        f.read(1)
    with pytest.raises(ValueError):
        f.tell()


@pytest.mark.parametrize("mode", ["r", "w", "r+b", "ab"])
def test_other_modes_are_a_value_error(s3, stored, mode):
    with pytest.raises(ValueError, match="mode"):
        s3.open(stored[0], mode)


def test_open_file_survives_closing_its_client(versitygw, rt, stored):
    u, payload = stored
    assert_open_file_outlives_its_client(make_s3_client(rt, versitygw), u, payload)


# ---------------------------------------------------------------- errors


def test_not_an_s3_url_is_a_value_error(s3):
    with pytest.raises(ValueError):
        s3.open("http://bucket/key", "rb")


def test_missing_key_is_file_not_found(s3, tmp_path):
    with pytest.raises(FileNotFoundError):
        s3.open(url("py/no-such-key"), "rb")
    with pytest.raises(FileNotFoundError):
        s3.download(url("py/no-such-key"), str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()


def test_missing_bucket_is_file_not_found(s3):
    with pytest.raises(FileNotFoundError):
        s3.open("s3://no-such-bucket-ferry/key", "rb")


def test_wrong_secret_is_a_permission_error(versitygw, rt, stored, tmp_path):
    with make_s3_client(rt, versitygw, secret="WRONG") as bad:
        with pytest.raises(PermissionError) as info:
            bad.download(stored[0], str(tmp_path / "x"))
        assert isinstance(info.value, ferry.Error)
        with pytest.raises(PermissionError):
            bad.open(stored[0], "rb")


def test_failed_upload_raises_at_close(versitygw, rt, boto):
    # The bucket does not exist: the upload cannot complete, and close()
    # says so (the object was not written).
    with make_s3_client(rt, versitygw) as c:
        f = c.open("s3://no-such-bucket-ferry/key.bin", "wb")
        with pytest.raises(ferry.Error):
            f.write(b"x" * 1000)
            f.close()
        f.close()
        assert f.closed


def test_no_endpoint_is_aws_for_the_region(rt, monkeypatch, tmp_path):
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws profile files
    with ferry.s3.S3Client(runtime=rt, access_key_id="a", secret_access_key="b",
                           region="eu-west-1") as c:
        assert c.endpoint == "https://s3.eu-west-1.amazonaws.com"


def test_bad_endpoint_url_is_a_value_error(rt):
    with pytest.raises(ValueError):
        ferry.s3.S3Client(runtime=rt, endpoint="ftp://host", access_key_id="a",
                          secret_access_key="b")


def test_environment_configures_the_client(versitygw, rt, stored, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", versitygw)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", S3_REGION)
    with ferry.s3.S3Client(runtime=rt) as c, c.open(stored[0], "rb") as f:
        assert f.read(3) == stored[1][:3]


def test_client_keeps_the_runtime_from_closing(s3, rt):
    with pytest.raises(ferry.Error) as info:
        rt.close()
    assert info.value.code == "FailedPrecondition"
