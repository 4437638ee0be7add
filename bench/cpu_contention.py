"""Does one core get slower when more of the host's cores are busy? (Turbo clocks, shared caches and memory
bandwidth make a process's CPU-bound phases longer when other processes run, with the host far from full.)

Runs N copies of a fixed single-threaded Python workload at once, for each N in --copies, and reports each
copy's seconds against N=1, plus the mean clock /proc/cpuinfo reports while they run (a virtual machine may
report a constant):

  python bench/cpu_contention.py --copies 1,2,4,8,16 --json contention.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import threading
import time
from pathlib import Path


def work(loops: int) -> float:
    started = time.perf_counter()
    total = 0
    for i in range(loops):
        total += i * i % 7
    return time.perf_counter() - started


def mean_mhz() -> float | None:
    try:
        values = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("cpu MHz")]
    except (OSError, ValueError, IndexError):
        return None
    return statistics.mean(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", default="1,2,4,8,16")
    parser.add_argument("--loops", type=int, default=20_000_000, help="work per copy (~1-2 s on one core)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    context = multiprocessing.get_context("fork")
    for copies in (int(c) for c in args.copies.split(",")):
        seconds: list[float] = []
        clocks: list[float] = []
        for _ in range(args.repeats):
            done = threading.Event()

            def sample(done: threading.Event, clocks: list[float]) -> None:
                while not done.wait(0.2):
                    mhz = mean_mhz()
                    if mhz is not None:
                        clocks.append(mhz)

            sampler = threading.Thread(target=sample, args=(done, clocks))
            sampler.start()
            with context.Pool(copies) as pool:
                seconds += pool.map(work, [args.loops] * copies)
            done.set()
            sampler.join()
        rows.append({"copies": copies, "median_s": round(statistics.median(seconds), 3),
                     "max_s": round(max(seconds), 3),
                     "mean_mhz": round(statistics.mean(clocks), 0) if clocks else None})
        row, base = rows[-1], max(rows[0]["median_s"], 1e-3)
        ratio = row["median_s"] / base
        print(f"{copies:3d} copies: median {row['median_s']:.3f} s a copy ({ratio:.3f}x one), slowest "
              f"{row['max_s']:.3f} s, mean clock {row['mean_mhz']} MHz", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({"loops": args.loops, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
