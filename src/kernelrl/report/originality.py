"""How original a training run's correct kernels are: distinct programs among the correct rollouts, and how
many are a copy of a reference solution the model could have memorized (the suite's `solutions/`, which SFT
trains on), verbatim or with only constants changed. A reward that rises on copies is not learning to write
kernels; a held-out claim counts them out.

Programs compare by their AST without docstrings and comments (`kernelrl.cache.canonical_code`); a near
duplicate also abstracts every number (`near_duplicate_code`). Renamed identifiers make a different program.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from kernelrl.cache import canonical_code, near_duplicate_code
from kernelrl.problems import Suite


@dataclass(frozen=True)
class Program:
    """A correct rollout's code, by its keys."""

    problem_id: str | None
    exact: str
    near: str


@dataclass(frozen=True)
class ProgramCounts:
    problem_id: str | None  # None: every problem
    correct: int  # correct completions with code
    distinct: int  # distinct programs among them
    verbatim: int  # the same program as the problem's reference solution
    near_duplicate: int  # the reference solution with other constants (verbatim ones not counted again)


def program_of(problem_id: str | None, code: str) -> Program:
    return Program(problem_id, canonical_code(code), near_duplicate_code(code))


def reference_programs(suite: Suite) -> dict[str, Program]:
    """The suite's reference solutions, by problem id."""
    found = {}
    for problem in suite:
        path = suite.solution_path(problem)
        if path is not None:
            found[problem.id] = program_of(problem.id, path.read_text())
    return found


def program_counts(programs: Sequence[Program], references: dict[str, Program]) -> list[ProgramCounts]:
    """The totals first, then one row per problem (most correct first)."""
    by_problem: dict[str | None, list[Program]] = defaultdict(list)
    for program in programs:
        by_problem[program.problem_id].append(program)

    def counts(problem_id: str | None, mine: Sequence[Program]) -> ProgramCounts:
        verbatim = near = 0
        for p in mine:
            reference = references.get(p.problem_id or "")
            if reference is not None and p.exact == reference.exact:
                verbatim += 1
            elif reference is not None and p.near == reference.near:
                near += 1
        distinct = len({(p.problem_id, p.exact) for p in mine})
        return ProgramCounts(problem_id, len(mine), distinct, verbatim, near)

    rows = [counts(pid, mine) for pid, mine in by_problem.items()]
    rows.sort(key=lambda r: (-r.correct, str(r.problem_id)))
    return [counts(None, programs), *rows]


@dataclass(frozen=True)
class TrainingCopies:
    """Held-out correct programs that are a training-split solution (what SFT trained on), verbatim or with
    other constants: answers a model can have memorized, to count out of a held-out claim."""

    correct: int
    distinct: int
    verbatim: int
    near_duplicate: int  # not verbatim


def training_copies(programs: Sequence[Program], suite: Suite) -> TrainingCopies:
    """How many of `programs` (held-out correct completions) copy a solution of `suite`'s train split."""
    train = [program_of(p.id, path.read_text()) for p in suite.split("train")
             if (path := suite.solution_path(p)) is not None]
    exact, near = {t.exact for t in train}, {t.near for t in train}
    verbatim = sum(p.exact in exact for p in programs)
    near_only = sum(p.exact not in exact and p.near in near for p in programs)
    distinct = len({(p.problem_id, p.exact) for p in programs})
    return TrainingCopies(len(programs), distinct, verbatim, near_only)


def originality_section(rows: Sequence[ProgramCounts], limit: int = 15) -> str:
    """The HTML of the counts (the report's style), or "" without correct rollouts."""
    if not rows or rows[0].correct == 0:
        return ""
    total = rows[0]
    cells = "".join(
        f"<tr><td class=l>{html.escape(r.problem_id or 'all problems')}</td><td>{r.correct}</td>"
        f"<td>{r.distinct}</td><td>{r.verbatim}</td><td>{r.near_duplicate}</td></tr>"
        for r in rows[:limit + 1])
    return (f"<h3>Correct programs</h3><p class=note>{total.correct} correct completions, {total.distinct} "
            f"distinct programs; {total.verbatim} are a reference solution verbatim and "
            f"{total.near_duplicate} one with other constants (copies a model can have memorized: count them "
            f"out of a learning claim).</p>"
            f"<table><tr><th>problem</th><th>correct</th><th>distinct</th><th>verbatim reference</th>"
            f"<th>reference, other constants</th></tr>{cells}</table>")
