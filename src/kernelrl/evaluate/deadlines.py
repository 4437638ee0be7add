"""Per-item deadlines of a call (`evaluate_many(..., deadline_s=...)`): what an item past its deadline is
answered with, and the flag that stops its slot waits and its sandbox."""

from __future__ import annotations

import threading
import time

from kernelrl.results import EvalResult, Stage, Status

DEADLINE_MESSAGE = "not judged: the deadline passed"


def deadline_result(base: dict, deadline_s: float | None, stage: Stage = Stage.STATIC) -> EvalResult:
    return EvalResult(status=Status.TIMEOUT, stage=stage, message=f"{DEADLINE_MESSAGE} ({deadline_s:g} s)",
                      feedback="the evaluation was stopped when its deadline passed; this says nothing "
                               "about the code", no_verdict=True, **base)


class Deadline:
    """An item's deadline: `cancel` is set once it passes (slot waits and sandboxes watch it). Items of one
    call without their own deadline share one."""

    def __init__(self, at: float, seconds: float | None) -> None:
        self.seconds = seconds
        self.at = at
        self.cancel = threading.Event()

    def passed(self) -> bool:
        return self.cancel.is_set() or time.monotonic() >= self.at
