"""The thread that starts an evaluator's long-lived workers (the judge, the zygote) and lives as long as it.

Linux delivers a child's parent-death signal (`prctl(PR_SET_PDEATHSIG)`, which the judge and the zygote set so
that they never outlive their evaluator) when the *thread* that forked it exits, not its process. Workers
started from a caller's short-lived thread (`asyncio.to_thread`, a server's request thread, a trainer's reward
call) died with that thread and the next call paid their start again; started here, they live until the
evaluator closes.
"""

from __future__ import annotations

import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor


class ProcessOwner:
    """`popen(...)` is `subprocess.Popen(...)` run on this owner's own thread. The thread only ever starts
    processes (it never waits on a lock), so any thread may call `popen`, holding whatever locks it holds."""

    def __init__(self, name: str = "kernelrl-owner") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._pool is None:  # (again) after close: a closed evaluator may be used again
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            pool = self._pool
        return pool.submit(subprocess.Popen, *args, **kwargs).result()

    def close(self) -> None:
        """Let the thread end (call it after the workers it started were stopped)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
