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
import dataclasses
import os
import threading
from typing import Optional

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
                            ferry.FileSystems(runtime=runtime, timeout=options.timeout))
        return _state.filesystems


def _close() -> None:
    # The filesystems before the Runtime they run on.
    global _state
    with _lock:
        state, _state = _state, None
    if state is not None and state.pid == os.getpid():
        state.filesystems.close()
        try:
            state.runtime.close()
        except ferry.Error:
            pass  # a walk or file still open at exit: the process ends anyway


atexit.register(_close)
