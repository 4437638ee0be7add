"""The one seam every consumer calls: `Scorer` (`evaluate_many` / `aevaluate_many` / `evaluate_one` over code
or completions), and `ScorerBase`, which writes those once over one indexed core.

`Evaluator` and `MultiDeviceEvaluator` implement it; a remote client and a Ray pool implement it too, so a
trainer, the agent, the bench and the CLI never need to know which one they hold (`open_scorer` in
`evaluate.local` builds a local one).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

from kernelrl.candidates import Candidate, TextKind
from kernelrl.evaluate.settings import VerdictSettings
from kernelrl.problems import Problem
from kernelrl.results import EvalResult


@dataclass(frozen=True)
class EvalItem:
    """One item with its own reading of the text and its own deadline (a plain `(problem, text)` pair takes
    the call's)."""

    problem: Problem
    text: str | Candidate  # code, a completion, or an already-built Candidate
    kind: TextKind | None = None  # None: the call's `kind`
    # seconds from the call's start; the earlier of this and the call's applies
    deadline_s: float | None = None


# one item: a problem and what to evaluate for it (code, a completion, or an already-built Candidate)
Item = tuple[Problem, "str | Candidate"] | EvalItem


class Indexed(NamedTuple):
    """A result with the position of its item in the call's input (the position is the call's, not the
    verdict's: it never enters a cached result)."""

    index: int
    result: EvalResult


@dataclass(frozen=True)
class Work:
    """An item as the core sees it: its position, its problem, its candidate and its deadline (monotonic
    seconds, or None)."""

    index: int
    problem: Problem
    candidate: Candidate
    deadline_at: float | None
    deadline_s: float | None  # the deadline as given, for the message


@runtime_checkable
class Scorer(Protocol):
    def evaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                      verdict: VerdictSettings | None = None, deadline_s: float | None = None
                      ) -> Iterator[EvalResult]:
        """Evaluate items concurrently. `kind` says how to read plain strings ('auto': code when the text
        parses as Python, else a completion). Results stream as they finish, or in input order with
        `ordered=True`. `verdict`: this call's verdict settings (default: the scorer's). `deadline_s`: seconds
        for the whole call; items not judged by then come back at once with `no_verdict` set."""
        ...

    def evaluate_indexed(self, items: Iterable[Item], *, kind: TextKind = "auto",
                         verdict: VerdictSettings | None = None, deadline_s: float | None = None
                         ) -> Iterator[Indexed]:
        """`evaluate_many` with each result's position in `items`, in completion order."""
        ...

    def aevaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                       verdict: VerdictSettings | None = None, deadline_s: float | None = None
                       ) -> AsyncIterator[EvalResult]:
        """`evaluate_many` for an event loop: `async for result in scorer.aevaluate_many(items): ...`"""
        ...

    def evaluate_one(self, problem: Problem, text: str | Candidate, *, kind: TextKind = "auto",
                     verdict: VerdictSettings | None = None, deadline_s: float | None = None) -> EvalResult:
        """One item, one result."""
        ...

    def warm_up(self) -> None:
        """Start what evaluations need (workers, pools, connections) now rather than on the first call."""
        ...

    def close(self) -> None:
        """Stop everything the scorer started."""
        ...


class ScorerBase:
    """`evaluate_many`, `aevaluate_many`, `evaluate_one` (and the conveniences) written once over
    `_evaluate_work`, the one method an implementation provides: Work items in, Indexed results out in
    completion order, every item answered once."""

    def _evaluate_work(self, work: Iterator[Work], verdict: VerdictSettings | None) -> Iterator[Indexed]:
        raise NotImplementedError

    def warm_up_in_background(self) -> None:
        """`warm_up` on a thread of its own, for a caller with other work meanwhile (a trainer loading its
        policy). A failure here is the first evaluation's to report, with its context."""

        def warm() -> None:
            try:
                self.warm_up()  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - raised again by the first call
                pass

        threading.Thread(target=warm, name="kernelrl-scorer-warm-up", daemon=True).start()

    def evaluate_indexed(self, items: Iterable[Item], *, kind: TextKind = "auto",
                         verdict: VerdictSettings | None = None, deadline_s: float | None = None
                         ) -> Iterator[Indexed]:
        return self._evaluate_work(as_work(items, kind, deadline_s), verdict)

    def evaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                      verdict: VerdictSettings | None = None, deadline_s: float | None = None
                      ) -> Iterator[EvalResult]:
        """Evaluate items concurrently (see `Scorer.evaluate_many`). `items` is read lazily, so it may be a
        generator fed by a policy."""
        indexed = self.evaluate_indexed(items, kind=kind, verdict=verdict, deadline_s=deadline_s)
        if ordered:
            return (done.result for done in in_input_order(indexed))
        return (done.result for done in indexed)

    def aevaluate_many(self, items: Iterable[Item], *, kind: TextKind = "auto", ordered: bool = False,
                       verdict: VerdictSettings | None = None, deadline_s: float | None = None
                       ) -> AsyncIterator[EvalResult]:
        return iterate_in_thread(lambda: self.evaluate_many(items, kind=kind, ordered=ordered,
                                                            verdict=verdict, deadline_s=deadline_s))

    def evaluate_one(self, problem: Problem, text: str | Candidate, *, kind: TextKind = "auto",
                     verdict: VerdictSettings | None = None, deadline_s: float | None = None) -> EvalResult:
        [result] = list(self.evaluate_many([(problem, text)], kind=kind, verdict=verdict,
                                           deadline_s=deadline_s))
        return result

    async def aevaluate_one(self, problem: Problem, text: str | Candidate, *, kind: TextKind = "auto",
                            verdict: VerdictSettings | None = None,
                            deadline_s: float | None = None) -> EvalResult:
        return await asyncio.to_thread(self.evaluate_one, problem, text, kind=kind, verdict=verdict,
                                       deadline_s=deadline_s)

    def evaluate(self, problem: Problem, code: str | Candidate, *, verdict: VerdictSettings | None = None
                 ) -> EvalResult:
        """Evaluate candidate source code (a module defining `ModelNew`), or a `Candidate`."""
        return self.evaluate_one(problem, code, kind="code", verdict=verdict)

    def evaluate_completion(self, problem: Problem, completion: str, *, verdict: VerdictSettings | None = None
                            ) -> EvalResult:
        """Extract the candidate from an LLM completion (`Candidate.from_text`), then evaluate it."""
        return self.evaluate_one(problem, completion, kind="completion", verdict=verdict)

    async def aevaluate(self, problem: Problem, code: str | Candidate, *,
                        verdict: VerdictSettings | None = None
                        ) -> EvalResult:
        """`evaluate` without blocking the event loop."""
        return await self.aevaluate_one(problem, code, kind="code", verdict=verdict)

    def with_verdict(self, verdict: VerdictSettings | None = None, **fields) -> VerdictView:
        """This scorer with other default verdict settings (`verdict`, or this scorer's with `fields`
        replaced): one set of workers serves both, and nothing restarts. Closing the view closes nothing."""
        if verdict is None:
            verdict = dataclasses.replace(self.verdict, **fields)  # type: ignore[attr-defined]
        return VerdictView(self, verdict)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()  # type: ignore[attr-defined]


class VerdictView(ScorerBase):
    """A scorer's calls with other default verdict settings (`ScorerBase.with_verdict`)."""

    def __init__(self, inner: ScorerBase, verdict: VerdictSettings) -> None:
        self.inner, self.verdict = inner, verdict

    def _evaluate_work(self, work: Iterator[Work], verdict: VerdictSettings | None) -> Iterator[Indexed]:
        return self.inner._evaluate_work(work, verdict or self.verdict)

    def warm_up(self) -> None:
        self.inner.warm_up()  # type: ignore[attr-defined]

    def close(self) -> None:
        """Nothing: the workers are the inner scorer's, closed by whoever opened it."""

    def audit(self, problem: Problem, timing: bool = False):
        """The inner evaluator's audit with this view's tolerances."""
        return self.inner.audit(problem, timing=timing, verdict=self.verdict)  # type: ignore[attr-defined]

    def time_baselines(self, problem: Problem, seed: int = 0, fresh: bool = False):
        """The inner evaluator's baselines with this view's timer."""
        return self.inner.time_baselines(  # type: ignore[attr-defined]
            problem, seed, fresh, verdict=self.verdict)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)  # the rest (environment, audit, caches) is the inner scorer's


def as_candidate(text: str | Candidate, kind: TextKind) -> Candidate:
    return text if isinstance(text, Candidate) else Candidate.from_text(text, kind)


def as_work(items: Iterable[Item], kind: TextKind, deadline_s: float | None) -> Iterator[Work]:
    """Items as Work, read lazily; deadlines count from the call's start (this generator's creation)."""
    if deadline_s is not None and not deadline_s > 0:
        raise ValueError(f"deadline_s must be positive, not {deadline_s!r}")
    start = time.monotonic()

    def read() -> Iterator[Work]:
        for index, item in enumerate(items):
            if isinstance(item, EvalItem):
                problem, text, own_kind, own_deadline = item.problem, item.text, item.kind, item.deadline_s
            else:
                (problem, text), own_kind, own_deadline = item, None, None
            given = [d for d in (deadline_s, own_deadline) if d is not None]
            seconds = min(given) if given else None
            yield Work(index, problem, as_candidate(text, own_kind or kind),
                       start + seconds if seconds is not None else None, seconds)

    return read()


def in_input_order(indexed: Iterable[Indexed]) -> Iterator[Indexed]:
    """Re-order a stream of Indexed results into input order, yielding each as soon as all before it came."""
    waiting: dict[int, EvalResult] = {}
    nxt = 0
    for index, result in indexed:
        waiting[index] = result
        while nxt in waiting:
            yield Indexed(nxt, waiting.pop(nxt))
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
