"""Native threads the candidate started: OS threads of the sandbox process (/proc/self/task) that did not
exist when the candidate was imported and are not Python threads (`sys._current_frames`). A thread started in
C (a standard-library watchdog, a C extension, the CUDA driver API) is invisible to `threading` and to the
stub's Python-thread check (`rt-thread-left-running`); one left running after forward could wait on the GPU
and do work outside the timed region. The stub marks a baseline right before the candidate's import and
reports the count after every trial and timed call (`rt-native-thread`).

Honest work must not add threads after the baseline, so the pools that start lazily are started first
(`warm_pools`): torch's intra-op pool (OpenMP, full size) and numpy's BLAS pool (OpenBLAS; the Triton
interpreter's `tl.dot` runs there), which a process forked from the zygote does not have yet. On a GPU the
CUDA driver's threads come with the context (created before the baseline); the profiler's (CUPTI) come with
the stub's own kernel-share fallback, which `absorb` takes into the baseline."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

_TASKS = "/proc/self/task"
# at::internal::GRAIN_SIZE: a parallel_for over fewer elements per thread asks for fewer threads
_GRAIN = 32768


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

    def baseline(self) -> list[int]:
        """The OS thread ids of the baseline (for the verdict process's `ThreadWatch`)."""
        return sorted(int(tid) for tid in self._tasks)

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


# seconds a thread new since the baseline may live while the candidate runs before the verdict process reports
# it: longer than a helper thread an honest call starts and joins, far shorter than the run timeout
WATCH_GRACE_S = 3.0
_PROC = "/proc"


def _ns_id(status_path: str) -> int | None:
    """The last NSpid entry of a /proc status file: the id as the sandbox's PID namespace numbers it."""
    try:
        with open(status_path) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir(_PROC):
        if entry.isdigit():
            try:
                with open(f"{_PROC}/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[2]) == pgid:
                        members.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return members


class ThreadWatch:
    """The verdict process's watch on the stub's OS threads (/proc/PID/task) while its candidate runs: a
    thread that was not in the stub's baseline (sent before the candidate's import, so the candidate cannot
    change it) and stays alive `grace_s` is reported, also while a call never returns. The stub's own check
    (`NativeThreads.stray`) runs only once a call has returned; this one needs nothing from the candidate's
    process. Python threads count too: a thread alive for seconds inside one call is no honest helper."""

    def __init__(self, pgid: int, ns_pid: int, ns_tasks: list[int], grace_s: float = WATCH_GRACE_S) -> None:
        self.grace_s = grace_s
        self.task_dir: str | None = None
        self.known: set[str] = set()
        self.first_seen: dict[str, float] = {}
        self.reported = False
        for pid in _group_members(pgid):  # the stub is one of its process group (after the namespace's init)
            if _ns_id(f"{_PROC}/{pid}/status") == ns_pid:
                self.task_dir = f"{_PROC}/{pid}/task"
                break
        if self.task_dir is None:  # no /proc to read here: the stub's own check is all there is
            return
        baseline = set(ns_tasks)
        self.known = {tid for tid in self._tasks() if _ns_id(f"{self.task_dir}/{tid}/status") in baseline}

    def _tasks(self) -> set[str]:
        try:
            return set(os.listdir(self.task_dir))
        except OSError:  # the stub has exited
            return set()

    def absorb(self) -> None:
        """Take the threads alive now as the stub's (its profiler fallback started them)."""
        if self.task_dir is not None:
            self.known |= self._tasks()
            self.first_seen.clear()

    def check(self, now: float) -> str | None:
        """Once: the threads new since the baseline that have lived `grace_s`, with their names; else None."""
        if self.task_dir is None or self.reported:
            return None
        tasks = self._tasks()
        self.first_seen = {tid: self.first_seen.get(tid, now) for tid in tasks - self.known}
        old = sorted(tid for tid, seen in self.first_seen.items() if now - seen >= self.grace_s)
        if not old:
            return None
        self.reported = True
        names = Counter(_comm(f"{self.task_dir}/{tid}/comm") for tid in old[:32])
        listed = ", ".join(f"{name} x{n}" for name, n in sorted(names.items()))
        return (f"{len(old)} thread(s) new since the candidate's import alive for {self.grace_s:g} s while "
                f"it ran, seen by the verdict process ({listed})")[:280]


def _comm(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(64).decode(errors="replace").strip() or "?"
    except OSError:
        return "?"
