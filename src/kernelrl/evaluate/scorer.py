"""The one seam every consumer calls: `Scorer` (`evaluate_many` / `aevaluate_many` over code or completions).

`Evaluator` and `MultiDeviceEvaluator` implement it; a remote client and a Ray pool implement it too, so a
trainer, the agent, the bench and the CLI never need to know which one they hold.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Protocol, runtime_checkable

from kernelrl.candidates import Candidate, TextKind
from kernelrl.problems import Problem
from kernelrl.results import EvalResult

# one item: a problem and what to evaluate for it (code, a completion, or an already-built Candidate)
Item = tuple[Problem, "str | Candidate"]


@runtime_checkable
class Scorer(Protocol):
    def evaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                      with_index: bool = False) -> Iterator[EvalResult] | Iterator[tuple[int, EvalResult]]:
        """Evaluate items concurrently. `kind` says how to read plain strings ('auto': code when the text parses
        as Python, else a completion). Results stream as they finish, or in input order with `ordered=True`;
        `with_index=True` yields (position in `items`, result)."""
        ...

    def aevaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                       with_index: bool = False) -> AsyncIterator:
        """`evaluate_many` for an event loop: `async for result in scorer.aevaluate_many(items): ...`"""
        ...

    def warm_up(self) -> None:
        """Start what evaluations need (workers, pools, connections) in the calling thread, ahead of them."""
        ...


def as_candidate(text: str | Candidate, kind: TextKind) -> Candidate:
    return text if isinstance(text, Candidate) else Candidate.from_text(text, kind)


def in_input_order(indexed: Iterator[tuple[int, EvalResult]], with_index: bool
                   ) -> Iterator[EvalResult] | Iterator[tuple[int, EvalResult]]:
    """Re-order a stream of (position, result) into input order, yielding each as soon as all before it came."""
    waiting: dict[int, EvalResult] = {}
    nxt = 0
    for index, result in indexed:
        waiting[index] = result
        while nxt in waiting:
            ready = waiting.pop(nxt)
            yield (nxt, ready) if with_index else ready
            nxt += 1


async def iterate_in_thread(make: Callable[[], Iterator]) -> AsyncIterator:
    """Drive a blocking iterator on a worker thread and hand its items to the event loop as they come; stops
    the producer when the consumer stops early."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    done = object()
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in make():
                loop.call_soon_threadsafe(queue.put_nowait, (item, None))
                if stop.is_set():
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            loop.call_soon_threadsafe(queue.put_nowait, (None, exc))
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, (done, None))

    producer = threading.Thread(target=produce, name="kernelrl-aevaluate", daemon=True)
    producer.start()
    try:
        while True:
            item, exc = await queue.get()
            if exc is not None:
                raise exc
            if item is done:
                return
            yield item
    finally:
        stop.set()
