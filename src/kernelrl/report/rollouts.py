"""A GRPO run's rollouts as the training report reads them (`Rollout`), and what they say about learning per
problem: each problem's first half of steps against its second (`learning_by_problem`), which a curriculum's
shift between easy and hard problems does not move."""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from kernelrl.report.html import _fmt, _table
from kernelrl.report.originality import Program


@dataclass
class Rollout:
    stage: str | None
    step: int
    status: str
    reward: float | None
    problem_id: str | None = None
    compiled: bool | None = None
    program: Program | None = None  # a correct completion's code, by its keys (report.originality)



@dataclass
class HalfRates:
    """Rates of one problem (or the mean over problems) in one half of a stage's steps."""
    attempts: int
    correct: float
    compiled: float | None  # None when the rollouts do not say
    reward: float | None


@dataclass
class ProblemLearning:
    problem_id: str
    first: HalfRates
    second: HalfRates


@dataclass
class LearningByProblem:
    """A stage's rollouts per problem, its first half of steps against its second: the curriculum changes
    which problems a step draws, so a rising mean reward per step can be a shift towards easy problems; the
    mean over problems drawn in both halves (`first`, `second`) is not."""
    stage: str | None
    first_steps: tuple[int, int]
    second_steps: tuple[int, int]
    problems: list[ProblemLearning]
    first: HalfRates
    second: HalfRates


def _half_rates(rollouts: Sequence[Rollout]) -> HalfRates:
    compiled = [r.compiled for r in rollouts if r.compiled is not None]
    rewards = [r.reward for r in rollouts if r.reward is not None]
    return HalfRates(len(rollouts), sum(r.status == "correct" for r in rollouts) / len(rollouts),
                     sum(compiled) / len(compiled) if compiled else None,
                     sum(rewards) / len(rewards) if rewards else None)


def _mean_rates(rates: Sequence[HalfRates]) -> HalfRates:
    def mean(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type]
    return HalfRates(sum(r.attempts for r in rates), sum(r.correct for r in rates) / len(rates),
                     mean([r.compiled for r in rates]), mean([r.reward for r in rates]))


def learning_by_problem(rollouts: Sequence[Rollout]) -> list[LearningByProblem]:
    """Per stage with rollouts of at least two steps: each problem's rates in the first half of the distinct
    steps against the second (the extra step of an odd count goes to the second), and the mean over the
    problems that appear in both halves (a stage with none is left out)."""
    by_stage: dict[str | None, list[Rollout]] = defaultdict(list)
    for r in rollouts:
        if r.problem_id is not None:
            by_stage[r.stage].append(r)
    tables = []
    for stage, mine in by_stage.items():
        steps = sorted({r.step for r in mine})
        if len(steps) < 2:
            continue
        cut = steps[len(steps) // 2 - 1]
        halves: dict[str, tuple[list[Rollout], list[Rollout]]] = defaultdict(lambda: ([], []))
        for r in mine:
            halves[r.problem_id][r.step > cut].append(r)  # type: ignore[index]
        problems = [ProblemLearning(p, _half_rates(a), _half_rates(b)) for p, (a, b) in sorted(halves.items())
                    if a and b]
        if problems:
            second = steps[len(steps) // 2]
            tables.append(LearningByProblem(stage, (steps[0], cut), (second, steps[-1]), problems,
                                            _mean_rates([p.first for p in problems]),
                                            _mean_rates([p.second for p in problems])))
    return tables


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _learning_section(tables: Sequence[LearningByProblem]) -> str:
    parts = []
    for t in tables:
        first = f"steps {t.first_steps[0]}–{t.first_steps[1]}"
        second = f"steps {t.second_steps[0]}–{t.second_steps[1]}"
        rows = [[html.escape(name), str(a.attempts), _pct(a.correct), _pct(a.compiled), _fmt(a.reward),
                 str(b.attempts), _pct(b.correct), _pct(b.compiled), _fmt(b.reward)]
                for name, a, b in [(p.problem_id, p.first, p.second) for p in t.problems]
                + [(f"mean over {len(t.problems)} problems", t.first, t.second)]]
        head = ["problem", *(f"{half}: {col}" for half in (first, second)
                             for col in ("completions", "correct", "compiled", "mean reward"))]
        title = f"<h3>stage {html.escape(t.stage)}</h3>" if t.stage else ""
        parts.append(title + _table(head, rows, left=(0,)))
    if not parts:
        return ""
    return ("<h2>Learning by problem</h2><p class=note>Each problem's rollouts in the first half of the "
            "steps against the second; the last row is the mean over problems drawn in both halves, which a "
            "curriculum's shift between easy and hard problems does not move.</p>" + "".join(parts))
