"""How long CUDA context creation takes when several processes create theirs at once, on one GPU and spread
over the host's GPUs: every sandbox creates one (its start-up's `cuda_context` step), so if the driver
serializes creation host-wide, a host caps sandbox starts per second whatever its number of GPUs.

Each process imports torch, waits for a common start time, then times `torch.cuda.init()` + `set_device` + a
first allocation (what the sandbox's stub does). Rows: N processes at once, on GPU 0 only and round-robin over
the visible GPUs; per row the median and max seconds and the wall time from the common start to the last done.

  python bench/cuda_context.py --procs 1,2,4,8 --json context.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = """
import sys, time
import torch
start = float(sys.argv[1])
time.sleep(max(0.0, start - time.time()))
t0 = time.time()
torch.cuda.init(); torch.cuda.set_device(0); torch.empty(1, device="cuda"); torch.cuda.synchronize()
t1 = time.time()
print(f"{t0 - start:.4f} {t1 - t0:.4f} {t1 - start:.4f}")
"""


def row(procs: int, gpus: list[int]) -> dict:
    start = time.time() + 8.0  # after every child's torch import
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(start)], stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpus[k % len(gpus)])})
                for k in range(procs)]
    lines = [child.communicate(timeout=120)[0].split() for child in children]
    late = max(float(line[0]) for line in lines)  # a child that imported torch after the start time
    seconds = [float(line[1]) for line in lines]
    return {"procs": procs, "gpus": gpus, "median_s": round(statistics.median(seconds), 4),
            "max_s": round(max(seconds), 4), "wall_s": round(max(float(line[2]) for line in lines), 4),
            "late_start_s": round(late, 4), "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", default="1,2,4,8", help="comma-separated numbers of processes at once")
    parser.add_argument("--json", help="write the rows here (after each row)")
    args = parser.parse_args(argv)
    import torch

    visible = list(range(torch.cuda.device_count()))
    rows = []
    for procs in (int(p) for p in args.procs.split(",")):
        for gpus in ([0], visible) if len(visible) > 1 and procs > 1 else ([0],):
            result = row(procs, gpus)
            rows.append(result)
            print(f"{procs} at once on GPUs {gpus}: median {result['median_s']} s, max {result['max_s']} s, "
                  f"last done {result['wall_s']} s after the start (late start {result['late_start_s']} s)",
                  flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
