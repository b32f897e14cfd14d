"""The README's Python snippet, extracted from README.md and run as
written (only its /tmp folder moved to the test's), so it cannot drift
from the package."""

import re
import subprocess
import sys

from conftest import REPO_ROOT

SNIPPET = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_python_snippets():
    return SNIPPET.findall((REPO_ROOT / "README.md").read_text())


def test_the_readme_has_one_python_snippet():
    assert len(readme_python_snippets()) == 1


def test_the_readme_python_snippet_runs_as_written(tmp_path):
    (code,) = readme_python_snippets()
    assert "/tmp/ferry-readme" in code
    code = code.replace("/tmp/ferry-readme", str(tmp_path / "ferry-readme"))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    first, second = sorted(lines[:2])
    assert first.startswith("d DIRECTORY ") and second == "d/a.bin FILE 5"
    assert "is a directory" in lines[2]
    assert (tmp_path / "ferry-readme" / "dst" / "d" / "a.bin").read_bytes() == b"hello"
