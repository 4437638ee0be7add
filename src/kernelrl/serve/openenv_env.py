"""kernelrl as an OpenEnv environment (the `openenv` package, 0.10): the reward service's problems and
verdicts behind OpenEnv's reset/step wire, for trainers that drive OpenEnv environments (TRL's
`environment_factory`, verifiers' `openenv` taskset, SkyRL and the other OpenEnv integrations).

Server: `create_app(service, extra_routes=mount_openenv)` (or `kernelrl serve --openenv`) serves it under
/openenv: `WS /openenv/ws` (one session per connection, `reset` then `step`s), the stateless
`POST /openenv/reset` and `POST /openenv/step`, and OpenEnv's /schema, /state, /health, /metadata. Client:

    env = KernelEnvClient("http://evalhost:8777/openenv", token_file="~/.kernelrl/token").sync()
    with env:
        first = env.reset(problem_id="level0/1_relu")        # the task, as a model reads it
        result = env.step(KernelAction(problem_id="level0/1_relu", code=completion))
        result.reward, result.observation.feedback, result.done

An action carries its problem id because OpenEnv's HTTP /step builds a fresh environment for every call; in a
session the id must be the one the session was reset to. Evaluations go through the `RewardService` like every
other route's (admission queue, journal, deduplication by content key) and are held rather than refused when
the queue is full: after the service's `hold_s` the step answers a neutral reward with `no_verdict` set.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import random
from pathlib import Path
from typing import Any, Literal

try:
    from fastapi import FastAPI, HTTPException
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.http_server import create_app as _openenv_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("kernelrl's OpenEnv environment needs the openenv package: "
                      f"pip install 'openenv>=0.10' ({exc})") from exc
from pydantic import ConfigDict, Field

from kernelrl.prompts import Prompts, render_feedback
from kernelrl.rewards import speedup
from kernelrl.serve.schema import WireError
from kernelrl.serve.service import ItemRequest, QueueFull, RewardService

__all__ = ["KernelAction", "KernelEnv", "KernelEnvClient", "KernelObservation", "KernelState",
           "mount_openenv"]


class KernelAction(Action):
    """One submission: the kernel for a problem."""

    problem_id: str = Field(description="The problem the kernel is for (GET /v1/problems lists them).")
    code: str = Field(description="A Python module defining ModelNew, or a model's completion whose fenced "
                                  "code block defines it.")
    kind: Literal["auto", "code", "completion"] = Field(
        "auto", description="How to read `code`: 'auto' takes it as a module when it parses as "
                            "Python, else as a completion.")


class KernelObservation(Observation):
    """After reset: the task (`system_prompt`, `problem_description`, `reference_code`). After a step: the
    verdict as a model should read it (`feedback`), its parts, and `reward`/`done`."""

    model_config = ConfigDict(extra="ignore")  # a newer server may add fields; older clients keep working

    problem_id: str = ""
    turn: int = Field(0, description="Steps taken in this episode.")
    max_turns: int = 1
    system_prompt: str = ""
    problem_description: str = Field("", description="The task as a model reads it (reset only).")
    reference_code: str = Field("", description="The problem's PyTorch reference module (reset only).")
    feedback: str = Field("", description="The verdict, mismatch, timings and findings, for the model.")
    status: str | None = Field(None, description="The verdict: correct, wrong_output, compile_error, ...")
    message: str = ""
    compilation_success: bool = False
    correctness_pass: bool = False
    speedup: float | None = Field(None, description="Over PyTorch eager, when timed.")
    speedup_vs_inductor: float | None = None
    no_verdict: bool = Field(False, description="No verdict (queue full, deadline): the reward is "
                                                "neutral, the problem's recent mean; a trainer "
                                                "that can should skip it.")
    item_key: str = Field("", description="The verdict's content key in the service's journal.")


class KernelState(State):
    problem_id: str | None = None
    max_turns: int = 1
    best_reward: float | None = None
    solved: bool = False


class _Loop:
    """The event loop the server (and so the service) runs on: a synchronous `step` from another thread hands
    its work to it."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None

    def note(self) -> None:
        self.loop = asyncio.get_running_loop()


class KernelEnv(Environment[KernelAction, KernelObservation, KernelState]):
    """One episode on one problem: `reset(problem_id=...)`, then up to `max_turns` steps, each a submission
    scored by the service's default reward. The episode ends when the turns are used up or a kernel is correct
    with no timing left to improve (a server without timings)."""

    # an episode holds only its own state; the service is shared and bounded
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, service: RewardService, loop: _Loop | None = None, *, max_turns: int = 1,
                 backend: str = "triton") -> None:
        super().__init__()
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.service, self._loop, self.default_turns = service, loop or _Loop(), max_turns
        self.prompts = Prompts(backend=backend)
        self._state = KernelState(max_turns=max_turns)

    @property
    def state(self) -> KernelState:
        return self._state

    def reset(self, seed: int | None = None, episode_id: str | None = None, problem_id: str | None = None,
              max_turns: int | None = None, **kwargs: Any) -> KernelObservation:
        """Start an episode on `problem_id` (without one: a problem drawn with `seed` from those the server
        loaded)."""
        if problem_id is None:
            if not self.service.problems:
                raise HTTPException(422, "this server has loaded no problems")
            problem_id = random.Random(seed).choice(sorted(self.service.problems))
        problem = self._problem(problem_id)
        turns = self.default_turns if max_turns is None else max_turns
        if turns < 1:
            raise HTTPException(422, "max_turns must be at least 1")
        self._state = KernelState(episode_id=episode_id, problem_id=problem.id, max_turns=turns)
        system, user = self.prompts.initial(problem)
        return KernelObservation(problem_id=problem.id, max_turns=turns, system_prompt=system["content"],
                                 problem_description=user["content"], reference_code=problem.source)

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None,
                          problem_id: str | None = None, max_turns: int | None = None,
                          **kwargs: Any) -> KernelObservation:
        return self.reset(seed, episode_id, problem_id, max_turns, **kwargs)

    def step(self, action: KernelAction, timeout_s: float | None = None, **kwargs: Any) -> KernelObservation:
        """The synchronous step, for callers on another thread than the server's: the evaluation runs on the
        server's event loop (where the service's queue lives) and this thread waits for it."""
        loop = self._loop.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or not loop.is_running():
            raise RuntimeError("KernelEnv.step needs the server's event loop: serve the environment "
                               "(mount_openenv) or await step_async")
        if running is loop:
            raise RuntimeError("KernelEnv.step would block the server's event loop: await step_async instead")
        return asyncio.run_coroutine_threadsafe(self.step_async(action, timeout_s, **kwargs), loop).result()

    async def step_async(self, action: KernelAction, timeout_s: float | None = None,
                         **kwargs: Any) -> KernelObservation:
        """Evaluate the action's kernel through the service (held, never refused, while the queue is full) and
        answer the verdict, its feedback and reward."""
        service, st = self.service, self._state
        if st.problem_id is not None and action.problem_id != st.problem_id:
            raise HTTPException(422, f"this episode is on problem {st.problem_id!r}, not "
                                     f"{action.problem_id!r}: reset(problem_id=...) to "
                                     "start one on another problem")
        if st.step_count >= st.max_turns:
            raise HTTPException(422, f"the episode is over ({st.max_turns} turns): reset to start another")
        problem = self._problem(action.problem_id)
        try:
            candidate = service.candidate(action.code, action.kind)
        except WireError as exc:
            raise HTTPException(413, str(exc)) from None
        hold = service.settings.hold_s
        item = ItemRequest(0, problem, candidate,
                           deadline_s=hold if timeout_s is None else min(timeout_s, hold))
        try:
            submission = await service.submit([item], hold_s=hold)
        except QueueFull as exc:  # the service is draining: another replica, or this one restarted, takes it
            raise HTTPException(503, str(exc),
                                {"Retry-After": str(max(1, round(exc.retry_after_s)))}) from None
        [answer] = await submission.collect()
        result = answer.result
        scored = service.score(result, service.settings.default_reward)
        if scored.reward is None:
            reward, _ = service.neutral(problem.id)
        else:
            reward = scored.reward
            service.remember(problem.id, reward, result.correct)
        eager = speedup(result, "eager")
        turn = st.step_count + 1
        best = st.best_reward
        if scored.reward is not None:
            best = reward if best is None else max(best, reward)
        self._state = st.model_copy(update={"step_count": turn, "problem_id": problem.id, "best_reward": best,
                                            "solved": st.solved or result.correct})
        done = turn >= st.max_turns or (result.correct and eager is None)
        return KernelObservation(
            problem_id=problem.id, turn=turn, max_turns=st.max_turns, feedback=render_feedback(result),
            status=result.status.value, message=result.message, compilation_success=result.compiled,
            correctness_pass=result.correct, speedup=eager, speedup_vs_inductor=speedup(result, "inductor"),
            no_verdict=result.no_verdict, item_key=answer.key, reward=reward, done=done)

    def _problem(self, problem_id: str):
        try:
            return self.service.problem(problem_id)
        except WireError as exc:
            raise HTTPException(422, str(exc)) from None


class _Front:
    """The mounted OpenEnv app behind the service's bearer token: the service's HTTP middleware checks plain
    requests, not WebSocket handshakes, so sessions are checked here. Also notes the server's event loop."""

    def __init__(self, app: Any, token: str | None, loop: _Loop, env_factory: Any) -> None:
        self.app, self.loop = app, loop
        # a served environment, for in-process callers (KernelEnv.step bridges)
        self.env_factory = env_factory
        self.expected = None if token is None else f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.loop.note()
        if scope["type"] == "websocket" and self.expected is not None:
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "websocket.close", "code": 1008,
                            "reason": "missing or wrong bearer token"})
                return
        await self.app(scope, receive, send)


def mount_openenv(app: FastAPI, service: RewardService, path: str = "/openenv", *, max_turns: int = 1,
                  max_concurrent_envs: int | None = None) -> None:
    """Serve `KernelEnv` under `path` of the service's app: `create_app(service, extra_routes=mount_openenv)`
    (`functools.partial(mount_openenv, max_turns=4)` to change a default). `max_concurrent_envs`: open
    sessions (default the service's `max_queued_items`: a session has at most one evaluation in flight, so
    more sessions would only wait for the queue)."""
    if not hasattr(app.state, "token"):  # never serve sessions unchecked behind a server that wants a token
        raise ValueError("mount_openenv mounts on the service's app: kernelrl.serve.app.create_app(service, "
                         "token=..., extra_routes=mount_openenv)")
    loop = _Loop()
    factory = functools.partial(KernelEnv, service, loop, max_turns=max_turns)
    sessions = max_concurrent_envs or service.settings.max_queued_items
    openenv = _openenv_app(factory, KernelAction, KernelObservation, env_name="kernelrl",
                           max_concurrent_envs=sessions, state_cls=KernelState)
    app.mount(path, _Front(openenv, app.state.token, loop, factory))


class KernelEnvClient(EnvClient[KernelAction, KernelObservation, KernelState]):
    """OpenEnv's client for `KernelEnv` (asynchronous; `.sync()` for a blocking one). `base_url`: the mount,
    e.g. http://evalhost:8777/openenv (its WebSocket is used). `token`/`token_file`: the service's bearer
    token. `message_timeout_s`: how long a step may take; a cold evaluation takes minutes, and the service
    holds a step up to its `hold_s` (110 s by default) when its queue is full, so the default is long."""

    def __init__(self, base_url: str | None = None, *, token: str | None = None,
                 token_file: str | Path | None = None, message_timeout_s: float = 900.0,
                 headers: dict[str, str] | None = None, **kwargs: Any) -> None:
        headers = dict(headers or {})
        if token is None and token_file is not None:
            token = Path(token_file).expanduser().read_text().strip()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        super().__init__(base_url, message_timeout_s=message_timeout_s, headers=headers or None, **kwargs)

    def _step_payload(self, action: KernelAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[KernelObservation]:
        fields = {**payload.get("observation", {}), "reward": payload.get("reward"),
                  "done": payload.get("done", False)}
        observation = KernelObservation.model_validate(fields)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done,
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> KernelState:
        return KernelState.model_validate(payload)
