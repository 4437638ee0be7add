"""The evaluator as a TRL reward function: every completion of a step goes to `Scorer.aevaluate_many` at once.

TRL calls reward functions with `prompts, completions, completion_ids`, the dataset's columns (`problem_id`
among them), `trainer_state` and `log_metric`; an async `__call__` runs on TRL's event loop, so evaluation
overlaps nothing else in the step but never blocks other async reward terms. Any `Scorer` works: an `Evaluator`
on a device of the user's choosing (CPU mode, a GPU the policy does not train on), a `MultiDeviceEvaluator`, or a
remote one. Each completion is recorded in `rollouts.jsonl` with its prompt, verdict and reward (and its
dynamic-sampling round, from the `sampling_round` column; 1 without it), so a run's trajectories become the next
SFT set.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelrl.candidates import Candidate
from kernelrl.evaluate import EvalItem, Scorer
from kernelrl.evaluate.scorer import iterate_in_thread
from kernelrl.problems import Problem
from kernelrl.results import EvalResult, Status
from kernelrl.rewards import get_reward, parse_reward_spec, reward_minimum, speedup


def completion_text(completion: Any) -> str:
    """TRL hands conversational completions as a list of messages, standard ones as text."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if m.get("role") == "assistant")


def step_components(results: Sequence[EvalResult], eval_seconds: float) -> dict[str, float]:
    """Per-step reward components for the training log (fractions of the step's completions)."""
    n = max(1, len(results))
    speedups = [s for r in results if r.correct and (s := speedup(r, "eager")) is not None]
    counts = defaultdict(int)
    for r in results:
        counts[r.status] += 1
    out = {"kernelrl/format_error_rate": counts[Status.FORMAT_ERROR] / n,
           "kernelrl/compiled_rate": sum(r.compiled for r in results) / n,
           "kernelrl/correct_rate": counts[Status.CORRECT] / n,
           "kernelrl/hack_rate": counts[Status.HACK_DETECTED] / n,
           "kernelrl/no_verdict_rate": sum(r.no_verdict for r in results) / n,
           "kernelrl/eval_seconds": eval_seconds}
    if speedups:
        out["kernelrl/mean_speedup_vs_eager"] = sum(speedups) / len(speedups)
    return out


def neutral_fill(rewards: Sequence[float | None], groups: Sequence[str]) -> list[float]:
    """Rewards with each missing one (an evaluation that gave no verdict on the code) set to the mean of its
    group's others, so its GRPO advantage is 0: it neither rewards nor punishes the completion. A group with no
    verdict at all gets 0 everywhere (equal rewards: no gradient)."""
    known: dict[str, list[float]] = defaultdict(list)
    for reward, group in zip(rewards, groups, strict=True):
        if reward is not None:
            known[group].append(reward)
    return [r if r is not None else (sum(known[g]) / len(known[g]) if known[g] else 0.0)
            for r, g in zip(rewards, groups, strict=True)]


class KernelReward:
    """A TRL reward function over the sandboxed evaluator.

    reward: a preset spec ('composite', 'two_stage:stage=frontend', 'module:function'). format_weight adds a
    shaping term (1 when the completion holds a fenced block defining ModelNew). judge/judge_weight/judge_steps
    add seed 003's LLM-judge term r + lambda*J for the first `judge_steps` steps (cold start). `on_groups`
    receives {problem_id: [correct, ...]} after each step (the curriculum listens there) and may return more
    metrics to log.
    """

    __name__ = "kernelrl"  # TRL names the reward column after it

    def __init__(self, scorer: Scorer, problems: Mapping[str, Problem], reward: str = "composite", *,
                 format_weight: float = 0.0, judge: Any = None, judge_weight: float = 0.5, judge_steps: int = 0,
                 rollouts: str | Path | None = None, stage: str | None = None,
                 on_groups: Callable[[dict[str, list[bool]]], dict[str, float]] | None = None) -> None:
        name, params = parse_reward_spec(reward)
        self.reward_fn = get_reward(name, **params)
        self.minimum = reward_minimum(name, **params)
        self.reward_spec = reward
        self.scorer = scorer
        self.problems = dict(problems)
        self.format_weight = format_weight
        self.judge, self.judge_weight, self.judge_steps = judge, judge_weight, judge_steps
        self.rollouts = Path(rollouts) if rollouts is not None else None
        self.stage = stage
        self.on_groups = on_groups
        self._write_lock = threading.Lock()

    def _problem(self, problem_id: str) -> Problem:
        try:
            return self.problems[problem_id]
        except KeyError:
            raise KeyError(f"the reward got a completion for {problem_id!r}, which is not a training problem of "
                           "this run (the dataset's problem_id column must name suite problems)") from None

    def score(self, result: EvalResult, candidate: Candidate, problem: Problem, step: int) -> float:
        r = self.reward_fn(result)
        if result.status is Status.HACK_DETECTED:
            return self.minimum  # no shaping or judge bonus for a hack
        if self.format_weight and result.status is not Status.FORMAT_ERROR:
            r += self.format_weight
        if self.judge is not None and step <= self.judge_steps and candidate.code:
            judged = self.judge.score(problem, candidate.code)
            r += self.judge_weight * (judged.mean if judged is not None else 0.0)
        return float(r)

    async def __call__(self, prompts: list, completions: list, completion_ids: list | None = None, *,
                       problem_id: list[str], trainer_state: Any = None, sampling_round: list[int] | None = None,
                       log_metric: Callable[[str, float], None] | None = None, **columns: Any) -> list[float]:
        # the optimizer step these completions first train (TRL's global_step counts finished steps)
        step = int(getattr(trainer_state, "global_step", 0) or 0) + 1
        problems = [self._problem(pid) for pid in problem_id]
        texts = [completion_text(c) for c in completions]
        candidates = [Candidate.from_text(t, "completion") for t in texts]
        started = time.monotonic()
        results: list[EvalResult | None] = [None] * len(candidates)
        items = [EvalItem(p, c) for p, c in zip(problems, candidates, strict=True)]
        async for index, result in iterate_in_thread(lambda: self.scorer.evaluate_indexed(items, kind="completion")):
            results[index] = result
        eval_seconds = time.monotonic() - started
        done = [r for r in results if r is not None]
        if len(done) != len(results):
            raise RuntimeError(f"the scorer returned {len(done)} results for {len(results)} completions")
        scored = await asyncio.to_thread(
            lambda: [None if r.no_verdict else self.score(r, c, p, step)
                     for r, c, p in zip(done, candidates, problems, strict=True)])
        rewards = neutral_fill(scored, [json.dumps(p, sort_keys=True, default=str) for p in prompts])
        groups: dict[str, list[bool]] = defaultdict(list)
        for pid, result in zip(problem_id, done, strict=True):
            groups[pid].append(result.correct)
        metrics = step_components(done, eval_seconds)
        if self.on_groups is not None:
            metrics.update(self.on_groups(dict(groups)) or {})
        if log_metric is not None:
            for key, value in metrics.items():
                log_metric(key, float(value))
        self._record(step, sampling_round or [1] * len(texts), prompts, texts, done, scored)
        return rewards

    def _record(self, step: int, rounds: list[int], prompts: list, texts: list[str], results: list[EvalResult],
                rewards: list[float | None]) -> None:
        if self.rollouts is None:
            return
        lines = []
        for round_, prompt, text, result, reward in zip(rounds, prompts, texts, results, rewards, strict=True):
            s = speedup(result, "eager") if result.correct else None
            lines.append(json.dumps({
                "step": step, "round": round_, "stage": self.stage, "problem_id": result.problem_id,
                "prompt": prompt,
                "completion": text, "status": result.status.value,
                "reward": reward if reward is not None and math.isfinite(reward) else None,
                "compiled": result.compiled, "speedup_vs_eager": s, "message": result.message[:300],
                "cached": result.cached, "time": time.time(),
                # where the evaluation's time went: a step waits for its slowest completion
                "eval_wall_s": round(result.wall_time_s, 3),
                "eval_phases_s": {k: round(v, 3) for k, v in result.phases_s.items()}}))
        with self._write_lock, self.rollouts.open("a") as f:
            f.write("\n".join(lines) + "\n")
