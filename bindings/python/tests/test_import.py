"""The installed package imports and carries its typing files."""

import os
import pathlib
import subprocess
import sys

import ferry


def test_import_works_in_an_isolated_interpreter(tmp_path):
    # -I: no cwd, no PYTHONPATH, no user site: only what is installed.
    out = subprocess.run(
        [sys.executable, "-I", "-c", "import ferry, ferry.records_pb2; print(ferry.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    assert "site-packages" in out.stdout


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
