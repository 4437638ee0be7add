"""The reward service's core, without HTTP: admission (a queue bounded in items), single-flight by content
key, idempotent replays, per-item deadlines and the journal, over any `Scorer`. `kernelrl.serve.app` puts
routes on it; tests drive it directly too.

An item is answered once per content key: a request's item whose key is being evaluated joins that evaluation;
one whose verdict is in the journal is answered from it; the rest are admitted (or the request is refused with
a wait to retry after) and handed to the scorer in one call, on a task that outlives the request, so a client
that disconnects loses nothing: its retry finds the answer in the journal.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import shutil
import tempfile
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelrl.cache.keys import kernelrl_build
from kernelrl.candidates import Candidate, TextKind
from kernelrl.evaluate import EvalItem, Scorer
from kernelrl.evaluate.scorer import iterate_in_thread
from kernelrl.evaluate.settings import VerdictSettings
from kernelrl.problems import Problem
from kernelrl.problems.problem import ProblemError, load_problem
from kernelrl.results import EvalResult, Status
from kernelrl.rewards import BoundReward, parse_reward_spec, speedup
from kernelrl.rewards.presets import REWARDS
from kernelrl.serve.journal import Journal, Stored
from kernelrl.serve.metrics import ServiceMetrics
from kernelrl.serve.schema import REQUEST_VERDICT_FIELDS, WireError, infrastructure_result, item_key

REWARD_CACHE_SIZE = 256  # distinct reward specs kept bound; a request may vary a preset's parameters


def _help(text: str, default: Any = dataclasses.MISSING, **kw: Any) -> Any:
    return field(default=default, metadata={"help": text}, **kw)


@dataclass(frozen=True)
class ServiceSettings:
    """What the operator decides (`kernelrl serve` options); a request may only narrow its own work."""

    max_batch: int = _help("Items one request may carry (the client splits larger calls).", 512)
    max_queued_items: int = _help("Items admitted and not yet answered, over all requests; beyond it a "
                                  "request gets 429 with Retry-After.", 2048)
    max_code_bytes: int = _help("Bytes of one item's code or completion.", 256 * 1024)
    max_body_bytes: int = _help("Bytes of one request body (413 beyond).", 64 * 1024 * 1024)
    max_deadline_s: float = _help("The longest deadline an item may ask for (seconds).", 3600.0)
    default_deadline_s: float | None = _help("An item's deadline when its request gives none "
                                             "(seconds; default the longest).", None)
    hold_s: float = _help("Trainer routes that must never get 429 (OpenRLHF, slime, OpenEnv) wait this "
                          "long for room, then answer a neutral score flagged no_verdict; also their "
                          "items' deadline, counted from arrival (under slime's 120 s and OpenRLHF's "
                          "180 s request timeouts).", 110.0)
    allowed_verdict_fields: frozenset[str] = _help("Verdict settings a request may change.",
                                                   default_factory=lambda: REQUEST_VERDICT_FIELDS)
    trust_problem_sources: bool = _help("Take problems by source from requests: the judge runs a problem's "
                                        "reference outside the sandbox, so only for clients you trust.",
                                        False)
    rewards: Mapping[str, str] = _help("Allow-listed reward names -> specs ('module:NAME' too); requests "
                                       "name built-in presets or these.", default_factory=dict)
    default_reward: str = _help("The reward of the trainer routes (OpenRLHF, slime) and of "
                                "/v1/reward without one.", "composite")
    neutral_score: float = _help("A no-verdict item's score on routes that must return a number, when the "
                                 "problem has no recent verdicts.", 0.0)
    neutral_window_s: float = _help("A no-verdict item's score is the mean of its problem's rewards over "
                                    "this many seconds (an advantage of 0).", 600.0)
    drain_s: float = _help("On shutdown, seconds in-flight evaluations may take to finish.", 60.0)

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_queued_items", "max_code_bytes", "max_body_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_batch > self.max_queued_items:
            raise ValueError("max_batch must not exceed max_queued_items (a full batch "
                             "could never be admitted)")


class QueueFull(Exception):
    """The admission queue has no room for a request's items; retry after `retry_after_s`."""

    def __init__(self, needed: int, free: int, retry_after_s: float) -> None:
        super().__init__(f"the evaluation queue is full: {needed} new items, room for {free}; retry after "
                         f"{retry_after_s:.0f} s")
        self.retry_after_s = retry_after_s


class Conflict(WireError):
    """An idempotency key reused with another request body."""


@dataclass(frozen=True)
class ItemRequest:
    """One item as the service takes it: already resolved to a problem and a candidate."""

    id: Any
    problem: Problem
    candidate: Candidate
    deadline_s: float | None = None


@dataclass(frozen=True)
class Answer:
    index: int  # position in the request
    id: Any
    key: str
    result: EvalResult
    source: str  # 'evaluated', 'joined' (another request's evaluation), 'journal'


class Submission:
    """An admitted request: `answers()` yields each item's answer once, as it comes (stored ones first)."""

    def __init__(self, items: Sequence[ItemRequest], keys: list[str]) -> None:
        self.items, self.keys = items, keys
        self.ready: list[Answer] = []
        self.waiting: dict[asyncio.Future, list[tuple[int, str]]] = defaultdict(list)

    async def answers(self) -> AsyncIterator[Answer]:
        for answer in self.ready:
            yield answer
        pending = set(self.waiting)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                for index, source in self.waiting[future]:
                    yield Answer(index, self.items[index].id, self.keys[index], future.result(), source)

    async def collect(self) -> list[Answer]:
        """Every answer, in the request's order."""
        answers = [a async for a in self.answers()]
        return sorted(answers, key=lambda a: a.index)


@dataclass(frozen=True)
class Scored:
    """A reward for an answer: None when there is no verdict."""

    reward: float | None
    components: dict[str, float | None]


class RewardService:
    """`scorer`: where items are evaluated (an Evaluator, a MultiDeviceEvaluator,
    a Ray pool). `problems`: the suites the server loaded, by id. `device`: the
    grader's device in content keys (one verdict per device)."""

    def __init__(self, scorer: Scorer, problems: Mapping[str, Problem],
                 settings: ServiceSettings | None = None, journal: Journal | None = None, device: str = "",
                 metrics: ServiceMetrics | None = None) -> None:
        self.scorer = scorer
        self.problems = dict(problems)
        self.settings = settings or ServiceSettings()
        self.journal = journal or Journal()
        self.metrics = metrics or ServiceMetrics()
        self.grader = f"{kernelrl_build()}/{device}"
        self.verdict: VerdictSettings = getattr(scorer, "verdict", None) or VerdictSettings()
        self.draining = False
        self.ready_error: str | None = "starting"
        self._inflight: dict[str, asyncio.Future[EvalResult]] = {}
        self._outstanding = 0
        self._room = asyncio.Condition()
        self._tasks: set[asyncio.Task] = set()
        self._done_times: deque[float] = deque(maxlen=512)  # answer times, for the drain rate in Retry-After
        self._recent: dict[str, deque[tuple[float, float, float]]] = defaultdict(lambda: deque(maxlen=256))
        self._rewards: dict[str, BoundReward] = {}  # by spec: parsed and imported once, not per answer
        self._sources: Path | None = None  # problems taken by source, as files the judge reads

    # --- lifecycle ------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Warm the scorer (judge, zygote, workers) without
        blocking the server: /readyz answers 503 until done."""
        try:
            await asyncio.to_thread(self.scorer.warm_up)
            self.ready_error = None
        except Exception as exc:  # noqa: BLE001 - reported by /readyz
            self.ready_error = f"the evaluator did not start: {exc}"

    def ready(self) -> str | None:
        """None when ready, else why not."""
        if self.draining:
            return "draining"
        if self.ready_error:
            return self.ready_error
        if not self.journal.writable():
            return "the journal is not writable"
        return None

    async def drain(self) -> None:
        """Refuse new work and let in-flight evaluations finish (for at most `drain_s`)."""
        self.draining = True
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self.settings.drain_s)

    def close(self) -> None:
        """Close the journal and remove problem files taken
        by source (the scorer is its opener's to close)."""
        self.journal.close()
        if self._sources is not None:
            shutil.rmtree(self._sources, ignore_errors=True)

    @property
    def outstanding(self) -> int:
        return self._outstanding

    # --- requests -------------------------------------------------------------------------------------------
    def problem(self, problem_id: str | None, sha256: str | None = None,
                source: str | None = None) -> Problem:
        """A request's problem: a loaded one by id (and its sha256, when given), or one by source when the
        operator trusts its clients with that (the judge runs a problem's reference outside the sandbox)."""
        if source is not None:
            if not self.settings.trust_problem_sources:
                raise WireError("this server does not take problems by source (the judge would "
                                "run their reference); give a problem id it has loaded, or start "
                                "it with --trust-sources")
            return self._problem_from_source(problem_id, source)
        if problem_id is None:
            raise WireError("an item's problem needs an id (or a source, where the server allows it)")
        problem = self.problems.get(problem_id)
        if problem is None:
            raise WireError(f"unknown problem {problem_id!r}: this server has loaded {len(self.problems)} "
                            "problems (GET /v1/problems lists them)")
        if sha256 is not None and sha256 != problem.sha256:
            raise WireError(f"problem {problem_id!r} differs between client and server (sha256 {sha256[:12]} "
                            f"vs {problem.sha256[:12]}): load the same suite on both")
        return problem

    def _problem_from_source(self, problem_id: str | None, source: str) -> Problem:
            """A problem sent as source, written where the judge
            reads problems from (one file per content)."""
            sha = hashlib.sha256(source.encode()).hexdigest()
            if self._sources is None:
                self._sources = Path(tempfile.mkdtemp(prefix="kernelrl-serve-problems-"))
            path = self._sources / f"p_{sha[:16]}.py"
            if not path.exists():
                path.write_text(source)
            try:
                return load_problem(path, problem_id=problem_id or f"source/{sha[:12]}")
            except ProblemError as exc:
                raise WireError(f"the problem source is not a KernelBench-format problem: {exc}") from None

    def candidate(self, text: str, kind: TextKind) -> Candidate:
        if len(text.encode()) > self.settings.max_code_bytes:
            raise WireError("an item's text is over the server's limit of "
                            f"{self.settings.max_code_bytes} bytes")
        return Candidate.from_text(text, kind)

    def reward_spec(self, spec: str | None) -> str:
        """A request's reward: a built-in preset (with parameters) or a name the operator allow-listed; never
        a module path from the request."""
        spec = spec or self.settings.default_reward
        if spec in self.settings.rewards:
            return self.settings.rewards[spec]
        name = spec.partition(":")[0].strip()
        if name not in REWARDS.names():  # presets by name (built-in or installed); never a module path
            raise WireError(f"unknown reward {spec!r}: presets {REWARDS.names()} or the server's allow-list "
                            f"{sorted(self.settings.rewards)}")
        try:
            parse_reward_spec(spec)
        except (KeyError, ValueError, TypeError) as exc:
            raise WireError(f"invalid reward {spec!r}: {exc}") from None
        return spec

    async def submit(self, items: Sequence[ItemRequest], verdict: VerdictSettings | None = None, *,
                     idempotency_key: str | None = None, body_sha256: str = "", use_journal: bool = True,
                     hold_s: float | None = None) -> Submission:
        """Admit a request: every item is then answered once by `Submission.answers()`. Raises `Conflict` (the
        key was used with another body), `QueueFull` (no room; with `hold_s`, wait that long for room and
        answer what still has none with no verdict) or `WireError` (too many items)."""
        arrived = time.monotonic()
        if self.draining:
            raise QueueFull(len(items), 0, self.settings.drain_s)
        if len(items) > self.settings.max_batch:
            raise WireError(f"{len(items)} items in one request; this server takes at most "
                            f"{self.settings.max_batch} (split the batch)")
        verdict = verdict or self.verdict
        replay = False
        if idempotency_key:
            known = await asyncio.to_thread(self.journal.claim_request, idempotency_key, body_sha256)
            if known is not None and known != body_sha256:
                self.metrics.rejected.labels("idempotency_conflict").inc()
                raise Conflict("this Idempotency-Key was used with another request body; use a new key for a "
                               "new request")
            replay = known is not None
        keys = [item_key(it.problem.sha256, it.candidate, verdict, self.grader) for it in items]
        stored: dict[str, Stored] = {}
        if use_journal or replay:
            lookups = [k for k in dict.fromkeys(keys) if k not in self._inflight]
            stored = await asyncio.to_thread(self._stored, lookups)
        # no await from here until the new keys' futures are registered: another request that comes in between
        # must find them in flight, or one key would be evaluated twice and a waiter left without its answer
        sub = Submission(items, keys)
        futures: dict[str, asyncio.Future[EvalResult]] = {}
        new: dict[str, int] = {}  # key -> index of the copy that is evaluated
        loop = asyncio.get_running_loop()
        for index, (it, key) in enumerate(zip(items, keys, strict=True)):
            if key in futures:
                continue
            if key in self._inflight:
                futures[key] = self._inflight[key]
                continue
            hit = stored.get(key)
            if hit is not None and (replay or not hit.result.no_verdict):
                sub.ready.append(Answer(index, it.id, key, hit.result, "journal"))
                self.metrics.cache_hits.labels("journal").inc()
                continue
            new[key] = index
            futures[key] = self._inflight[key] = loop.create_future()
        try:
            held_out = await self._admit(len(new), hold_s)
        except QueueFull:
            for key in new:  # refused before any await: nobody joined these
                del self._inflight[key]
            raise
        if held_out:
            for key, index in new.items():
                problem = items[index].problem
                result = infrastructure_result(problem.id, problem.sha256,
                                               f"no room in the evaluation queue within {hold_s:g} s")
                self._inflight.pop(key, None)
                futures[key].set_result(result)
                self.metrics.no_verdicts.inc()
            new = {}
        if new:
            task = asyncio.create_task(self._evaluate([(k, items[i]) for k, i in new.items()], verdict,
                                                      arrived))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        answered = {a.index for a in sub.ready}
        for index, key in enumerate(keys):
            if index not in answered:
                source = "evaluated" if new.get(key) == index else "joined"
                if source == "joined":
                    self.metrics.cache_hits.labels("joined").inc()
                sub.waiting[futures[key]].append((index, source))
        return sub

    def _stored(self, keys: list[str]) -> dict[str, Stored]:
        return {k: hit for k in keys if (hit := self.journal.get(k)) is not None}

    async def _admit(self, count: int, hold_s: float | None) -> bool:
        """Reserve room for `count` items; returns True when a held request got none within `hold_s`."""
        limit = self.settings.max_queued_items
        if count == 0:
            return False
        if self._outstanding + count <= limit:
            self._reserve(count)
            return False
        if hold_s is None:
            self.metrics.rejected.labels("queue_full").inc()
            raise QueueFull(count, limit - self._outstanding, self.retry_after_s())
        try:
            async with self._room:
                await asyncio.wait_for(self._room.wait_for(lambda: self._outstanding + count <= limit),
                                       hold_s)
                self._reserve(count)
            return False
        except TimeoutError:
            return True

    def _reserve(self, count: int) -> None:
        self._outstanding += count
        self.metrics.queue_items.set(self._outstanding)

    def retry_after_s(self) -> float:
        """When room is likely: the queue over the recent answer rate (at least 1 s, at most a minute)."""
        now = time.monotonic()
        recent = [t for t in self._done_times if now - t < 60]
        rate = len(recent) / max(1.0, now - recent[0]) if len(recent) > 1 else 0.0
        return min(60.0, max(1.0, self._outstanding / rate if rate else 5.0))

    async def _evaluate(self, batch: list[tuple[str, ItemRequest]], verdict: VerdictSettings,
                        arrived: float) -> None:
        """One scorer call for a request's new items; each answer committed to the journal, then handed out.
        Deadlines count from the request's arrival (time waiting for room included)."""
        started = time.monotonic()
        waited = started - arrived
        evals = []
        for _, it in batch:
            deadline = min(it.deadline_s or self.settings.default_deadline_s or self.settings.max_deadline_s,
                           self.settings.max_deadline_s)
            evals.append(EvalItem(it.problem, it.candidate, deadline_s=max(1e-3, deadline - waited)))
        answered: set[int] = set()
        self.metrics.in_flight.inc(len(batch))
        try:
            stream = iterate_in_thread(lambda: self.scorer.evaluate_indexed(evals, verdict=verdict))
            async for index, result in stream:
                await self._finish(batch[index][0], result, started)
                answered.add(index)
        except Exception as exc:  # noqa: BLE001 - an infrastructure failure: no verdict, never a zero
            message = f"the evaluator failed: {type(exc).__name__}: {str(exc)[:300]}"
            for index, (key, it) in enumerate(batch):
                if index not in answered:
                    result = infrastructure_result(it.problem.id, it.problem.sha256, message,
                                                   status=Status.RUNTIME_ERROR)
                    await self._finish(key, result, started)
                    answered.add(index)
        finally:
            self.metrics.in_flight.dec(len(batch))
            for index, (key, it) in enumerate(batch):  # cancelled: release the waiters, commit nothing
                if index not in answered:
                    self._release(key, infrastructure_result(it.problem.id, it.problem.sha256,
                                                             "the server stopped before the verdict"))

    async def _finish(self, key: str, result: EvalResult, started: float) -> None:
        await asyncio.to_thread(self.journal.commit, key, result)  # durable before anyone sees it
        self.metrics.observe(result, time.monotonic() - started)
        self._release(key, result)

    def _release(self, key: str, result: EvalResult) -> None:
        future = self._inflight.pop(key, None)
        if future is not None and not future.done():
            future.set_result(result)
        self._outstanding -= 1
        self.metrics.queue_items.set(self._outstanding)
        self._done_times.append(time.monotonic())
        asyncio.get_running_loop().create_task(self._notify_room())

    async def _notify_room(self) -> None:
        async with self._room:
            self._room.notify_all()

    # --- rewards --------------------------------------------------------------------------------------------
    def score(self, result: EvalResult, spec: str) -> Scored:
        """The reward of one answer (None without a verdict), and what it is made of."""
        components = {"correct": float(result.correct), "compiled": float(result.compiled),
                      "format_ok": float(result.status is not Status.FORMAT_ERROR),
                      "hack": float(result.status is Status.HACK_DETECTED),
                      "speedup_vs_eager": speedup(result, "eager"),
                      "speedup_vs_inductor": speedup(result, "inductor")}
        if result.no_verdict:
            return Scored(None, components)
        reward = self._rewards.get(spec)
        if reward is None:
            reward = BoundReward(spec)
            if len(self._rewards) < REWARD_CACHE_SIZE:
                self._rewards[spec] = reward
        return Scored(reward(result), components)

    def remember(self, problem_id: str, reward: float, correct: bool) -> None:
        self._recent[problem_id].append((time.monotonic(), reward, float(correct)))

    def neutral(self, problem_id: str) -> tuple[float, float]:
        """A no-verdict item's (reward, score) where a trainer needs numbers:
        the means over the problem's recent verdicts (its group's, in
        practice: an advantage of 0), else the operator's constant and 0.5."""
        cutoff = time.monotonic() - self.settings.neutral_window_s
        recent = [(r, c) for t, r, c in self._recent.get(problem_id, ()) if t >= cutoff]
        if not recent:
            return self.settings.neutral_score, 0.5
        return sum(r for r, _ in recent) / len(recent), sum(c for _, c in recent) / len(recent)
