"""What the runtime op census (kernelrl.sandbox.opcensus) adds to a forward: per ATen op, and per call.

    python bench/census_overhead.py [--device cpu|cuda] [--ops 200] [--reps 200]

Three forwards, each timed with and without the census (median of --reps calls, after warm-up):
- `views`: --ops allowed ops (a view each) on a small tensor: the census's cost per allowed op;
- `compute`: --ops disallowed ops (an add each), counted and reported: the cost per op outside the allow-list;
- `launch`: empty_like, a reshape and one launch of a one-program Triton kernel (the CPU interpreter with
  TRITON_INTERPRET=1, set here on --device cpu): the fixed cost per call (the mode entered and left, the
  launch hooks, the outputs' provenance), and the same forward under a dispatch mode that only passes ops
  through (what any Python dispatch mode costs, the floor under the census's own bookkeeping).
Numbers are printed, never checked: timing depends on the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton
    import triton.language as tl

    from kernelrl.sandbox.census import LaunchCensus
    from kernelrl.sandbox.opcensus import OpCensus

    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)

    launches = LaunchCensus(__name__)  # this script's kernels count as the candidate's
    launches.install()
    census = OpCensus(launches)
    census.install()
    x = torch.randn(64, device=args.device)
    n = args.ops

    def views(t):
        for _ in range(n):
            t = t.view(-1)
        return t

    def compute(t):
        for _ in range(n):
            t = t + 1
        return t

    def launch(t):
        y = torch.empty_like(t)
        copy_kernel[(1,)](t.reshape(-1), y, t.numel(), BLOCK=64)
        return y

    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def median_us(fn) -> float:
        for _ in range(10):
            fn()
        sync()
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            fn()
            sync()
            times.append((time.perf_counter() - start) * 1e6)
        return statistics.median(times)

    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):  # any Python dispatch mode's own cost: the floor under the census's
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def passthrough_launch():
        with PassThrough():
            launch(x)

    print(f"device {args.device}, torch {torch.__version__}, triton {triton.__version__}, "
          f"{n} ops per forward, median of {args.reps}")
    for name, forward, per in (("views", views, n), ("compute", compute, n), ("launch", launch, 1)):
        bare = median_us(lambda f=forward: f(x))
        censused = median_us(lambda f=forward: census.call(f, x))
        found = census.report()
        unit = "op" if per > 1 else "call"
        print(f"{name:8s} bare {bare:9.1f} us  censused {censused:9.1f} us  +{(censused - bare) / per:7.2f} "
              f"us/{unit}  found: {[k for k, v in (found or {}).items() if v] or 'nothing'}")
    bare, floor = median_us(lambda: launch(x)), median_us(passthrough_launch)
    print(f"launch   bare {bare:9.1f} us  under a pass-through dispatch mode {floor:9.1f} us  "
          f"+{floor - bare:7.2f} us/call")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
