"""The membership of a Ray pool: which `EvalActor`s it uses, read from the cluster as nodes join and leave.
`RayScorer` (in `ray_pool`) owns one `Membership`; its dispatcher sends items to the members that are ready.

An actor per GPU of each live node, named `eval/{node_id}/{k}` in the pool's namespace, joined by name when
another driver already started it (or Ray is restarting it), else created on its node; CPU actors when
configured. A member takes items once its `ready` call answered; one that died or failed leaves until a later
read joins its name again.

Ray is imported only when a pool connects, so this module imports without it.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kernelrl.evaluate.settings import EvaluatorError, EvaluatorSettings
from kernelrl.results import Environment
from kernelrl.serve.ray_actor import ACTOR_THREADS, EvalActor, _ray

__all__ = ["MemberInfo", "Membership"]

MIN_REFRESH_GAP_S = 0.5  # a lost actor re-reads membership this soon, not sooner (a dead node's names linger)
WAKE = ("wake",)  # an event that only wakes the dispatcher


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


class Membership:
    """The actors of one pool, by name. It shares the pool's lock (methods marked "under the lock" expect it
    held) and posts to the dispatcher's `events`: ("ready", member, ref) when a `ready` call ends, `WAKE` when
    a member has taken slots. Parameters as `RayScorer`."""

    def __init__(self, *, address: str | None, namespace: str, settings: EvaluatorSettings, cpu_actors: int,
                 max_actors: int | None, detached: bool, refresh_s: float, lock: threading.RLock,
                 events: queue.Queue) -> None:
        self.address, self.namespace, self.settings = address, namespace, settings
        self.cpu_actors, self.max_actors, self.detached = cpu_actors, max_actors, detached
        self.refresh_s = refresh_s
        self.members: dict[str, _Member] = {}
        self.created: dict[str, Any] = {}  # name -> handle of the actors this pool created
        self.started = False
        self.own_ray = False  # this pool connected to Ray (and disconnects when it closes)
        self.next_refresh = float("-inf")
        self.environment: Environment | None = None  # a ready actor's, for answers the pool gives itself
        self.last_error = ""
        self._lock = lock
        self._events = events
        self._actor_class: Any = None

    def start(self) -> None:
        """Connect to Ray (once) and read the membership."""
        ray = _ray()
        with self._lock:
            if self.started:
                return
            if not ray.is_initialized():
                try:
                    ray.init(address=self.address, namespace=self.namespace)
                except ConnectionError as exc:
                    raise EvaluatorError(f"cannot join the Ray cluster at {self.address!r} ({exc}): start "
                                         "one with `ray start --head`, or pass address=None for a local "
                                         "instance") from None
                self.own_ray = True
            if self._actor_class is None:
                self._actor_class = ray.remote(EvalActor)
            self.started = True
            self.refresh(force=True)
            if not self.members:
                self.started = False
                raise EvaluatorError("the Ray cluster has no GPU for the pool's evaluators: add GPU nodes, "
                                     "or pass cpu_actors=N to evaluate on its CPUs")

    def refresh(self, force: bool = False) -> None:
        """Membership from the cluster, at most every `refresh_s`: an actor per GPU of each live node (joined
        by name, or created), CPU actors as configured; actors of nodes that left are dropped. Under the
        lock."""
        ray = _ray()
        now = time.monotonic()
        if not force and now < self.next_refresh:
            return
        self.next_refresh = now + self.refresh_s
        wanted: dict[str, tuple[str | None, int]] = {}
        nodes = sorted((n for n in ray.nodes() if n.get("Alive")), key=lambda n: n["NodeID"])
        for node in nodes:
            for k in range(int(node.get("Resources", {}).get("GPU", 0))):
                wanted[f"eval/{node['NodeID']}/{k}"] = (node["NodeID"], 1)
        if self.cpu_actors and (not wanted or self.settings.device == "cpu"):
            for k in range(self.cpu_actors):
                wanted[f"eval/cpu/{k}"] = (None, 0)
        if self.max_actors is not None:  # the members it has first, so that warm actors stay
            order = sorted(wanted, key=lambda name: (name not in self.members, name))
            wanted = {name: wanted[name] for name in order[:self.max_actors]}
        for name in [n for n in self.members if n not in wanted]:
            del self.members[name]  # its node left: its calls in flight still come back
        for name, (node_id, gpus) in wanted.items():
            if name not in self.members:
                self.members[name] = self._join(name, node_id, gpus)
            member = self.members[name]
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
        self.created[name] = handle
        return _Member(name, handle, node_id, created=True)

    def took_ready(self, member: _Member, ref: Any) -> None:
        """An actor's `ready` answered: it takes items now; or it failed and warms up again after the next
        refresh."""
        ray = _ray()
        try:
            info = ray.get(ref)
        except ray.exceptions.RayError as exc:
            with self._lock:
                if member.ready_ref is ref:
                    self.lost(member, f"{member.name}: {str(exc)[-500:]}")
            return
        with self._lock:
            if member.ready_ref is not ref:
                return
            member.ready_ref, member.info, member.slots = None, info, int(info["slots"])
            if self.environment is None and info.get("environment"):
                self.environment = Environment(**info["environment"])
        self._events.put(WAKE)  # slots to fill

    def lost(self, member: _Member, reason: str) -> None:
        """An actor that died or failed: out of the membership until a refresh joins its name again (Ray
        restarts it, or a new one is created). Under the lock."""
        self.last_error = reason
        if self.members.get(member.name) is member:
            del self.members[member.name]
        member.slots, member.ready_ref = 0, None
        self.next_refresh = min(self.next_refresh, time.monotonic() + MIN_REFRESH_GAP_S)

    def pending_ready(self) -> dict[Any, _Member]:
        """The `ready` calls still running, with their members. Under the lock."""
        return {m.ready_ref: m for m in self.members.values() if m.ready_ref is not None}

    def any_ready(self) -> bool:
        """Whether some member takes items. Under the lock."""
        return any(m.slots for m in self.members.values())

    def free_slots(self) -> int:
        """Items the members take now, beside those in flight. Under the lock."""
        return sum(max(0, m.free()) for m in self.members.values())

    def least_busy(self) -> _Member:
        """The member with the most free slots. Under the lock."""
        return max(self.members.values(), key=_Member.free)

    def info(self) -> list[MemberInfo]:
        """The members now, re-read from the cluster at most every `refresh_s`. Under the lock."""
        if self.started:
            self.refresh()
        return [MemberInfo(m.name, m.node_id, m.slots > 0, m.slots, m.in_flight, m.done)
                for m in self.members.values()]

    def forget(self) -> tuple[dict[str, Any], bool]:
        """Let go of every member (the next `start` reads the membership again): the handles of the actors
        this pool created, and whether it connected to Ray. Under the lock."""
        created, self.created = self.created, {}
        own, self.own_ray = self.own_ray, False
        self.members.clear()
        self.started = False
        self.next_refresh = float("-inf")
        return created, own
