"""A device's timing gate (verdict process, stdlib only): one timed run at a time, and nothing else on the
device meanwhile. While a holder times, every other registered sandbox's process group is stopped (SIGSTOP;
GPU work already queued drains, nothing new is launched) and resumed (SIGCONT) at release; the time a sandbox
spends stopped is reported by `paused`, so the runner does not count it against its deadlines. Locks in
`hold_also` (the judge client's) are held for the same span, so judge work waits too."""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class DeviceGate:
    def __init__(self, hold_also: list | None = None) -> None:
        self._timing = threading.Lock()
        self._state = threading.Lock()
        self._hold_also = list(hold_also or [])
        self._groups: dict[int, list] = {}  # pgid -> [stopped since (monotonic) or None, paused seconds so far]
        self._holder: int | None = None  # pgid of the timed sandbox; 0: the verdict process itself (baselines)
        self.stops = 0  # group stops so far (for tests and benchmarks)

    def register(self, pgid: int) -> None:
        """Add a sandbox (again: a standby adopted by its evaluation keeps its state)."""
        with self._state:
            if pgid in self._groups:
                return
            self._groups[pgid] = [None, 0.0]
            if self._holder is not None and self._holder != pgid:
                self._stop(pgid)

    def unregister(self, pgid: int) -> None:
        with self._state:
            entry = self._groups.pop(pgid, None)
            if entry is not None and entry[0] is not None:
                _signal_group(pgid, signal.SIGCONT)

    def paused(self, pgid: int) -> float:
        with self._state:
            entry = self._groups.get(pgid)
            if entry is None:
                return 0.0
            return entry[1] + (time.monotonic() - entry[0] if entry[0] is not None else 0.0)

    def _stop(self, pgid: int) -> None:
        entry = self._groups[pgid]
        if entry[0] is None:
            entry[0] = time.monotonic()
            _signal_group(pgid, signal.SIGSTOP)
            self.stops += 1

    def acquire(self, holder: int = 0) -> None:
        """Block until the device is free, then stop every other sandbox. Release from the same thread."""
        self._timing.acquire()
        for lock in self._hold_also:
            lock.acquire()
        with self._state:
            self._holder = holder
            for pgid in self._groups:
                if pgid != holder:
                    self._stop(pgid)

    def release(self) -> None:
        with self._state:
            now = time.monotonic()
            for pgid, entry in self._groups.items():
                if entry[0] is not None:
                    entry[1] += now - entry[0]
                    entry[0] = None
                    _signal_group(pgid, signal.SIGCONT)
            self._holder = None
        for lock in reversed(self._hold_also):
            lock.release()
        self._timing.release()

    @contextmanager
    def exclusive(self):
        self.acquire(0)
        try:
            yield
        finally:
            self.release()
