"""Shared helpers for ferry's Python tests.

Tests never sleep to test logic: expiry is driven by ferry.ManualClock, and
concurrency by events plus the cache's own counters (a thread waiting on a
single-flight load has already counted its miss).
"""

import threading
import time

import pytest

# Upper bound for waiting on another thread; a correct run never gets close.
WAIT_S = 30.0


def wait_until(predicate, what):
    """Polls `predicate` until it holds (bounded: fails the test after WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.001)


class Gate:
    """A loader that blocks until opened, then returns or raises."""

    def __init__(self, result=None, exc=None):
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.calls = 0
        self.result = result
        self.exc = exc

    def __call__(self, key):
        self.calls += 1
        self.entered.set()
        assert self.opened.wait(WAIT_S), "gate never opened"
        if self.exc is not None:
            raise self.exc
        return self.result if self.result is not None else {"key": key}


def run_threads(n, fn):
    """Runs fn(i) on n threads; returns [(value, exception)] in thread order."""
    results = [None] * n

    def body(i):
        try:
            results[i] = (fn(i), None)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            results[i] = (None, e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, results


def join_all(threads):
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive(), "thread did not finish"
