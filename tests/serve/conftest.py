"""Fixtures of the serve tests (the helpers are in served.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from served import Served, serve  # noqa: E402  (after the skips: it needs the serve extra)


@pytest.fixture(scope="module")
def cpu_server(cpu_evaluator) -> Iterator[Served]:
    """The service over the session's CPU evaluator, no token, default settings."""
    with serve(cpu_evaluator) as served:
        yield served
