"""kernelrl as an OpenEnv environment, served by the reward service on loopback and driven by OpenEnv's own
client: the task on reset, the verdict's feedback and reward on step, sessions kept apart, the token enforced
on WebSocket sessions, and evaluations run on the server's event loop through the service."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

pytest.importorskip("openenv")

from served import Gated, serve  # noqa: E402

from kernelrl import load_suite  # noqa: E402
from kernelrl.rewards import get_reward  # noqa: E402
from kernelrl.serve.openenv_env import KernelAction, KernelEnvClient, mount_openenv  # noqa: E402
from kernelrl.serve.service import ServiceSettings  # noqa: E402

SUITE = load_suite()
RELU, SILU = SUITE.get("level0/1_relu"), SUITE.get("level0/4_silu")
RELU_OK, SILU_OK = SUITE.solution_path(RELU).read_text(), SUITE.solution_path(SILU).read_text()
RELU_WRONG = RELU_OK.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")
NO_CODE = "I would write a kernel here, but I did not."


class Mounted:
    """`mount_openenv`, keeping the app it mounted on (to reach the served environment in-process)."""

    def __init__(self) -> None:
        self.app = None

    def __call__(self, app, service) -> None:
        mount_openenv(app, service)
        self.app = app

    def front(self):
        [mount] = [r for r in self.app.routes if getattr(r, "path", None) == "/openenv"]
        return mount.app


@pytest.fixture(scope="module")
def env_server(cpu_evaluator):
    mounted = Mounted()
    with serve(cpu_evaluator, extra_routes=mounted) as served:
        served.mounted = mounted
        yield served


def composite_of(served, observation) -> float:
    """The composite reward of the verdict the service journaled for this step."""
    stored = served.service.journal.get(observation.item_key)
    assert stored is not None, "the step's verdict is not in the service's journal"
    return get_reward("composite")(stored.result)


def test_reset_gives_the_task_and_steps_give_verdict_feedback_and_reward(env_server):
    with KernelEnvClient(f"{env_server.url}/openenv").sync() as env:
        first = env.reset(problem_id=RELU.id)
        task = first.observation
        assert (first.done, first.reward, task.problem_id, task.turn) == (False, None, RELU.id, 0)
        assert RELU.source.strip() in task.problem_description and task.reference_code == RELU.source
        assert "ModelNew" in task.problem_description and task.system_prompt
        good = env.step(KernelAction(problem_id=RELU.id, code=f"```python\n{RELU_OK}\n```"))
        obs = good.observation
        assert (obs.status, obs.correctness_pass, obs.compilation_success, obs.no_verdict) \
            == ("correct", True, True, False)
        assert good.done and obs.turn == 1 and "Verdict: correct" in obs.feedback
        assert good.reward == pytest.approx(composite_of(env_server, obs)) and good.reward > 1.0
        state = env.state()
        assert (state.problem_id, state.step_count, state.solved) == (RELU.id, 1, True)

        env.reset(problem_id=RELU.id, max_turns=2)
        wrong = env.step(KernelAction(problem_id=RELU.id, code=RELU_WRONG))
        assert wrong.observation.status == "wrong_output" and not wrong.observation.correctness_pass
        assert "Mismatch:" in wrong.observation.feedback and not wrong.done  # a second turn is left
        assert wrong.reward == pytest.approx(composite_of(env_server, wrong.observation))
        assert wrong.reward < good.reward
        none = env.step(KernelAction(problem_id=RELU.id, code=NO_CODE))
        assert none.observation.status == "format_error" and none.done
        assert none.reward == pytest.approx(composite_of(env_server, none.observation))
        assert none.reward < wrong.reward
        with pytest.raises(RuntimeError, match="episode is over"):
            env.step(KernelAction(problem_id=RELU.id, code=RELU_OK))


def test_concurrent_sessions_keep_their_own_problem(env_server):
    async def episode(problem, code):
        async with KernelEnvClient(f"{env_server.url}/openenv") as env:
            await env.reset(problem_id=problem.id)
            await asyncio.sleep(0.2)  # both sessions are open before either steps
            step = await env.step(KernelAction(problem_id=problem.id, code=code))
            return step, await env.state()

    async def both():
        return await asyncio.gather(episode(RELU, RELU_OK), episode(SILU, SILU_OK))

    (relu, relu_state), (silu, silu_state) = asyncio.run(both())
    assert (relu.observation.problem_id, relu.observation.status) == (RELU.id, "correct")
    assert (silu.observation.problem_id, silu.observation.status) == (SILU.id, "correct")
    assert (relu_state.problem_id, silu_state.problem_id) == (RELU.id, SILU.id)
    with KernelEnvClient(f"{env_server.url}/openenv").sync() as env:
        env.reset(problem_id=RELU.id)
        with pytest.raises(RuntimeError, match="episode is on problem 'level0/1_relu'"):
            env.step(KernelAction(problem_id=SILU.id, code=SILU_OK))


def test_stateless_http_step_takes_the_problem_from_the_action(env_server):
    reply = httpx.post(f"{env_server.url}/openenv/step", timeout=300,
                       json={"action": {"problem_id": SILU.id, "code": SILU_OK}})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["observation"]["problem_id"] == SILU.id and body["observation"]["status"] == "correct"
    assert body["done"] and body["reward"] > 1.0
    unknown = httpx.post(f"{env_server.url}/openenv/step",
                         json={"action": {"problem_id": "nope", "code": "x"}})
    assert unknown.status_code == 422 and "unknown problem" in unknown.text


def test_a_synchronous_step_from_another_thread_runs_on_the_servers_loop(env_server):
    front = env_server.mounted.front()
    httpx.get(f"{env_server.url}/openenv/health")  # the mount has seen the server's loop
    server_loop, service, loops = front.loop.loop, env_server.service, []
    assert server_loop is not None and server_loop.is_running()
    submit = service.submit

    async def recording(*args, **kwargs):
        loops.append(asyncio.get_running_loop())
        return await submit(*args, **kwargs)

    service.submit = recording
    try:
        env = front.env_factory()
        env.reset(problem_id=RELU.id)
        obs = env.step(KernelAction(problem_id=RELU.id, code=RELU_OK + "\n_sync = 1\n"))  # from this thread
    finally:
        del service.submit
    assert obs.status == "correct" and loops == [server_loop]


def test_sessions_need_the_token_when_the_service_has_one(cpu_evaluator):
    token = "a-token-of-sufficient-length"
    with serve(cpu_evaluator, token=token, extra_routes=mount_openenv) as served:
        url = f"{served.url}/openenv"
        with pytest.raises(ConnectionError), KernelEnvClient(url).sync() as env:
            env.reset(problem_id=RELU.id)
        with pytest.raises(ConnectionError), \
                KernelEnvClient(url, token="wrong-token-of-some-length").sync() as env:
            env.reset(problem_id=RELU.id)
        assert httpx.post(f"{url}/reset", json={"problem_id": RELU.id}).status_code == 401
        with KernelEnvClient(url, token=token).sync() as env:
            assert env.reset(problem_id=RELU.id).observation.problem_id == RELU.id


def test_a_step_on_a_full_queue_is_held_then_answered_without_verdict(cpu_evaluator):
    gated = Gated(cpu_evaluator)
    settings = ServiceSettings(max_queued_items=1, max_batch=1, hold_s=2, neutral_score=0.25)
    with serve(gated, settings=settings, extra_routes=mount_openenv) as served:
        busy = threading.Thread(target=httpx.post, args=(f"{served.url}/v1/evaluate",), kwargs={
            "json": {"items": [{"problem": {"id": RELU.id}, "code": RELU_OK}]}, "timeout": 300})
        busy.start()
        try:
            end = time.monotonic() + 30
            while served.service.outstanding < 1:
                assert time.monotonic() < end, "the first request never took the queue's slot"
                time.sleep(0.01)
            with KernelEnvClient(f"{served.url}/openenv").sync() as env:
                env.reset(problem_id=RELU.id)
                started = time.monotonic()
                held = env.step(KernelAction(problem_id=RELU.id, code=RELU_WRONG))
                waited = time.monotonic() - started
        finally:
            gated.gate.set()
        busy.join(timeout=120)
    assert held.observation.no_verdict and held.observation.status == "timeout"
    assert held.reward == 0.25 and 1.8 <= waited < 15  # the neutral score, after the service's hold_s


def test_mounting_needs_the_services_app():
    from fastapi import FastAPI

    with pytest.raises(ValueError, match="create_app"):  # it could not know the service's token
        mount_openenv(FastAPI(), object())
