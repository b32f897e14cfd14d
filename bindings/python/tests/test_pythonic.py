"""What a Python user gets back: str paths, kinds by name, entries that
print, builtin exception classes, a mapping cache, options as arguments."""

import collections.abc
import os
import subprocess
import sys

import pytest

import ferry


@pytest.fixture
def fs():
    with ferry.FileSystems() as f:
        yield f


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.bin").write_bytes(b"abc")
    (tmp_path / "top.txt").write_bytes(b"x")
    return tmp_path


def test_walk_entries_have_str_paths_and_named_kinds(fs, tree):
    got = {e.path: (e.kind, e.size) for e in fs.walk_entries(str(tree))}
    assert got == {"d": (ferry.Kind.DIRECTORY, got["d"][1]), "d/a.bin": (ferry.Kind.FILE, 3),
                   "top.txt": (ferry.Kind.FILE, 1)}


def test_a_non_utf8_name_keeps_its_bytes_in_path_bytes(fs, tmp_path):
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9"), "wb") as f:
        f.write(b"1")
    (entry,) = fs.walk_entries(str(tmp_path))
    assert isinstance(entry.path, str)
    assert entry.path_bytes == b"caf\xe9"
    assert entry.path == os.fsdecode(b"caf\xe9")


def test_list_answers_the_same_entry_type_as_walk_entries(fs, tree):
    listed = sorted(fs.list(str(tree)))
    walked = sorted(e for e in fs.walk_entries(str(tree)) if "/" not in e.path)
    assert listed == walked
    assert all(type(e) is ferry.Entry for e in listed)


def test_stat_answers_an_entry_whose_kind_is_the_same_enum(fs, tree):
    st = fs.stat(str(tree / "d" / "a.bin"))
    assert isinstance(st, ferry.Entry)
    assert st.kind is ferry.Kind.FILE and st.size == 3
    assert fs.stat(str(tree / "d")).kind is ferry.Kind.DIRECTORY


def test_stat_still_answers_the_keys_of_its_old_dict(fs, tree):
    url = str(tree / "d" / "a.bin")
    st = fs.stat(url)
    assert (st["url"], st["kind"], st["size"]) == (url, "file", 3)
    assert st["id"] == st.fileid and st["mtime_ns"] == st.mtime_ns


def test_entries_print_as_records_with_their_kind_by_name(fs, tree):
    text = repr(fs.stat(str(tree / "top.txt")))
    assert text.startswith("Entry(path=") and "kind=Kind.FILE" in text and "size=1" in text


def test_kind_compares_equal_to_its_name():
    assert ferry.Kind.DIRECTORY == "directory"
    assert ferry.Kind("file") is ferry.Kind.FILE
    assert f"{ferry.Kind.SYMLINK}" == "symlink"


def test_copying_a_directory_without_recursive_raises_is_a_directory(fs, tree, tmp_path):
    with pytest.raises(IsADirectoryError) as info:
        fs.copy(str(tree / "d"), str(tmp_path / "out"))
    assert isinstance(info.value, ferry.Error)
    assert isinstance(info.value, ferry.IsDirectoryError)
    assert info.value.code == "FailedPrecondition"
    assert "recursive" in str(info.value)


def test_walking_a_file_raises_not_a_directory(fs, tree):
    with pytest.raises(NotADirectoryError) as info:
        list(fs.walk_entries(str(tree / "top.txt")))
    assert isinstance(info.value, ferry.NotDirectoryError)


def test_listing_a_file_raises_not_a_directory(fs, tree):
    with pytest.raises(NotADirectoryError):
        fs.list(str(tree / "top.txt"))


def test_writing_over_a_directory_raises_is_a_directory(fs, tree):
    with pytest.raises(IsADirectoryError):
        fs.open(str(tree / "d"), "wb")


@pytest.mark.parametrize("code,builtin", [
    ("AlreadyExists", FileExistsError), ("PermissionDenied", PermissionError),
    ("DeadlineExceeded", TimeoutError), ("NotFound", FileNotFoundError),
])
def test_each_status_is_the_builtin_python_users_catch(code, builtin):
    with pytest.raises(builtin) as info:
        ferry._core._raise_status(code, "m")
    assert isinstance(info.value, ferry.Error) and info.value.code == code


def test_ttl_cache_is_a_mutable_mapping():
    c = ferry.TtlCache()
    assert isinstance(c, collections.abc.MutableMapping)
    c["a"] = 1
    c.update(b=2)
    assert c["a"] == 1 and "b" in c and "z" not in c
    assert sorted(c) == ["a", "b"] and len(c) == 2
    assert dict(c.items()) == {"a": 1, "b": 2}
    del c["a"]
    assert "a" not in c
    with pytest.raises(KeyError):
        c["a"]
    with pytest.raises(KeyError):
        del c["a"]
    c.clear()
    assert len(c) == 0


def test_ttl_cache_item_access_never_loads():
    c = ferry.TtlCache(lambda key: key.upper())
    with pytest.raises(KeyError):
        c["k"]
    assert c.get("k") == "K"  # the cache's get loads
    assert c["k"] == "K"


def test_filesystems_makes_its_own_runtime_when_given_none(tree):
    with ferry.FileSystems() as fs:
        assert fs.stat(str(tree / "top.txt")).size == 1
    assert fs.closed


def test_a_file_outlives_the_filesystems_that_made_its_runtime(tree):
    fs = ferry.FileSystems()
    f = fs.open(str(tree / "top.txt"))
    fs.close()
    assert f.read() == b"x"
    f.close()


def test_s3_options_are_constructor_arguments(s3_env, monkeypatch, tree):
    # The environment's endpoint is wrong; the argument wins.
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    with ferry.FileSystems(endpoint_url=endpoint, region=os.environ["AWS_REGION"], s3_make_bucket=True) as fs:
        fs.mkdir("s3://pythonic-options/")
        fs.copy(str(tree / "top.txt"), "s3://pythonic-options/top.txt")
        assert fs.stat("s3://pythonic-options/top.txt").size == 1


def test_s3_key_and_secret_are_constructor_arguments(s3_env, monkeypatch, tree):
    key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")  # the arguments win
    with ferry.FileSystems(key=key, secret=secret, s3_make_bucket=True) as fs:
        fs.mkdir("s3://pythonic-keys/")
        fs.copy(str(tree / "top.txt"), "s3://pythonic-keys/top.txt")
        assert fs.stat("s3://pythonic-keys/top.txt").size == 1


def test_irods_password_is_a_constructor_argument(irods_env, monkeypatch):
    monkeypatch.delenv("IRODS_PASSWORD")
    with ferry.FileSystems(irods_password="rods") as fs:
        assert fs.stat(irods_env).kind is ferry.Kind.DIRECTORY
    with ferry.FileSystems(irods_password="not-rods") as fs:
        with pytest.raises(PermissionError, match="given to the client"):
            fs.stat(irods_env)


def test_a_bad_endpoint_url_argument_is_a_value_error(tree):
    with ferry.FileSystems(endpoint_url="ftp://nowhere") as fs:
        with pytest.raises(ValueError, match="endpoint_url"):
            fs.stat("s3://b/k")


def test_import_ferry_makes_ferry_irods_available():
    code = "import ferry; print(ferry.irods.IrodsClient.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "IrodsClient"
