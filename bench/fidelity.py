"""Timer fidelity on the built-in suite's level 1: how far apart repeated timings of the same eager
reference land (rerun spread), how noisy one timing is (IQR/median), and whether the timer agrees with a
plain CUDA-event loop. Needs a CUDA GPU; runs every problem's reference in this one trusted process (no
sandbox), built the way the judge builds it (seed 42 model, bench input set, TF32 off).

Per problem and timing mode, `--reruns` back-to-back timings (modes interleaved inside each rerun, so drift
reaches them alike):
  rerun spread   (max - min) / median of the reruns' medians        targets: median <= 0.5%, p90 <= 2%
  rel spread     median over reruns of one timing's IQR / median
  agreement      our median / a plain reference: events around a loop of K calls, no L2 flush, / K
                 (above 1 is expected for short kernels: our reps start with a cold L2 and end with a sync)
Modes: events (the default timer), cuda-graph (replays of a captured forward), adaptive (events, stopping
on the median's relative standard error `--rse-target` or `--max-ms`).
With nvidia-ml-py installed, each timing's power- or thermal-capped time (NVML violation counters) is
recorded, and a row whose GPU was capped says for how long (a spread from the GPU's clock, not the timer).

  python bench/fidelity.py                                   # level 1, events mode, 5 reruns
  python bench/fidelity.py --modes events,cuda-graph,adaptive --json fidelity.json
  python bench/fidelity.py --only level1/1_ --reruns 3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from pathlib import Path

from kernelrl.timing import TimerSettings
from kernelrl.timing.gpu_power import GpuPower

MODES = ("events", "cuda-graph", "adaptive")
SPREAD_TARGETS = {"median": 0.005, "p90": 0.02}


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="only level-1 problems whose id starts with this")
    parser.add_argument("--reruns", type=int, default=5, help="timings per problem and mode (default: 5)")
    parser.add_argument("--modes", default="events", help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--warmup-ms", type=float, default=TimerSettings.warmup_ms)
    parser.add_argument("--target-ms", type=float, default=TimerSettings.target_ms,
                        help="timed work per timing (fixed count; default: %(default)s)")
    parser.add_argument("--min-reps", type=int, default=TimerSettings.min_reps)
    parser.add_argument("--max-reps", type=int, default=TimerSettings.max_reps)
    parser.add_argument("--rse-target", type=float, default=0.005, help="adaptive mode's stopping target")
    parser.add_argument("--max-ms", type=float, default=1000.0, help="adaptive mode's time budget per timing")
    parser.add_argument("--idle", type=float, default=0.0, help="seconds of GPU idleness before each rerun")
    parser.add_argument("--l2-flush", choices=("read", "write"), default=TimerSettings.l2_flush,
                        help="how each rep evicts the L2 (default: %(default)s)")
    parser.add_argument("--cover-us", type=float, default=TimerSettings.launch_cover_us,
                        help="GPU work queued ahead of each rep's call, flush and spin, "
                             "us (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the bench inputs")
    parser.add_argument("--json", type=Path, help="write every number here")
    args = parser.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(args.modes) - set(MODES))
    if unknown or not args.modes:
        parser.error(f"--modes: unknown {unknown}; choose from {','.join(MODES)}")
    if args.reruns < 2:
        parser.error("--reruns must be at least 2 for a spread")
    return args


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _plain_ms(torch, fn, calls: int) -> float:
    """The textbook measurement: one event pair around `calls` back-to-back calls, divided."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def _problem(judge, problem, args, settings: dict, power) -> dict:
    from kernelrl.problems.input_sets import timing_set
    from kernelrl.timing import summarize, time_cuda

    torch = judge.torch
    module, sets = judge._module(str(problem.path), problem.sha256)
    params = sets[timing_set(list(sets))]
    model = judge._model(problem.sha256, module, params)
    inputs = judge._inputs(module, params, args.seed)  # on the judge's device

    def forward():  # the eager baseline's call (Judge.baselines)
        with torch.no_grad():
            return model(*inputs)

    calls = min(2000, max(10, math.ceil(args.target_ms / max(_plain_ms(torch, forward, 3), 1e-3))))
    runs: dict[str, list] = {mode: [] for mode in args.modes}
    capped: dict[str, list] = {mode: [] for mode in args.modes}  # ms the GPU was power/thermal capped
    plain = []
    for _ in range(args.reruns):
        time.sleep(args.idle)
        for mode in args.modes:
            before = power.throttled_ns() if power is not None else None
            raw = time_cuda(forward, torch=torch, synchronize=torch.cuda.synchronize,
                            event_cls=torch.cuda.Event, clock=time.perf_counter, settings=settings[mode],
                            mode="cuda-graph" if mode == "cuda-graph" else "events")
            runs[mode].append((summarize(raw), raw.get("graph_error")))
            if before is not None:
                capped[mode].append((power.throttled_ns() - before) / 1e6)
        plain.append(_plain_ms(torch, forward, calls))
    plain_ms = statistics.median(plain)
    row: dict = {"problem_id": problem.id, "plain_ms": plain, "plain_calls": calls, "modes": {}}
    for mode, results in runs.items():
        medians = [stats.median_ms for stats, _ in results]
        center = statistics.median(medians)
        row["modes"][mode] = {
            "medians_ms": medians,
            "rel_spreads": [stats.rel_spread for stats, _ in results],
            "reps": [stats.reps for stats, _ in results],
            "stopped": [stats.stopped for stats, _ in results],
            "rse": [stats.rse for stats, _ in results],
            "method": results[-1][0].method,
            "graph_error": next((error for _, error in results if error), None),
            "rerun_spread": (max(medians) - min(medians)) / center if center > 0 else 0.0,
            "median_rel_spread": statistics.median(stats.rel_spread for stats, _ in results),
            "agreement": center / plain_ms if plain_ms > 0 else None,
            "capped_ms": capped[mode] or None,
        }
    return row


def _summary(rows: list[dict], modes: list[str]) -> dict:
    summary = {}
    for mode in modes:
        done = [r["modes"][mode] for r in rows if mode in r.get("modes", {})]
        if not done:
            continue
        spreads = [m["rerun_spread"] for m in done]
        agreements = [m["agreement"] for m in done if m["agreement"] is not None]
        median, p90 = statistics.median(spreads), _percentile(spreads, 0.9)
        summary[mode] = {
            "problems": len(done),
            "rerun_spread_median": median,
            "rerun_spread_p90": p90,
            "rel_spread_median": statistics.median(m["median_rel_spread"] for m in done),
            "agreement_median": statistics.median(agreements) if agreements else None,
            "graph_fallbacks": sum(1 for m in done if m["graph_error"]),
            "capped_problems": sum(1 for m in done if m.get("capped_ms") and max(m["capped_ms"]) > 0),
            "meets_targets": median <= SPREAD_TARGETS["median"] and p90 <= SPREAD_TARGETS["p90"],
        }
    return summary


def _print_row(row: dict, modes: list[str]) -> None:
    if "error" in row:
        print(f"{row['problem_id']:<40} error: {row['error']}", flush=True)
        return
    cells = []
    for mode in modes:
        m = row["modes"][mode]
        fallback = " (graph fell back)" if m["graph_error"] else ""
        if m.get("capped_ms") and max(m["capped_ms"]) > 0:
            fallback += f" (power-capped up to {max(m['capped_ms']):.0f} ms of a timing)"
        agreement = "-" if m["agreement"] is None else f"{m['agreement']:.3f}"
        cells.append(f"{statistics.median(m['medians_ms']):9.4f} {100 * m['rerun_spread']:6.2f}% "
                     f"{100 * m['median_rel_spread']:6.2f}% {agreement:>6}{fallback}")
    print(f"{row['problem_id']:<40} " + " | ".join(cells), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        sys.exit("bench/fidelity.py needs a CUDA GPU; torch sees none (torch.cuda.is_available() is False)")
    from kernelrl import load_suite
    from kernelrl.sandbox.judge import Judge

    recipe = dict(warmup_ms=args.warmup_ms, target_ms=args.target_ms, min_reps=args.min_reps,
                  max_reps=args.max_reps, l2_flush=args.l2_flush, launch_cover_us=args.cover_us)
    base = TimerSettings(**recipe)
    adaptive = TimerSettings(**recipe, rse_target=args.rse_target, max_ms=args.max_ms)
    settings = {"events": base, "cuda-graph": base, "adaptive": adaptive}
    problems = [p for p in load_suite() if p.id.startswith("level1/") and p.id.startswith(args.only)]
    if not problems:
        sys.exit(f"no level-1 problem id starts with {args.only!r}")
    judge = Judge("cuda")  # TF32 off, models and inputs built as for an evaluation
    power = GpuPower.open(torch.cuda.current_device())
    started = time.monotonic()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {len(problems)} problems, "
          f"{args.reruns} reruns, power caps {'recorded' if power else 'not recorded (no NVML)'}; per mode "
          f"({' | '.join(args.modes)}): median ms, rerun spread, IQR/median, ours/plain", flush=True)
    rows = []
    for problem in problems:
        try:
            row = _problem(judge, problem, args, settings, power)
        except Exception as exc:  # noqa: BLE001 - one problem's failure (out of memory...) is a row
            row = {"problem_id": problem.id, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        judge.models.clear()  # bench-sized weights of every problem would add up
        torch.cuda.empty_cache()
        _print_row(row, args.modes)
        rows.append(row)
    summary = _summary(rows, args.modes)
    for mode, s in summary.items():
        agreement = "-" if s["agreement_median"] is None else f"{s['agreement_median']:.3f}"
        print(f"{mode}: rerun spread median {100 * s['rerun_spread_median']:.2f}% (target <= 0.5%), "
              f"p90 {100 * s['rerun_spread_p90']:.2f}% (target <= 2%), "
              f"IQR/median {100 * s['rel_spread_median']:.2f}%, agreement {agreement}, "
              f"{s['problems']} problems, graph fallbacks {s['graph_fallbacks']}, "
              f"power-capped on {s['capped_problems']}: "
              f"{'meets' if s['meets_targets'] else 'misses'} the targets")
    elapsed = time.monotonic() - started
    print(f"{elapsed:.0f} s", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "args": {
                k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "settings": {mode: dataclasses.asdict(settings[mode]) for mode in args.modes},
            "rows": rows, "summary": summary, "elapsed_s": elapsed,
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
