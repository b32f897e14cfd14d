"""Joining names a server listed onto a root URL, and showing the result.

Names are bytes (NFS names need not be UTF-8, S3 keys may hold anything),
so joined URLs are bytes too; the binding takes bytes for a URL as it takes
str. The one thing here that knows a scheme: nfs:// URLs carry options
after '?' and are percent-decoded (libnfs's syntax), so a name joined onto
one is percent-encoded and goes before the options; s3://, irods://,
file:// and local paths take the name as it is.
"""

import os
import urllib.parse
from typing import Union

Url = Union[str, bytes]


def as_bytes(url: Url) -> bytes:
    return url if isinstance(url, bytes) else os.fsencode(url)


def show(url: Url) -> str:
    """`url` for a message: unprintable and non-UTF-8 bytes escaped."""
    return url if isinstance(url, str) else url.decode("utf-8", "backslashreplace")


def join(root: Url, rel: bytes) -> bytes:
    """`rel` ('/'-separated, relative) below `root`; `root` itself if empty."""
    base = as_bytes(root)
    if not rel:
        return base
    query = b""
    if base.startswith(b"nfs://"):
        base, sep, query = base.partition(b"?")
        query = sep + query
        rel = urllib.parse.quote_from_bytes(rel, safe="/").encode()
    return base.rstrip(b"/") + b"/" + rel + query


def join_rel(parent: bytes, name: bytes) -> bytes:
    """A path relative to a walk's root: `name` below `parent` ('' = the root)."""
    return parent + b"/" + name if parent else name


def is_local(url: Url) -> bool:
    """True for a path on this machine's (or the cluster's shared) disk,
    where workers can write one file at positions of their own."""
    b = as_bytes(url)
    return b.startswith(b"file://") or b"://" not in b


def local_path(url: Url) -> bytes:
    b = as_bytes(url)
    return b[len(b"file://"):] if b.startswith(b"file://") else b


def add_context(exc: BaseException, note: str) -> None:
    """Adds `note` to what `exc` shows (its type and message stay, so
    callers still catch FileNotFoundError and friends)."""
    if hasattr(exc, "add_note"):  # Python 3.11+
        exc.add_note(note)
