"""ferry.Runtime: options, context manager, close, and its memory budget."""

import gc
import threading

import pytest

import ferry
from conftest import WAIT_S, wait_until


def test_context_manager_closes_the_runtime():
    with ferry.Runtime(io_threads=1, blocking_threads=1) as rt:
        assert not rt.closed
    assert rt.closed


def test_close_twice_is_fine():
    rt = ferry.Runtime()
    rt.close()
    rt.close()
    assert "closed" in repr(rt)


def test_options_are_reported():
    with ferry.Runtime(io_threads=1, blocking_threads=3, memory_budget_bytes=1 << 20) as rt:
        assert (rt.io_threads, rt.blocking_threads, rt.memory_budget_bytes) == (1, 3, 1 << 20)
        assert rt.memory_budget.capacity == 1 << 20


def test_default_options_match_the_cpp_defaults():
    with ferry.Runtime() as rt:
        assert (rt.io_threads, rt.blocking_threads, rt.memory_budget_bytes) == (1, 4, 512 << 20)
        assert rt.idle_buffer_bytes == -1  # a quarter of the budget
        assert rt.read_ahead_bytes == -1  # a quarter of the budget


def test_idle_buffer_cap_is_reported():
    with ferry.Runtime(idle_buffer_bytes=0) as rt:
        assert rt.idle_buffer_bytes == 0


def test_read_ahead_cap_is_reported():
    with ferry.Runtime(read_ahead_bytes=0) as rt:
        assert rt.read_ahead_bytes == 0


def test_ticket_holds_budget_until_released():
    with ferry.Runtime(memory_budget_bytes=1000) as rt:
        budget = rt.memory_budget
        with budget.acquire(600) as t:
            assert t.nbytes == 600
            assert budget.in_use == 600
            assert budget.try_acquire(500) is None
        assert t.released
        assert budget.in_use == 0
        assert budget.peak == 600


def test_acquire_past_timeout_is_a_timeout_error():
    with ferry.Runtime(memory_budget_bytes=1000) as rt:
        with rt.memory_budget.acquire(1000):
            with pytest.raises(TimeoutError) as info:
                rt.memory_budget.acquire(1, timeout=0.01)
            assert info.value.code == "DeadlineExceeded"


def test_acquire_more_than_the_budget_is_a_value_error():
    with ferry.Runtime(memory_budget_bytes=1000) as rt:
        with pytest.raises(ValueError):
            rt.memory_budget.acquire(1001)


def test_blocked_acquire_releases_the_gil_and_wakes_on_release():
    with ferry.Runtime(memory_budget_bytes=1000) as rt:
        budget = rt.memory_budget
        held = budget.acquire(1000)
        got = []
        t = threading.Thread(target=lambda: got.append(budget.acquire(1000, timeout=WAIT_S)))
        t.start()
        wait_until(lambda: budget.waiters == 1, "the second acquire to wait")
        held.release()  # this thread ran while the other was blocked: GIL released
        t.join(WAIT_S)
        assert got and got[0].nbytes == 1000
        got[0].release()


def test_close_while_a_ticket_is_held_is_refused():
    rt = ferry.Runtime(memory_budget_bytes=1000)
    ticket = rt.memory_budget.acquire(10)
    with pytest.raises(ferry.Error) as info:
        rt.close()
    assert info.value.code == "FailedPrecondition"
    assert not rt.closed
    ticket.release()
    rt.close()
    assert rt.closed


def test_using_the_budget_after_close_is_an_error():
    rt = ferry.Runtime()
    budget = rt.memory_budget
    rt.close()
    with pytest.raises(ferry.Error, match="closed") as info:
        budget.acquire(1)
    assert info.value.code == "FailedPrecondition"


def test_ticket_keeps_a_dropped_runtime_alive():
    rt = ferry.Runtime(memory_budget_bytes=1000)
    ticket = rt.memory_budget.acquire(10)
    del rt
    gc.collect()
    ticket.release()  # the budget is still there
    assert ticket.released
