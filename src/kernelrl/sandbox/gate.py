"""A device's timing gate (verdict process, stdlib only): one timed run at a time, and nothing else on the
device meanwhile. While a holder times, every other registered sandbox's process group is stopped (SIGSTOP;
GPU work already queued drains, nothing new is launched) and resumed (SIGCONT) once the holder's timed calls
are over (`resume_others`, while the judge still compares them) or at release; the time a sandbox
spends stopped is reported by `paused`, so the runner does not count it against its deadlines. Locks in
`hold_also` (the judge client's) are held for the same span, so judge work waits too.

`RunSlots`: the evaluations sharing a device, so one that ran out of GPU memory next to others can be run
again with the device to itself."""

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
        # pgid -> [stopped since (monotonic) or None, paused seconds so far]
        self._groups: dict[int, list] = {}
        # pgid of the timed sandbox; 0: the verdict process itself (baselines)
        self._holder: int | None = None
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

    def resume_others(self) -> None:
        """The holder's timed calls are over: the stopped sandboxes go on while it finishes (the judge
        compares its checked timed calls), but the device stays held, and so do the `hold_also` locks: no
        other run times and no other judge work starts until `release`."""
        with self._state:
            now = time.monotonic()
            for pgid, entry in self._groups.items():
                if entry[0] is not None:
                    entry[1] += now - entry[0]
                    entry[0] = None
                    _signal_group(pgid, signal.SIGCONT)
            self._holder = None  # a sandbox registering from now on is not stopped

    def release(self) -> None:
        self.resume_others()
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


class RunSlots:
    """Evaluations on one device share it; an evaluation that ran out of GPU memory while others were running
    is retried with the device to itself. `shared()` yields a slot whose `overlapped` says whether another
    evaluation held the device at any moment of it; `exclusive()` waits until every shared holder has left
    and keeps new ones out meanwhile (they wait: a retry is not starved by a stream of new evaluations)."""

    class Slot:
        overlapped = False

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holders: set[RunSlots.Slot] = set()
        self._exclusive = False
        self._exclusive_waiting = 0

    @contextmanager
    def shared(self):
        slot = RunSlots.Slot()
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._exclusive_waiting)
            if self._holders:
                slot.overlapped = True
                for other in self._holders:
                    other.overlapped = True
            self._holders.add(slot)
        try:
            yield slot
        finally:
            with self._cond:
                self._holders.discard(slot)
                self._cond.notify_all()

    @contextmanager
    def exclusive(self):
        with self._cond:
            self._exclusive_waiting += 1
            try:
                self._cond.wait_for(lambda: not self._exclusive and not self._holders)
            finally:
                self._exclusive_waiting -= 1
            self._exclusive = True
        try:
            yield RunSlots.Slot()  # never overlapped
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
