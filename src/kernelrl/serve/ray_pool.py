"""A Ray pool that is a `Scorer`: `RayScorer` spreads a call over one `EvalActor` per GPU of a Ray cluster,
so a trainer whose jobs already run on Ray (verl, slime, SkyRL) evaluates on the cluster's GPUs with the same
calls as an in-process `Evaluator`.

Plain actors, not Ray Serve: Serve's routing knows nothing of an evaluator's sandbox slots, and no trainer
that scores on Ray uses it. Each actor owns an `Evaluator` (its judge, zygote and sandboxes touch the GPU; the
actor never does) and is named `eval/{node_id}/{k}` in the pool's namespace, so every driver of the cluster
shares the same warm evaluators. The dispatcher is a thread of the calling process, one per pool: it reads
each call's items lazily, gives free slots to the calls in turns, hands each item to the ready actor with the
most free slots, re-reads the cluster's membership as nodes join and leave, and sends the items of an actor
that died to another one (at most `MAX_ATTEMPTS` attempts, then `no_verdict`), answering every item exactly
once.

This module is the driver's side: the scorer and its dispatcher. The actor is `ray_actor.EvalActor`; which
actors the pool uses, and when they are ready, is its `ray_members.Membership`. Ray is imported only when a
pool is built, so this module imports without it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kernelrl.evaluate.deadlines import deadline_result
from kernelrl.evaluate.evaluator import _settings_from
from kernelrl.evaluate.scorer import Indexed, ScorerBase, Work
from kernelrl.evaluate.settings import EvalConfig, EvaluatorError, EvaluatorSettings, VerdictSettings
from kernelrl.results import EvalResult, Stage, Status
from kernelrl.serve.ray_actor import EvalActor, WireItem, _ray, _sha
from kernelrl.serve.ray_members import WAKE, MemberInfo, Membership, _Member

__all__ = ["MAX_ATTEMPTS", "EvalActor", "MemberInfo", "RayScorer"]

MAX_ATTEMPTS = 2  # actors an item is sent to before it ends `no_verdict` (one that kills actors costs two)
DEADLINE_GRACE_S = 5.0  # an actor answers a passed deadline itself; past this the dispatcher answers for it
LOST_MESSAGE = "not judged: the evaluator died"


@dataclass
class _Pending:
    """An item of one call on its way: the attempts made so far."""

    work: Work
    attempts: int = 0
    reasons: list[str] = field(default_factory=list)


@dataclass(eq=False)
class _Call:
    """One `evaluate_many` call as the dispatcher sees it. Its items are read from the caller's stream by a
    reader thread of its own, one at a time when the dispatcher asks (`demand`), so a slow stream holds up no
    other call; answers go to `out` for the caller's thread."""

    verdict_ref: Any  # the call's VerdictSettings in Ray's object store: shipped once, not with every item
    cond: threading.Condition  # over the pool's lock: the reader waits on it for demand
    out: queue.Queue = field(default_factory=queue.Queue)  # (index, result), an exception, or _END
    waiting: deque[_Pending] = field(default_factory=deque)  # read (or back from a lost actor), not sent yet
    answered: set[int] = field(default_factory=set)
    read: int = 0  # items read from the stream so far
    demand: int = 0  # reads asked for and not done yet
    exhausted: bool = False  # the stream has ended
    closed: bool = False  # the pool was closed: what is left ends without a verdict
    stopped: bool = False  # the caller stopped listening
    ended: bool = False  # every item answered and _END sent


_END = object()  # a call's last message: every item answered


class RayScorer(ScorerBase):
    """A `Scorer` over a Ray cluster: one `EvalActor` per GPU of each live node (`cpu_actors` CPU evaluators
    when the cluster has no GPU), shared by name with every driver of the cluster.

    `address`: the cluster to join when Ray is not initialized yet ("auto": the running cluster; None: a local
    instance); when `ray.is_initialized()`, the running session is used. `namespace`: where the actors are
    named. `settings`/`verdict`/`overrides`: as `Evaluator` (the device: "auto" or "cuda" evaluates on each
    actor's GPU, "cpu" in CPU mode, e.g. over logical GPUs in tests). `cpu_actors`: CPU-mode evaluators
    (`num_gpus=0`), created only while the cluster has no GPU, or beside the GPU ones when the device is
    "cpu" (so a GPU pool never mixes CPU-mode verdicts into GPU ones). `max_actors`: at most this many
    actors. `detached`: the actors this pool creates outlive it and its process (`lifetime="detached"`); by
    default Ray ends them when the pool that created them closes or its process exits (see `close`).
    `refresh_s`: how often membership is re-read from the cluster.
    `actor_wait_s`: how long items wait while no actor is ready before they end `no_verdict`.

    One dispatcher thread serves every call of the pool: calls take free slots in turns (one item each, round
    robin), so a large batch does not starve a small request behind it, and each item goes to the ready actor
    with the most free slots.

    Actors are shared by name: the first driver's `EvaluatorSettings` stand; verdict settings travel with
    every call. Nothing connects before the first call or `warm_up`; a pool pickles as its configuration.
    Sharing a cluster with a trainer, bound the pool with `max_actors`: an actor waiting for a GPU the
    trainer holds takes no items, but it stays a resource request (which an autoscaler may act on)."""

    def __init__(self, address: str | None = "auto", *, namespace: str = "kernelrl",
                 settings: EvaluatorSettings | EvalConfig | None = None,
                 verdict: VerdictSettings | None = None, cpu_actors: int | None = None,
                 max_actors: int | None = None, detached: bool = False,
                 refresh_s: float = 5.0, actor_wait_s: float = 600.0, **overrides) -> None:
        _ray()  # a missing Ray says how to install it now, not at the first call
        if cpu_actors is not None and cpu_actors < 0:
            raise ValueError("cpu_actors must be at least 0")
        if max_actors is not None and max_actors < 1:
            raise ValueError("max_actors must be at least 1 (or None: one per GPU)")
        if not refresh_s > 0 or not actor_wait_s > 0:
            raise ValueError("refresh_s and actor_wait_s must be positive")
        self._config = {"address": address, "namespace": namespace, "settings": settings, "verdict": verdict,
                        "cpu_actors": cpu_actors, "max_actors": max_actors, "detached": detached,
                        "refresh_s": refresh_s, "actor_wait_s": actor_wait_s, **overrides}
        self.settings, self.verdict = _settings_from(settings, verdict, overrides)
        self.address, self.namespace = address, namespace
        self.cpu_actors, self.max_actors, self.detached = cpu_actors or 0, max_actors, detached
        self.refresh_s, self.actor_wait_s = refresh_s, actor_wait_s
        self.redispatched = 0  # items sent again after their actor died
        self.counts: dict[str, int] = {}  # items answered per actor name
        self._lock = threading.RLock()
        self._events: queue.Queue = queue.Queue()  # wakes the dispatcher: answers, warm-ups, reads, close
        self._membership = Membership(address=address, namespace=namespace, settings=self.settings,
                                      cpu_actors=self.cpu_actors, max_actors=max_actors, detached=detached,
                                      refresh_s=refresh_s, lock=self._lock, events=self._events)
        self._calls: deque[_Call] = deque()  # in turn order
        self._flying: dict[Any, tuple[_Member, _Call, _Pending]] = {}  # actor call -> its actor, call, item
        self._dispatcher: threading.Thread | None = None
        self._generation = 0  # bumped by close(): the dispatcher of an earlier generation stops
        self._unserved_since: float | None = None  # since when items waited with no actor ready

    def __getstate__(self) -> dict:
        return dict(self._config)

    def __setstate__(self, config: dict) -> None:
        config = dict(config)
        RayScorer.__init__(self, config.pop("address"), **config)

    # -- Scorer ----------------------------------------------------------------------------------------------
    def warm_up(self, timeout_s: float | None = 600.0) -> None:
        """Join or create the actors and wait until each has started its evaluator (up to `timeout_s`; actors
        still waiting for a GPU join later). Raises when none became ready."""
        ray = _ray()
        self._membership.start()
        with self._lock:
            self._membership.refresh(force=True)
            pending = self._membership.pending_ready()
        if pending:
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=timeout_s)
            for ref in done:
                self._membership.took_ready(pending[ref], ref)
        with self._lock:
            if not self._membership.any_ready():
                error = self._membership.last_error
                raise EvaluatorError(f"no evaluator of the Ray pool became ready within {timeout_s} s"
                                     + (f": {error}" if error else ""))

    def members(self) -> list[MemberInfo]:
        """The pool's actors now (membership is re-read from the cluster at most every `refresh_s`)."""
        with self._lock:
            return self._membership.info()

    def close(self, kill: bool = False) -> None:
        """Stop this pool's calls (their unanswered items end `no_verdict`) and its dispatcher, and let go of
        its actors. Ray ends a non-detached actor once the pool that created it lets go (or its process
        exits); other drivers that shared it by name re-dispatch their items at it and create it again. With
        `detached`, actors stay for other drivers and later pools, which find them warm. `kill`: kill the
        actors this pool created now, detached or not (never those it joined). Disconnects from Ray when this
        pool connected. The pool may be used again."""
        ray = _ray()
        with self._lock:
            self._generation += 1
            for call in list(self._calls):
                call.closed = True
                call.cond.notify_all()  # its reader answers the rest of its stream
                for pending in call.waiting:
                    self._answer(call, pending.work.index, self._closed_result(pending.work))
                call.waiting.clear()
            for _, call, pending in self._flying.values():
                self._answer(call, pending.work.index, self._closed_result(pending.work))
            self._calls.clear()
            self._flying.clear()
            created, own = self._membership.forget()
            dispatcher, self._dispatcher = self._dispatcher, None
        self._events.put(WAKE)
        if dispatcher is not None and dispatcher is not threading.current_thread():
            dispatcher.join(30)
        if kill and ray.is_initialized():
            for handle in created.values():
                try:
                    ray.kill(handle, no_restart=True)
                except Exception:  # noqa: BLE001 - already dead, or its node is gone
                    pass
        if own and ray.is_initialized():
            ray.shutdown()

    def _evaluate_work(self, work: Iterator[Work], verdict: VerdictSettings | None) -> Iterator[Indexed]:
        ray = _ray()
        self._membership.start()
        call = _Call(verdict_ref=ray.put(verdict or self.verdict), cond=threading.Condition(self._lock))
        with self._lock:
            self._calls.append(call)
            self._ensure_dispatcher()
        reader = threading.Thread(target=self._read, args=(call, work), name="kernelrl-ray-read", daemon=True)
        reader.start()
        self._events.put(WAKE)
        try:
            while (got := call.out.get()) is not _END:
                if isinstance(got, BaseException):
                    raise got
                yield Indexed(*got)
        finally:
            with self._lock:  # items still at an actor finish there; their answers are dropped
                call.stopped = True
                call.cond.notify_all()
                if call in self._calls:
                    self._calls.remove(call)

    # -- the caller's side ---------------------------------------------------------------------------------
    def _read(self, call: _Call, work: Iterator[Work]) -> None:
        """Read the call's stream one item per demand (all of it once the pool is closed), outside the lock:
        a stream fed by a policy may take its time."""
        try:
            while True:
                with self._lock:
                    while call.demand <= 0 and not call.closed and not call.stopped:
                        call.cond.wait()
                    if call.stopped:
                        return
                item = next(work, None)
                with self._lock:
                    call.demand = max(0, call.demand - 1)
                    if item is None:
                        call.exhausted = True
                    else:
                        call.read += 1
                        if call.closed:
                            self._answer(call, item.index, self._closed_result(item))
                        else:
                            call.waiting.append(_Pending(item))
                    self._end_if_done(call)
                self._events.put(WAKE)
                if item is None:
                    return
        except BaseException as exc:  # noqa: BLE001 - an item that cannot be read: raised to the caller
            call.out.put(exc)

    def _answer(self, call: _Call, index: int, result: EvalResult) -> None:
        """Hand an item's answer to its caller, once: a late answer (an actor's, after the dispatcher answered
        the item at its deadline) is dropped. Under the lock."""
        if call.stopped or index in call.answered:
            return
        call.answered.add(index)
        call.out.put((index, result))
        self._end_if_done(call)

    def _end_if_done(self, call: _Call) -> None:
        if call.exhausted and not call.ended and len(call.answered) >= call.read:
            call.ended = True
            call.out.put(_END)

    # -- the dispatcher ------------------------------------------------------------------------------------
    def _ensure_dispatcher(self) -> None:
        if self._dispatcher is None or not self._dispatcher.is_alive():
            self._dispatcher = threading.Thread(target=self._dispatch_forever, args=(self._generation,),
                                                name="kernelrl-ray-dispatch", daemon=True)
            self._dispatcher.start()

    def _dispatch_forever(self, generation: int) -> None:
        """Wait for an event (an actor's answer or warm-up, an item read, close) or the next deadline or
        refresh, then answer what is due and send what fits."""
        while True:
            with self._lock:
                if self._generation != generation:
                    return
                wake = self._next_wake()
            events = []
            try:
                events.append(self._events.get(timeout=None if wake is None else max(0.0, wake)))
                while True:
                    events.append(self._events.get_nowait())
            except queue.Empty:
                pass
            try:
                for event in events:
                    if event[0] == "done":
                        self._took_answer(event[1])
                    elif event[0] == "ready":
                        self._membership.took_ready(event[1], event[2])
                with self._lock:
                    if self._generation != generation:
                        return
                    if self._calls or self._flying:
                        self._membership.refresh()
                    self._expire()
                    self._serve_unserved()
                    self._send()
            except BaseException as exc:  # noqa: BLE001 - e.g. Ray shut down under the pool: callers hear it
                with self._lock:
                    for call in self._calls:
                        call.out.put(exc)
                    if self._dispatcher is threading.current_thread():
                        self._dispatcher = None
                return

    def _next_wake(self) -> float | None:
        """Seconds until the dispatcher has something to do without an event (None: nothing). Under the
        lock."""
        now = time.monotonic()
        times = []
        if self._calls or self._flying:
            times.append(self._membership.next_refresh)
        for call in self._calls:
            times += [p.work.deadline_at for p in call.waiting if p.work.deadline_at is not None]
        times += [p.work.deadline_at + DEADLINE_GRACE_S for _, call, p in self._flying.values()
                  if p.work.deadline_at is not None and p.work.index not in call.answered]
        if self._unserved_since is not None:
            times.append(self._unserved_since + self.actor_wait_s)
        return min(times) - now if times else None

    def _send(self) -> None:
        """Free slots to the calls in turns, one item each, to the ready actor with the most free slots; a
        call with nothing read is asked to read one. Under the lock."""
        while self._calls and self._membership.free_slots() > 0:
            progressed = False
            for _ in range(len(self._calls)):
                call = self._calls[0]
                self._calls.rotate(-1)
                if call.waiting:
                    self._send_one(call, call.waiting.popleft())
                    progressed = True
                    break  # the next turn is the next call's, if a slot is still free
                if not call.exhausted and call.demand == 0:
                    call.demand = 1
                    call.cond.notify_all()
            if not progressed:
                return

    def _send_one(self, call: _Call, pending: _Pending) -> None:
        if pending.work.index in call.answered:
            return
        left = _left(pending.work, time.monotonic())
        if left is not None and left <= 0:
            self._answer(call, pending.work.index, self._deadline(pending.work))
            return
        member = self._membership.least_busy()
        member.in_flight += 1
        pending.attempts += 1
        item: WireItem = (pending.work.index, pending.work.problem, pending.work.candidate, left,
                          pending.work.deadline_s)
        ref = member.handle.evaluate.remote([item], call.verdict_ref)
        self._flying[ref] = (member, call, pending)
        ref.future().add_done_callback(lambda _, ref=ref: self._events.put(("done", ref)))

    def _expire(self) -> None:
        """Items past their deadline: waiting ones answered now; ones at an actor that did not answer its
        deadline within the grace answered here. Under the lock."""
        now = time.monotonic()
        for call in self._calls:
            for pending in [p for p in call.waiting if _passed(p.work, now)]:
                call.waiting.remove(pending)
                self._answer(call, pending.work.index, self._deadline(pending.work))
        for _, call, pending in self._flying.values():
            if _passed(pending.work, now - DEADLINE_GRACE_S):
                self._answer(call, pending.work.index, self._deadline(pending.work))

    def _serve_unserved(self) -> None:
        """No actor ready: the items wait at most `actor_wait_s` (their deadlines still apply), then end
        without a verdict, and so do items read while none is ready. Under the lock."""
        if self._membership.any_ready() or not self._calls:
            self._unserved_since = None
            return
        now = time.monotonic()
        if self._unserved_since is None:
            self._unserved_since = now
        for call in self._calls:
            if not call.waiting and not call.exhausted and call.demand == 0:
                call.demand = 1  # read an item, so that its wait is counted
                call.cond.notify_all()
        if now - self._unserved_since >= self.actor_wait_s:
            for call in self._calls:
                while call.waiting:
                    item = call.waiting.popleft().work
                    self._answer(call, item.index, self._unserved_result(item))

    def _took_answer(self, ref: Any) -> None:
        """An actor call ended: its answers to the caller; when the actor died, its item goes back to the
        front of its call's queue for another actor, or ends `no_verdict` after `MAX_ATTEMPTS`."""
        ray = _ray()
        with self._lock:
            entry = self._flying.pop(ref, None)
            if entry is None:
                return  # a call of an earlier generation (the pool was closed meanwhile)
            member, call, pending = entry
            member.in_flight = max(0, member.in_flight - 1)
        try:
            answers = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if not isinstance(cause, EvaluatorError):  # a fault of the pool's own code: the caller hears it
                call.out.put(cause if isinstance(cause, Exception) else exc)
                return
            reason = f"{member.name}: {cause}"  # its judge cannot start: the actor warms up again
        except ray.exceptions.RayError as exc:  # the actor or its node died (Ray restarts it, or it left)
            reason = f"{member.name}: {type(exc).__name__}"
        else:
            results = [(index, EvalResult.from_json(text)) for index, text in answers]
            with self._lock:
                member.done += len(results)
                self.counts[member.name] = self.counts.get(member.name, 0) + len(results)
                for index, result in results:
                    self._answer(call, index, result)
            return
        with self._lock:
            self._membership.lost(member, reason)
            pending.reasons.append(reason)
            if call.stopped or call.closed or pending.work.index in call.answered:
                return
            if pending.attempts < MAX_ATTEMPTS:
                self.redispatched += 1
                call.waiting.appendleft(pending)
            else:
                self._answer(call, pending.work.index, self._lost_result(pending))

    # -- answers given here ----------------------------------------------------------------------------------
    def _base(self, item: Work) -> dict:
        return {"problem_id": item.problem.id, "problem_sha256": item.problem.sha256,
                "candidate_sha256": _sha(item.candidate.text), "environment": self._membership.environment}

    def _deadline(self, item: Work) -> EvalResult:
        return deadline_result(self._base(item), item.deadline_s)

    def _lost_result(self, pending: _Pending) -> EvalResult:
        return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.STATIC,
                          message=f"{LOST_MESSAGE} ({pending.attempts} attempts)",
                          feedback="the evaluators judging this item were lost (their Ray actors or nodes "
                                   "died): this says nothing about the code\n"
                                   + "\n".join(pending.reasons)[-2000:],
                          no_verdict=True, **self._base(pending.work))

    def _unserved_result(self, item: Work) -> EvalResult:
        return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.STATIC,
                          message="not judged: no evaluator of the Ray pool was ready for "
                                  f"{self.actor_wait_s:g} s",
                          feedback="this says nothing about the code; last error: "
                                   f"{self._membership.last_error or 'none'}",
                          no_verdict=True, **self._base(item))

    def _closed_result(self, item: Work) -> EvalResult:
        return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.STATIC,
                          message="not judged: the Ray pool was closed",
                          feedback="this says nothing about the code", no_verdict=True, **self._base(item))


def _left(item: Work, now: float) -> float | None:
    return None if item.deadline_at is None else item.deadline_at - now


def _passed(item: Work, now: float) -> bool:
    return item.deadline_at is not None and item.deadline_at <= now
