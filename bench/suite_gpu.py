"""Built-in suite on a GPU: audit every problem (flags, eager time on the bench set) and evaluate every reference
solution (correct on all input sets, candidate / eager / Inductor times). Writes JSON lines as it goes, so a
run cut short keeps what it measured; `render` turns the files into the markdown table of docs/suite.md.

  python bench/suite_gpu.py audit --out audit.jsonl [--only level1/]
  python bench/suite_gpu.py solutions --out solutions.jsonl [--only level0/]
  python bench/suite_gpu.py all --out DIR        (audit.jsonl, then solutions.jsonl, in DIR)
  python bench/suite_gpu.py render audit.jsonl solutions.jsonl > docs/suite.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time

from kernelrl import EvalConfig, Evaluator, load_suite


def _selected(only: str | None):
    """Problems whose id starts with `only`, or whose id is in the comma-separated list `only`."""
    ids = set(only.split(",")) if only and "," in only else None
    return [p for p in load_suite() if only is None or (p.id in ids if ids else p.id.startswith(only))]


def run_audit(out: str, only: str | None) -> None:
    with Evaluator(EvalConfig(device="cuda")) as ev, open(out, "a") as f:
        for problem in _selected(only):
            start = time.monotonic()
            audit = ev.audit(problem, timing=True)
            row = {**dataclasses.asdict(audit), "level": problem.level, "family": problem.family,
                   "split": problem.split, "wall_s": round(time.monotonic() - start, 2)}
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(problem.id, [x.flag for x in audit.flags], audit.eager_ms, flush=True)


def run_solutions(out: str, only: str | None) -> None:
    suite = load_suite()
    # the audit ran separately (command `audit`): no need to re-audit each problem before evaluating
    config = EvalConfig(device="cuda", run_timeout_s=300, refuse_flagged_problems=False)
    with Evaluator(config) as ev, open(out, "a") as f:
        for problem in _selected(only):
            path = suite.solution_path(problem)
            if path is None:
                continue
            result = ev.evaluate(problem, path.read_text())
            f.write(result.to_json() + "\n")
            f.flush()
            t = result.timing
            print(problem.id, result.status.value, result.message[:120],
                  t and t.candidate and round(t.candidate.median_ms, 4), t and t.eager and round(t.eager.median_ms, 4),
                  t and t.inductor and round(t.inductor.median_ms, 4),
                  f"floor={t and t.floor_ms and round(t.floor_ms, 4)} gpu_fraction={t and t.kernel_gpu_fraction} "
                  f"checks={t and t.timed_checks} wall={result.wall_time_s}", flush=True)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render(audit_file: str, solutions_file: str) -> str:
    audits = {row["problem_id"]: row for row in map(json.loads, open(audit_file))}
    solutions = {row["problem_id"]: row for row in map(json.loads, open(solutions_file))}
    lines = [
        "| problem | split | flags | eager ms | Inductor ms | solution | solution ms | vs eager | vs Inductor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    in_range = counted = 0
    speedups_eager, speedups_inductor = [], []
    for pid, audit in audits.items():
        eager = audit["eager_ms"].get("bench", audit["eager_ms"].get("default"))
        if audit["level"] in (1, 2, 3) and eager is not None:
            counted += 1
            in_range += 0.5 <= eager <= 50
        flags = ", ".join(f["flag"] + (" (waived)" if f["waived"] else "") for f in audit["flags"]) or "-"
        sol = solutions.get(pid)
        timing = (sol or {}).get("timing") or {}
        cand, ind = timing.get("candidate"), timing.get("inductor")
        if sol and sol["status"] == "correct" and timing.get("speedup_vs_eager"):
            speedups_eager.append(timing["speedup_vs_eager"])
            if timing.get("speedup_vs_inductor"):
                speedups_inductor.append(timing["speedup_vs_inductor"])
        lines.append(
            f"| {pid} | {audit['split']} | {flags} | {_ms(eager)} | {_ms(ind and ind['median_ms'])} | "
            f"{sol['status'] if sol else '-'} | {_ms(cand and cand['median_ms'])} | "
            f"{_ms(timing.get('speedup_vs_eager'))} | {_ms(timing.get('speedup_vs_inductor'))} |"
        )

    def gmean(values):
        return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")

    summary = [
        f"- L1-L3 problems with eager time (bench set) in 0.5-50 ms: {in_range}/{counted}"
        f" ({100 * in_range / max(counted, 1):.0f}%)",
        f"- reference solutions correct on every input set: "
        f"{sum(s['status'] == 'correct' for s in solutions.values())}/{len(solutions)}",
        f"- geometric-mean speedup of the solutions: {gmean(speedups_eager):.2f}x vs eager, "
        f"{gmean(speedups_inductor):.2f}x vs Inductor",
    ]
    return "\n".join(summary + [""] + lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["audit", "solutions", "all", "render"])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--out")
    parser.add_argument("--only", help="problem id prefix (level1/) or comma-separated problem ids")
    args = parser.parse_args()
    if args.command == "audit":
        run_audit(args.out, args.only)
    elif args.command == "solutions":
        run_solutions(args.out, args.only)
    elif args.command == "all":
        run_audit(f"{args.out}/audit.jsonl", args.only)
        run_solutions(f"{args.out}/solutions.jsonl", args.only)
    else:
        sys.stdout.write(render(*args.files))


if __name__ == "__main__":
    main()
