"""How many sandboxes one device's evaluator runs at once, and in what order they get in (verdict process,
stdlib only).

Four limits, from the cheapest resource to the scarcest:
- *sandbox slots* (host memory): sandboxes alive at once, from their start to their end, including those
  waiting for or holding the timing token: at most `0.8 x available memory / sandbox_memory_gb`, less the
  standbys (which hold memory too);
- *compile slots* (host cores): sandboxes in their CPU-heavy part at once (start, import and compilation,
  construction, correctness trials, the census): everything before the timing token. A sandbox gives its
  compile slot back when it asks for the token, so the next candidate starts compiling while it waits;
- *device memory* (GPU only): bytes of GPU memory the running evaluations may hold at once, 0.8 x what was
  free when the judge started; each evaluation is charged its problem's expected need (`DeviceMemory`),
  learned from earlier evaluations of that problem (the sandbox's peak reservation, the judge's state for it,
  a CUDA context), the configured default before the first one;
- *timing slots*: one per device, the `DeviceGate` (one timed run at a time, every other sandbox of the
  device stopped meanwhile).

Slots are granted in turns: every caller (one `evaluate_many` call, one `evaluate`) has its own queue and the
queues are served round-robin, so a batch of many items does not starve a single request behind it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass

GiB = 1 << 30
# of the memory available when the evaluator starts (the judge and the OS need the rest)
MEMORY_FRACTION = 0.8


def host_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux); None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass(frozen=True)
class SlotPlan:
    """The resolved limits of one evaluator (see the module docstring)."""

    compile_slots: int  # sandboxes before their timing token at once
    sandbox_slots: int  # sandboxes alive at once, over every caller (the memory bound)
    workers: int  # evaluate_many's default evaluations in flight (threads); sandbox_slots bounds how many run
    memory_slots: int | None  # what memory alone allows; None: unbounded (available memory unknown)
    reason: str  # how the numbers came about, for logs and benches


UNBOUNDED = 1 << 16


def plan_slots(*, compile_slots: int | None, max_concurrency: int | None, sandbox_memory_gb: float,
               standby_sandboxes: int, cores: int | None = None,
               available_bytes: int | None = None) -> SlotPlan:
    """Resolve the configured limits against this host: sandboxes alive at once = the memory bound
    (`available_bytes`: MemAvailable when not given; `sandbox_memory_gb` <= 0: no bound); `compile_slots`
    None = the host's cores; `max_concurrency` None = twice the compile slots; none above the memory bound."""
    cores = host_cores() if cores is None else cores
    available = available_memory_bytes() if available_bytes is None else available_bytes
    memory_slots = None
    if available is not None and sandbox_memory_gb > 0:
        memory_slots = max(1,
                           int(MEMORY_FRACTION * available / (sandbox_memory_gb * GiB)) - standby_sandboxes)
    alive = memory_slots if memory_slots is not None else UNBOUNDED
    compiling = min(compile_slots if compile_slots is not None else cores, alive)
    workers = max_concurrency if max_concurrency is not None else min(2 * compiling, alive)
    reason = (f"{cores} cores; "
              + (f"{MEMORY_FRACTION:g} x {available / GiB:.1f} GiB available / "
                 f"{sandbox_memory_gb:g} GiB per sandbox - {standby_sandboxes} standbys = "
                 f"{memory_slots} sandboxes alive" if memory_slots is not None
                 else "no memory bound")
              + f"; {compiling} compiling at once; {workers} in flight per batch")
    return SlotPlan(compile_slots=compiling, sandbox_slots=alive, workers=workers, memory_slots=memory_slots,
                    reason=reason)


class FairSlots:
    """`count` units (slots, or bytes), granted in turns: each caller's requests in their order, callers
    round-robin (a caller that just got its request goes to the back of the line). A request for more than is
    free waits, and so does everyone behind it, so a large request is not starved by small ones; one for more
    than `count` is granted as all of it. `peak` is the most held at once so far."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"need at least one slot, got {count}")
        self.count = count
        self.held = 0
        self.reserved = 0  # kept back from every request (`reserve`)
        self.peak = 0
        self._cond = threading.Condition()
        self._queues: dict[object, deque[list[bool]]] = {}
        self._turns: deque[object] = deque()  # callers with someone waiting, next turn first

    def acquire(self, caller: object, cancel: threading.Event | None = None, amount: int = 1) -> float | None:
        """Block until this caller's turn gives it `amount` units; returns
        the seconds waited, or None (nothing taken) when `cancel` was set
        first (call `wake()` after setting it). Release the same amount."""
        started = time.monotonic()
        ticket = [False, min(max(1, amount), self.count)]
        with self._cond:
            queue = self._queues.get(caller)
            if queue is None:
                queue = self._queues[caller] = deque()
                self._turns.append(caller)
            queue.append(ticket)
            self._grant()
            self._cond.wait_for(lambda: ticket[0] or (cancel is not None and cancel.is_set()))
            if not ticket[0]:  # cancelled while waiting: out of the line
                queue.remove(ticket)
                if not queue:
                    del self._queues[caller]
                    self._turns.remove(caller)
                return None
        return time.monotonic() - started

    def wake(self) -> None:
        """Let waiters look at their `cancel` events again."""
        with self._cond:
            self._cond.notify_all()

    def release(self, amount: int = 1) -> None:
        with self._cond:
            self.held -= min(max(1, amount), self.count)
            self._grant()

    def reserve(self, amount: int) -> None:
        """Keep `amount` units back from every request from now on (raised, never lowered): what something
        outside the callers uses at times. A request that cannot fit beside the reserve waits until nothing
        else is held, then runs alone."""
        with self._cond:
            self.reserved = max(self.reserved, min(amount, self.count))

    def _grant(self) -> None:
        granted = False
        while self._turns:
            caller = self._turns[0]
            queue = self._queues[caller]
            need = queue[0][1]
            # the next in line waits, and everyone behind it
            if self.held + need > self.count or (self.held and self.held + self.reserved + need > self.count):
                break
            self._turns.popleft()
            ticket = queue.popleft()
            ticket[0] = True
            self.held += ticket[1]
            granted = True
            if queue:
                self._turns.append(caller)
            else:
                del self._queues[caller]
        self.peak = max(self.peak, self.held)
        if granted:
            self._cond.notify_all()

    @contextmanager
    def slot(self, caller: object):
        self.acquire(caller)
        try:
            yield
        finally:
            self.release()


class HeldSlot:
    """`amount` units of `slots` (one compile slot, a sandbox slot, device bytes) that may be given back
    before the block that took them ends (a compile slot at the timing token). `slots` None: no limit."""

    def __init__(self, slots: FairSlots | None, caller: object, cancel: threading.Event | None = None,
                 amount: int = 1) -> None:
        self._slots, self._caller, self._cancel, self.amount = slots, caller, cancel, amount
        self._lock = threading.Lock()
        self.held = False
        self.waited_s = 0.0

    def __enter__(self) -> HeldSlot:
        """Takes the slot, unless `cancel` was set first (`held` stays False)."""
        if self._slots is None:
            self.held = True
            return self
        waited = self._slots.acquire(self._caller, self._cancel, self.amount)
        self.held = waited is not None
        self.waited_s = waited or 0.0
        return self

    def give_back(self) -> None:
        with self._lock:
            if self.held and self._slots is not None:
                self._slots.release(self.amount)
            self.held = False

    def __exit__(self, *exc) -> None:
        self.give_back()


# a sandbox's CUDA context and loaded modules, outside its allocator's reservation
CUDA_CONTEXT_BYTES = 600 << 20
NEED_MARGIN = 1.25  # over the largest need seen: inputs differ by seed only in values, allocators in rounding


def first_need(call_bytes: int | None, timing_variants: int) -> int | None:
    """A problem's charge before any evaluation of it finished, from one reference call's
    inputs and outputs on its timing set (the judge's audit): the sandbox holds the inputs of
    every timed variant and, around a trial, copies of inputs and outputs, the judge a checked
    trial's reference and shared buffer, the allocator rounds up. Calibrated on an H100:
    `level1/1_row_softmax` (2 GiB a call) learned 13.24 GiB with timing off (one variant),
    which this gives; with timing's four variants it says 20.8 GiB, an upper guess."""
    if not call_bytes:
        return None
    return int(NEED_MARGIN * (CUDA_CONTEXT_BYTES + (max(timing_variants, 1) + 4) * call_bytes))


class DeviceMemory:
    """GPU memory admission for one device: `slots` hands out bytes of `budget_bytes`; `need(key)` is what an
    evaluation of problem `key` is charged: NEED_MARGIN x the most one has used so far (`observed`), or before
    the first, the larger of `default_bytes` and the estimate given (`first_need`: a first wave of a heavy
    problem's evaluations would otherwise all start at the default and run out together), doubled each time
    one runs out of memory beside others (`ran_out`)."""

    def __init__(self, budget_bytes: int, default_bytes: int) -> None:
        if budget_bytes < 1 or default_bytes < 1:
            raise ValueError(f"need a positive budget and default, got {budget_bytes} and {default_bytes}")
        self.budget_bytes, self.default_bytes = budget_bytes, default_bytes
        self.slots = FairSlots(budget_bytes)
        self._need: dict[str, int] = {}
        self._lock = threading.Lock()

    def need(self, key: str, first: int | None = None) -> int:
        with self._lock:
            return min(self._need.get(key, max(self.default_bytes, first or 0)), self.budget_bytes)

    def observed(self, key: str, sandbox_peak_bytes: int | None, judge_bytes: int | None) -> None:
        """One evaluation's use: the sandbox allocator's peak reservation and the judge's state for it."""
        if sandbox_peak_bytes is None:
            return
        used = int(NEED_MARGIN * (CUDA_CONTEXT_BYTES + sandbox_peak_bytes + (judge_bytes or 0)))
        with self._lock:  # never lowered: a need raised by running out stays raised
            self._need[key] = max(used, self._need.get(key, 0))

    def reserve_for_judge(self, float64_bytes: int | None) -> None:
        """The judge's float64 recomputation of a reference (the tolerance model on a value mismatch,
        rt-low-precision on every correctness trial) takes device memory of its own for a moment, one at a
        time: the most it took so far, with the margin, is kept back from the sandboxes."""
        if float64_bytes:
            self.slots.reserve(int(NEED_MARGIN * float64_bytes))

    def snapshot(self) -> dict:
        """The budget, the default charge, the judge's reserve and each problem's learned charge, in bytes
        (for reports)."""
        with self._lock:
            return {"budget_bytes": self.budget_bytes, "default_bytes": self.default_bytes,
                    "judge_reserve_bytes": self.slots.reserved, "need_bytes": dict(self._need)}

    def ran_out(self, key: str, first: int | None = None) -> None:
        with self._lock:
            charged = self._need.get(key, max(self.default_bytes, first or 0))
            self._need[key] = min(2 * charged, self.budget_bytes)


def plan_device_memory(free_bytes: int | None, default_gb: float, budget_gb: float | None = None
                       ) -> DeviceMemory | None:
    """The admission for a GPU whose judge saw `free_bytes` free at its start: `budget_gb`, else 0.8 x that,
    never more than that; None where there is nothing to bound (no GPU, the free memory unknown, or
    `default_gb` 0: admission off)."""
    if not free_bytes or default_gb <= 0:
        return None
    budget = int(MEMORY_FRACTION * free_bytes)
    if budget_gb is not None:
        budget = min(budget, int(budget_gb * GiB))
    return DeviceMemory(max(1, budget), max(1, int(default_gb * GiB)))
