"""How long the candidate's next report may take, from how long its earlier calls took (verdict process,
stdlib only).

A call that never returns (a kernel spinning on a stream of its own, a wait on a thread or a driver object,
a sleep) used to hold its sandbox until the run timeout, two minutes by default; in the timed phase, with
every other sandbox of the device stopped. Whatever the mechanism, it is a call that takes far longer than
the same candidate's calls on the same inputs took before: once a call on an input set has returned (its
kernels compiled for those shapes), the next call on that set with the same shapes and plain arguments has
`PACE_FLOOR_S` plus `PACE_FACTOR` times the fastest earlier one, and the timed calls have `TIMED_FLOOR_S` plus
`TIMED_FACTOR` times the fastest call on the timing set for each call the timer makes at the least. A first
call on new shapes keeps the run timeout: it compiles. A call's time is the longer of the verdict process's
own (between handled reports) and the stub's (around the call, to its outputs after a sync): the stub may run
a call while the judge compares the one before, which looks instant from outside; a forged, longer time only
loosens the candidate's own bound.
"""

from __future__ import annotations

import math

PACE_FLOOR_S = 5.0
# other sandboxes share the device and the host's cores while trials run (a GPU time-slices between their
# contexts): a call may run several times slower than the fastest one did
PACE_FACTOR = 10.0
TIMED_FLOOR_S = 15.0
TIMED_FACTOR = 3.0  # the timed calls have the device to themselves
WARMUP_CALLS = 3  # the timer's warm-up runs at least this many calls (kernelrl.timing.cuda_timer)


def call_key(trial) -> str:
    """What a trial's call compiles for: its input set, its tensors' dtypes and shapes and its plain arguments
    (Triton specializes on integers). A set whose draws differ in shape is a new call each time, which may
    compile again."""
    tensors = [(m.get("dtype"), tuple(m.get("shape") or ())) for m in trial.inputs]
    values = [repr(a["value"]) for a in trial.args if "value" in a]
    return repr((trial.set, tensors, values))


class CallPace:
    """`reported(kind, waited_s)` after each handled report; `limit()` bounds the wait for the next one."""

    def __init__(self, calls: list[tuple[str, str]], timing_set: str | None, min_timed_calls: int,
                 adaptive_s: float = 0.0) -> None:
        self.calls = calls  # each correctness trial's (input set, call_key), in the order they run
        self.timing_set = timing_set
        self.min_timed_calls = min_timed_calls
        self.adaptive_s = adaptive_s  # an adaptive timer's batches beyond its minimum, at most this long
        self.fastest: dict[str, float] = {}  # call key -> its fastest call so far (seconds)
        self.trials = 0
        self.timing = "before"  # "granted" while the timed calls run, then "done"

    def reported(self, kind: str, waited_s: float) -> None:
        if kind == "trial" and self.trials < len(self.calls):
            key = self.calls[self.trials][1]
            self.fastest[key] = min(self.fastest.get(key, math.inf), waited_s)
            self.trials += 1
        elif kind == "timing_granted":
            self.timing = "granted"
        elif kind == "timing":
            self.timing = "done"

    def limit(self) -> tuple[float, str] | None:
        """Seconds the next report may take from the last one, and what is awaited; None: the run timeout."""
        if self.timing == "granted":
            per_call = min((self.fastest[key] for name, key in self.calls
                            if name == self.timing_set and key in self.fastest), default=None)
            if per_call is None:
                return None
            bound = TIMED_FLOOR_S + TIMED_FACTOR * self.min_timed_calls * per_call + self.adaptive_s
            return bound, (f"the timed calls (at least {self.min_timed_calls}; a call on the timing set took "
                           f"{per_call:.2f} s before)")
        if self.timing == "before" and self.trials < len(self.calls):
            name, key = self.calls[self.trials]
            if key in self.fastest:
                return (PACE_FLOOR_S + PACE_FACTOR * self.fastest[key],
                        f"trial {self.trials}, on the {name!r} inputs (an earlier call on them took "
                        f"{self.fastest[key]:.2f} s)")
        return None
