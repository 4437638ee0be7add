"""One warm pool per device: `MultiDeviceEvaluator` spreads a batch over several `Evaluator`s (each with its
own judge, zygote and timing token), pulling items from one shared, lazily read stream, so a device takes
the next candidate as soon as one of its sandbox slots frees up. Stdlib only, like the verdict process."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator, Iterable, Iterator

from kernelrl.candidates import TextKind
from kernelrl.evaluate.config import EvalConfig
from kernelrl.evaluate.evaluator import Evaluator
from kernelrl.evaluate.scorer import Item, as_candidate, in_input_order, iterate_in_thread
from kernelrl.results import EvalResult


def visible_gpus() -> list[str]:
    """`cuda:N` for each GPU this process may use (CUDA_VISIBLE_DEVICES, else `nvidia-smi -L`), without
    importing torch (which could initialize CUDA in the verdict process)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [f"cuda:{d.strip()}" for d in listed.split(",") if d.strip().isdigit()]
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        out = subprocess.run([tool, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [f"cuda:{n}" for n, line in enumerate(out.splitlines()) if line.startswith("GPU ")]


class MultiDeviceEvaluator:
    """`MultiDeviceEvaluator("auto")`: one Evaluator per visible GPU (or one CPU evaluator when there is none);
    or an explicit list such as `["cuda:0", "cuda:1"]`. Config and overrides apply to every device."""

    def __init__(self, devices: str | list[str] = "auto", config: EvalConfig | None = None, **overrides) -> None:
        if devices == "auto":
            devices = visible_gpus() or ["cpu"]
        if isinstance(devices, str) or not devices:
            raise ValueError("devices must be 'auto' or a non-empty list such as ['cuda:0', 'cuda:1']")
        self.devices = list(devices)
        self.evaluators = [Evaluator(config, **{**overrides, "device": d}) for d in self.devices]
        self.counts = [0] * len(self.evaluators)  # evaluations done per device

    def warm_up(self) -> None:
        for ev in self.evaluators:
            ev.warm_up()

    def evaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                      with_index: bool = False, deadline_s: float | None = None
                      ) -> Iterator[EvalResult] | Iterator[tuple[int, EvalResult]]:
        """Results in completion order over all devices, or in input order with `ordered=True` (`with_index`:
        (position in `items`, result)). Strings are read as `kind` says (see `Scorer`). `deadline_s`: as
        `Evaluator.evaluate_many`'s, on every device."""
        indexed = self._evaluate_indexed(items, kind, deadline_s)
        if ordered:
            return in_input_order(indexed, with_index)
        return indexed if with_index else (result for _, result in indexed)

    def aevaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                       with_index: bool = False) -> AsyncIterator:
        """Async variant of `evaluate_many`."""
        return iterate_in_thread(lambda: self.evaluate_many(items, kind=kind, ordered=ordered, with_index=with_index))

    def _evaluate_indexed(self, items: Iterable[Item], kind: TextKind, deadline_s: float | None = None
                          ) -> Iterator[tuple[int, EvalResult]]:
        self.warm_up()  # workers start in this thread: a parent-death signal follows the forking thread
        source = ((index, (problem, as_candidate(text, kind))) for index, (problem, text) in enumerate(items))
        lock = threading.Lock()
        results: queue.Queue = queue.Queue()
        done = object()
        stop = threading.Event()

        def drive(slot: int, ev: Evaluator) -> None:
            positions: list[int] = []

            def pull():
                while not stop.is_set():
                    with lock:
                        nxt = next(source, None)
                    if nxt is None:
                        return
                    positions.append(nxt[0])
                    yield nxt[1]

            try:
                for local, result in ev.evaluate_many(pull(), with_index=True, deadline_s=deadline_s):
                    self.counts[slot] += 1
                    results.put((positions[local], result, None))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                results.put((None, None, exc))
            finally:
                results.put((done, None, None))

        threads = [threading.Thread(target=drive, args=(k, ev), name=f"kernelrl-{ev.config.device}", daemon=True)
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
                yield index, result
        finally:
            stop.set()

    def close(self) -> None:
        for ev in self.evaluators:
            ev.close()

    def __enter__(self) -> MultiDeviceEvaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
