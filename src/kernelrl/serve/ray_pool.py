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

Ray is imported only when a pool is built, so this module imports without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import queue
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from kernelrl.candidates import Candidate
from kernelrl.evaluate.evaluator import Evaluator, _deadline_result, _settings_from
from kernelrl.evaluate.scorer import Indexed, ScorerBase, Work
from kernelrl.evaluate.settings import EvalConfig, EvaluatorError, EvaluatorSettings, VerdictSettings
from kernelrl.problems import Problem
from kernelrl.results import Environment, EvalResult, Stage, Status

__all__ = ["MAX_ATTEMPTS", "EvalActor", "MemberInfo", "RayScorer"]

INSTALL_HINT = "the Ray pool needs Ray: pip install 'kernelrl[ray]'"
MAX_ATTEMPTS = 2  # actors an item is sent to before it ends `no_verdict` (one that kills actors costs two)
ACTOR_THREADS = 64  # the actor's Ray threads: its evaluations in flight, and room for `ready` beside them
DEADLINE_GRACE_S = 5.0  # an actor answers a passed deadline itself; past this the dispatcher answers for it
MIN_REFRESH_GAP_S = 0.5  # a lost actor re-reads membership this soon, not sooner (a dead node's names linger)
LOST_MESSAGE = "not judged: the evaluator died"

# one item on the wire: (index in the call, problem, candidate, seconds left or None, the deadline as given)
WireItem = tuple[int, Problem, Candidate, float | None, float | None]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return ray


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class EvalActor:
    """One evaluator on one GPU of the cluster (or on CPU cores), as a Ray actor (`RayScorer` wraps this class
    with `ray.remote`). Ray's logical GPU sets CUDA_VISIBLE_DEVICES, so the evaluator's device is "cuda": the
    one GPU this actor sees. Evaluator settings asking for "cpu" keep it on the CPU even where Ray gave the
    actor a GPU; an actor without one evaluates on the CPU.

    Its methods run on Ray's threads, which come and go; the evaluator's workers live on the evaluator's own
    thread (`ProcessOwner`), so they outlive any call."""

    def __init__(self, settings: EvaluatorSettings, gpu: bool) -> None:
        device = "cuda" if gpu and settings.device != "cpu" else "cpu"
        self.settings = dataclasses.replace(settings, device=device)
        self.evaluator = Evaluator(self.settings)
        self.evaluator.warm_up_in_background()  # `ready` waits for it; evaluations may start before
        self._warm_lock = threading.Lock()
        self._problems: dict[tuple[str, str], Problem] = {}  # (path, sha256) -> the problem as readable here
        self._problems_lock = threading.Lock()

    def ready(self) -> dict:
        """Start the evaluator's workers; its capacity and where it runs, once they are up."""
        with self._warm_lock:
            self.evaluator.warm_up()
            env = self.evaluator.environment()
        ray = _ray()
        return {"slots": max(1, min(self.evaluator.slots.workers, ACTOR_THREADS - 4)),
                "device": self.settings.device, "node_id": ray.get_runtime_context().get_node_id(),
                "pid": os.getpid(), "environment": dataclasses.asdict(env)}

    def evaluate(self, items: list[WireItem], verdict: VerdictSettings | None) -> list[tuple[int, str]]:
        """Judge `items`; each answer is (its index, its EvalResult as JSON). Deadlines arrive as seconds left
        (monotonic clocks differ between processes and hosts)."""
        now = time.monotonic()
        work = [Work(index, self._readable(problem), candidate,
                     now + left if left is not None else None, given)
                for index, problem, candidate, left, given in items]
        answers = self.evaluator._evaluate_work(iter(work), verdict)
        return [(index, result.to_json()) for index, result in answers]

    def close(self) -> None:
        """Stop the evaluator's workers (a killed actor's workers end with its process)."""
        self.evaluator.close()

    def _readable(self, problem: Problem) -> Problem:
        """The problem with a path this node can read: the judge and the sandbox open the problem's file,
        which a driver on another host may have loaded from a directory this node does not have."""
        key = (str(problem.path), problem.sha256)
        with self._problems_lock:
            if key not in self._problems:
                try:
                    same = _sha(Path(problem.path).read_text()) == problem.sha256
                except OSError:
                    same = False
                if not same:  # one copy per problem and node, named by content, written whole or not at all
                    local = (Path(tempfile.gettempdir()) / "kernelrl-ray-problems" / problem.sha256
                             / Path(problem.path).name)
                    if not local.exists():
                        local.parent.mkdir(parents=True, exist_ok=True)
                        partial = local.with_name(f".{local.name}.{os.getpid()}.{threading.get_ident()}")
                        partial.write_text(problem.source)
                        partial.replace(local)
                    problem = dataclasses.replace(problem, path=local)
                self._problems[key] = problem
            return self._problems[key]


class MemberInfo(NamedTuple):
    """One actor of the pool as the dispatcher sees it."""

    name: str
    node_id: str | None  # None: a CPU actor, placed anywhere
    ready: bool  # warmed up and taking items
    slots: int  # items it takes at once (0 until ready)
    in_flight: int  # items sent to it and not answered yet, over every call
    done: int  # items it answered for this pool


@dataclass(eq=False)
class _Member:
    name: str
    handle: Any
    node_id: str | None
    created: bool  # created by this pool (else joined by name)
    slots: int = 0  # 0 until `ready` answered
    in_flight: int = 0
    done: int = 0
    ready_ref: Any = None  # the pending `ready` call while it warms up
    info: dict = field(default_factory=dict)

    def free(self) -> int:
        return self.slots - self.in_flight if self.slots else 0


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
_WAKE = ("wake",)  # an event that only wakes the dispatcher


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
        self._members: dict[str, _Member] = {}
        self._created: dict[str, Any] = {}  # name -> handle of the actors this pool created
        self._calls: deque[_Call] = deque()  # in turn order
        self._flying: dict[Any, tuple[_Member, _Call, _Pending]] = {}  # actor call -> its actor, call, item
        self._dispatcher: threading.Thread | None = None
        self._actor_class: Any = None
        self._generation = 0  # bumped by close(): the dispatcher of an earlier generation stops
        self._started = False
        self._own_ray = False
        self._next_refresh = float("-inf")
        self._unserved_since: float | None = None  # since when items waited with no actor ready
        self._environment: Environment | None = None  # a ready actor's, for answers given here
        self._last_error = ""

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
        self._start()
        with self._lock:
            self._refresh(force=True)
            pending = {m.ready_ref: m for m in self._members.values() if m.ready_ref is not None}
        if pending:
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=timeout_s)
            for ref in done:
                self._took_ready(pending[ref], ref)
        with self._lock:
            if not any(m.slots for m in self._members.values()):
                raise EvaluatorError(f"no evaluator of the Ray pool became ready within {timeout_s} s"
                                     + (f": {self._last_error}" if self._last_error else ""))

    def members(self) -> list[MemberInfo]:
        """The pool's actors now (membership is re-read from the cluster at most every `refresh_s`)."""
        with self._lock:
            if self._started:
                self._refresh()
            return [MemberInfo(m.name, m.node_id, m.slots > 0, m.slots, m.in_flight, m.done)
                    for m in self._members.values()]

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
            created, self._created = self._created, {}
            self._members.clear()
            self._started = False
            own, self._own_ray = self._own_ray, False
            dispatcher, self._dispatcher = self._dispatcher, None
            self._next_refresh = float("-inf")
        self._events.put(_WAKE)
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
        self._start()
        call = _Call(verdict_ref=ray.put(verdict or self.verdict), cond=threading.Condition(self._lock))
        with self._lock:
            self._calls.append(call)
            self._ensure_dispatcher()
        reader = threading.Thread(target=self._read, args=(call, work), name="kernelrl-ray-read", daemon=True)
        reader.start()
        self._events.put(_WAKE)
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
                self._events.put(_WAKE)
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
                        self._took_ready(event[1], event[2])
                with self._lock:
                    if self._generation != generation:
                        return
                    if self._calls or self._flying:
                        self._refresh()
                    self._expire()
                    self._serve_unserved()
                    self._send()
            except BaseException as exc:  # noqa: BLE001 - e.g. Ray shut down under the pool: every caller hears
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
            times.append(self._next_refresh)
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
        while self._calls and self._free_slots() > 0:
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
        member = max(self._members.values(), key=_Member.free)
        member.in_flight += 1
        pending.attempts += 1
        item: WireItem = (pending.work.index, pending.work.problem, pending.work.candidate, left,
                          pending.work.deadline_s)
        ref = member.handle.evaluate.remote([item], call.verdict_ref)
        self._flying[ref] = (member, call, pending)
        ref.future().add_done_callback(lambda _, ref=ref: self._events.put(("done", ref)))

    def _free_slots(self) -> int:
        return sum(max(0, m.free()) for m in self._members.values())

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
        if any(m.slots for m in self._members.values()) or not self._calls:
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
            self._lost(member, reason)
            pending.reasons.append(reason)
            if call.stopped or call.closed or pending.work.index in call.answered:
                return
            if pending.attempts < MAX_ATTEMPTS:
                self.redispatched += 1
                call.waiting.appendleft(pending)
            else:
                self._answer(call, pending.work.index, self._lost_result(pending))

    # -- membership ------------------------------------------------------------------------------------------
    def _start(self) -> None:
        """Connect to Ray (once) and read the membership."""
        ray = _ray()
        with self._lock:
            if self._started:
                return
            if not ray.is_initialized():
                try:
                    ray.init(address=self.address, namespace=self.namespace)
                except ConnectionError as exc:
                    raise EvaluatorError(f"cannot join the Ray cluster at {self.address!r} ({exc}): start "
                                         "one with `ray start --head`, or pass address=None for a local "
                                         "instance") from None
                self._own_ray = True
            if self._actor_class is None:
                self._actor_class = ray.remote(EvalActor)
            self._started = True
            self._refresh(force=True)
            if not self._members:
                self._started = False
                raise EvaluatorError("the Ray cluster has no GPU for the pool's evaluators: add GPU nodes, "
                                     "or pass cpu_actors=N to evaluate on its CPUs")

    def _refresh(self, force: bool = False) -> None:
        """Membership from the cluster, at most every `refresh_s`: an actor per GPU of each live node (joined
        by name, or created), CPU actors as configured; actors of nodes that left are dropped. Under the
        lock."""
        ray = _ray()
        now = time.monotonic()
        if not force and now < self._next_refresh:
            return
        self._next_refresh = now + self.refresh_s
        wanted: dict[str, tuple[str | None, int]] = {}
        nodes = sorted((n for n in ray.nodes() if n.get("Alive")), key=lambda n: n["NodeID"])
        for node in nodes:
            for k in range(int(node.get("Resources", {}).get("GPU", 0))):
                wanted[f"eval/{node['NodeID']}/{k}"] = (node["NodeID"], 1)
        if self.cpu_actors and (not wanted or self.settings.device == "cpu"):
            for k in range(self.cpu_actors):
                wanted[f"eval/cpu/{k}"] = (None, 0)
        if self.max_actors is not None:  # the members it has first, so that warm actors stay
            order = sorted(wanted, key=lambda name: (name not in self._members, name))
            wanted = {name: wanted[name] for name in order[:self.max_actors]}
        for name in [n for n in self._members if n not in wanted]:
            del self._members[name]  # its node left: its calls in flight still come back
        for name, (node_id, gpus) in wanted.items():
            if name not in self._members:
                self._members[name] = self._join(name, node_id, gpus)
            member = self._members[name]
            if not member.slots and member.ready_ref is None:
                member.ready_ref = ref = member.handle.ready.remote()
                ref.future().add_done_callback(
                    lambda _, m=member, ref=ref: self._events.put(("ready", m, ref)))

    def _join(self, name: str, node_id: str | None, gpus: int) -> _Member:
        """The actor of this name in the namespace: an existing one (another driver's, or restarting), or a
        new one placed on its node."""
        ray = _ray()
        try:
            return _Member(name, ray.get_actor(name, namespace=self.namespace), node_id, created=False)
        except ValueError:
            pass
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options: dict[str, Any] = {
            "name": name, "namespace": self.namespace, "get_if_exists": True, "num_gpus": gpus,
            "max_restarts": -1, "max_task_retries": 0, "max_concurrency": ACTOR_THREADS}
        if self.detached:
            options["lifetime"] = "detached"
        if node_id is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
        handle = self._actor_class.options(**options).remote(self.settings, gpus > 0)
        self._created[name] = handle
        return _Member(name, handle, node_id, created=True)

    def _took_ready(self, member: _Member, ref: Any) -> None:
        """An actor's `ready` answered: it takes items now; or it failed and warms up again after the next
        refresh."""
        ray = _ray()
        try:
            info = ray.get(ref)
        except ray.exceptions.RayError as exc:
            with self._lock:
                if member.ready_ref is ref:
                    self._lost(member, f"{member.name}: {str(exc)[-500:]}")
            return
        with self._lock:
            if member.ready_ref is not ref:
                return
            member.ready_ref, member.info, member.slots = None, info, int(info["slots"])
            if self._environment is None and info.get("environment"):
                self._environment = Environment(**info["environment"])
        self._events.put(_WAKE)  # slots to fill

    def _lost(self, member: _Member, reason: str) -> None:
        """An actor that died or failed: out of the membership until a refresh joins its name again (Ray
        restarts it, or a new one is created). Under the lock."""
        self._last_error = reason
        if self._members.get(member.name) is member:
            del self._members[member.name]
        member.slots, member.ready_ref = 0, None
        self._next_refresh = min(self._next_refresh, time.monotonic() + MIN_REFRESH_GAP_S)

    # -- answers given here ----------------------------------------------------------------------------------
    def _base(self, item: Work) -> dict:
        return {"problem_id": item.problem.id, "problem_sha256": item.problem.sha256,
                "candidate_sha256": _sha(item.candidate.text), "environment": self._environment}

    def _deadline(self, item: Work) -> EvalResult:
        return _deadline_result(self._base(item), item.deadline_s)

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
                                   f"{self._last_error or 'none'}",
                          no_verdict=True, **self._base(item))

    def _closed_result(self, item: Work) -> EvalResult:
        return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.STATIC,
                          message="not judged: the Ray pool was closed",
                          feedback="this says nothing about the code", no_verdict=True, **self._base(item))


def _left(item: Work, now: float) -> float | None:
    return None if item.deadline_at is None else item.deadline_at - now


def _passed(item: Work, now: float) -> bool:
    return item.deadline_at is not None and item.deadline_at <= now
