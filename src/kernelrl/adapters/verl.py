"""verl's custom reward function over kernelrl's verdicts, imported by verl's reward workers from a user file:

    # kernel_reward.py; reward.custom_reward_function.path=kernel_reward.py, .name=compute_score
    from kernelrl.adapters.verl import make_compute_score
    compute_score = make_compute_score("http://evalhost:8777", token_file="~/.kernelrl/token")

verl calls `compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **kw)` per sample: the
ground truth is the problem id (or `extra_info["problem_id"]`) and the solution the model's completion. verl's
per-sample managers await an `async def` and run a plain function in an executor
(`make_async_compute_score` gives the async one; verl's remote manager takes only the plain one); its legacy
batch manager passes plural keywords (`solution_strs=`, `ground_truths=`, ...) and gets a list back: one call
for the whole batch. Every answer is a dict with the same keys, all numbers but `status`, which verl logs:
`score`, `correct`, `compiled`, `speedup_vs_eager` (0.0 when none was measured), `no_verdict` and `status`.
verl has no "missing" reward: a completion without a verdict (its deadline passed, the service could not be
reached) scores `neutral` and says `no_verdict: 1`.

This module never imports verl (it pins an older transformers). The callable pickles as the service's URL and
token path, so verl can ship it to its Ray reward workers.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelrl.adapters._common import Problems, check_picklable, open_target
from kernelrl.candidates import Candidate
from kernelrl.evaluate.scorer import Scorer
from kernelrl.problems import Problem
from kernelrl.results import EvalResult
from kernelrl.rewards import BoundReward, speedup

BATCH_KEYWORDS = ("data_sources", "solution_strs", "ground_truths", "extra_infos")


class ComputeScore:
    """verl's `compute_score` over a reward service URL or any `Scorer` (see the module). `reward`: a preset
    spec; `neutral`: a no-verdict completion's score; `deadline_s`: seconds one call waits for its verdicts
    (verl's own timeout would otherwise make the sample 0); `problems`: id -> Problem for a scorer that does
    not list its own (the service's Client does)."""

    def __init__(self, target: str | Scorer, reward: str = "composite", token_file: str | Path | None = None,
                 neutral: float = 0.0, deadline_s: float | None = None,
                 problems: Mapping[str, Problem] | None = None) -> None:
        if deadline_s is not None and not deadline_s > 0:
            raise ValueError(f"deadline_s must be positive, not {deadline_s!r}")
        self.scorer = open_target(target, token_file)
        self.preset = BoundReward(reward)
        self.problems = Problems(self.scorer, problems)
        self.neutral, self.deadline_s = float(neutral), deadline_s

    def __getstate__(self) -> dict[str, Any]:
        check_picklable("compute_score", scorer=self.scorer)
        return dict(self.__dict__)

    def __call__(self, data_source: Any = None, solution_str: str | None = None, ground_truth: Any = None,
                 extra_info: dict | None = None, **kwargs: Any) -> dict[str, Any] | list[dict[str, Any]]:
        items, batched = self._items(solution_str, ground_truth, extra_info, kwargs)
        results = list(self.scorer.evaluate_many(items, kind="completion", ordered=True,
                                                  deadline_s=self.deadline_s))
        answers = [self.answer(r) for r in results]
        return answers if batched else answers[0]

    async def acall(self, data_source: Any = None, solution_str: str | None = None, ground_truth: Any = None,
                    extra_info: dict | None = None, **kwargs: Any) -> dict[str, Any] | list[dict[str, Any]]:
        """`__call__` for an event loop (what `make_async_compute_score` hands verl)."""
        items, batched = self._items(solution_str, ground_truth, extra_info, kwargs)
        results = [r async for r in self.scorer.aevaluate_many(items, kind="completion", ordered=True,
                                                               deadline_s=self.deadline_s)]
        answers = [self.answer(r) for r in results]
        return answers if batched else answers[0]

    def answer(self, result: EvalResult) -> dict[str, Any]:
        """The dict verl gets for one verdict."""
        score = self.neutral if result.no_verdict else self.preset(result)
        measured = speedup(result, "eager") if result.correct else None
        return {"score": float(score), "correct": int(result.correct), "compiled": int(result.compiled),
                "speedup_vs_eager": float(measured) if measured is not None else 0.0,
                "no_verdict": int(result.no_verdict), "status": result.status.value}

    def _items(self, solution_str: str | None, ground_truth: Any, extra_info: dict | None,
               kwargs: dict[str, Any]) -> tuple[list[tuple[Problem, Candidate]], bool]:
        batched = kwargs.get("solution_strs") is not None
        if batched:
            solutions: Sequence[str] = kwargs["solution_strs"]
            truths: Sequence[Any] = kwargs.get("ground_truths") or [None] * len(solutions)
            infos: Sequence[dict | None] = kwargs.get("extra_infos") or [None] * len(solutions)
        else:
            if solution_str is None:
                raise TypeError("compute_score needs solution_str (the completion) and ground_truth (the "
                                "problem id)")
            solutions, truths, infos = [solution_str], [ground_truth], [extra_info]
        items = [(self.problems.get(_problem_id(truth, info)), Candidate.from_text(text, "completion"))
                 for text, truth, info in zip(solutions, truths, infos, strict=True)]
        return items, batched


def _problem_id(ground_truth: Any, extra_info: dict | None) -> str:
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth
    if isinstance(extra_info, dict) and extra_info.get("problem_id"):
        return str(extra_info["problem_id"])
    raise ValueError(f"ground_truth must be the problem id (or extra_info must carry problem_id), not "
                     f"{ground_truth!r}")


def make_compute_score(target: str | Scorer, reward: str = "composite", token_file: str | Path | None = None,
                       neutral: float = 0.0, deadline_s: float | None = None,
                       problems: Mapping[str, Problem] | None = None) -> ComputeScore:
    """verl's `compute_score` (plain: verl runs it in an executor; its remote manager takes only this
    kind)."""
    return ComputeScore(target, reward, token_file, neutral, deadline_s, problems)


async def _acompute_score(score: ComputeScore, *args: Any, **kwargs: Any
                          ) -> dict[str, Any] | list[dict[str, Any]]:
    return await score.acall(*args, **kwargs)


def make_async_compute_score(target: str | Scorer, reward: str = "composite",
                             token_file: str | Path | None = None, neutral: float = 0.0,
                             deadline_s: float | None = None,
                             problems: Mapping[str, Problem] | None = None) -> functools.partial:
    """verl's `compute_score` as a coroutine function (verl awaits it on its reward loop): a partial of a
    module function, so `inspect.iscoroutinefunction` sees it and it pickles."""
    score = ComputeScore(target, reward, token_file, neutral, deadline_s, problems)
    return functools.partial(_acompute_score, score)
