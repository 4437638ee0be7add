"""TRL plugs: `KernelReward`, a reward function for `GRPOTrainer(reward_funcs=...)` (sync or AsyncGRPO), and
`KernelToolEnv`, a multi-turn environment for `GRPOTrainer(environment_factory=...)`.

TRL calls reward functions with `prompts, completions, completion_ids`, the dataset's columns (`problem_id`
among them), `trainer_state` and `log_metric`; `KernelReward.__call__` is async, so it runs on TRL's event
loop and every completion of a step goes to `Scorer.evaluate_indexed` at once. Any `Scorer` works: an
`Evaluator` on a device of the user's choosing, a `MultiDeviceEvaluator`, a Ray pool, or the reward service's
`Client` — the one that crosses into AsyncGRPO's spawned reward process (the reward pickles as its client's
URL and token path). A completion without a verdict (its deadline passed, the service could not be reached,
the problem's reference failed) gets None by default: TRL leaves it out of its group's baseline and gives it
no advantage. Each completion can be recorded in `rollouts.jsonl` with its prompt, verdict and reward (and its
dynamic-sampling round, from the `sampling_round` column; 1 without it), so a run's trajectories become the
next SFT set.
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

from kernelrl.adapters._common import Problems, check_picklable, open_target
from kernelrl.candidates import Candidate
from kernelrl.evaluate.scorer import EvalItem, Scorer, iterate_in_thread
from kernelrl.problems import Problem
from kernelrl.prompts import TEMPLATE_DIR, Prompts, render_feedback
from kernelrl.results import EvalResult, Stage, Status
from kernelrl.rewards import BoundReward, speedup

MISSING = ("none", "neutral")


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
    group's others, so its GRPO advantage is 0: it neither rewards nor punishes the completion. A group with
    no verdict at all gets 0 everywhere (equal rewards: no gradient)."""
    known: dict[str, list[float]] = defaultdict(list)
    for reward, group in zip(rewards, groups, strict=True):
        if reward is not None:
            known[group].append(reward)
    return [r if r is not None else (sum(known[g]) / len(known[g]) if known[g] else 0.0)
            for r, g in zip(rewards, groups, strict=True)]


class KernelReward:
    """A TRL reward function over any `Scorer`:
    `KernelReward(Client("http://evalhost:8777", token_file="~/.kernelrl/token"))`.

    problems: id -> Problem (default: the reward service's, when the scorer is its Client). reward: a preset
    spec ('composite', 'two_stage:stage=frontend', 'module:function'). missing: what a completion without a
    verdict gets — 'none' (None: TRL leaves it out) or 'neutral' (its group's mean, for trainers that need a
    number). deadline_s: seconds a step waits for its verdicts; what is not judged by then has no verdict.
    format_weight adds a shaping term (1 when the completion holds a fenced block defining ModelNew).
    judge/judge_weight/judge_steps add an LLM-judge term r + lambda*J for the first `judge_steps` steps (cold
    start). `on_groups` receives {problem_id: [correct, ...]} of the step's verdicts (the curriculum listens
    there) and may return more metrics to log; `on_refused` the ids of problems the evaluator refused
    (`EvalResult.problem_refused`: the problem cannot grade a kernel here), which are left out of the
    groups. Pickles when its scorer, judge and callbacks do (a `Client` does; an in-process evaluator does
    not).
    """

    __name__ = "kernelrl"  # TRL names the reward column after it

    def __init__(self, scorer: Scorer, problems: Mapping[str, Problem] | None = None,
                 reward: str = "composite", *, missing: str = "none", deadline_s: float | None = None,
                 format_weight: float = 0.0,
                 judge: Any = None, judge_weight: float = 0.5, judge_steps: int = 0,
                 rollouts: str | Path | None = None, stage: str | None = None,
                 on_groups: Callable[[dict[str, list[bool]]], dict[str, float]] | None = None,
                 on_refused: Callable[[set[str]], None] | None = None) -> None:
        if missing not in MISSING:
            raise ValueError(f"missing must be one of {', '.join(MISSING)}, not {missing!r}")
        if deadline_s is not None and not deadline_s > 0:
            raise ValueError(f"deadline_s must be positive, not {deadline_s!r}")
        self.preset = BoundReward(reward)
        self.scorer = scorer
        self._problems = Problems(scorer, problems)
        self.missing, self.deadline_s = missing, deadline_s
        self.format_weight = format_weight
        self.judge, self.judge_weight, self.judge_steps = judge, judge_weight, judge_steps
        self.rollouts = Path(rollouts) if rollouts is not None else None
        self.stage = stage
        self.on_groups, self.on_refused = on_groups, on_refused
        self._write_lock = threading.Lock()

    @property
    def reward_spec(self) -> str:
        return self.preset.spec

    @property
    def problems(self) -> dict[str, Problem]:
        return self._problems.all()

    # crosses into another process (TRL's AsyncGRPO scores in a spawned one) as its configuration
    def __getstate__(self) -> dict[str, Any]:
        check_picklable("KernelReward", scorer=self.scorer, judge=self.judge, on_groups=self.on_groups,
                        on_refused=self.on_refused)
        return {k: v for k, v in self.__dict__.items() if k != "_write_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._write_lock = threading.Lock()

    def score(self, result: EvalResult, candidate: Candidate, problem: Problem, step: int) -> float:
        r = self.preset(result)
        if result.status is Status.HACK_DETECTED:
            return r  # no shaping or judge bonus for a hack
        if self.format_weight and result.status is not Status.FORMAT_ERROR:
            r += self.format_weight
        if self.judge is not None and step <= self.judge_steps and candidate.code:
            judged = self.judge.score(problem, candidate.code)
            r += self.judge_weight * (judged.mean if judged is not None else 0.0)
        return float(r)

    async def __call__(self, prompts: list, completions: list, completion_ids: list | None = None, *,
                       problem_id: list[str], trainer_state: Any = None,
                       sampling_round: list[int] | None = None,
                       log_metric: Callable[[str, float], None] | None = None,
                       **columns: Any) -> list[float | None]:
        # the optimizer step these completions first train (TRL's global_step counts finished steps)
        step = int(getattr(trainer_state, "global_step", 0) or 0) + 1
        problems = await asyncio.to_thread(lambda: [self._problems.get(pid) for pid in problem_id])
        texts = [completion_text(c) for c in completions]
        candidates = [Candidate.from_text(t, "completion") for t in texts]
        started = time.monotonic()
        results: list[EvalResult | None] = [None] * len(candidates)
        items = [EvalItem(p, c) for p, c in zip(problems, candidates, strict=True)]
        async for index, result in iterate_in_thread(lambda: self.scorer.evaluate_indexed(
                items, kind="completion", deadline_s=self.deadline_s)):
            results[index] = result
        eval_seconds = time.monotonic() - started
        done = [r for r in results if r is not None]
        if len(done) != len(results):
            raise RuntimeError(f"the scorer returned {len(done)} results for {len(results)} completions")
        scored = await asyncio.to_thread(
            lambda: [None if r.no_verdict else self.score(r, c, p, step)
                     for r, c, p in zip(done, candidates, problems, strict=True)])
        rewards: list[float | None] = list(scored)
        if self.missing == "neutral":
            groups_of = [json.dumps(p, sort_keys=True, default=str) for p in prompts]
            rewards = list(neutral_fill(scored, groups_of))
        groups: dict[str, list[bool]] = defaultdict(list)
        refused = {pid for pid, result in zip(problem_id, done, strict=True) if result.problem_refused}
        for pid, result in zip(problem_id, done, strict=True):
            # a missing verdict, or a problem that cannot grade, says nothing about how hard the problem is
            if not result.no_verdict and pid not in refused:
                groups[pid].append(result.correct)
        metrics = step_components(done, eval_seconds)
        if refused and self.on_refused is not None:
            self.on_refused(refused)
        if self.on_groups is not None:
            metrics.update(self.on_groups(dict(groups)) or {})
        if log_metric is not None:
            for key, value in metrics.items():
                log_metric(key, float(value))
        self._record(step, sampling_round or [1] * len(texts), prompts, texts, done, scored)
        return rewards

    def _record(self, step: int, rounds: list[int], prompts: list, texts: list[str],
                results: list[EvalResult], rewards: list[float | None]) -> None:
        if self.rollouts is None:
            return
        lines = []
        rows = zip(rounds, prompts, texts, results, rewards, strict=True)
        for round_, prompt, text, result, reward in rows:
            s = speedup(result, "eager") if result.correct else None
            lines.append(json.dumps({
                "step": step, "round": round_, "stage": self.stage, "problem_id": result.problem_id,
                "prompt": prompt,
                "completion": text, "status": result.status.value,
                "reward": reward if reward is not None and math.isfinite(reward) else None,
                "compiled": result.compiled, "speedup_vs_eager": s, "message": result.message[:300],
                "cached": result.cached, "no_verdict": result.no_verdict, "time": time.time(),
                # where the evaluation's time went: a step waits for its slowest completion
                "eval_wall_s": round(result.wall_time_s, 3),
                "eval_phases_s": {k: round(v, 3) for k, v in result.phases_s.items()}}))
        with self._write_lock, self.rollouts.open("a") as f:
            f.write("\n".join(lines) + "\n")


KEEP = ("best", "last")
SUBMIT_HINT = ("\n\nSubmit the complete module with the `submit_kernel` tool. It answers with the verdict "
               "(and what failed); you may improve the kernel and submit again.")


class KernelToolEnv:
    """A multi-turn TRL environment: `GRPOTrainer(environment_factory=functools.partial(KernelToolEnv,
    url="http://evalhost:8777", token_file="~/.kernelrl/token"), ...)`. Each rollout's `reset(problem_id=...)`
    opens a problem and returns its statement (TRL appends it to the prompt; `statement=False` when the
    dataset's prompt already states the problem); the model calls the `submit_kernel` tool as often as its
    completion budget allows and reads each verdict; `get_reward()` scores the rollout: the best submission's
    reward (`keep="last"`: the last one with a verdict), a rollout that submitted nothing getting the preset's
    reward of a completion without code, and one whose every submission lacked a verdict None.

    `url`/`token_file`: the reward service; or `scorer` (any Scorer) with `problems` (id -> Problem). TRL
    needs a chat template that can call tools for this (SmolLM2's cannot).
    """

    def __init__(self, url: str | None = None, *, token_file: str | Path | None = None,
                 reward: str = "composite", scorer: Scorer | None = None,
                 problems: Mapping[str, Problem] | None = None, keep: str = "best", statement: bool = True,
                 backend: str = "triton", deadline_s: float | None = None) -> None:
        if (url is None) == (scorer is None):
            raise ValueError("give url= (the reward service) or scorer= (any Scorer), not both")
        if keep not in KEEP:
            raise ValueError(f"keep must be one of {', '.join(KEEP)}, not {keep!r}")
        self._scorer = open_target(url if url is not None else scorer, token_file)  # type: ignore[arg-type]
        self._problems = Problems(self._scorer, problems)
        self._preset = BoundReward(reward)
        self._keep, self._statement, self._deadline_s = keep, statement, deadline_s
        self._prompts = Prompts(TEMPLATE_DIR / "compact", backend=backend)
        self._problem: Problem | None = None
        self._results: list[EvalResult] = []
        self._rewards: list[float | None] = []

    def reset(self, problem_id: str | None = None, **row: Any) -> str | None:
        """Open the problem of a dataset row (its `problem_id` column) and return its statement."""
        if problem_id is None:
            raise ValueError("KernelToolEnv needs a problem_id column in the dataset (each row's problem)")
        self._problem = self._problems.get(problem_id)
        self._results, self._rewards = [], []
        if not self._statement:
            return None
        return self._prompts.initial(self._problem)[-1]["content"] + SUBMIT_HINT

    def submit_kernel(self, code: str) -> str:
        """Evaluate a kernel for the current problem: compile it, check its outputs against the reference
        program on fresh inputs, and time it against PyTorch.

        Args:
            code: The complete Python module that defines `ModelNew` (plain source, or in a ```python fence).

        Returns:
            The verdict: status, message, what failed, the speedup over PyTorch and the reward.
        """
        if self._problem is None:
            raise RuntimeError("no problem is open: reset() comes first")
        result = self._scorer.evaluate_one(self._problem, code, kind="auto", deadline_s=self._deadline_s)
        reward = None if result.no_verdict else self._preset(result)
        self._results.append(result)
        self._rewards.append(reward)
        if reward is None:
            return render_feedback(result) + "\nNo verdict: this says nothing about the code; submit again."
        return render_feedback(result) + f"\nReward: {reward:.4g}"

    def get_reward(self) -> float | None:
        """The rollout's reward (see the class)."""
        if not self._results:
            problem = self._problem
            nothing = EvalResult(status=Status.FORMAT_ERROR, stage=Stage.STATIC,
                                 problem_id=problem.id if problem is not None else "",
                                 message="no kernel was submitted")
            return self._preset(nothing)
        known = [r for r in self._rewards if r is not None]
        if not known:
            return None
        return max(known) if self._keep == "best" else known[-1]

    @property
    def results(self) -> list[EvalResult]:
        """This rollout's verdicts, in submission order."""
        return list(self._results)
