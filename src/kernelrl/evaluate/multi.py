"""One warm pool per device: `MultiDeviceEvaluator` spreads a call over several `Evaluator`s (each with its
own judge, zygote and timing token), pulling items from one shared, lazily read stream, so a device takes the
next candidate as soon as one of its sandbox slots frees up. Stdlib only, like the verdict process."""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Iterator

from kernelrl.evaluate.environment import visible_gpus
from kernelrl.evaluate.evaluator import Evaluator
from kernelrl.evaluate.scorer import Indexed, ScorerBase, Work
from kernelrl.evaluate.settings import EvalConfig, EvaluatorSettings, VerdictSettings, split_settings

__all__ = ["MultiDeviceEvaluator", "visible_gpus"]

class MultiDeviceEvaluator(ScorerBase):
    """`MultiDeviceEvaluator("auto")`: one Evaluator per visible GPU (or one
    CPU evaluator when there is none); or an explicit list such as
    `["cuda:0", "cuda:1"]`. Settings and overrides apply to every device."""

    def __init__(self, devices: str | list[str] = "auto",
                 settings: EvaluatorSettings | EvalConfig | None = None,
                 verdict: VerdictSettings | None = None, **overrides) -> None:
        if devices == "auto":
            devices = visible_gpus() or ["cpu"]
        if isinstance(devices, str) or not devices:
            raise ValueError("devices must be 'auto' or a non-empty list such as ['cuda:0', 'cuda:1']")
        split_settings(overrides)  # an unknown name raises before any evaluator exists
        self.devices = list(devices)
        self.evaluators = [Evaluator(settings, verdict, **{**overrides, "device": d}) for d in self.devices]
        self.verdict = self.evaluators[0].verdict
        self.counts = [0] * len(self.evaluators)  # evaluations done per device

    def warm_up(self) -> None:
        for ev in self.evaluators:
            ev.warm_up()

    def _evaluate_work(self, work: Iterator[Work], verdict: VerdictSettings | None) -> Iterator[Indexed]:
        lock = threading.Lock()
        results: queue.Queue = queue.Queue()
        done = object()
        stop = threading.Event()

        def drive(slot: int, ev: Evaluator) -> None:
            positions: list[int] = []

            def pull() -> Iterator[Work]:
                while not stop.is_set():
                    with lock:
                        nxt = next(work, None)
                    if nxt is None:
                        return
                    positions.append(nxt.index)
                    yield dataclasses.replace(nxt, index=len(positions) - 1)

            try:  # the item's deadline is kept as an absolute time (Work.deadline_at)
                for local, result in ev._evaluate_work(pull(), verdict):
                    self.counts[slot] += 1
                    results.put((positions[local], result, None))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                results.put((None, None, exc))
            finally:
                results.put((done, None, None))

        threads = [threading.Thread(target=drive, args=(k, ev), name=f"kernelrl-{ev.settings.device}",
                                    daemon=True)
                   for k, ev in enumerate(self.evaluators)]
        for t in threads:
            t.start()
        running = len(threads)
        try:
            while running:
                index, result, exc = results.get()
                if exc is not None:
                    raise exc
                if index is done:
                    running -= 1
                    continue
                yield Indexed(index, result)
        finally:
            stop.set()

    def close(self) -> None:
        for ev in self.evaluators:
            ev.close()
