"""What every adapter needs: the problems by id (given, or the reward service's own), and one place that opens
a scorer from a target."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelrl.evaluate import Scorer
from kernelrl.problems import Problem


class Problems:
    """Problems by id: the mapping given, else the scorer's own list (a reward service `Client` serves its
    problems), fetched on first use and fetched again wherever the adapter is unpickled."""

    def __init__(self, scorer: Scorer, given: Mapping[str, Problem] | None) -> None:
        if given is None and not callable(getattr(scorer, "problems", None)):
            raise ValueError(f"give problems= (problem id -> Problem): a {type(scorer).__name__} does not "
                             "list its problems (a reward service's Client does)")
        self.scorer, self.given = scorer, dict(given) if given is not None else None
        self._fetched: dict[str, Problem] | None = None

    def all(self) -> dict[str, Problem]:
        if self.given is not None:
            return self.given
        if self._fetched is None:
            self._fetched = dict(self.scorer.problems())  # type: ignore[attr-defined]
        return self._fetched

    def get(self, problem_id: str) -> Problem:
        try:
            return self.all()[problem_id]
        except KeyError:
            where = "the problems it was given" if self.given is not None else "the reward service's problems"
            raise KeyError(f"the reward got a completion for {problem_id!r}, which is not one of {where} "
                           "(the dataset's problem id column must name them)") from None

    def __getstate__(self) -> dict[str, Any]:
        return {"scorer": self.scorer, "given": self.given}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.scorer, self.given, self._fetched = state["scorer"], state["given"], None


def open_target(target: str | Scorer, token_file: str | Path | None = None) -> Scorer:
    """A reward service URL as its `Client` (token from `token_file` or KERNELRL_SERVE_TOKEN), or a scorer as
    it is."""
    if isinstance(target, str):
        if not target.startswith(("http://", "https://")):
            raise ValueError(f"{target!r}: give the reward service's URL (http://host:port) or a Scorer "
                             "object")
        from kernelrl.serve.client import Client

        return Client(target, token_file=token_file)
    if token_file is not None:
        raise ValueError("token_file goes with a reward service URL, not with a Scorer object")
    return target


def check_picklable(owner: str, **parts: Any) -> None:
    """Raise a TypeError naming the part that keeps `owner` from crossing into another process."""
    for name, value in parts.items():
        if value is None:
            continue
        try:
            pickle.dumps(value)
        except Exception as exc:  # noqa: BLE001 - any failure to pickle is reported the same way
            hint = (" (an in-process evaluator stays in its process: serve it with `kernelrl serve` and give "
                    "the reward its Client)" if name == "scorer" else "")
            raise TypeError(f"{owner}'s {name} ({type(value).__name__}) does not pickle: {exc}{hint}"
                            ) from None
