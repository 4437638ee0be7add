"""Training data: prompt rows for GRPO and (prompt, completion) rows for SFT, from a suite's train split.

Rows are plain dicts in TRL's conversational format (`prompt`: chat messages; SFT rows add `completion`: one
assistant message), with the problem id and metadata as columns (TRL hands extra columns to reward functions).
The test split never enters a training set: `check_no_test_leak` refuses any row whose problem is a test-split
problem or shares an op family with one, and every builder calls it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kernelrl.cache import canonical_code
from kernelrl.candidates import Candidate
from kernelrl.problems import Problem, Suite
from kernelrl.prompts import Prompts
from kernelrl.results import EvalResult
from kernelrl.runs.store import DATABASE, RunStore

ROLLOUTS = "rollouts.jsonl"


class TrainDataError(ValueError):
    """Training data is missing, unreadable, or would leak the test split."""


def select_problems(suite: Suite, patterns: Sequence[str] = (), split: str = "train") -> list[Problem]:
    """The split's problems, narrowed to ids or id prefixes when given. Naming a problem outside the split is
    an error, not a silent drop."""
    chosen = list(suite.split(split))
    if not patterns:
        return chosen
    selected = [p for p in chosen if any(p.id == pat or p.id.startswith(pat) for pat in patterns)]
    for pat in patterns:
        if not any(p.id == pat or p.id.startswith(pat) for p in selected):
            other = [p.id for p in suite if p.id == pat or p.id.startswith(pat)]
            where = f"they are in the other split ({', '.join(other[:5])})" if other else "no problem matches"
            raise TrainDataError(f"{pat!r} selects no {split}-split problem of suite {suite.name}: {where}")
    return selected


def check_no_test_leak(rows: Iterable[dict[str, Any]], suite: Suite) -> None:
    """Raise when a row's problem is in the test split, shares an op family with a test problem, or is
    unknown. A held-out in-family problem (METADATA "heldout": "in_family", as `kernelrl gen` marks its test
    split) guards only itself: the generator made it disjoint from every other problem by signature and
    near-duplicate."""
    test_ids = {p.id for p in suite.split("test")}
    test_families = {p.family for p in suite.split("test") if p.metadata.get("heldout") != "in_family"}
    known = {p.id: p for p in suite}
    for row in rows:
        pid = row.get("problem_id")
        if pid not in known:
            raise TrainDataError(f"training row for unknown problem {pid!r} (not in suite {suite.name})")
        if pid in test_ids or known[pid].family in test_families:
            raise TrainDataError(f"training row for {pid} would leak the test split (problem or op family "
                                 f"{known[pid].family!r} is held out)")


def problem_row(problem: Problem, prompt: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    return {"prompt": prompt, "problem_id": problem.id,
            "level": problem.level if problem.level is not None else -1,
            "difficulty": problem.difficulty if problem.difficulty is not None else -1,
            "family": problem.family, **extra}


def prompt_rows(problems: Sequence[Problem], prompts: Prompts, suite: Suite) -> list[dict[str, Any]]:
    """One GRPO prompt row per problem (the first-turn prompt)."""
    rows = [problem_row(p, prompts.initial(p)) for p in problems]
    check_no_test_leak(rows, suite)
    return rows


def fenced(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


def speedup_prompt(prompts: Prompts, problem: Problem, code: str,
                   result: EvalResult | None) -> list[dict[str, str]]:
    """Stage-2 (mid-end) prompt: a known-correct kernel and its measurements, asking for a faster one. Uses
    the refinement template, whose feedback section carries the verdict and timings."""
    if result is None:
        from kernelrl.results import Stage, Status

        result = EvalResult(problem_id=problem.id, status=Status.CORRECT, stage=Stage.DONE,
                            message="this kernel is correct; make it faster")
    messages = prompts.refine(problem, code, result, turn=2)
    messages[-1] = {"role": "user", "content": messages[-1]["content"] + "\n\nThe kernel above is correct. "
                    "Write a faster one that stays correct."}
    return messages


def _sft_row(problem: Problem, prompt: list[dict[str, str]], completion: str, source: str) -> dict[str, Any]:
    return problem_row(problem, prompt, completion=[{"role": "assistant", "content": completion}],
                       source=source)


def _records(path: Path) -> Iterable[dict[str, Any]]:
    with path.open() as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                raise TrainDataError(f"{path}:{number}: not a JSON line") from None


def _from_jsonl(path: Path, suite: Suite, prompts: Prompts) -> Iterable[tuple[str, list, str]]:
    """(problem id, prompt messages, completion text) of the correct records of a
    .jsonl file: `kernelrl export` records (`messages` ending with the assistant
    turn), training rollouts (`prompt`, `completion`, `status`), or plain
    {problem_id, completion} records (prompted with the first-turn prompt)."""
    for record in _records(path):
        status = record.get("status", "correct")
        if status != "correct":
            continue
        pid = record.get("problem_id")
        if "messages" in record:
            messages = record["messages"]
            yield pid, messages[:-1], messages[-1]["content"]
        elif "completion" in record:
            prompt = record.get("prompt")
            if prompt is None:
                try:
                    prompt = prompts.initial(suite.get(pid))
                except KeyError:
                    raise TrainDataError(f"{path}: record for unknown problem {pid!r}") from None
            completion = record["completion"]
            if isinstance(completion, list):
                completion = completion[-1]["content"]
            yield pid, prompt, completion
        else:
            raise TrainDataError(f"{path}: a record needs 'messages' or 'completion' "
                                 f"(keys: {sorted(record)})")


def _from_run_dir(path: Path) -> Iterable[tuple[str, list, str]]:
    """Correct attempts of an agent/bench run (its trajectory
    store) and of a training run (rollouts.jsonl)."""
    found = False
    if (path / ROLLOUTS).is_file():
        found = True
        for record in _records(path / ROLLOUTS):
            if record.get("status") == "correct":
                yield record["problem_id"], record["prompt"], record["completion"]
    if (path / DATABASE).is_file():
        found = True
        for step in RunStore(path).steps():
            if step.result.correct:
                yield step.problem_id, list(step.messages), step.completion.text
    if not found:
        raise TrainDataError(f"{path} holds no trajectories (no {ROLLOUTS} and no run store)")


def sft_rows(sources: Sequence[str], suite: Suite, prompts: Prompts,
             problems: Sequence[Problem] | None = None) -> list[dict[str, Any]]:
    """SFT rows from sources: 'solutions' (the suite's reference solutions for its train-split problems), run
    directories and .jsonl files (correct attempts only). Duplicates, the same problem with the same canonical
    AST, are kept once (seed 003's distillation); rows of problems outside `problems` (default: the train
    split) are dropped; the test split never enters (checked)."""
    allowed = {p.id: p for p in (problems if problems is not None else suite.split("train"))}
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()

    def add(pid: str, prompt: list, completion: str, source: str) -> None:
        if pid not in allowed:
            return
        code = Candidate.from_text(completion, "completion").code
        if code is None:  # a "correct" record whose text holds no ModelNew block cannot teach the format
            return
        key = (pid, canonical_code(code))
        if key in seen:
            return
        seen.add(key)
        rows.append(_sft_row(allowed[pid], prompt, completion, source))

    for source in sources:
        if source == "solutions":
            for problem in allowed.values():
                path = suite.solution_path(problem)
                if path is not None:
                    add(problem.id, prompts.initial(problem), fenced(path.read_text()), "solutions")
            continue
        path = Path(source)
        if path.is_dir():
            for pid, prompt, completion in _from_run_dir(path):
                add(pid, prompt, completion, str(path))
        elif path.is_file():
            for pid, prompt, completion in _from_jsonl(path, suite, prompts):
                add(pid, prompt, completion, str(path))
        else:
            raise TrainDataError(f"SFT source {source!r} is not 'solutions', a run "
                                 "directory or a .jsonl file")
    if not rows:
        raise TrainDataError(f"no SFT rows from {', '.join(sources)} for the selected train-split problems")
    check_no_test_leak(rows, suite)
    return rows


def heldout_sft_rows(suite: Suite, prompts: Prompts) -> list[dict[str, Any]]:
    """The test split's reference solutions as (prompt,
    completion) rows: for an eval loss only, never trained on."""
    rows = []
    for problem in suite.split("test"):
        path = suite.solution_path(problem)
        if path is not None:
            rows.append(_sft_row(problem, prompts.initial(problem), fenced(path.read_text()), "solutions"))
    return rows
