"""The actor side of the Ray pool: `EvalActor`, one `Evaluator` on one GPU of a Ray cluster (or on CPU cores),
and the item it takes from the pool's dispatcher (`WireItem`). The pool (`ray_pool.RayScorer`, through its
`ray_members.Membership`) wraps the class with `ray.remote`, so this module is what each actor's process
imports.

Ray is imported only when an actor runs or a pool is built, so this module imports without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kernelrl.candidates import Candidate
from kernelrl.evaluate.evaluator import Evaluator
from kernelrl.evaluate.scorer import Work
from kernelrl.evaluate.settings import EvaluatorSettings, VerdictSettings
from kernelrl.problems import Problem

__all__ = ["ACTOR_THREADS", "EvalActor", "WireItem"]

INSTALL_HINT = "the Ray pool needs Ray: pip install 'kernelrl[ray]'"
ACTOR_THREADS = 64  # the actor's Ray threads: its evaluations in flight, and room for `ready` beside them

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
    """One evaluator on one GPU of the cluster (or on CPU cores), as a Ray actor (the pool wraps this class
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
