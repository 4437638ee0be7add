"""`Client`: the reward service as a `Scorer`. A trainer, the agent or the bench holds it like an in-process
evaluator; it pickles as its URL and token path, so TRL's spawned reward process and verl's reward workers can
carry it.

It chunks a call to the server's batch limit, streams each chunk's answers as they finish, and retries what a
retry can fix (connection errors, 429 and 503 honouring Retry-After, 502 and 504) with jittered backoff inside
the items' deadline, under one Idempotency-Key per chunk, so a retry never evaluates twice. Other 4xx are the
caller's error and raise `ServiceError`. An item the service could not be reached for is answered with
`no_verdict`, never a score.
"""

from __future__ import annotations

import json
import os
import queue
import random
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kernelrl.evaluate.scorer import Indexed, ScorerBase, Work
from kernelrl.evaluate.settings import VerdictSettings
from kernelrl.problems import Problem
from kernelrl.results import EvalResult, Stage
from kernelrl.serve.schema import (
    REQUEST_VERDICT_FIELDS,
    infrastructure_result,
    verdict_from_wire,
    verdict_to_wire,
)

TOKEN_ENV = "KERNELRL_SERVE_TOKEN"
RETRY_STATUS = frozenset({429, 502, 503, 504})
FALLBACK_BATCH = 64  # chunk size while the server's own limit cannot be asked


class ServiceError(RuntimeError):
    """The service refused a request for a reason a retry cannot fix (a 4xx other than 429)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"reward service answered {status}: {detail}")
        self.status, self.detail = status, detail


class Client(ScorerBase):
    """`Client("http://evalhost:8777", token_file="~/.kernelrl/token")`. The token comes from `token_file`,
    else the KERNELRL_SERVE_TOKEN environment variable (a token given inline works but does not pickle: it
    would copy the secret). `timeout_s`: the longest a call waits for an item without its own deadline.
    `send_sources`: send problems by source too (for servers started with --trust-sources)."""

    def __init__(self, url: str, *, token: str | None = None, token_file: str | Path | None = None,
                 timeout_s: float = 3600.0, max_in_flight: int = 4, backoff_cap_s: float = 30.0,
                 send_sources: bool = False) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{url!r}: the reward service's URL starts with http:// or https://")
        self.url = url.rstrip("/")
        self.token_file = str(token_file) if token_file is not None else None
        self._inline_token = token
        self.timeout_s, self.max_in_flight, self.backoff_cap_s = timeout_s, max_in_flight, backoff_cap_s
        self.send_sources = send_sources
        self._http_client = None
        self._info: dict | None = None
        self._problems: dict[str, Problem] | None = None
        self._lock = threading.Lock()

    # pickles as what it is configured with, never as a connection (or an inline secret)
    def __getstate__(self) -> dict[str, Any]:
        if self._inline_token is not None and self.token_file is None:
            raise TypeError("a Client built with token=... does not pickle (that would copy the secret): "
                            f"give token_file=... or set {TOKEN_ENV}")
        return {"url": self.url, "token_file": self.token_file, "timeout_s": self.timeout_s,
                "max_in_flight": self.max_in_flight, "backoff_cap_s": self.backoff_cap_s,
                "send_sources": self.send_sources}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.pop("url"), **state)

    def _token(self) -> str | None:
        if self.token_file is not None:
            return Path(self.token_file).expanduser().read_text().strip()
        return self._inline_token or os.environ.get(TOKEN_ENV)

    def _http(self):
        with self._lock:
            if self._http_client is None:
                import httpx

                token = self._token()
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                self._http_client = httpx.Client(base_url=self.url, headers=headers,
                                                 timeout=httpx.Timeout(30.0, read=None),
                                                 limits=httpx.Limits(max_connections=self.max_in_flight + 4))
            return self._http_client

    def _get(self, path: str, **params) -> Any:
        import httpx

        try:
            response = self._http().get(path, params=params)
        except httpx.TransportError as exc:
            raise ConnectionError(f"the reward service at {self.url} cannot be reached: {exc}") from None
        if response.status_code >= 400:
            raise ServiceError(response.status_code, _detail(response))
        return response.json()

    # --- what the server has --------------------------------------------------------------------------------
    def info(self) -> dict:
        """The server's limits, grader, default verdict settings and allow-lists (fetched once)."""
        if self._info is None:
            self._info = self._get("/v1/info")
        return self._info

    @property
    def verdict(self) -> VerdictSettings:
        """The server's default verdict settings (what a call without `verdict=` gets)."""
        return verdict_from_wire(self.info()["verdict"], VerdictSettings(), allowed=REQUEST_VERDICT_FIELDS |
                                 {"compile_timeout_s", "run_timeout_s", "memory_limit_gb", "static_checks",
                                  "min_kernel_gpu_fraction", "speed_of_light_margin", "flop_floor_margin",
                                  "refuse_flagged_problems"})

    def problems(self) -> dict[str, Problem]:
        """The server's problems by id, with their sources (for prompts)."""
        if self._problems is None:
            listed = self._get("/v1/problems", source=True)["problems"]
            self._problems = {p["id"]: Problem(id=p["id"], name=p["name"], level=p["level"],
                                               source=p["source"], path=Path(f"<{self.url}>/{p['id']}"),
                                               sha256=p["sha256"], tags=tuple(p["tags"]),
                                               metadata=p["metadata"]) for p in listed}
        return self._problems

    def problem(self, problem_id: str) -> Problem:
        try:
            return self.problems()[problem_id]
        except KeyError:
            raise KeyError(f"the reward service has no problem {problem_id!r}") from None

    def warm_up(self, timeout_s: float = 600.0) -> None:
        """Wait until the server is ready (its evaluators started)."""
        import httpx

        end = time.monotonic() + timeout_s
        while True:
            try:
                if self._http().get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"the reward service at {self.url} was not ready within {timeout_s:g} s")
            time.sleep(0.5)

    def close(self) -> None:
        with self._lock:
            if self._http_client is not None:
                self._http_client.close()
                self._http_client = None

    # --- the Scorer core ------------------------------------------------------------------------------------
    def _evaluate_work(self, work: Iterator[Work], verdict: VerdictSettings | None) -> Iterator[Indexed]:
        try:
            max_batch = int(self.info()["max_batch"])
        except ConnectionError:  # the server is down: each chunk retries within its deadline, then no verdict
            max_batch = FALLBACK_BATCH
        results: queue.Queue = queue.Queue()
        done = object()
        stop = threading.Event()

        def chunks() -> Iterator[list[Work]]:
            chunk: list[Work] = []
            for item in work:
                chunk.append(item)
                if len(chunk) == max_batch:
                    yield chunk
                    chunk = []
            if chunk:
                yield chunk

        def run(chunk: list[Work]) -> None:
            try:
                for answer in self._post_chunk(chunk, verdict, stop):
                    results.put(answer)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                results.put(exc)
            finally:
                results.put(done)

        with ThreadPoolExecutor(max_workers=self.max_in_flight, thread_name_prefix="kernelrl-client") as pool:
            running = 0
            feed = chunks()
            try:
                for chunk in feed:  # bounded: at most max_in_flight chunks posted at once
                    pool.submit(run, chunk)
                    running += 1
                    while running >= self.max_in_flight:
                        running -= yield from _drain_one(results, done)
                while running:
                    running -= yield from _drain_one(results, done)
            finally:
                stop.set()

    def _post_chunk(self, chunk: list[Work], verdict: VerdictSettings | None,
                    stop: threading.Event) -> Iterator[Indexed]:
        """Post one chunk under one Idempotency-Key until every
        item is answered, retrying what can be retried."""
        import httpx

        key = uuid.uuid4().hex
        by_id = {str(k): w for k, w in enumerate(chunk)}
        body = json.dumps(self._body(chunk, verdict)).encode()
        end = min([w.deadline_at for w in chunk if w.deadline_at is not None]
                  or [time.monotonic() + self.timeout_s])
        attempt = 0
        while by_id and not stop.is_set():
            wait_s, reason = None, ""
            try:
                with self._http().stream("POST", "/v1/evaluate", content=body, headers={
                        "Idempotency-Key": key, "Accept": "application/x-ndjson",
                        "Content-Type": "application/json"}) as response:
                    if response.status_code in RETRY_STATUS:
                        response.read()
                        reason = f"{response.status_code}: {_detail(response)}"
                        wait_s = _retry_after(response)
                    elif response.status_code >= 400:
                        response.read()
                        raise ServiceError(response.status_code, _detail(response))
                    else:
                        for line in response.iter_lines():
                            if not line.strip():
                                continue
                            answer = json.loads(line)
                            item = by_id.pop(str(answer["id"]), None)
                            if item is not None:  # a replay may repeat what the first attempt delivered
                                yield Indexed(item.index, EvalResult.from_dict(answer["result"]))
                        if by_id:
                            reason = "the answer stream ended early"
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            if not by_id:
                return
            attempt += 1
            delay = wait_s if wait_s is not None else random.uniform(0,
                                                                     min(self.backoff_cap_s,
                                                                         0.5 * 2 ** attempt))
            if time.monotonic() + delay >= end:
                break
            time.sleep(delay)
        for item in by_id.values():  # no verdict: the service could not answer in time
            yield Indexed(item.index, infrastructure_result(
                item.problem.id, item.problem.sha256,
                f"the reward service at {self.url} did not answer in time ({reason or 'stopped'})",
                Stage.STATIC))

    def _body(self, chunk: list[Work], verdict: VerdictSettings | None) -> dict[str, Any]:
        now = time.monotonic()
        items = []
        for k, w in enumerate(chunk):
            problem: dict[str, Any] = {"id": w.problem.id, "sha256": w.problem.sha256}
            if self.send_sources:
                problem["source"] = w.problem.source
            text_field = "completion" if w.candidate.from_completion else "code"
            item = {"id": str(k), "problem": problem, text_field: w.candidate.text}
            if w.deadline_at is not None:
                item["deadline_s"] = max(1e-3, w.deadline_at - now)
            items.append(item)
        body: dict[str, Any] = {"items": items, "stream": True}
        if verdict is not None:
            body["verdict"] = verdict_to_wire(verdict)
        return body


def _drain_one(results: queue.Queue, done: object) -> Iterator[Indexed]:
    """Yield results until one chunk finishes; the generator's value is 1 (one chunk fewer running)."""
    while True:
        got = results.get()
        if got is done:
            return 1
        if isinstance(got, BaseException):
            raise got
        yield got


def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _detail(response) -> str:
    try:
        return str(response.json().get("detail", response.text))
    except (ValueError, AttributeError):
        return response.text[:500]
