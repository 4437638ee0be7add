"""A real reward service on loopback for the serve tests: uvicorn on a free port, in a thread of the test
process, over a scorer the test gives (usually the session's CPU evaluator)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

# the serve tests need the serve extra; a test module importing this is skipped without it
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from kernelrl.evaluate import ScorerBase  # noqa: E402
from kernelrl.evaluate.scorer import Indexed, Work  # noqa: E402


@dataclass
class Served:
    url: str
    service: object  # kernelrl.serve.service.RewardService


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(scorer, problems=None, settings=None, *, token: str | None = None, journal=None, extra_routes=None,
          ready: bool = True) -> Iterator[Served]:
    """Serve `scorer` on loopback until the block ends; `ready`: wait for /readyz (the scorer warmed up)."""
    import httpx
    import uvicorn

    from kernelrl import load_suite
    from kernelrl.serve.app import create_app
    from kernelrl.serve.service import RewardService

    problems = problems if problems is not None else {p.id: p for p in load_suite()}
    service = RewardService(scorer, problems, settings, journal, device="cpu")
    app = create_app(service, token=token, extra_routes=extra_routes)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    end = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < end, "the server did not start"
        time.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    while ready and httpx.get(f"{url}/readyz").status_code != 200:
        assert time.monotonic() < end + 120, "the service never became ready"
        time.sleep(0.1)
    try:
        yield Served(url, service)
    finally:
        server.should_exit = True
        thread.join(timeout=60)


class Gated(ScorerBase):
    """The evaluator, which starts no evaluation before `gate` is set: a busy queue on demand."""

    def __init__(self, inner) -> None:
        self.inner, self.verdict, self.gate = inner, inner.verdict, threading.Event()

    def _evaluate_work(self, work: Iterator[Work], verdict) -> Iterator[Indexed]:
        assert self.gate.wait(120), "the test never opened the gate"
        return self.inner._evaluate_work(work, verdict)

    def warm_up(self) -> None:
        self.inner.warm_up()

    def close(self) -> None:
        """The inner evaluator is the session's."""
