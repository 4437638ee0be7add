"""`kernelrl train two-stage` (seed 004): stage 1, a frontend GRPO run for correctness (reward -10 / +1);
stage 2, a mid-end GRPO run whose prompts carry a known-correct kernel and ask for a faster one (reward 1 +
speedup, -10 on failure), starting from stage 1's adapter. Each stage keeps its own LoRA and GRPO settings.

Known-correct kernels for stage 2 come from `kernel_sources`: 'frontend' (stage 1's correct rollouts, the best
reward per problem), 'solutions' (the suite's reference solutions), or 'db:PATH' (a kernel database).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelrl.candidates import Candidate
from kernelrl.evaluate import Scorer
from kernelrl.problems import Problem
from kernelrl.train.config import GRPOConfig, TrainConfigError
from kernelrl.train.data import ROLLOUTS, TrainDataError, check_no_test_leak, problem_row, speedup_prompt
from kernelrl.train.grpo import GRPOOutcome, run_grpo
from kernelrl.train.session import Session

FRONTEND_REWARD = "two_stage:stage=frontend"
MIDEND_REWARD = "two_stage:stage=midend"


@dataclass(frozen=True)
class TwoStageOutcome:
    frontend: GRPOOutcome
    midend: GRPOOutcome
    kernels: dict[str, str]  # problem id -> where stage 2's starting kernel came from


def known_correct_kernels(sources: Sequence[str], problems: Sequence[Problem], session: Session,
                          frontend_dir: Path | None) -> dict[str, tuple[str, str]]:
    """problem id -> (code, source) of one known-correct kernel per problem, the first source that has one."""
    found: dict[str, tuple[str, str]] = {}
    wanted = {p.id: p for p in problems}
    for source in sources:
        if source == "frontend":
            best: dict[str, tuple[float, str]] = {}
            path = (frontend_dir / ROLLOUTS) if frontend_dir is not None else None
            if path is None or not path.is_file():
                continue
            for line in path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash
                pid = record.get("problem_id")
                if record.get("status") != "correct" or pid not in wanted:
                    continue
                code = Candidate.from_text(record["completion"], "completion").code
                reward = record.get("reward") or 0.0
                if code and (pid not in best or reward > best[pid][0]):
                    best[pid] = (reward, code)
            for pid, (_, code) in best.items():
                found.setdefault(pid, (code, "frontend"))
        elif source == "solutions":
            for pid, problem in wanted.items():
                path = session.suite.solution_path(problem)
                if path is not None:
                    found.setdefault(pid, (path.read_text(), "solutions"))
        elif source.startswith("db:"):
            from kernelrl.runs.kerneldb import KernelDB

            db = KernelDB(source[3:])
            for pid, problem in wanted.items():
                prior = db.best(problem, k=1)
                if prior:
                    found.setdefault(pid, (prior[0].code, source))
        else:
            raise TrainConfigError(f"unknown kernel source {source!r} (frontend, solutions or db:PATH)")
    return found


def midend_rows(kernels: dict[str, tuple[str, str]], session: Session) -> list[dict[str, Any]]:
    rows = []
    for problem in session.problems:
        if problem.id in kernels:
            code, source = kernels[problem.id]
            prompt = speedup_prompt(session.prompts, problem, code, None)
            rows.append(problem_row(problem, prompt, kernel_source=source))
    check_no_test_leak(rows, session.suite)
    return rows


def run_two_stage(frontend: GRPOConfig, midend: GRPOConfig, run_dir: str | Path,
                  kernel_sources: Sequence[str] = ("frontend",),
                  scorer: Scorer | None = None) -> TwoStageOutcome:
    """Run (or resume) both stages under RUN_DIR/frontend and RUN_DIR/midend."""
    run_dir = Path(run_dir)
    if not kernel_sources:
        raise TrainConfigError("two-stage needs at least one kernel source for stage 2")
    front = dataclasses.replace(frontend, run_dir=str(run_dir / "frontend"), stage="frontend")
    mid = dataclasses.replace(midend, run_dir=str(run_dir / "midend"), stage="midend")
    first = run_grpo(front, scorer)
    session = Session.open(dataclasses.replace(mid, adapter=str(first.adapter)))
    kernels = known_correct_kernels(kernel_sources, session.problems, session, Path(front.run_dir))
    if not kernels:
        raise TrainDataError(f"stage 2 has no known-correct kernel to start from (sources: "
                             f"{', '.join(kernel_sources)}); add 'solutions' or a kernel database (db:PATH)")
    rows = midend_rows(kernels, session)
    second = run_grpo(dataclasses.replace(mid, adapter=str(first.adapter)), scorer, rows=rows)
    return TwoStageOutcome(first, second, {pid: source for pid, (_, source) in kernels.items()})
