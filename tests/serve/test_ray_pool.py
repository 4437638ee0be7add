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
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from kernelrl import EvalItem, Scorer, Stage, Status, VerdictSettings  # noqa: E402
from kernelrl.serve.ray_pool import DEADLINE_GRACE_S, RayScorer  # noqa: E402

NAMESPACE = "kernelrl-test-pool"
VERDICT = VerdictSettings(trials=1)
PROSE = "I am not able to write this kernel, sorry."
HANG = ("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        while True:\n            pass\n")


def slow(code: str, seconds: float) -> str:
    """A correct candidate whose construction sleeps (it is built twice: init and correctness)."""
    return (code.replace("import torch\n", "import time\nimport torch\n", 1)
            .replace("        super().__init__()\n",
                     f"        super().__init__()\n        time.sleep({seconds})\n", 1))


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    if ray.is_initialized():
        pytest.skip("Ray is already initialized in this process")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, num_gpus=4, include_dashboard=False, log_to_driver=False)
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
    """Calls take free slots in turns: a request made while a batch fills every slot gets the next free one,
    not the one after the batch's queue."""
    relu = suite.get("level0/1_relu")
    code = solution(suite, relu.id)
    batch = [(relu, slow(code, 1.5 + k / 100)) for k in range(8)]  # four slots: two rounds and more
    big: list[float] = []
    small: list[float] = []
    started = time.monotonic()

    def run_batch() -> None:
        for result in pool.evaluate_many(batch, verdict=VERDICT):
            assert result.status is Status.CORRECT, result.message
            big.append(time.monotonic() - started)

    caller = threading.Thread(target=run_batch, daemon=True)
    caller.start()
    end = time.monotonic() + 60
    while sum(m.in_flight for m in pool.members()) < 4:  # the batch holds every slot
        assert time.monotonic() < end and caller.is_alive(), pool.members()
        time.sleep(0.05)
    assert pool.evaluate(relu, code, verdict=VERDICT).status is Status.CORRECT
    small.append(time.monotonic() - started)
    caller.join(180)
    assert len(big) == len(batch)
    # in turns, the request is sent at the batch's first answer; first come, first served, at its fifth
    assert small[0] < sorted(big)[4], (small, big)


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
    items = [(relu, slow(solution(suite, relu.id), 1.0 + k / 10)) for k in range(6)]  # distinct candidates
    answers: list = []
    failure: list[BaseException] = []
    redispatched = pool.redispatched

    def run() -> None:
        try:
            answers.extend(pool.evaluate_indexed(items, verdict=VERDICT))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failure.append(exc)

    caller = threading.Thread(target=run, daemon=True)
    caller.start()
    end = time.monotonic() + 60
    while not (busy := [m for m in pool.members() if m.in_flight > 0]):
        assert time.monotonic() < end and caller.is_alive(), "nothing was dispatched"
        time.sleep(0.05)
    time.sleep(0.5)  # its evaluations are running
    victim = busy[0].name
    ray.kill(ray.get_actor(victim, namespace=NAMESPACE))  # no restart: the pool creates a new one by name
    caller.join(180)
    assert not caller.is_alive() and not failure, failure
    seen = Counter(index for index, _ in answers)
    assert sorted(seen) == list(range(len(items))) and set(seen.values()) == {1}, seen
    assert pool.redispatched > redispatched  # the victim's items went to the other actor
    assert all(r.status is Status.CORRECT and not r.no_verdict for _, r in answers), \
        [(r.status, r.message) for _, r in answers]


def test_closing_the_pool_mid_call_answers_every_item_once_without_a_verdict(pool, suite):
    """(Last of the pool's tests: it lets go of the actors.)"""
    relu = suite.get("level0/1_relu")
    items = [(relu, slow(solution(suite, relu.id), 2.0 + k / 100)) for k in range(6)]
    answers: list = []
    caller = threading.Thread(target=lambda: answers.extend(pool.evaluate_indexed(items, verdict=VERDICT)),
                              daemon=True)
    caller.start()
    end = time.monotonic() + 60
    while sum(m.in_flight for m in pool.members()) < 4:
        assert time.monotonic() < end and caller.is_alive(), pool.members()
        time.sleep(0.05)
    pool.close()
    caller.join(60)
    assert not caller.is_alive()
    assert sorted(index for index, _ in answers) == list(range(len(items)))
    assert all(r.no_verdict and "closed" in r.message for _, r in answers), [r.message for _, r in answers]


def test_the_module_imports_without_ray_and_says_how_to_install_it():
    code = ("import sys; sys.modules['ray'] = None\n"
            "from kernelrl.serve.ray_pool import RayScorer\n"
            "try:\n    RayScorer()\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'kernelrl[ray]'" in out.stdout
