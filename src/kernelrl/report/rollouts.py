"""A GRPO run's rollouts as the training report reads them (`Rollout`), and what they say about learning per
problem or per op family: each one's first half of steps against its second (`learning_by`), which a
curriculum's shift between easy and hard problems does not move."""

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
    family: str | None = None  # the problem's op family (its METADATA, else its file name)
    round: int | None = None  # the sampling round of its step (dynamic sampling draws a group again)


@dataclass
class HalfRates:
    """Rates of one problem or family (or the mean over them) in one half of a stage's steps."""
    attempts: int
    correct: float
    compiled: float | None  # None when the rollouts do not say
    reward: float | None
    # GRPO groups (one problem's completions at one step and round) of two or more rewarded completions, and
    # the share whose rewards differ: a group of equal rewards has no advantage and teaches nothing
    groups: int = 0
    reward_spread: float | None = None


@dataclass
class GroupLearning:
    name: str  # a problem id or a family
    first: HalfRates
    second: HalfRates


@dataclass
class LearningTable:
    """A stage's rollouts per problem (or per family), its first half of steps against its second: the
    curriculum changes which problems a step draws, so a rising mean reward per step can be a shift towards
    easy problems; the mean over the problems (families) drawn in both halves (`first`, `second`) is not.
    On a suite of thousands a problem seldom comes back, and the family table is the one that says."""
    by: str  # "problem" or "family"
    stage: str | None
    first_steps: tuple[int, int]
    second_steps: tuple[int, int]
    rows: list[GroupLearning]
    first: HalfRates
    second: HalfRates


def _half_rates(rollouts: Sequence[Rollout]) -> HalfRates:
    compiled = [r.compiled for r in rollouts if r.compiled is not None]
    rewards = [r.reward for r in rollouts if r.reward is not None]
    groups: dict[tuple[int, int | None, str | None], list[float]] = defaultdict(list)
    for r in rollouts:
        if r.reward is not None:
            groups[(r.step, r.round, r.problem_id)].append(r.reward)
    sized = [g for g in groups.values() if len(g) > 1]
    return HalfRates(len(rollouts), sum(r.status == "correct" for r in rollouts) / len(rollouts),
                     sum(compiled) / len(compiled) if compiled else None,
                     sum(rewards) / len(rewards) if rewards else None, len(sized),
                     sum(len(set(g)) > 1 for g in sized) / len(sized) if sized else None)


def _mean_rates(rates: Sequence[HalfRates]) -> HalfRates:
    def mean(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type]
    # a row without groups has no share to count
    spreads = [r.reward_spread for r in rates if r.reward_spread is not None]
    return HalfRates(sum(r.attempts for r in rates), sum(r.correct for r in rates) / len(rates),
                     mean([r.compiled for r in rates]), mean([r.reward for r in rates]),
                     sum(r.groups for r in rates), sum(spreads) / len(spreads) if spreads else None)


def learning_by(rollouts: Sequence[Rollout], by: str = "problem") -> list[LearningTable]:
    """Per stage with rollouts of at least two steps: each problem's (by="family": each family's) rates in the
    first half of the distinct steps against the second (the extra step of an odd count goes to the second),
    and the mean over those that appear in both halves (a stage with none is left out)."""
    if by not in ("problem", "family"):
        raise ValueError(f"learning_by: by is 'problem' or 'family', not {by!r}")
    by_stage: dict[str | None, list[Rollout]] = defaultdict(list)
    for r in rollouts:
        if (r.problem_id if by == "problem" else r.family) is not None:
            by_stage[r.stage].append(r)
    tables = []
    for stage, mine in by_stage.items():
        steps = sorted({r.step for r in mine})
        if len(steps) < 2:
            continue
        cut = steps[len(steps) // 2 - 1]
        halves: dict[str, tuple[list[Rollout], list[Rollout]]] = defaultdict(lambda: ([], []))
        for r in mine:
            name = r.problem_id if by == "problem" else r.family
            halves[name][r.step > cut].append(r)  # type: ignore[index]
        rows = [GroupLearning(name, _half_rates(a), _half_rates(b)) for name, (a, b) in sorted(halves.items())
                if a and b]
        if rows:
            second = steps[len(steps) // 2]
            tables.append(LearningTable(by, stage, (steps[0], cut), (second, steps[-1]), rows,
                                        _mean_rates([p.first for p in rows]),
                                        _mean_rates([p.second for p in rows])))
    return tables


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


_PLURAL = {"problem": "problems", "family": "families"}


def _learning_section(tables: Sequence[LearningTable]) -> str:
    parts = []
    columns = ("completions", "correct", "compiled", "mean reward", "groups with a reward spread")
    for t in tables:
        first = f"steps {t.first_steps[0]}–{t.first_steps[1]}"
        second = f"steps {t.second_steps[0]}–{t.second_steps[1]}"
        mean = f"mean over {len(t.rows)} {_PLURAL[t.by] if len(t.rows) != 1 else t.by}"
        rows = [[html.escape(name), *(cell for half in (a, b) for cell in (
                    str(half.attempts), _pct(half.correct), _pct(half.compiled), _fmt(half.reward),
                    _pct(half.reward_spread)))]
                for name, a, b in [(p.name, p.first, p.second) for p in t.rows] + [(mean, t.first, t.second)]]
        head = [t.by, *(f"{half}: {col}" for half in (first, second) for col in columns)]
        title = f"<h3>stage {html.escape(t.stage)}</h3>" if t.stage else ""
        parts.append(title + _table(head, rows, left=(0,)))
    if not parts:
        return ""
    by = tables[0].by
    return (f"<h2>Learning by {by}</h2><p class=note>Each {by}'s rollouts in the first half of the steps "
            f"against the second; the last row is the mean over the {_PLURAL[by]} drawn in both halves, "
            "which a curriculum's shift between easy and hard problems does not move. Groups with a reward "
            "spread: the share of groups (one problem's completions at one step) whose rewards differ, the "
            "only ones GRPO learns from.</p>" + "".join(parts))
