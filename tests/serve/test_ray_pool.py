"""The Ray pool as a `Scorer`, on a real local Ray instance with logical GPUs (CPU-mode evaluators): the
verdicts of in-process evaluation, per-item deadlines, a pickled pool, an actor killed mid-batch (nothing
lost, nothing doubled), and the module importing without Ray."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # starts a real Ray cluster: `make test` runs these, `make test-fast` does not

from pool_calls import InBackground, slow  # noqa: E402

from kernelrl import EvalItem, Scorer, Stage, Status, VerdictSettings  # noqa: E402
from kernelrl.serve.ray_pool import DEADLINE_GRACE_S, MemberInfo, RayScorer  # noqa: E402

NAMESPACE = "kernelrl-test-pool"
VERDICT = VerdictSettings(trials=1)
PROSE = "I am not able to write this kernel, sorry."
HANG = ("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        while True:\n            pass\n")


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    if ray.is_initialized():
        pytest.skip("Ray is already initialized in this process")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # the actors (and their judges, zygotes and sandboxes) at the niceness of the rest of the suite, not Ray's
    # 15: beside another test file's processes they would get a few percent of a core, and an evaluator's own
    # start-up limits (the zygote's, a fork's answer) would run out
    # a new instance of its own ("local"): a cluster another test file started beside it (xdist's other
    # worker) would otherwise be joined, and refuses num_cpus/num_gpus
    ray.init(address="local", num_cpus=2, num_gpus=4, include_dashboard=False, log_to_driver=False,
             _system_config={"worker_niceness": 0})
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def pool(ray_session) -> Iterator[RayScorer]:
    """Two CPU-mode evaluators over two of the four logical GPUs, two items each at once."""
    with RayScorer(namespace=NAMESPACE, device="cpu", max_actors=2, max_concurrency=2, standby_sandboxes=0,
                   result_cache=False, refresh_s=1.0) as scorer:
        scorer.warm_up()
        yield scorer


def solution(suite, problem_id: str) -> str:
    return suite.solution_path(suite.get(problem_id)).read_text()


def wait_for(pool: RayScorer, condition, caller: threading.Thread | None = None,
             timeout_s: float = 300.0) -> list[MemberInfo]:
    """Poll the pool's members until `condition(members)` holds (while `caller`, if given, is still running):
    a state, not a time, so a loaded machine only makes the wait longer."""
    end = time.monotonic() + timeout_s
    while not condition(members := pool.members()):
        assert time.monotonic() < end, members
        assert caller is None or caller.is_alive(), ("the call ended first", members)
        time.sleep(0.05)
    return members


def settled(pool: RayScorer) -> list[MemberInfo]:
    """Both actors ready (one killed by an earlier test is created again and warms up) and idle (the items of
    an earlier call are done): whatever is then in flight is the test's own."""
    return wait_for(pool, lambda members: len(members) == 2
                    and all(m.ready and m.in_flight == 0 for m in members))


def test_the_pool_gives_the_verdicts_of_in_process_evaluation(pool, suite, cpu_evaluator):
    assert isinstance(pool, Scorer)
    relu, silu, elu = (suite.get(f"level0/{name}") for name in ("1_relu", "4_silu", "6_elu"))
    items = [(relu, solution(suite, relu.id)), (silu, solution(suite, silu.id)),
             (elu, solution(suite, elu.id)), (silu, solution(suite, relu.id)), (relu, PROSE),
             (elu, solution(suite, silu.id))]
    before = dict(pool.counts)
    remote = list(pool.evaluate_many(items, ordered=True, verdict=VERDICT))
    local = list(cpu_evaluator.evaluate_many(items, ordered=True, verdict=VERDICT))
    assert [r.status for r in remote] == [r.status for r in local]
    assert [r.status for r in remote][:5] == [Status.CORRECT] * 3 + [Status.WRONG_OUTPUT, Status.FORMAT_ERROR]
    assert all(r.environment.mode == "cpu-interpreter" for r in remote)  # not the logical GPU Ray handed out
    assert [r.problem_id for r in remote] == [p.id for p, _ in items]
    spread = {name: n - before.get(name, 0) for name, n in pool.counts.items()}
    assert sum(spread.values()) == len(items) and len(pool.members()) == 2
    assert all(spread.get(m.name, 0) > 0 for m in pool.members()), spread  # both actors took work


def test_a_passed_deadline_is_no_verdict_and_an_items_deadline_reaches_its_actor(pool, suite):
    relu = suite.get("level0/1_relu")

    def late() -> Iterator[EvalItem]:
        time.sleep(0.2)  # read after its deadline
        yield EvalItem(relu, solution(suite, relu.id), deadline_s=0.05)

    [passed] = pool.evaluate_many(late(), verdict=VERDICT)
    assert passed.no_verdict and passed.status is Status.TIMEOUT and "deadline" in passed.message

    started = time.monotonic()
    hung, fine = pool.evaluate_many([EvalItem(relu, HANG, deadline_s=3.0), (relu, solution(suite, relu.id))],
                                    ordered=True, verdict=VerdictSettings(trials=1, run_timeout_s=120,
                                                                          static_checks=False))
    elapsed = time.monotonic() - started
    assert hung.no_verdict and hung.status is Status.TIMEOUT and "deadline" in hung.message
    # the actor's evaluator stopped the sandbox at the deadline (it got the seconds left); the dispatcher's
    # own answer, after a grace, would say nothing of how far the candidate got
    assert hung.stage is not Stage.STATIC and elapsed < 3.0 + DEADLINE_GRACE_S, (hung.stage, elapsed)
    assert fine.status is Status.CORRECT and not fine.no_verdict


def test_a_problem_file_the_actors_node_lacks_is_judged_from_its_source(pool, suite):
    """A driver on another host may load problems from a directory the actor's node does not have."""
    relu = suite.get("level0/1_relu")
    elsewhere = dataclasses.replace(relu, path=Path("/nonexistent/kernelrl-problems/1_relu.py"))
    result = pool.evaluate(elsewhere, solution(suite, relu.id), verdict=VERDICT)
    assert result.status is Status.CORRECT, result.message
    assert result.problem_id == relu.id and result.problem_sha256 == relu.sha256


def test_a_small_request_is_not_starved_by_a_large_batch(pool, suite):
    """Calls take free slots in turns: a request made while a batch fills every slot gets one of the next free
    slots, not the one after the batch's queue."""
    relu = suite.get("level0/1_relu")
    code = solution(suite, relu.id)
    settled(pool)
    # four slots: the batch's first four items fill them; the four behind them are slow (two sleeps of 5 s),
    # so that the request, sent at one of the first answers when calls take turns, is answered before any of
    # them however loaded the machine; first come, first served, it would be sent behind them
    batch = [(relu, slow(code, (1.5 if k < 4 else 5.0) + k / 100)) for k in range(8)]
    order: list[str] = []  # "big" or "small", in the order the answers came
    failure: list[BaseException] = []

    def run_batch() -> None:
        try:
            for result in pool.evaluate_many(batch, verdict=VERDICT):
                assert result.status is Status.CORRECT, result.message
                order.append("big")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failure.append(exc)

    caller = threading.Thread(target=run_batch, daemon=True)
    caller.start()
    wait_for(pool, lambda members: sum(m.in_flight for m in members) == 4, caller)  # the batch fills them
    assert pool.evaluate(relu, code, verdict=VERDICT).status is Status.CORRECT
    order.append("small")
    caller.join(300)
    assert not caller.is_alive() and not failure, failure
    assert order.count("big") == len(batch), order
    # in turns, the request is answered among the batch's first four answers; first come, first served,
    # after its fifth
    assert order.index("small") <= 4, order


def test_a_pickled_pool_joins_the_same_named_actors(pool, suite):
    """A pool travels to a trainer's reward worker as its configuration and finds the evaluators warm."""
    relu = suite.get("level0/1_relu")
    copy = pickle.loads(pickle.dumps(pool))
    try:
        assert copy.evaluate(relu, solution(suite, relu.id), verdict=VERDICT).status is Status.CORRECT
        assert sorted(m.name for m in copy.members()) == sorted(m.name for m in pool.members())
    finally:
        copy.close()
    named = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == NAMESPACE]
    assert len(named) == 2, named


def test_an_actor_killed_mid_batch_loses_and_doubles_nothing(pool, suite):
    relu = suite.get("level0/1_relu")
    settled(pool)
    # distinct candidates, each at least two seconds at its actor: none is answered before the kill
    items = [(relu, slow(solution(suite, relu.id), 1.0 + k / 10)) for k in range(6)]
    redispatched = pool.redispatched
    call = InBackground(pool, items, VERDICT)
    # every slot holds an item of this call (two more wait): the victim has items of its own in flight
    members = wait_for(pool, lambda members: sum(m.in_flight for m in members) == 4, call.thread)
    victim = max(members, key=lambda m: m.in_flight)
    # no restart: the pool creates a new one by name
    ray.kill(ray.get_actor(victim.name, namespace=NAMESPACE))
    answers = call.join(300)
    call.assert_each_answered_once()
    # the victim's items went to the other actor
    assert pool.redispatched - redispatched >= victim.in_flight > 0, (pool.redispatched, redispatched, victim)
    assert all(r.status is Status.CORRECT and not r.no_verdict for _, r in answers), \
        [(r.status, r.message) for _, r in answers]


def test_closing_the_pool_mid_call_answers_every_item_once_without_a_verdict(pool, suite):
    """(Last of the pool's tests: it lets go of the actors.)"""
    relu = suite.get("level0/1_relu")
    settled(pool)  # the actor killed by the test before is back: four slots
    items = [(relu, slow(solution(suite, relu.id), 2.0 + k / 100)) for k in range(6)]
    call = InBackground(pool, items, VERDICT)
    # four sent, two waiting
    wait_for(pool, lambda members: sum(m.in_flight for m in members) == 4, call.thread)
    pool.close()
    answers = call.join(60)
    call.assert_each_answered_once()
    assert all(r.no_verdict and "closed" in r.message for _, r in answers), [r.message for _, r in answers]


def test_the_module_imports_without_ray_and_says_how_to_install_it():
    code = ("import sys; sys.modules['ray'] = None\n"
            "from kernelrl.serve.ray_pool import RayScorer\n"
            "try:\n    RayScorer()\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'kernelrl[ray]'" in out.stdout
