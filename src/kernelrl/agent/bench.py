"""The benchmark driver: the agent over a list of problems into a resumable run directory, then metrics
(`metrics.json`), the KernelBench-compatible `eval_results.json`, the best kernels (`kernels/`, correct only)
and each unsolved problem's best attempt (`attempts/best-incorrect/`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelrl.agent.loop import Agent, AgentConfig, ProblemOutcome
from kernelrl.evaluate import Scorer
from kernelrl.policies import write_replay
from kernelrl.policies.base import Policy
from kernelrl.problems import Problem, Suite
from kernelrl.prompts import Prompts
from kernelrl.report import Metrics, metrics_by_level, write_best_kernels, write_eval_results
from kernelrl.runs import KernelDB, RunStore, Step

METRICS = "metrics.json"


@dataclass
class BenchResult:
    run_dir: Path
    outcomes: list[ProblemOutcome]
    metrics: dict[str, Metrics]  # 'all' and per level
    eval_results: Path


def solutions_replay(suite: Suite, problems: Sequence[Problem],
                     path: str | Path) -> tuple[Path, list[Problem]]:
    """Write a replay file serving each problem's reference solution (as a fenced completion, every turn and
    sample). Returns the file and the problems that have a solution."""
    records, covered = [], []
    for problem in problems:
        solution = suite.solution_path(problem)
        if solution is None:
            continue
        covered.append(problem)
        records.append({"problem_id": problem.id, "turn": 1, "model": "reference-solution",
                        "text": f"```python\n{solution.read_text().rstrip()}\n```\n"})
    if not records:
        raise ValueError(f"suite {suite.name} ships no reference solutions for the selected problems")
    return write_replay(path, records), covered


def run_bench(policy: Policy, problems: Sequence[Problem], run_dir: str | Path, evaluator: Scorer,
              config: AgentConfig | None = None, prompts: Prompts | None = None,
              kernel_db: KernelDB | None = None, info: dict[str, Any] | None = None,
              on_step: Callable[[Step], None] | None = None,
              on_problem: Callable[[Problem, ProblemOutcome | None], None] | None = None,
              problem_concurrency: int = 1, **agent_options: Any) -> BenchResult:
    """Run (or resume) a benchmark. Finished (problem, sample, turn) attempts recorded in `run_dir` are
    reused, not generated or evaluated again. `problem_concurrency` problems are solved at once (their
    evaluations share the evaluator's sandboxes; GPU timing stays one at a time; `on_step`/`on_problem` are
    then called from worker threads). `agent_options` go to `Agent` (judge, judge_lambda, judge_verify)."""
    if not problems:
        raise ValueError("no problems to benchmark")
    if problem_concurrency < 1:
        raise ValueError(f"problem_concurrency must be at least 1, not {problem_concurrency}")
    config = config or AgentConfig(turns=1, samples=1)
    store = RunStore(run_dir)
    store.write_config({"policy": policy.name, "agent": dataclasses.asdict(config),
                        "problems": [p.id for p in problems], **(info or {})})
    agent = Agent(policy, evaluator, config, prompts=prompts, store=store, kernel_db=kernel_db,
                  on_step=on_step, **agent_options)

    def solve(problem: Problem) -> ProblemOutcome:
        if on_problem is not None:
            on_problem(problem, None)
        outcome = agent.solve(problem)
        if on_problem is not None:
            on_problem(problem, outcome)
        return outcome

    if problem_concurrency == 1:
        outcomes = [solve(problem) for problem in problems]
    else:
        evaluator.warm_up()  # the judge and zygote start in this thread: their parent-death signal follows it
        with ThreadPoolExecutor(max_workers=problem_concurrency, thread_name_prefix="kernelrl-bench") as pool:
            futures = [pool.submit(solve, problem) for problem in problems]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f for f in done if f.exception() is not None), None)
            if failed is not None:  # the problems not started yet are dropped; the run resumes later
                for future in futures:
                    future.cancel()
                raise failed.exception()
            outcomes = [future.result() for future in futures]
    return finish_run(store.run_dir, outcomes, {p.id for p in problems})


def finish_run(run_dir: Path, outcomes: list[ProblemOutcome],
               problem_ids: set[str] | None = None) -> BenchResult:
    """Compute and write the run's metrics, KernelBench export, best kernels (kernels/<id>.py, correct only)
    and unsolved problems' best attempts (attempts/best-incorrect/<id>.py), from what the store holds."""
    steps = RunStore(run_dir).steps()
    if problem_ids is not None:
        steps = [s for s in steps if s.problem_id in problem_ids]
    metrics = metrics_by_level(steps)
    (run_dir / METRICS).write_text(json.dumps({k: m.to_dict() for k, m in metrics.items()}, indent=2) + "\n")
    eval_results = write_eval_results(run_dir, steps)
    write_best_kernels(run_dir, steps)
    return BenchResult(run_dir, outcomes, metrics, eval_results)
