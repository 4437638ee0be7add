"""The built-in suite's GPU table in minutes: every problem's eager and Inductor time on the bench set, and
every reference solution checked on all input sets (check, sweeps, bench) and timed.

This runs reference and solution in one trusted process (no sandbox, no per-candidate process start), with
the evaluator's pieces: the judge's model/input construction (seed 42, KernelBench order), its comparison
and tolerances, and its CUDA-event timer (L2 flush, device-wide sync). The sandboxed path for a solution is
`kernelrl eval` / bench/suite_gpu.py; this script exists because that path costs ~20 s per problem.

  python bench/suite_table.py check --out DIR --workers 8   # parallel: correctness + warm Inductor caches
  python bench/suite_table.py time --out DIR                # serial: eager / Inductor / solution times
  python bench/suite_table.py render DIR > table.md
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SEED = 1234
_INDUCTOR_CACHE = "/tmp/kernelrl-suite-table-inductor"  # shared by the check workers and the timing step


def _selected(pid: str, only: str | None) -> bool:
    """`only` is a problem id prefix (level1/) or a comma-separated list of ids."""
    if not only:
        return True
    return pid in only.split(",") if "," in only else pid.startswith(only)


def _setup(pid: str, device: str = "cuda"):
    import importlib.util

    from kernelrl import load_suite
    from kernelrl.sandbox.judge import Judge

    suite = load_suite()
    problem = suite.get(pid)
    judge = Judge(device)
    module, sets = judge._module(str(problem.path), problem.sha256)
    solution = None
    path = suite.solution_path(problem)
    if path is not None:
        spec = importlib.util.spec_from_file_location(f"solution_{problem.sha256[:12]}", path)
        solution = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = solution
        spec.loader.exec_module(solution)
    return problem, judge, module, sets, solution


def _solution_model(judge, module, solution, params):
    from kernelrl.problems.input_sets import call_with

    torch = judge.torch
    torch.manual_seed(42)
    init = call_with(module.get_init_inputs, params)
    torch.manual_seed(42)
    if judge.gpu:
        torch.cuda.manual_seed(42)
    return solution.ModelNew(*init).to(judge.device)


def _flatten(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def check_one(pid: str, device: str = "cuda") -> dict:
    """Correctness of the solution on every set, and one torch.compile of the reference (fills the caches)."""
    try:
        return _check_one(pid, device)
    # one problem's failure (e.g. out of memory) is a row, not the end
    except Exception as exc:  # noqa: BLE001
        return {"problem_id": pid, "level": None, "split": None, "solution": None, "sets": {},
                "error": f"{type(exc).__name__}: {str(exc)[:300]}", "check_s": None}


def _check_one(pid: str, device: str) -> dict:
    from kernelrl.problems.input_sets import correctness_sets, timing_set
    from kernelrl.verify.compare import compare_outputs
    from kernelrl.verify.tolerance import tolerance_for

    started = time.monotonic()
    problem, judge, module, sets, solution = _setup(pid, device)
    torch = judge.torch

    def sync():
        if judge.gpu:
            torch.cuda.synchronize()

    row: dict = {"problem_id": pid, "level": problem.level, "split": problem.split,
                 "solution": solution is not None, "sets": {}}
    bench = timing_set(list(sets))
    for name in correctness_sets(list(sets), gpu=judge.gpu):
        params = sets[name]
        reference = judge._model(problem.sha256, module, params)
        inputs = judge._inputs(module, params, SEED)  # on the judge's device
        with torch.no_grad():
            expected = [t.clone()
                        for t in _flatten(reference(*[x.clone() if isinstance(x, torch.Tensor) else x
                                                      for x in inputs]))]
        if solution is None:
            continue
        try:
            model = _solution_model(judge, module, solution, params)
            with torch.no_grad():
                actual = _flatten(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
            sync()
            tol = tolerance_for([str(t.dtype).removeprefix("torch.") for t in expected])
            mismatch = compare_outputs(expected, actual, tol.atol, tol.rtol)
            row["sets"][name] = "ok" if mismatch is None else (f"{mismatch['reason']}: "
                                                               f"{mismatch['detail'][:200]}")
        except Exception as exc:  # noqa: BLE001 - recorded in the table
            row["sets"][name] = f"{type(exc).__name__}: {str(exc)[:200]}"
        judge.models.clear()  # bench-sized weights of several sets add up across parallel workers
        del inputs, expected
        if judge.gpu:
            torch.cuda.empty_cache()
    try:
        if judge.gpu:  # compiling warms the Inductor caches the serial `time` step then reads
            params = sets[bench]
            compiled = torch.compile(judge._model(problem.sha256, module, params))
            inputs = judge._inputs(module, params, SEED)
            with torch.no_grad():
                compiled(*inputs)
            sync()
    except Exception as exc:  # noqa: BLE001
        row["inductor_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    row["check_s"] = round(time.monotonic() - started, 2)
    return row


def _time(torch, model, inputs: list, settings) -> dict:
    from kernelrl.timing.cuda_timer import summarize, time_cuda

    def call():
        with torch.no_grad():
            model(*inputs)

    stats = summarize(time_cuda(call, torch=torch, synchronize=torch.cuda.synchronize,
                                event_cls=torch.cuda.Event, clock=time.perf_counter, settings=settings))
    return {"median_ms": stats.median_ms, "rel_spread": stats.rel_spread, "reps": stats.reps}


def time_all(out: Path, only: str | None) -> None:
    from kernelrl import load_suite
    from kernelrl.problems.input_sets import timing_set
    from kernelrl.timing.cuda_timer import TimerSettings

    settings = TimerSettings(warmup_ms=100, target_ms=300)
    with open(out / "times.jsonl", "a") as f:
        for problem in load_suite():
            if not _selected(problem.id, only):
                continue
            _, judge, module, sets, solution = _setup(problem.id)
            torch = judge.torch
            params = sets[timing_set(list(sets))]
            reference = judge._model(problem.sha256, module, params)
            inputs = judge._inputs(module, params, SEED)

            def timer(model, torch=torch, inputs=inputs):
                return _time(torch, model, inputs, settings)

            row = {"problem_id": problem.id, "eager": timer(reference)}
            try:
                compiled = torch.compile(reference)
                with torch.no_grad():
                    compiled(*inputs)
                row["inductor"] = timer(compiled)
            except Exception as exc:  # noqa: BLE001
                row["inductor_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            if solution is not None:
                try:
                    row["solution"] = timer(_solution_model(judge, module, solution, params))
                except Exception as exc:  # noqa: BLE001
                    row["solution_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(problem.id, {k: v.get("median_ms") if isinstance(v, dict) else v for k, v in row.items()},
                  flush=True)
            del reference, inputs
            torch.cuda.empty_cache()


def render(out: Path) -> str:
    checks = {r["problem_id"]: r for r in map(json.loads, open(out / "checks.jsonl"))}
    times = {r["problem_id"]: r for r in map(json.loads, open(out / "times.jsonl"))}
    lines = ["| problem | split | eager ms | Inductor ms | solution | solution ms | vs eager | vs Inductor |",
             "|---|---|---|---|---|---|---|---|"]
    in_range = counted = solved = correct = 0
    vs_eager, vs_inductor = [], []

    def ms(v):
        return "-" if v is None else f"{v:.3f}"

    for pid, check in checks.items():
        t = times.get(pid, {})
        eager = (t.get("eager") or {}).get("median_ms")
        ind = (t.get("inductor") or {}).get("median_ms")
        sol = (t.get("solution") or {}).get("median_ms")
        if check["level"] in (1, 2, 3) and eager is not None:
            counted += 1
            in_range += 0.5 <= eager <= 50
        status = "-"
        if check["solution"]:
            solved += 1
            bad = {k: v for k, v in check["sets"].items() if v != "ok"}
            status = "correct" if not bad else "WRONG " + "; ".join(f"{k}: {v}" for k, v in bad.items())
            correct += not bad
            if not bad and sol:
                vs_eager.append(eager / sol)
                if ind:
                    vs_inductor.append(ind / sol)
        lines.append(f"| {pid} | {check['split']} | {ms(eager)} | {ms(ind)} | {status} | {ms(sol)} | "
                     f"{ms(eager / sol if eager and sol else None)} | "
                     f"{ms(ind / sol if ind and sol else None)} |")

    def gmean(values):
        return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")

    summary = [
        f"- L1-L3 problems whose eager time (bench set) lies in 0.5-50 ms: {in_range}/{counted}"
        f" ({100 * in_range / max(counted, 1):.0f}%)",
        f"- reference solutions correct on every input set (check, sweeps, bench): {correct}/{solved}",
        f"- geometric-mean speedup of the solutions: {gmean(vs_eager):.2f}x vs eager, "
        f"{gmean(vs_inductor):.2f}x vs Inductor",
    ]
    return "\n".join(summary + [""] + lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["check", "time", "render"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", help="problem id prefix (level1/) or comma-separated problem ids")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--device", default="cuda",
                        help="cpu: a smoke test of `check` (needs TRITON_INTERPRET=1)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.command == "check":
        from kernelrl import load_suite

        ids = [p.id for p in load_suite() if _selected(p.id, args.only)]
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", _INDUCTOR_CACHE)
        context = multiprocessing.get_context("spawn")  # CUDA per worker, never inherited through fork
        with ProcessPoolExecutor(args.workers, mp_context=context) as pool, \
                open(out / "checks.jsonl", "a") as f:
            for row in pool.map(functools.partial(check_one, device=args.device), ids):
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(row["problem_id"], row["sets"], row.get("inductor_error", ""), row["check_s"],
                      flush=True)
    elif args.command == "time":
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", _INDUCTOR_CACHE)
        time_all(out, args.only)
    else:
        sys.stdout.write(render(out))


if __name__ == "__main__":
    main()
