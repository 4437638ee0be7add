"""Native threads the candidate started: OS threads of the sandbox process (/proc/self/task) that did not exist
when the candidate was imported and are not Python threads (`sys._current_frames`). A thread started in C (a
standard-library watchdog, a C extension, the CUDA driver API) is invisible to `threading` and to the stub's
Python-thread check (`rt-thread-left-running`); one left running after forward could wait on the GPU and do work
outside the timed region. The stub marks a baseline right before the candidate's import and reports the count
after every trial and timed call (`rt-native-thread`).

Honest work must not add threads after the baseline, so the pools that start lazily are started first
(`warm_pools`): torch's intra-op pool (OpenMP, full size) and numpy's BLAS pool (OpenBLAS; the Triton interpreter's
`tl.dot` runs there), which a process forked from the zygote does not have yet. On a GPU the CUDA driver's threads
come with the context (created before the baseline); the profiler's (CUPTI) come with the stub's own kernel-share
fallback, which `absorb` takes into the baseline."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

_TASKS = "/proc/self/task"
_GRAIN = 32768  # at::internal::GRAIN_SIZE: a parallel_for over fewer elements per thread asks for fewer threads


def warm_pools(torch) -> None:
    """Start the thread pools honest forwards start lazily, at their full size, before the baseline."""
    try:
        torch.ones(_GRAIN * max(2, torch.get_num_threads()) * 2).add_(1.0)  # OpenMP's team: one per thread
    except Exception:  # noqa: BLE001 - a pool that does not start now is found by the honest corpus's tests
        pass
    try:
        import numpy

        a = numpy.ones((256, 256))
        a @ a  # OpenBLAS starts its pool on its first threaded call (after a fork, again)
    except Exception:  # noqa: BLE001
        pass


class NativeThreads:
    """OS threads new since `mark()` that are not new Python threads, counted with captured functions (the
    candidate may patch `os` and `sys` after its import; these references stay the stub's)."""

    def __init__(self, current_frames: Callable[[], dict]) -> None:
        self._frames = current_frames
        self._listdir, self._open, self._read, self._close = os.listdir, os.open, os.read, os.close
        self._tasks: set[str] = set()
        self._python: set[int] = set()

    def _os_threads(self) -> set[str]:
        try:
            return set(self._listdir(_TASKS))
        except OSError:  # no /proc here: nothing to compare (the check reports nothing)
            return set()

    def mark(self) -> None:
        """The baseline: every OS and Python thread alive now is the stub's."""
        self._tasks, self._python = self._os_threads(), set(self._frames())

    def absorb(self) -> None:
        """Take the threads alive now into the baseline (the stub's own work started them)."""
        self._tasks |= self._os_threads()
        self._python |= set(self._frames())

    def _name(self, tid: str) -> str:
        try:
            fd = self._open(f"{_TASKS}/{tid}/comm", os.O_RDONLY)
            try:
                return self._read(fd, 64).decode(errors="replace").strip() or "?"
            finally:
                self._close(fd)
        except OSError:
            return "?"

    def stray(self) -> list[str]:
        """What is new since the baseline and not Python: empty, or one line with the count and the names
        (/proc/self/task/*/comm) of the new OS threads."""
        python = len(set(self._frames()) - self._python)  # new Python threads are rt-thread-left-running's
        new = sorted(self._os_threads() - self._tasks)
        count = len(new) - python
        if count <= 0:
            return []
        names = Counter(self._name(tid) for tid in new[:32])
        listed = ", ".join(f"{name} x{n}" for name, n in sorted(names.items()))
        return [f"{count} native thread(s) not known to Python (new OS threads: {listed})"[:200]]
