"""ferry.TtlCache: the C++ cache (``ferry._core.TtlCache``) as a
``collections.abc.MutableMapping``.

A wrapper, not a subclass (pybind11's metaclass and ABCMeta do not mix).
Its methods are the C++ object's own bound methods, set on the instance:
``get`` and ``get_if_present`` keep their fast path (no Python frame in
between); the mapping protocol is a few lines over them.
"""

from collections.abc import MutableMapping
from typing import Any, Iterator, List

from ferry import _core

__all__ = ["TtlCache"]

_MISSING = object()
# The _core.TtlCache methods a TtlCache answers with directly.
_METHODS = ("get", "get_if_present", "put", "invalidate", "invalidate_prefix", "invalidate_if",
            "invalidate_all", "purge_expired", "stats")


class TtlCache(MutableMapping):
    """A thread-safe, bounded TTL cache of Python objects keyed by str, with
    single-flight loading, negative caching of FileNotFoundError and
    optional refresh-ahead on a Runtime's threads (arguments: see
    ``ferry._core.TtlCache``). Also a mutable mapping: ``c[k]`` is the
    cached value (KeyError if none is cached: it never loads), ``c[k] = v``
    puts, ``del c[k]`` invalidates, ``k in c`` asks without loading (and
    counts as a hit or a miss), iteration is over a snapshot of the keys.

    ``get(key, loader=None)`` is the cache's own: it loads on a miss (with
    ``loader`` or the cache's), unlike ``Mapping.get(key, default)``; use
    ``get_if_present(key, default)`` for the mapping's meaning."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raw = _core.TtlCache(*args, **kwargs)
        self._raw = raw
        for name in _METHODS:
            setattr(self, name, getattr(raw, name))

    def __getattr__(self, name: str) -> Any:
        # The rest of the C++ object's API (weight, shard_count...).
        return getattr(self._raw, name)

    def __getitem__(self, key: str) -> Any:
        value = self._raw.get_if_present(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._raw.put(key, value)

    def __delitem__(self, key: str) -> None:
        if not self._raw.invalidate(key):
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._raw.get_if_present(key, _MISSING) is not _MISSING

    def keys_snapshot(self) -> List[str]:
        """The keys held now (entries past their refresh time included
        until they are purged or read)."""
        keys: List[str] = []
        # InvalidateIf visits every key; a predicate that is never true
        # removes nothing.
        self._raw.invalidate_if(lambda k: keys.append(k) or False)
        return keys

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_snapshot())

    def __len__(self) -> int:
        return len(self._raw)

    def clear(self) -> None:
        self._raw.invalidate_all()

    def __repr__(self) -> str:
        return f"<ferry.TtlCache: {len(self._raw)} entries>"
