"""The reward service's HTTP face (FastAPI): kernelrl's own routes, the trainers' native ones (OpenRLHF,
slime), health, readiness, metrics and the problem list, over one `RewardService`.

Errors say what to do: 400 (not JSON), 401 (no or wrong token), 413 (too large), 422 (not what the wire takes;
nothing was evaluated), 429 + Retry-After (the queue is full), 503 + Retry-After (draining or not ready).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kernelrl.candidates import TextKind
from kernelrl.serve.schema import WIRE_VERSION, WireError, answer_line, verdict_from_wire, verdict_to_wire
from kernelrl.serve.service import Answer, ItemRequest, QueueFull, RewardService, Submission

NDJSON = "application/x-ndjson"
OPEN_PATHS = frozenset({"/healthz", "/readyz"})  # a load balancer's probes need no token


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProblemRef(_Strict):
    id: str | None = None
    # the client's copy: a mismatch is refused rather than judged on another problem
    sha256: str | None = None
    source: str | None = None  # only where the server trusts its clients with problem sources


class ItemIn(_Strict):
    id: str | int | None = None
    problem: ProblemRef
    code: str | None = None
    completion: str | None = None
    kind: Literal["auto", "code", "completion"] | None = None
    deadline_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one_text(self) -> ItemIn:
        if (self.code is None) == (self.completion is None):
            raise ValueError("an item has exactly one of 'code' and 'completion'")
        return self

    def text_and_kind(self) -> tuple[str, TextKind]:
        if self.code is not None:
            return self.code, self.kind or "code"
        return self.completion or "", self.kind or "completion"


class EvaluateIn(_Strict):
    items: list[ItemIn] = Field(min_length=1)
    verdict: dict[str, Any] | None = None
    deadline_s: float | None = Field(None, gt=0)  # every item's, unless its own is earlier
    cache: Literal["use", "off"] = "use"  # off: answer from the journal only replays of the same request
    stream: bool = False  # one NDJSON line per finished item (also with Accept: application/x-ndjson)


class RewardIn(EvaluateIn):
    # a built-in preset ('composite', 'two_stage:stage=frontend') or an allow-listed name
    reward: str | None = None


class OpenRLHFIn(BaseModel):
    query: list[str]
    prompts: list[str] | None = None
    labels: list[str] | None = None


class SlimeIn(BaseModel):
    prompt: str | list | None = None
    response: str
    label: str | None = None


class HTTPError(Exception):
    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


def create_app(service: RewardService, *, token: str | None = None,
               extra_routes: Callable[[FastAPI, RewardService], None] | None = None) -> FastAPI:
    """The service's app. `token`: the bearer token every route but the probes requires (None: no token, for
    loopback only; `kernelrl serve` refuses another bind address without one)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        starting = asyncio.get_running_loop().create_task(service.start())
        yield
        await service.drain()  # uvicorn stopped taking requests; in-flight evaluations may finish
        starting.cancel()

    app = FastAPI(title="kernelrl reward service", version=str(WIRE_VERSION), lifespan=lifespan)
    app.state.service = service
    app.state.token = token  # for mounted routes the HTTP middleware does not see (WebSocket handshakes)

    @app.exception_handler(HTTPError)
    async def _http_error(request: Request, exc: HTTPError) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=exc.headers)

    @app.middleware("http")
    async def _auth(request: Request, call_next):
        if token is not None and request.url.path not in OPEN_PATHS:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                service.metrics.rejected.labels("unauthorized").inc()
                return JSONResponse({"detail": "missing or wrong bearer token "
                                               "(Authorization: Bearer <token>)"},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    _probe_routes(app, service)
    _evaluation_routes(app, service)
    _trainer_routes(app, service)
    if extra_routes is not None:
        extra_routes(app, service)
    return app


def _probe_routes(app: FastAPI, service: RewardService) -> None:
    """Liveness, readiness, Prometheus metrics, the server's settings and its problems."""

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        reason = service.ready()
        if reason is None:
            return JSONResponse({"ready": True})
        return JSONResponse({"ready": False, "reason": reason}, status_code=503, headers={"Retry-After": "5"})

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(service.metrics.exposition(), media_type="text/plain; version=0.0.4")

    @app.get("/v1/info")
    async def info() -> dict:
        s = service.settings
        return {"wire": WIRE_VERSION, "grader": service.grader, "max_batch": s.max_batch,
                "max_queued_items": s.max_queued_items, "max_deadline_s": s.max_deadline_s,
                "verdict": verdict_to_wire(service.verdict),
                "allowed_verdict": sorted(s.allowed_verdict_fields), "rewards": sorted(s.rewards),
                "default_reward": s.default_reward, "trust_problem_sources": s.trust_problem_sources,
                "problems": len(service.problems)}

    @app.get("/v1/problems")
    async def problems(source: bool = False) -> dict:
        return {"problems": [{"id": p.id, "sha256": p.sha256, "level": p.level, "name": p.name,
                              "tags": list(p.tags), "metadata": p.metadata,
                              **({"source": p.source} if source else {})}
                             for p in service.problems.values()]}


def _evaluation_routes(app: FastAPI, service: RewardService) -> None:
    """The wire's own routes: verdicts (`/v1/evaluate`) and verdicts with rewards (`/v1/reward`), streamed
    as NDJSON when asked."""

    @app.post("/v1/evaluate")
    async def evaluate(request: Request):
        body, sha = await _read(request, service, EvaluateIn)
        sub = await _submit(service, body, request, sha)
        if body.stream or NDJSON in request.headers.get("accept", ""):
            return StreamingResponse(_lines(sub.answers(),
                                            lambda a: answer_line(a.id, a.index, a.key, a.result)),
                                     media_type=NDJSON)
        return {"results": [answer_line(a.id, a.index, a.key, a.result) for a in await sub.collect()],
                "server": {"grader": service.grader, "wire": WIRE_VERSION}}

    @app.post("/v1/reward")
    async def reward(request: Request):
        body, sha = await _read(request, service, RewardIn)
        spec = _or_422(service.reward_spec, body.reward)
        sub = await _submit(service, body, request, sha)

        def line(a: Answer) -> dict:
            scored = service.score(a.result, spec)
            if scored.reward is not None:
                service.remember(a.result.problem_id, scored.reward, a.result.correct)
            return answer_line(a.id, a.index, a.key, a.result, reward=scored.reward,
                               components=scored.components)

        if body.stream or NDJSON in request.headers.get("accept", ""):
            return StreamingResponse(_lines(sub.answers(), line), media_type=NDJSON)
        lines = [line(a) for a in await sub.collect()]
        return {"results": lines, "rewards": [x["reward"] for x in lines], "reward": spec,
                "server": {"grader": service.grader, "wire": WIRE_VERSION}}


def _trainer_routes(app: FastAPI, service: RewardService) -> None:
    """The remote reward models of trainers that speak their own protocol: OpenRLHF's and slime's. A request
    there is held rather than refused when the queue is full (those trainers retry too briefly)."""

    @app.post("/openrlhf/get_reward")
    async def openrlhf(request: Request) -> dict:
        """OpenRLHF's remote reward model (`--reward.remote_url .../openrlhf/get_reward --data.label_key
        problem_id`): never 429 (OpenRLHF retries 5 times at 1 s): held, then a neutral score flagged."""
        body, _ = await _read(request, service, OpenRLHFIn)
        prompts, labels = body.prompts or [""] * len(body.query), body.labels
        if labels is None or len(labels) != len(body.query) or len(prompts) != len(body.query):
            raise HTTPError(422, "need one label (the problem id, --data.label_key) and one prompt per query")
        items = [ItemRequest(i, _or_422(service.problem, label),
                             _or_422(service.candidate, _response_of(query, prompt), "completion"),
                             deadline_s=service.settings.hold_s)
                 for i, (query, prompt, label) in enumerate(zip(body.query, prompts, labels, strict=True))]
        answers = await (await _held(service, items)).collect()
        spec = service.settings.default_reward
        rewards, scores, logs = [], [], {"no_verdict": [], "correct": [], "compiled": [], "format_ok": [],
                                         "hack": [], "speedup_vs_eager": []}
        for a in answers:
            scored = service.score(a.result, spec)
            if scored.reward is None:
                reward_value, correct_rate = service.neutral(a.result.problem_id)
            else:
                service.remember(a.result.problem_id, scored.reward, a.result.correct)
                reward_value, correct_rate = scored.reward, float(a.result.correct)
            rewards.append(reward_value)
            scores.append(correct_rate)
            logs["no_verdict"].append(float(a.result.no_verdict))
            for name in ("correct", "compiled", "format_ok", "hack"):
                logs[name].append(scored.components[name])
            logs["speedup_vs_eager"].append(scored.components["speedup_vs_eager"] or 0.0)
        return {"rewards": rewards, "scores": scores, "extra_logs": logs}

    @app.post("/slime/reward")
    async def slime(request: Request) -> dict:
        """slime's remote reward model (`--rm-type remote_rm --rm-url .../slime/reward --reward-key score`):
        `{prompt, response, label}` with the problem id as label; held rather than refused, like OpenRLHF."""
        body, _ = await _read(request, service, SlimeIn)
        if not body.label:
            raise HTTPError(422, "the label must be the problem id")
        item = ItemRequest(0, _or_422(service.problem, body.label), _or_422(service.candidate, body.response,
                                                                             "completion"),
                           deadline_s=service.settings.hold_s)
        [a] = await (await _held(service, [item])).collect()
        scored = service.score(a.result, service.settings.default_reward)
        if scored.reward is None:
            score, _ = service.neutral(a.result.problem_id)
        else:
            service.remember(a.result.problem_id, scored.reward, a.result.correct)
            score = scored.reward
        return {"score": score, "no_verdict": a.result.no_verdict, "status": a.result.status.value,
                "correct": a.result.correct, "speedup": scored.components["speedup_vs_eager"],
                "message": a.result.message}

def _or_422(fn, *args):
    try:
        return fn(*args)
    except WireError as exc:
        raise HTTPError(422, str(exc)) from None


async def _read(request: Request, service: RewardService, model: type[BaseModel]) -> tuple[Any, str]:
    """The body, bounded (413 past the server's limit), parsed (400) and checked against the wire (422); and
    the sha256 of its canonical JSON (what an idempotency key is bound to)."""
    limit = service.settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPError(413, f"request body of {declared} bytes is over the server's limit of {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, f"request body over the server's limit of {limit} bytes")
        chunks.append(chunk)
    try:
        data = json.loads(b"".join(chunks))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HTTPError(400, f"the body is not JSON: {exc}") from None
    try:
        body = model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
                             for e in exc.errors()[:10])
        raise HTTPError(422, f"the request does not match the wire schema: {problems}") from None
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return body, hashlib.sha256(canonical.encode()).hexdigest()


async def _submit(service: RewardService, body: EvaluateIn, request: Request, sha: str) -> Submission:
    if len(body.items) > service.settings.max_batch:
        raise HTTPError(413, f"{len(body.items)} items in one request; this server takes at most "
                             f"{service.settings.max_batch} (split the batch)")
    verdict = _or_422(verdict_from_wire, body.verdict, service.verdict,
                      service.settings.allowed_verdict_fields)
    items = []
    for index, it in enumerate(body.items):
        problem = _or_422(service.problem, it.problem.id, it.problem.sha256, it.problem.source)
        text, kind = it.text_and_kind()
        deadlines = [d for d in (it.deadline_s, body.deadline_s) if d is not None]
        items.append(ItemRequest(it.id if it.id is not None else index, problem,
                                 _or_422(service.candidate, text, kind),
                                 min(deadlines) if deadlines else None))
    try:
        return await service.submit(items, verdict, idempotency_key=request.headers.get("idempotency-key"),
                                    body_sha256=sha, use_journal=body.cache == "use")
    except QueueFull as exc:
        status = 503 if service.draining else 429
        raise HTTPError(status, str(exc), {"Retry-After": str(max(1, round(exc.retry_after_s)))}) from None
    except WireError as exc:
        raise HTTPError(422, str(exc)) from None


async def _held(service: RewardService, items: list[ItemRequest]) -> Submission:
    try:
        return await service.submit(items, hold_s=service.settings.hold_s)
    except QueueFull as exc:  # draining: the trainer's own retries reach another replica or a restarted one
        raise HTTPError(503, str(exc), {"Retry-After": str(max(1, round(exc.retry_after_s)))}) from None


def _response_of(query: str, prompt: str) -> str:
    """OpenRLHF's query is the prompt followed by the response (special tokens kept): the completion is what
    follows the prompt."""
    return query[len(prompt):] if prompt and query.startswith(prompt) else query


async def _lines(answers: AsyncIterator[Answer], render: Callable[[Answer], dict]) -> AsyncIterator[bytes]:
    async for answer in answers:
        yield (json.dumps(render(answer)) + "\n").encode()
