"""The installed package imports and carries its typing files."""

import os
import pathlib
import subprocess
import sys

import pytest

import ferry


def test_import_works_in_an_isolated_interpreter(tmp_path):
    # -I: no cwd, no PYTHONPATH, no user site: only what is installed.
    out = subprocess.run(
        [sys.executable, "-I", "-c", "import ferry, ferry.records_pb2; print(ferry.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    assert "site-packages" in out.stdout


def test_import_does_not_load_protobuf_or_libcurl(tmp_path):
    # Both are loaded on first use (#33: about 20 ms and 7 ms of an import
    # that may never decode a record or reach S3).
    code = ("import sys, ferry\n"
            "maps = open('/proc/self/maps').read()\n"
            "print([m for m in ('google.protobuf', 'ferry.records_pb2') if m in sys.modules],"
            " 'libcurl' in maps)")
    out = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "False"]


def test_first_s3_client_loads_libcurl_and_libcrypto_through_the_packages_stand_ins(tmp_path):
    # libferry_curl.so / libferry_crypto.so beside ferry/_core (core_module.cmake):
    # in the wheel they link its own copies, in ferry.libs.
    code = ("import ferry\n"
            "rt = ferry.Runtime()\n"
            "ferry.s3.S3Client(runtime=rt, endpoint='http://127.0.0.1:1', region='us-east-1',"
            " access_key_id='a', secret_access_key='b')\n"
            "print(sorted({line.split()[-1].rsplit('/', 1)[-1] for line in open('/proc/self/maps')"
            " if 'libferry_' in line}))")
    out = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['libferry_crypto.so', 'libferry_curl.so']"


def test_records_module_is_an_attribute_of_the_package_before_any_import_of_it(tmp_path):
    code = "import ferry; print(ferry.records_pb2.TransferStats.__name__)"
    out = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "TransferStats"


def test_record_classes_are_reexported_on_first_access():
    from ferry import irods, nfs, records_pb2, s3
    for module in (nfs, irods):
        for name in ("TransferStats", "WalkBatch", "WalkEntry", "WalkError"):
            assert getattr(module, name) is getattr(records_pb2, name)
    from ferry.s3 import TransferStats
    assert TransferStats is records_pb2.TransferStats is s3.TransferStats
    with pytest.raises(AttributeError, match="'ferry.nfs' has no attribute 'Nope'"):
        nfs.Nope


def test_package_reexports_the_extension():
    for name in ferry.__all__:
        assert hasattr(ferry, name), name
    assert ferry.Runtime is ferry._core.Runtime
    # TtlCache wraps the C++ cache as a MutableMapping (ferry/_cache.py).
    assert isinstance(ferry.TtlCache()._raw, ferry._core.TtlCache)
    assert ferry.__version__


def test_package_ships_stubs_and_py_typed():
    pkg = pathlib.Path(ferry.__file__).parent
    for f in ("py.typed", "_core.pyi", "records_pb2.pyi"):
        assert (pkg / f).is_file(), f


def test_stubs_name_every_public_name_of_the_extension():
    stub = (pathlib.Path(ferry.__file__).parent / "_core.pyi").read_text()
    for name in ferry.__all__:
        if getattr(getattr(ferry, name), "__module__", None) == "ferry._core" or \
                name in dir(ferry._core):
            assert f"class {name}" in stub, name
    for name in ("_OpenFile", "_NfsClient", "_S3Client", "_FileSystems", "_Walk"):
        assert f"class {name}" in stub, name


def test_pure_python_modules_are_typed_in_place():
    # ferry.s3, ferry.nfs, ferry.ObjectFile and ferry.copy are Python with
    # annotations (py.typed covers them); only _core needs a stub.
    assert ferry.ObjectFile.__module__ == "ferry._files"
    assert ferry.copy.__module__ == "ferry._fs"
    assert "return" in ferry.copy.__annotations__


def test_extension_is_a_compiled_module():
    assert os.path.splitext(ferry._core.__file__)[1] in (".so", ".pyd")
