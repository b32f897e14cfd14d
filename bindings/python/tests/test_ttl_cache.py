"""ferry.TtlCache: single-flight across Python threads, errors, expiry,
invalidation, bounds and refresh-ahead, with Python callables as loaders."""

import gc
import threading
import time
from datetime import timedelta

import pytest

import ferry
from conftest import WAIT_S, Gate, join_all, run_threads, wait_until


def counting_loader(value_of=lambda key: {"key": key}):
    calls = []

    def load(key):
        calls.append(key)
        return value_of(key)

    return load, calls


def test_hit_returns_the_same_object_without_loading_again():
    load, calls = counting_loader()
    cache = ferry.TtlCache(load)
    first = cache.get("/a")
    assert cache.get("/a") is first
    assert calls == ["/a"]
    s = cache.stats()
    assert (s.hits, s.misses, s.loads) == (1, 1, 1)


def test_loader_passed_to_get_overrides_the_default():
    cache = ferry.TtlCache(lambda k: "default")
    assert cache.get("/a", lambda k: "given") == "given"
    assert cache.get("/b") == "default"


def test_get_without_any_loader_is_a_type_error():
    with pytest.raises(TypeError, match="no loader"):
        ferry.TtlCache().get("/a")


def test_concurrent_misses_from_16_threads_run_the_loader_once():
    cache = ferry.TtlCache()
    gate = Gate()
    threads, results = run_threads(16, lambda i: cache.get("/hot", gate))
    # Every thread has counted its miss: one runs the loader, 15 wait on it
    # in C++ without the GIL (else the loader could never finish).
    wait_until(lambda: cache.stats().misses == 16, "16 misses")
    gate.opened.set()
    join_all(threads)
    assert gate.calls == 1
    values = [v for v, e in results]
    assert all(e is None for _, e in results)
    assert all(v is values[0] for v in values)
    assert cache.stats().loads == 1


def test_waiting_thread_releases_the_gil():
    cache = ferry.TtlCache()
    gate = Gate()
    threads, _ = run_threads(2, lambda i: cache.get("/slow", gate))
    wait_until(lambda: cache.stats().misses == 2, "both threads in get")
    # Both threads are inside get(); this thread still runs Python code.
    progress = sum(range(100_000))
    assert progress == 4_999_950_000
    gate.opened.set()
    join_all(threads)


def test_loader_exception_propagates_unchanged_to_its_caller():
    boom = KeyError("no such thing")

    def load(key):
        raise boom

    cache = ferry.TtlCache(load)
    with pytest.raises(KeyError) as info:
        cache.get("/a")
    assert info.value is boom
    assert info.traceback[-1].name == "load"  # the loader's own frame is kept


def test_waiters_get_a_ferry_error_naming_the_loader_exception():
    cache = ferry.TtlCache()
    gate = Gate(exc=KeyError("no such thing"))
    threads, results = run_threads(4, lambda i: cache.get("/a", gate))
    wait_until(lambda: cache.stats().misses == 4, "4 misses")
    gate.opened.set()
    join_all(threads)
    errors = [e for _, e in results]
    originals = [e for e in errors if type(e) is KeyError]
    mapped = [e for e in errors if type(e) is ferry.Error]
    assert len(originals) == 1 and len(mapped) == 3
    for e in mapped:
        assert e.code == "Unknown"
        assert str(e) == "TtlCache loader for \"/a\": KeyError: 'no such thing'"


@pytest.mark.parametrize("raised,expected", [
    (FileNotFoundError("gone"), ferry.NotFoundError),
    (PermissionError("no"), ferry.PermissionDeniedError),
    (TimeoutError("slow"), ferry.DeadlineExceededError),
    (ConnectionResetError("reset"), ferry.UnavailableError),
    (ValueError("bad"), ferry.InvalidArgumentError),
    (ferry.ProtocolError("garbled reply"), ferry.ProtocolError),
])
def test_waiters_get_the_builtin_mapped_to_its_status(raised, expected):
    cache = ferry.TtlCache()
    gate = Gate(exc=raised)
    threads, results = run_threads(2, lambda i: cache.get("/a", gate))
    wait_until(lambda: cache.stats().misses == 2, "2 misses")
    gate.opened.set()
    join_all(threads)
    errors = [e for _, e in results]
    assert any(e is raised for e in errors)
    (waiter,) = [e for e in errors if e is not raised]
    assert type(waiter) is expected


def test_ferry_error_from_a_loader_keeps_its_code_and_message():
    cache = ferry.TtlCache()
    gate = Gate(exc=ferry.UnavailableError("connect 10.0.0.1:2049: refused"))
    threads, results = run_threads(2, lambda i: cache.get("/a", gate))
    wait_until(lambda: cache.stats().misses == 2, "2 misses")
    gate.opened.set()
    join_all(threads)
    (waiter,) = [e for _, e in results if e is not gate.exc]
    assert waiter.code == "Unavailable"
    assert str(waiter) == "connect 10.0.0.1:2049: refused"


def test_not_found_is_cached_negatively():
    clock = ferry.ManualClock()
    calls = []

    def load(key):
        calls.append(key)
        raise FileNotFoundError(f"stat {key}: no such file")

    cache = ferry.TtlCache(load, negative_refresh_time=1, clock=clock)
    with pytest.raises(FileNotFoundError):
        cache.get("/missing")
    with pytest.raises(ferry.NotFoundError) as info:
        cache.get("/missing")
    assert isinstance(info.value, FileNotFoundError)
    assert "stat /missing: no such file" in str(info.value)
    assert calls == ["/missing"]
    assert cache.stats().negative_hits == 1
    assert cache.get_if_present("/missing", "absent") == "absent"
    clock.advance(1.5)
    with pytest.raises(FileNotFoundError):
        cache.get("/missing")
    assert calls == ["/missing", "/missing"]


def test_other_errors_are_not_cached():
    calls = []

    def load(key):
        calls.append(key)
        raise ConnectionError("server gone")

    cache = ferry.TtlCache(load)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            cache.get("/a")
    assert len(calls) == 2
    assert cache.stats().load_failures == 2


def test_entries_expire_after_refresh_time():
    clock = ferry.ManualClock()
    load, calls = counting_loader()
    cache = ferry.TtlCache(load, refresh_time=timedelta(seconds=30), clock=clock)
    cache.get("/a")
    clock.advance(29)
    cache.get("/a")
    clock.advance(2)
    cache.get("/a")
    assert calls == ["/a", "/a"]
    assert cache.stats().expirations == 1


def test_refresh_time_none_never_expires():
    clock = ferry.ManualClock()
    load, calls = counting_loader()
    cache = ferry.TtlCache(load, refresh_time=None, clock=clock)
    cache.get("/a")
    clock.advance(timedelta(days=365))
    cache.get("/a")
    assert calls == ["/a"]


def test_refresh_time_for_sets_each_entry_s_time():
    clock = ferry.ManualClock()
    load, calls = counting_loader()
    cache = ferry.TtlCache(load, refresh_time_for=lambda k, v: 1 if k.startswith("/hot") else 100,
                           clock=clock)
    cache.get("/hot/a")
    cache.get("/cold/a")
    clock.advance(2)
    cache.get("/hot/a")
    cache.get("/cold/a")
    assert calls == ["/hot/a", "/cold/a", "/hot/a"]


def test_invalidate_drops_one_key():
    load, calls = counting_loader()
    cache = ferry.TtlCache(load)
    cache.get("/a")
    assert cache.invalidate("/a") is True
    assert cache.invalidate("/a") is False
    cache.get("/a")
    assert calls == ["/a", "/a"]


def test_invalidate_prefix_drops_the_path_and_below_only():
    cache = ferry.TtlCache(lambda k: k)
    for k in ("/a/b", "/a/b/c", "/a/bc", "/x"):
        cache.get(k)
    assert cache.invalidate_prefix("/a/b/") == 2
    assert cache.get_if_present("/a/bc") == "/a/bc"
    assert cache.get_if_present("/a/b/c") is None
    assert len(cache) == 2


def test_invalidate_if_and_invalidate_all():
    cache = ferry.TtlCache(lambda k: k)
    for k in ("alice#/a", "bob#/a", "alice#/b"):
        cache.get(k)
    assert cache.invalidate_if(lambda k: k.endswith("#/a")) == 2
    assert len(cache) == 1
    assert cache.invalidate_all() == 1
    assert len(cache) == 0
    assert cache.stats().invalidations == 3


def test_invalidate_if_predicate_exception_propagates():
    cache = ferry.TtlCache(lambda k: k)
    cache.get("/a")

    def pred(key):
        raise RuntimeError("bad predicate")

    with pytest.raises(RuntimeError, match="bad predicate"):
        cache.invalidate_if(pred)


def test_invalidate_during_a_load_wins():
    cache = ferry.TtlCache()
    gate = Gate(result="stale")
    threads, results = run_threads(1, lambda i: cache.get("/a", gate))
    assert gate.entered.wait(WAIT_S)
    assert cache.invalidate("/a") is True
    gate.opened.set()
    join_all(threads)
    assert results[0] == ("stale", None)  # its caller still gets it...
    assert cache.get_if_present("/a") is None  # ...but it is not stored


def test_put_and_get_if_present():
    clock = ferry.ManualClock()
    cache = ferry.TtlCache(refresh_time=30, clock=clock)
    value = object()
    cache.put("/a", value)
    cache.put("/short", 1, refresh_time=1)
    assert cache.get_if_present("/a") is value
    assert cache.get_if_present("/nope") is None
    assert cache.get_if_present("/nope", 0) == 0
    clock.advance(2)
    assert cache.get_if_present("/short", "expired") == "expired"
    assert cache.get("/a", lambda k: "loaded") is value


def test_none_is_a_value_like_any_other():
    load, calls = counting_loader(lambda k: None)
    cache = ferry.TtlCache(load)
    assert cache.get("/a") is None
    assert cache.get("/a") is None
    assert calls == ["/a"]


def test_max_entries_evicts_least_recently_used():
    cache = ferry.TtlCache(lambda k: k, max_entries=2)
    cache.get("/a")
    cache.get("/b")
    cache.get("/a")  # /b is now least recently used
    cache.get("/c")
    assert cache.get_if_present("/b") is None
    assert cache.get_if_present("/a") == "/a"
    assert cache.stats().evictions == 1


def test_weigher_bounds_the_total_weight():
    cache = ferry.TtlCache(lambda k: "x" * 40, max_weight=100, weigher=lambda k, v: len(v))
    for k in ("/a", "/b", "/c"):
        cache.get(k)
    assert cache.weight == 80
    assert len(cache) == 2


def test_weigher_exception_propagates_to_the_caller():
    def weigher(key, value):
        raise ArithmeticError("cannot weigh")

    cache = ferry.TtlCache(lambda k: k, max_weight=10, weigher=weigher)
    with pytest.raises(ArithmeticError, match="cannot weigh"):
        cache.get("/a")
    assert len(cache) == 0


def test_loader_may_use_the_cache_for_other_keys():
    cache = ferry.TtlCache()

    def load_child(key):
        parent = cache.get(key.rsplit("/", 1)[0] or "/", lambda k: f"dir {k}")
        return f"{parent} > {key}"

    assert cache.get("/a/b", load_child) == "dir /a > /a/b"


def test_refresh_ahead_reloads_on_a_runtime_thread():
    clock = ferry.ManualClock()
    reloaded = threading.Event()
    versions = iter(["v1", "v2"])
    threads_used = []

    def load(key):
        threads_used.append(threading.current_thread().name)
        value = next(versions)
        if value == "v2":
            reloaded.set()
        return value

    with ferry.Runtime(blocking_threads=1) as rt:
        cache = ferry.TtlCache(load, refresh_time=30, refresh_after=10, runtime=rt, clock=clock)
        assert cache.get("/a") == "v1"
        clock.advance(11)
        assert cache.get("/a") == "v1"  # served at once; the reload runs behind
        assert reloaded.wait(WAIT_S)
        wait_until(lambda: cache.stats().loads_in_flight == 0, "the reload to be stored")
        assert cache.get("/a") == "v2"
        assert cache.stats().refreshes == 1
        assert threads_used[0] == threading.current_thread().name
        assert threads_used[1] != threading.current_thread().name  # a ferry thread


def test_refresh_ahead_after_runtime_close_is_dropped():
    clock = ferry.ManualClock()
    load, calls = counting_loader()
    rt = ferry.Runtime(blocking_threads=1)
    cache = ferry.TtlCache(load, refresh_time=30, refresh_after=10, runtime=rt, clock=clock)
    first = cache.get("/a")
    rt.close()
    clock.advance(11)
    assert cache.get("/a") is first  # still served until it expires
    wait_until(lambda: cache.stats().loads_in_flight == 0, "the dropped reload")
    assert calls == ["/a"]
    clock.advance(20)
    assert cache.get("/a") is not first
    assert calls == ["/a", "/a"]


def test_cache_keeps_a_dropped_runtime_usable():
    clock = ferry.ManualClock()
    load, calls = counting_loader()
    rt = ferry.Runtime(blocking_threads=1)
    cache = ferry.TtlCache(load, refresh_time=30, refresh_after=10, runtime=rt, clock=clock)
    del rt
    gc.collect()
    cache.get("/a")
    clock.advance(11)
    cache.get("/a")
    wait_until(lambda: len(calls) == 2 and cache.stats().loads_in_flight == 0, "the reload")
    del cache  # the last owner stops the runtime (joining with the GIL released)
    gc.collect()


def test_dropping_a_cache_while_values_are_shared_is_safe():
    cache = ferry.TtlCache(lambda k: [k])
    values = [cache.get(f"/{i}") for i in range(100)]
    del cache
    gc.collect()
    assert values[42] == ["/42"]


def test_get_and_get_if_present_accept_keywords_and_str_subclasses():
    class Path(str):
        pass

    cache = ferry.TtlCache(lambda k: k.upper())
    assert cache.get(key="/a") == "/A"  # miss
    assert cache.get(Path("/a")) == "/A"  # hit
    assert cache.get("/a", loader=lambda k: "unused") == "/A"  # hit
    assert cache.get_if_present(key="/a") == "/A"  # hit
    assert cache.get_if_present("/b", default=0) == 0  # miss
    assert cache.get_if_present(Path("/b"), 0) == 0  # miss
    s = cache.stats()
    assert (s.hits, s.misses, s.loads) == (3, 3, 1)


def test_bad_arguments_to_get_name_the_method_called():
    cache = ferry.TtlCache(lambda k: k)
    with pytest.raises(TypeError, match=r"^get\(\)"):
        cache.get(1)
    with pytest.raises(TypeError, match=r"^get\(\)"):
        cache.get()
    with pytest.raises(TypeError, match=r"^get_if_present\(\)"):
        cache.get_if_present("/a", None, None)
    with pytest.raises(TypeError):
        ferry.TtlCache.get(object(), "/a")  # not a TtlCache
    assert cache.stats().misses == 0


def test_get_hit_due_for_refresh_still_starts_the_reload():
    clock = ferry.ManualClock()
    load, calls = counting_loader()
    with ferry.Runtime(blocking_threads=1) as rt:
        cache = ferry.TtlCache(load, refresh_time=30, refresh_after=10, runtime=rt, clock=clock)
        first = cache.get("/a")
        assert cache.get("/a") is first  # a fresh hit
        clock.advance(11)
        assert cache.get("/a") is first  # due: still served at once...
        wait_until(lambda: len(calls) == 2 and cache.stats().loads_in_flight == 0, "the reload")
        assert cache.get("/a") is not first  # ...and reloaded behind
        s = cache.stats()
        assert (s.hits, s.misses, s.refreshes, s.loads) == (3, 1, 1, 2)


def test_threads_hammering_a_small_cache_while_values_are_dropped():
    """Hits (served with the GIL held), misses, puts, invalidations and
    evictions from 4 Python threads, and refresh-ahead reloads on ferry
    threads, on a 2-shard, 8-entry cache whose values' __del__ gives the GIL
    away (so a thread that holds a shard lock while dropping a value lets
    the others run): nobody deadlocks, each lookup is counted once, and
    every value is freed."""
    created, freed = [], []

    class Value:
        def __init__(self, key):
            self.key = key
            created.append(key)

        def __del__(self):
            freed.append(self.key)
            time.sleep(0)  # releases the GIL

    def load(key):
        if key.endswith("3"):
            raise FileNotFoundError(key)  # cached negatively
        return Value(key)

    clock = ferry.ManualClock()
    n_threads, n_ops = 4, 2000
    lookups = [0] * n_threads

    def hammer(t):
        for i in range(n_ops):
            key = f"/k/{(i * 7 + t) % 20}"
            op = i % 8
            if op == 0:
                cache.put(key, Value(key))
            elif op == 1:
                cache.invalidate(key)
            elif op == 2:
                clock.advance(4)  # entries age into refresh-ahead and expiry
            elif op == 3:
                cache.invalidate_prefix("/k/1")
            elif op == 4:
                lookups[t] += 1
                v = cache.get_if_present(key)
                assert v is None or v.key == key
            else:
                lookups[t] += 1
                try:
                    assert cache.get(key).key == key
                except FileNotFoundError:
                    pass

    with ferry.Runtime(blocking_threads=2) as rt:
        cache = ferry.TtlCache(load, refresh_time=30, refresh_after=10, max_entries=8,
                               shards=2, runtime=rt, clock=clock)
        threads, results = run_threads(n_threads, hammer)
        join_all(threads)
        assert [e for _, e in results] == [None] * n_threads
        s = cache.stats()
        assert s.hits + s.negative_hits + s.misses == sum(lookups)
        assert s.evictions > 0 and s.hits > 0 and s.refreshes > 0
        assert len(cache) <= 8
        cache.invalidate_all()
        wait_until(lambda: cache.stats().loads_in_flight == 0, "reloads to finish")
        del cache
    gc.collect()
    assert len(freed) == len(created)


def test_stats_are_a_snapshot_with_named_fields():
    cache = ferry.TtlCache(lambda k: k)
    cache.get("/a")
    s = cache.stats()
    assert s._asdict()["loads"] == 1
    assert s == cache.stats()
    assert "loads=1" in repr(s)
    assert cache.shard_count >= 1


def test_bad_duration_is_a_value_error():
    with pytest.raises(ValueError):
        ferry.TtlCache(refresh_time="30s")
    with pytest.raises(ValueError):
        ferry.TtlCache(refresh_time=float("nan"))
