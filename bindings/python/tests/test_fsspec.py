"""ferry.fsspec: fsspec's own abstract suite on ferry's filesystem, and the
ecosystem on irods:// and nfs:// against the test peers (pandas
read_parquet/to_parquet, pyarrow.dataset through FSSpecHandler,
dask.dataframe.read_parquet)."""

import uuid

import pytest

fsspec = pytest.importorskip("fsspec")
import fsspec.tests.abstract as abstract  # noqa: E402

from conftest import MOUNT_PORT, NFS_PORT  # noqa: E402
import ferry  # noqa: E402
from ferry.fsspec import (FerryLocalFileSystem, FerryS3FileSystem, IrodsFileSystem,  # noqa: E402
                          NfsFileSystem)

NFS_OPTIONS = {"url_options": {"nfsport": NFS_PORT, "mountport": MOUNT_PORT}}


# ------------------------------------------------------ fsspec's abstract suite

def abstract_suites(fixtures, name):
    """fsspec's abstract test classes on `fixtures`, as TestFerry<name><Suite>."""
    for suite in ("Copy", "Get", "Put", "Open", "Pipe"):
        base = getattr(abstract, f"Abstract{suite}Tests")
        cls = type(f"TestFerry{name}{suite}", (base, fixtures), {})
        globals()[cls.__name__] = cls


class FerryLocalFixtures(abstract.AbstractFixtures):
    """fsspec's abstract tests on ferry+file (ferry's local filesystem,
    ferry's files, ferry's copy engine)."""

    @pytest.fixture(scope="class")
    @classmethod
    def fs(cls):
        return FerryLocalFileSystem(skip_instance_cache=True)

    @pytest.fixture
    def fs_path(self, tmpdir):
        return str(tmpdir)


abstract_suites(FerryLocalFixtures, "")


class RemoteFixtures(abstract.AbstractFixtures):
    """A remote filesystem's paths join with "/" (os.path.join is local)."""

    @pytest.fixture
    def fs_join(self):
        return lambda *parts: "/".join(parts)


class FerryNfsFixtures(RemoteFixtures):
    """The same suite on nfs:// against nfs-ganesha (a real peer)."""

    @pytest.fixture
    def fs(self, ganesha):
        return NfsFileSystem(skip_instance_cache=True, **NFS_OPTIONS)

    @pytest.fixture
    def fs_path(self, fs):
        path = f"127.0.0.1/export/abstract-{uuid.uuid4().hex}"
        fs.mkdir(path)
        return path


abstract_suites(FerryNfsFixtures, "Nfs")


class FerryIrodsFixtures(RemoteFixtures):
    """The same suite on irods:// against ferry's iRODS peer."""

    @pytest.fixture
    def fs(self, irods_env):
        return IrodsFileSystem(skip_instance_cache=True)

    @pytest.fixture
    def fs_path(self, fs, irods_env):
        path = fs._strip_protocol(f"{irods_env}/abstract-{uuid.uuid4().hex}")
        fs.mkdir(path)
        return path


abstract_suites(FerryIrodsFixtures, "Irods")


class FerryS3Fixtures(RemoteFixtures):
    """The same suite on ferry+s3:// against versitygw (no empty directories
    on S3: a prefix exists while something is below it)."""

    @pytest.fixture
    def fs(self, s3_env):
        return FerryS3FileSystem(skip_instance_cache=True)

    @pytest.fixture
    def fs_path(self):
        from conftest import S3_BUCKET
        return f"{S3_BUCKET}/abstract-{uuid.uuid4().hex}"

    @pytest.fixture
    def supports_empty_directories(self):
        return False


abstract_suites(FerryS3Fixtures, "S3")


# ---------------------------------------------------------- registration

@pytest.mark.parametrize("protocol,cls", [
    ("irods", IrodsFileSystem), ("nfs", NfsFileSystem), ("ferry+s3", FerryS3FileSystem),
    ("ferry+file", FerryLocalFileSystem)])
def test_the_entry_points_register_each_protocol(protocol, cls):
    assert fsspec.get_filesystem_class(protocol) is cls


def test_s3_is_left_to_s3fs():
    from fsspec.registry import known_implementations
    assert known_implementations["s3"]["class"] == "s3fs.S3FileSystem"


# ---------------------------------------------------------- ferry's own paths

@pytest.fixture
def local_tree(tmp_path):
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "f.bin").write_bytes(b"0123456789")
    (tmp_path / "g.txt").write_bytes(b"line1\nline2\n")
    return tmp_path


def test_find_is_the_walk_below_the_path(local_tree):
    fs = FerryLocalFileSystem(skip_instance_cache=True)
    assert fs.find(str(local_tree)) == [str(local_tree / "d/e/f.bin"), str(local_tree / "g.txt")]
    assert fs.find(str(local_tree), withdirs=True) == sorted(
        str(local_tree / p) for p in ("", "d", "d/e", "d/e/f.bin", "g.txt"))


def test_info_has_ferry_kinds_and_fsspec_types(local_tree):
    fs = FerryLocalFileSystem(skip_instance_cache=True)
    info = fs.info(str(local_tree / "d"))
    assert (info["type"], info["kind"]) == ("directory", ferry.Kind.DIRECTORY)
    assert fs.info(str(local_tree / "g.txt"))["size"] == 12


def test_cat_ranges_reads_every_range(local_tree):
    fs = FerryLocalFileSystem(skip_instance_cache=True)
    f = str(local_tree / "d/e/f.bin")
    assert fs.cat_ranges([f] * 4, [0, 2, 8, -3], [1, 5, None, None]) == [
        b"0", b"234", b"89", b"789"]


def test_cat_ranges_returns_the_error_of_a_missing_file(local_tree):
    fs = FerryLocalFileSystem(skip_instance_cache=True)
    out = fs.cat_ranges([str(local_tree / "g.txt"), str(local_tree / "nope")], [0, 0], [4, 4])
    assert out[0] == b"line" and isinstance(out[1], FileNotFoundError)


def test_text_mode_reads_lines(local_tree):
    with fsspec.open(f"ferry+file://{local_tree}/g.txt", "rt") as f:
        assert f.readlines() == ["line1\n", "line2\n"]


def test_a_key_without_a_secret_is_a_clear_error():
    fs = FerryS3FileSystem(key="k", endpoint_url="http://127.0.0.1:1", skip_instance_cache=True)
    with pytest.raises(ValueError, match="give both"):
        fs.info("bucket/key")


# ---------------------------------------------------------- the ecosystem on real peers

@pytest.fixture
def frame():
    pd = pytest.importorskip("pandas")
    return pd.DataFrame({"n": list(range(1000)), "s": [f"row {i}" for i in range(1000)]})


@pytest.fixture
def nfs_base(ganesha):
    return f"nfs://127.0.0.1/export/fsspec-{uuid.uuid4().hex}"


@pytest.fixture
def irods_base(irods_env):
    return f"{irods_env}/fsspec-{uuid.uuid4().hex}"


def test_pandas_parquet_round_trip_on_irods(irods_base, frame):
    import pandas as pd
    url = f"{irods_base}/t.parquet"
    frame.to_parquet(url)
    pd.testing.assert_frame_equal(pd.read_parquet(url), frame)


def test_pandas_parquet_round_trip_on_ferry_s3_with_storage_options(versitygw, frame, monkeypatch):
    import pandas as pd
    from conftest import S3_ACCESS_KEY, S3_BUCKET, S3_REGION, S3_SECRET_KEY
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    options = {"endpoint_url": versitygw, "key": S3_ACCESS_KEY, "secret": S3_SECRET_KEY,
               "region": S3_REGION, "skip_instance_cache": True}
    url = f"ferry+s3://{S3_BUCKET}/fsspec-{uuid.uuid4().hex}/t.parquet"
    frame.to_parquet(url, storage_options=options)
    pd.testing.assert_frame_equal(pd.read_parquet(url, storage_options=options), frame)


def test_pandas_parquet_round_trip_on_nfs(nfs_base, frame, ganesha):
    import pandas as pd
    url = f"{nfs_base}/t.parquet"
    frame.to_parquet(url, storage_options=NFS_OPTIONS)
    # On the server's export, as pandas wrote it:
    pd.testing.assert_frame_equal(pd.read_parquet(ganesha / url.split("/export/")[1]), frame)
    pd.testing.assert_frame_equal(pd.read_parquet(url, storage_options=NFS_OPTIONS), frame)


def test_dask_dataframe_reads_parquet_on_irods(irods_base, frame):
    dd = pytest.importorskip("dask.dataframe")
    import dask
    frame.to_parquet(f"{irods_base}/dask/part.0.parquet")
    with dask.config.set(scheduler="synchronous"):
        got = dd.read_parquet(f"{irods_base}/dask/").compute()
    # Dask reads strings as its own string dtype; the values are what matter.
    assert got.to_dict("list") == frame.to_dict("list")


def _arrow_round_trip(fs, base):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs
    table = pa.table({"k": [i % 3 for i in range(300)], "v": list(range(300))})
    arrow_fs = pafs.PyFileSystem(pafs.FSSpecHandler(fs))
    path = fs._strip_protocol(base)
    ds.write_dataset(table, path, filesystem=arrow_fs, format="parquet",
                     partitioning=ds.partitioning(pa.schema([("k", pa.int64())]), flavor="hive"))
    back = ds.dataset(path, filesystem=arrow_fs, format="parquet", partitioning="hive").to_table()
    assert sorted(back.column("v").to_pylist()) == list(range(300))
    assert len(fs.find(base)) == 3  # one file per partition


def test_pyarrow_dataset_on_irods(irods_base):
    _arrow_round_trip(IrodsFileSystem(skip_instance_cache=True), irods_base)


def test_pyarrow_dataset_on_nfs(nfs_base):
    _arrow_round_trip(NfsFileSystem(skip_instance_cache=True, **NFS_OPTIONS), nfs_base)


def test_put_and_get_through_the_engine_on_nfs(nfs_base, local_tree, tmp_path):
    fs = NfsFileSystem(skip_instance_cache=True, **NFS_OPTIONS)
    fs.put(str(local_tree / "d"), f"{nfs_base}/up", recursive=True)
    assert fs.cat_file(f"{nfs_base}/up/e/f.bin") == b"0123456789"
    fs.get(f"{nfs_base}/up", str(tmp_path / "down"), recursive=True)
    assert (tmp_path / "down" / "e" / "f.bin").read_bytes() == b"0123456789"
