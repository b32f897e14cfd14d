"""``ferry.records_pb2``, imported on first use.

Decoding a record needs protobuf's Python runtime, about 20 ms of import
(#33) that ``import ferry`` should not cost a program that never decodes one
(an ``open().read()``, a ``stat``, a copy whose stats it ignores). Code that
decodes calls :func:`records`; the modules that re-export record classes
(``ferry.nfs``, ``ferry.irods``, ``ferry.s3``) resolve those names on first
access with :func:`reexport`.
"""

import importlib
import sys
from types import ModuleType
from typing import Any, Callable, Iterable


def records() -> ModuleType:
    """The records_pb2 module (a dictionary lookup once imported)."""
    # Not `from ferry import records_pb2`: that asks the package for the
    # attribute first, and the package's __getattr__ answers it from here.
    module = sys.modules.get("ferry.records_pb2")
    return module if module is not None else importlib.import_module("ferry.records_pb2")


def reexport(module: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) answering each of ``names`` with
    the records_pb2 class of that name."""
    wanted = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name in wanted:
            return getattr(records(), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
