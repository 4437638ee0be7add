"""Rerun spread of the baseline timer: time a problem's eager reference several times, with idle gaps.

Usage: python bench/timer_rerun.py [PROBLEM_ID] [--reruns N] [--idle S] [--warmup-ms MS ...]
Prints each rerun's median and the spread (max-min)/median per warm-up setting. Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import statistics
import time

from kernelrl import Evaluator, load_suite
from kernelrl.timing import TimerSettings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", nargs="?", default="level1/2_matmul_square")
    parser.add_argument("--reruns", type=int, default=4)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of GPU idleness before each rerun")
    parser.add_argument("--warmup-ms", type=float, nargs="+", default=[200.0, 1000.0])
    args = parser.parse_args()
    problem = load_suite().get(args.problem)
    for warmup in args.warmup_ms:
        with Evaluator(device="cuda", inductor_baseline=False, timer=TimerSettings(warmup_ms=warmup)) as ev:
            medians = []
            for _ in range(args.reruns):
                time.sleep(args.idle)
                stats = ev.time_baselines(problem, fresh=True).eager
                medians.append(stats.median_ms)
                print(f"warmup {warmup:g} ms: median {stats.median_ms:.4f} ms iqr/median "
                      f"{stats.rel_spread:.4f} reps {stats.reps} warmup reps {stats.warmup}", flush=True)
            spread = (max(medians) - min(medians)) / statistics.median(medians)
            print(f"warmup {warmup:g} ms: rerun spread {spread:.4f} over {medians}", flush=True)


if __name__ == "__main__":
    main()
