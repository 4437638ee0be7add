"""Built-in suite on a GPU through the sandboxed evaluator: audit problems (flags, eager time on the
bench set) or evaluate reference solutions with every check on (verdict, candidate / eager / Inductor
times, floor, kernel share of GPU time). Writes JSON lines as it goes, so a run cut short keeps what it
measured. The docs/suite.md table comes from bench/suite_table.py, which is ~10x cheaper per problem.

  python bench/suite_gpu.py audit --out audit.jsonl [--only level1/]
  python bench/suite_gpu.py solutions --out solutions.jsonl [--only level0/1_relu,level1/1_row_softmax] \
      [--jobs 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from kernelrl import Evaluator, load_suite


def _selected(only: str | None):
    """Problems whose id starts with `only`, or whose id is in the comma-separated list `only`."""
    ids = set(only.split(",")) if only and "," in only else None
    return [p for p in load_suite() if only is None or (p.id in ids if ids else p.id.startswith(only))]


def run_audit(out: str, only: str | None) -> None:
    with Evaluator(device="cuda") as ev, open(out, "a") as f:
        for problem in _selected(only):
            start = time.monotonic()
            audit = ev.audit(problem, timing=True)
            row = {**dataclasses.asdict(audit), "level": problem.level, "family": problem.family,
                   "split": problem.split, "wall_s": round(time.monotonic() - start, 2)}
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(problem.id, [x.flag for x in audit.flags], audit.eager_ms, flush=True)


def run_solutions(out: str, only: str | None, jobs: int, inductor: bool,
                  runtime_policy: dict[str, str]) -> None:
    suite = load_suite()
    # the audit ran separately (command `audit`): no need to re-audit each problem before evaluating
    config = dict(device="cuda", run_timeout_s=300, refuse_flagged_problems=False, inductor_baseline=inductor,
                  result_cache=False, max_concurrency=jobs, runtime_policy=runtime_policy or None)
    items = [(p, path.read_text()) for p in _selected(only) if (path := suite.solution_path(p)) is not None]
    with Evaluator(**config) as ev, open(out, "a") as f:
        for result in ev.evaluate_many(items):  # as they finish; timing stays one at a time on the GPU
            f.write(result.to_json() + "\n")
            f.flush()
            t = result.timing
            print(result.problem_id, result.status.value, result.message[:120],
                  [f"{x.rule}: {x.detail}"[:160] for x in result.findings],
                  t and t.candidate and round(t.candidate.median_ms, 4),
                  t and t.eager and round(t.eager.median_ms, 4),
                  t and t.inductor and round(t.inductor.median_ms, 4),
                  f"floor={t and t.floor_ms and round(t.floor_ms, 4)} "
                  f"gpu_fraction={t and t.kernel_gpu_fraction} checks={t and t.timed_checks} "
                  f"checked_call_gpu_ms={t and t.checked_call_gpu_ms and round(t.checked_call_gpu_ms, 4)} "
                  f"wall={result.wall_time_s}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["audit", "solutions"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", help="problem id prefix (level1/) or comma-separated problem ids")
    parser.add_argument("--jobs", type=int, default=2, help="solutions: sandboxes at once (evaluate_many)")
    parser.add_argument("--no-inductor", action="store_true",
                        help="solutions: skip the torch.compile baseline")
    parser.add_argument("--runtime-policy", action="append", default=[], metavar="CHECK=POLICY",
                        help="solutions: a runtime check's policy (e.g. rt-low-precision=warn, which is off "
                             "on a GPU by default); repeatable")
    args = parser.parse_args()
    policy = dict(item.split("=", 1) for item in args.runtime_policy)
    if args.command == "audit":
        run_audit(args.out, args.only)
    else:
        run_solutions(args.out, args.only, args.jobs, not args.no_inductor, policy)


if __name__ == "__main__":
    main()
