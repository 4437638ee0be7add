"""How long CUDA context creation takes when several processes create theirs at once, on one GPU and spread
over the host's GPUs: every sandbox creates one (its start-up's `cuda_context` step), so if the driver
serializes creation host-wide, a host caps sandbox starts per second whatever its number of GPUs.

Each process imports torch, waits for a common start time, then times `torch.cuda.init()` (the driver's
start-up) and `set_device` + a first allocation (the context), as the sandbox's stub does; the `driver`
variants do the same through the driver API alone, without torch, and the `one-connection` ones with
CUDA_DEVICE_MAX_CONNECTIONS=1. Rows: per variant, N processes at once, on GPU 0 only and round-robin over the
visible GPUs; per row the median start-up and context seconds and the wall time from the common start to the
last done.

  python bench/cuda_context.py --procs 1,2,4,8 --variants torch,driver --json context.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TORCH_CHILD = """
import sys, time
import torch
start = float(sys.argv[1])
time.sleep(max(0.0, start - time.time()))
t0 = time.time()
torch.cuda.init()
t1 = time.time()
torch.cuda.set_device(0); torch.empty(1, device="cuda"); torch.cuda.synchronize()
t2 = time.time()
print(f"{t0 - start:.4f} {t1 - t0:.4f} {t2 - t1:.4f} {t2 - start:.4f}")
"""

# the same through the driver API alone (ctypes, no torch): what any process pays, the floor under torch's own
DRIVER_CHILD = """
import ctypes, sys, time
cuda = ctypes.CDLL("libcuda.so.1")
start = float(sys.argv[1])
time.sleep(max(0.0, start - time.time()))
t0 = time.time()
assert cuda.cuInit(0) == 0
t1 = time.time()
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0
assert cuda.cuCtxSynchronize() == 0
t2 = time.time()
print(f"{t0 - start:.4f} {t1 - t0:.4f} {t2 - t1:.4f} {t2 - start:.4f}")
"""

# name: (child program, environment added); CUDA reads CUDA_DEVICE_MAX_CONNECTIONS (hardware work queues a
# context sets up, 8 by default) when the context is created
VARIANTS = {
    "torch": (TORCH_CHILD, {}),
    "torch-one-connection": (TORCH_CHILD, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
    "driver": (DRIVER_CHILD, {}),
    "driver-one-connection": (DRIVER_CHILD, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
}


def row(procs: int, gpus: list[int], variant: str) -> dict:
    program, env = VARIANTS[variant]
    start = time.time() + 8.0  # after every child's torch import
    children = [subprocess.Popen([sys.executable, "-c", program, str(start)], stdout=subprocess.PIPE,
                                 text=True,
                                 env={**os.environ, **env, "CUDA_VISIBLE_DEVICES": str(gpus[k % len(gpus)])})
                for k in range(procs)]
    lines = [[float(x) for x in child.communicate(timeout=120)[0].split()] for child in children]
    init, context = [line[1] for line in lines], [line[2] for line in lines]
    return {"variant": variant, "procs": procs, "gpus": gpus,
            "median_s": round(statistics.median(i + c for i, c in zip(init, context, strict=True)), 4),
            "median_init_s": round(statistics.median(init), 4),
            "median_context_s": round(statistics.median(context), 4), "max_context_s": round(max(context), 4),
            "wall_s": round(max(line[3] for line in lines), 4),
            "late_start_s": round(max(line[0] for line in lines), 4),  # a child that started after the mark
            "init_s": init, "context_s": context}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", default="1,2,4,8", help="comma-separated numbers of processes at once")
    parser.add_argument("--variants", default="torch",
                        help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--json", help="write the rows here (after each row)")
    args = parser.parse_args(argv)
    import torch

    visible = list(range(torch.cuda.device_count()))
    rows = []
    for variant in args.variants.split(","):
        for procs in (int(p) for p in args.procs.split(",")):
            for gpus in ([0], visible) if len(visible) > 1 and procs > 1 else ([0],):
                result = row(procs, gpus, variant)
                rows.append(result)
                print(f"{variant}: {procs} at once on GPUs {gpus}: median {result['median_s']} s (init "
                      f"{result['median_init_s']}, context {result['median_context_s']}, max "
                      f"{result['max_context_s']}), last done {result['wall_s']} s after the start "
                      f"(late start {result['late_start_s']} s)", flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
