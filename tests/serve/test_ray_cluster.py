"""The Ray pool as nodes join and leave: a one-host `ray.cluster_utils.Cluster` whose head has no GPU (a CPU
evaluator there), a worker node with one logical GPU added (the pool takes it in) and removed mid-batch (its
items finish elsewhere, once each)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # starts a real Ray cluster: `make test` runs these, `make test-fast` does not

from pool_calls import InBackground, slow  # noqa: E402

from kernelrl import Status, VerdictSettings  # noqa: E402
from kernelrl.evaluate.settings import EvaluatorError  # noqa: E402
from kernelrl.serve.ray_pool import RayScorer  # noqa: E402

NAMESPACE = "kernelrl-test-cluster"
VERDICT = VerdictSettings(trials=1)


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        pytest.skip("Ray is already initialized in this process")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0})
    try:
        ray.init(address=made.address, log_to_driver=False)
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


def test_the_pool_takes_in_a_joining_node_and_survives_its_removal_mid_batch(cluster, suite):
    relu = suite.get("level0/1_relu")
    code = suite.solution_path(relu).read_text()
    with pytest.raises(EvaluatorError, match="no GPU"):  # a GPU pool on a cluster without one says so at once
        RayScorer(namespace=NAMESPACE, device="cpu").evaluate(relu, code)
    with RayScorer(namespace=NAMESPACE, device="cpu", cpu_actors=1, max_concurrency=2, standby_sandboxes=0,
                   result_cache=False, refresh_s=0.5) as pool:
        pool.warm_up()
        assert [m.name for m in pool.members()] == ["eval/cpu/0"]

        worker = cluster.add_node(num_cpus=1, num_gpus=1)
        cluster.wait_for_nodes()
        joined = f"eval/{worker.node_id}/0"
        end = time.monotonic() + 60
        while not any(m.name == joined and m.ready for m in pool.members()):  # membership is re-read by calls
            assert time.monotonic() < end, pool.members()
            result = pool.evaluate(relu, code, verdict=VERDICT)
            assert result.status is Status.CORRECT, (result.message, result.log[-1000:])
            time.sleep(0.2)
        batch = [(relu, code)] * 4  # two slots an actor: both actors take two
        assert all(r.status is Status.CORRECT for r in pool.evaluate_many(batch, verdict=VERDICT))
        assert pool.counts.get(joined, 0) >= 1, pool.counts

        items = [(relu, slow(code, 1.0 + k / 10)) for k in range(6)]
        redispatched = pool.redispatched
        call = InBackground(pool, items, VERDICT)
        end = time.monotonic() + 60
        while not any(m.name == joined and m.in_flight for m in pool.members()):
            assert time.monotonic() < end and call.thread.is_alive(), pool.members()
            time.sleep(0.05)
        time.sleep(0.5)  # its evaluations are running
        cluster.remove_node(worker, allow_graceful=False)
        answers = call.join(180)
        call.assert_each_answered_once()
        assert all(r.status is Status.CORRECT and not r.no_verdict for _, r in answers), \
            [(r.status, r.message) for _, r in answers]
        assert pool.redispatched > redispatched
        end = time.monotonic() + 60
        while [m.name for m in pool.members()] != ["eval/cpu/0"]:  # the node's actor leaves once Ray says so
            assert time.monotonic() < end, pool.members()
            time.sleep(0.2)
        left_after = time.monotonic() - end + 60
        assert pool.evaluate(relu, code, verdict=VERDICT).status is Status.CORRECT
        print(f"the removed node's actor left the membership {left_after:.1f} s after the batch")
