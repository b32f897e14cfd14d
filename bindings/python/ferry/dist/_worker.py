"""What every task of ferry.dist runs on inside a Dask worker process: one
ferry.Runtime and one ferry.FileSystems per process, made at the first task
that needs them and kept for the life of the process.

This module holds the one global of ferry.dist, on purpose: Dask runs tasks
as plain functions in long-lived worker processes, and a Runtime (threads,
memory budget, pooled buffers) and a FileSystems (one NFS mount per export,
one S3 connection pool per endpoint, one iRODS login pool) are meant to live
for many calls, not to be made per task. A WorkerPlugin could hold them too,
but would have to be registered on every cluster before the first task;
this cache also serves a task run in the client's own process.
"""

import atexit
import concurrent.futures
import dataclasses
import os
import threading
from typing import Callable, Iterable, List, Optional, TypeVar

import ferry


@dataclasses.dataclass(frozen=True)
class WorkerOptions:
    """How each worker process's Runtime is made (by the first task that
    needs it: later tasks' options are not applied to a live Runtime)."""

    memory_budget_bytes: int = 512 << 20
    # The copy engine's chunk workers and the walks' batch threads run on
    # the Runtime's blocking pool (16: the NFS default of chunks in flight).
    blocking_threads: int = 16
    # Seconds a request may go unanswered after it is sent, on every
    # protocol (ferry.FileSystems' timeout; None: 60): a server that stops
    # answering fails the task's call with TimeoutError instead of holding
    # a worker thread.
    timeout: Optional[float] = None


@dataclasses.dataclass
class _State:
    pid: int
    runtime: ferry.Runtime
    filesystems: ferry.FileSystems
    # The threads tasks run their concurrent ferry calls on, kept for the
    # life of the process: a thread pool per task started threads all the
    # time, and a CPython without the fix of gh-106883 (3.11.7 here) can
    # deadlock a thread that starts a thread (it waits for the interpreter's
    # thread-list lock holding the GIL) against Dask's profiler, whose
    # sys._current_frames() holds that lock and, when a GC callback runs
    # inside it, waits for the GIL. The whole worker froze: no heartbeat,
    # every ferry call done but its thread waiting for the GIL (issue #28).
    threads: concurrent.futures.ThreadPoolExecutor


_lock = threading.Lock()
_state: Optional[_State] = None


def filesystems(options: WorkerOptions = WorkerOptions()) -> ferry.FileSystems:
    """This process's FileSystems (and Runtime), made at the first call."""
    global _state
    with _lock:
        # A forked child must not use its parent's Runtime: its threads
        # did not survive the fork.
        if _state is None or _state.pid != os.getpid():
            runtime = ferry.Runtime(blocking_threads=options.blocking_threads,
                                    memory_budget_bytes=options.memory_budget_bytes)
            _state = _State(os.getpid(), runtime,
                            ferry.FileSystems(runtime=runtime, timeout=options.timeout),
                            concurrent.futures.ThreadPoolExecutor(_THREADS,
                                                                  thread_name_prefix="ferry-dist"))
        return _state.filesystems


# Threads of a process's pool: at least any task's concurrency (a walk's 16
# calls, a copy's `jobs`), so one task never waits for threads it has not
# asked for; tasks running at once on one worker share them.
_THREADS = 32

T = TypeVar("T")
R = TypeVar("R")


def thread_map(fn: Callable[[T], R], items: Iterable[T], limit: int,
               options: WorkerOptions = WorkerOptions()) -> List[R]:
    """``[fn(x) for x in items]``, at most `limit` at once on this process's
    long-lived threads (see _State.threads), in order; raises the first
    error in order, as ``ThreadPoolExecutor.map`` does. `fn` must not call
    thread_map itself (its caller would hold threads the call waits for)."""
    filesystems(options)
    assert _state is not None
    pool = _state.threads
    todo = list(items)
    results: List[R] = [None] * len(todo)  # type: ignore[list-item]
    futures = {}
    pending = set()
    next_index = 0

    def submit_next() -> None:
        nonlocal next_index
        if next_index < len(todo):
            f = pool.submit(fn, todo[next_index])
            futures[f] = next_index
            pending.add(f)
            next_index += 1

    for _ in range(max(1, limit)):
        submit_next()
    errors = {}
    while pending:
        done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
        for f in done:
            pending.discard(f)
            i = futures.pop(f)
            if f.exception() is not None:
                errors[i] = f.exception()
            else:
                results[i] = f.result()
            submit_next()
    if errors:
        raise errors[min(errors)]
    return results


def _close() -> None:
    # The filesystems before the Runtime they run on.
    global _state
    with _lock:
        state, _state = _state, None
    if state is not None and state.pid == os.getpid():
        state.threads.shutdown(wait=True)
        state.filesystems.close()
        try:
            state.runtime.close()
        except ferry.Error:
            pass  # a walk or file still open at exit: the process ends anyway


atexit.register(_close)
