"""Evaluator throughput on a fixed mix of candidates: evaluations per minute and per-evaluation overhead, with
and without the warm pool (zygote), serial and batched (`Evaluator.evaluate_many`).

The mix (built-in suite, shipped examples and reference solutions): correct Triton kernels, wrong outputs,
a crashing candidate (os.abort), a slow-but-correct one (tiny blocks, four launches per call). Each mode
first evaluates every candidate of the mix once (warm-up: judge references, audits, baselines and each
candidate's compile cache; not counted; one Evaluator serves every mode), then evaluates the mix `--rounds`
times per mode.

Overhead of one evaluation = its wall time minus the GPU time its timed calls had to take
((reps + warm-up calls) x the candidate's median), i.e. everything that is not the candidate's GPU work;
also by kind of candidate, and "outside the timed loop": wall time minus the loop's length (calls x the
median rep's wall time, which holds the timer's own GPU work per call: input refill, L2 flush, launch cover).
On the CPU nothing is timed, so the overhead is the wall time.

  python bench/throughput.py --device cpu                    # this machine (Triton interpreter)
  python bench/throughput.py --device cuda --json OUT.json   # a GPU machine
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelrl import Evaluator, load_suite
from kernelrl.cache import ResultCache
from kernelrl.results import EvalResult

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "src" / "kernelrl" / "examples"
SOLUTIONS = ROOT / "src" / "kernelrl" / "problems" / "suites" / "builtin" / "solutions"

SLOW_RELU = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        for _ in range(4):  # the same work four times, with small blocks: correct and slow
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
'''


def mix() -> list[tuple[str, str, str]]:
    """(kind, problem id, source)."""
    def ex(name: str) -> str:
        return (EXAMPLES / name).read_text()

    def sol(pid: str) -> str:
        return (SOLUTIONS / f"{pid}.py").read_text()

    return [
        ("correct", "level0/1_relu", ex("relu_triton.py")),
        ("correct", "level0/2_scale_shift", ex("scale_shift_triton.py")),
        ("correct", "level1/1_row_softmax", ex("softmax_triton.py")),
        ("correct", "level0/4_silu", sol("level0/4_silu")),
        ("correct", "level0/3_gelu_tanh", sol("level0/3_gelu_tanh")),
        ("wrong", "level1/1_row_softmax", ex("softmax_off_by_one.py")),
        ("wrong", "level0/1_relu", ex("relu_triton.py").replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")),
        ("crashing", "level0/1_relu", ex("relu_abort.py")),
        ("slow", "level0/1_relu", SLOW_RELU),
    ]


def gpu_seconds(result: EvalResult) -> float:
    stats = result.timing.candidate if result.timing else None
    if stats is None:
        return 0.0
    return (stats.reps + stats.warmup) * stats.median_ms / 1e3


def loop_seconds(result: EvalResult) -> float:
    """The timed loop's length, host clock: calls x the median rep's wall time, which also holds the work the
    timer does around each call on the GPU (input refill, L2 flush, launch cover) and the sync's round trip."""
    stats = result.timing.candidate if result.timing else None
    if stats is None or stats.wall_median_ms is None:
        return 0.0
    return (stats.reps + stats.warmup) * stats.wall_median_ms / 1e3


def run_mode(ev: Evaluator, name: str, items, kinds: list[str]) -> dict:
    # one Evaluator (one judge: references, audits and baselines computed once) for every mode, made with the
    # result cache off; the 'cached' mode gives it an empty cache, fills it with one pass, then times a second
    ev.launcher.settings = dataclasses.replace(ev.launcher.settings, warm_pool=name != "fresh")
    ev._result_cache = None
    if name == "cached":
        ev._result_cache = ResultCache(Path(tempfile.mkdtemp(prefix="kernelrl-bench-")) / ResultCache.FILE)
        for problem, code in items:
            ev.evaluate(problem, code)
    started = time.monotonic()
    if name == "pool-batch":
        results = list(ev.evaluate_many(items, ordered=True))  # zipped with `kinds` below
    else:
        results = [ev.evaluate(problem, code) for problem, code in items]
    total = time.monotonic() - started
    for kind, r in zip(kinds, results, strict=True):
        if r.status.value == "timeout":  # no candidate in the mix hangs: say where it stopped
            print(f"{name}: a {kind} candidate timed out at stage {r.stage.value}: {r.message}; phases {r.phases_s};"
                  f" log tail {r.log[-300:]!r}", flush=True)
    overheads = [r.wall_time_s - gpu_seconds(r) for r in results]
    outside = [r.wall_time_s - loop_seconds(r) for r in results]
    by_kind: dict[str, list[float]] = {}
    for kind, overhead in zip(kinds, overheads, strict=True):
        by_kind.setdefault(kind, []).append(overhead)
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    paths = sorted({r.environment.isolation[-1] for r in results if r.environment and r.environment.isolation})
    phases: dict[str, list[float]] = {}
    for r in results:
        for phase, seconds in r.phases_s.items():
            phases.setdefault(phase, []).append(seconds)
    return {
        "median_phases_s": {k: round(statistics.median(v), 3) for k, v in phases.items()},
        "cache_hits": sum(r.cached for r in results),
        # run again alone after running out of GPU memory next to others (Evaluator's RunSlots)
        "oom_retries": sum(1 for r in results if "oom_retry" in r.phases_s),
        "mode": name, "evaluations": len(results), "total_s": round(total, 2),
        "evals_per_min": round(60 * len(results) / total, 1),
        "median_overhead_s": round(statistics.median(overheads), 3),
        "median_overhead_by_kind_s": {k: round(statistics.median(v), 3) for k, v in sorted(by_kind.items())},
        "median_outside_timed_loop_s": round(statistics.median(outside), 3),
        "p90_overhead_s": round(sorted(overheads)[int(0.9 * (len(overheads) - 1))], 3),
        "median_wall_s": round(statistics.median(r.wall_time_s for r in results), 3),
        "statuses": statuses, "paths": paths,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--rounds", type=int, default=1, help="times the mix is evaluated per mode")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="sandboxes at once in the batch mode")
    parser.add_argument("--modes", default="fresh,pool,pool-batch,cached")
    parser.add_argument("--standby-sandboxes", type=int, help="EvalConfig.standby_sandboxes (default: its default)")
    parser.add_argument("--no-inductor", action="store_true", help="skip the torch.compile baseline (GPU)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)

    suite = load_suite()
    chosen = mix()
    items = [(suite.get(pid), code) for _, pid, code in chosen] * args.rounds
    item_kinds = [kind for kind, _, _ in chosen] * args.rounds
    # every candidate once: the acceptance target is per evaluation with a warm compile cache
    warm_items = [(suite.get(pid), code) for _, pid, code in chosen]
    kinds = sorted({k for k, _, _ in chosen})
    print(f"device {args.device}: {len(items)} evaluations per mode ({', '.join(kinds)}), trials {args.trials}, "
          f"batch concurrency {args.concurrency}", flush=True)
    rows = []
    extra = {} if args.standby_sandboxes is None else {"standby_sandboxes": args.standby_sandboxes}
    ev = Evaluator(device=args.device, trials=args.trials, max_concurrency=args.concurrency,
                   inductor_baseline=not args.no_inductor, result_cache=False, **extra)
    started = time.monotonic()
    ev.warm_up()
    for problem, code in warm_items:
        ev.evaluate(problem, code)
    print(f"warm-up (judge, zygote, references, baselines): {time.monotonic() - started:.1f} s", flush=True)
    for name in args.modes.split(","):
        row = run_mode(ev, name, items, item_kinds)
        rows.append(row)
        print(f"{row['mode']:>11}: {row['evals_per_min']:6.1f} evals/min  median overhead {row['median_overhead_s']:.3f} s"
              f"  p90 {row['p90_overhead_s']:.3f} s  median wall {row['median_wall_s']:.3f} s  total {row['total_s']} s"
              f"  {row['statuses']}  path {row['paths']}  cache hits {row['cache_hits']}"
              f"  out-of-memory retries {row['oom_retries']}", flush=True)
        print(f"{'':>11}  median phases (s): {row['median_phases_s']}", flush=True)
        print(f"{'':>11}  median overhead by kind (s): {row['median_overhead_by_kind_s']}; outside the timed loop "
              f"{row['median_outside_timed_loop_s']:.3f} s", flush=True)
    ev.close()
    if args.json:
        args.json.write_text(json.dumps({"device": args.device, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
