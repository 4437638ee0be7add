"""Serving the reward: `kernelrl serve` (FastAPI + uvicorn, the `serve` extra) and its `Client`, a Ray pool of
evaluators across GPUs and hosts (the `ray` extra), both `Scorer`s; `open_scorer` picks one from a target.

Importing this package imports neither FastAPI nor Ray: a trainer's process that holds only a `Client` needs
httpx alone.
"""

from __future__ import annotations

from kernelrl.evaluate.local import open_scorer as open_local_scorer
from kernelrl.evaluate.scorer import ScorerBase
from kernelrl.serve.client import Client, ServiceError

__all__ = ["Client", "ServiceError", "open_scorer"]


def open_scorer(target: str | list[str] | None = None, settings=None, verdict=None,
                **overrides) -> ScorerBase:
    """The scorer for `target`: a reward service URL ('http://evalhost:8777': a `Client`; `token_file=` among
    the overrides), a Ray cluster ('ray' for the one this process is connected to or finds, 'ray://host:10001'
    for a remote one: a `RayScorer`), or a local device as `kernelrl.evaluate.open_scorer` takes it."""
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        if settings is not None or verdict is not None:
            raise ValueError("a reward service's evaluator and verdict settings are the server's: pass "
                             "verdict settings per call (evaluate_many(..., verdict=...))")
        return Client(target, **overrides)
    if isinstance(target, str) and (target == "ray" or target.startswith("ray://")):
        from kernelrl.serve.ray_pool import RayScorer

        return RayScorer("auto" if target == "ray" else target, settings=settings, verdict=verdict,
                         **overrides)
    return open_local_scorer(target, settings, verdict, **overrides)
