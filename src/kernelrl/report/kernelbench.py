"""KernelBench-compatible `eval_results.json`.

KernelBench's evaluation script writes, per level, `{problem_number: [{"sample_id", "compiled", "correctness",
"metadata", "runtime", "runtime_stats"}, ...]}` with runtime in milliseconds (-1.0 when not measured). We
write one entry per sample (its best attempt over turns: the best correct one by reward, else the last turn):
`RUN_DIR/eval_results.json` (keys are problem numbers when the run has one level, else `L{level}P{number}`)
and `RUN_DIR/kernelbench/level{N}/eval_results.json`. `metadata` adds kernelrl's status, message, problem id,
turn and speedups.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernelrl.runs import Step


def _problem_number(problem_id: str) -> str:
    name = problem_id.rsplit("/", 1)[-1]
    head = name.split("_", 1)[0]
    return head if head.isdigit() else name


def _entry(step: Step) -> dict[str, Any]:
    r = step.result
    t = r.timing
    env = r.environment
    cand = t.candidate if t is not None else None
    metadata = {"kernelrl_status": r.status.value, "message": r.message, "problem_id": step.problem_id,
                "turn": step.turn, "reward": step.reward,
                "hardware": env.device_name if env else None, "device": env.mode if env else None,
                "speedup_vs_eager": step.speedup_vs_eager, "speedup_vs_inductor": step.speedup_vs_inductor}
    stats: dict[str, Any] = {}
    if cand is not None:
        stats = {"mean": cand.mean_ms, "median": cand.median_ms, "min": cand.min_ms, "max": cand.max_ms,
                 "iqr": cand.iqr_ms, "num_trials": cand.reps, "hardware": metadata["hardware"]}
    return {"sample_id": step.sample, "compiled": r.compiled, "correctness": r.correct, "metadata": metadata,
            "runtime": cand.mean_ms if cand is not None else -1.0, "runtime_stats": stats}


def _sample_best(steps: list[Step]) -> Step:
    correct = [s for s in steps if s.result.correct]
    if correct:
        return max(correct, key=lambda s: (s.reward, s.speedup_vs_eager or 0.0, -s.turn))
    return max(steps, key=lambda s: s.turn)


def kernelbench_results(steps: Iterable[Step]) -> dict[int | None, dict[str, list[dict[str, Any]]]]:
    """level -> {problem number: [entry per sample]}."""
    grouped: dict[tuple[str, int], list[Step]] = defaultdict(list)
    levels: dict[str, int | None] = {}
    for s in steps:
        grouped[(s.problem_id, s.sample)].append(s)
        levels[s.problem_id] = s.level
    out: dict[int | None, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
    for (pid, _sample), st in sorted(grouped.items()):
        out[levels[pid]].setdefault(_problem_number(pid), []).append(_entry(_sample_best(st)))
    return dict(out)


def write_eval_results(run_dir: str | Path, steps: Iterable[Step]) -> Path:
    run_dir = Path(run_dir)
    per_level = kernelbench_results(steps)
    for level, results in per_level.items():
        folder = run_dir / "kernelbench" / (f"level{level}" if level is not None else "level_unknown")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "eval_results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    if len(per_level) <= 1:
        merged = next(iter(per_level.values()), {})
    else:
        merged = {f"L{level}P{num}": entries for level, results in per_level.items()
                  for num, entries in results.items()}
    path = run_dir / "eval_results.json"
    path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return path
