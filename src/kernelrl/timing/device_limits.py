"""What the speed-of-light floors divide by, measured in the judge (trusted, never candidate code): the
device's dense matmul rate and copy bandwidth, and a reference forward's matmul/convolution FLOPs."""

from __future__ import annotations

from collections.abc import Callable

from kernelrl.problems.input_sets import call_with


def reference_flops(torch, module, params: dict, args: list[dict], inputs: Callable[[], list]) -> int | None:
    """Matmul/convolution FLOPs of one reference forward (torch's FlopCounterMode), counted on the meta
    device: shapes only, no compute and no device memory. None when the model or an op has no meta support."""
    from torch.utils.flop_counter import FlopCounterMode

    try:
        init_inputs = call_with(module.get_init_inputs, params)
        with torch.device("meta"):
            model = module.Model(*init_inputs)
        tensors = inputs()
        call = [tensors[a["tensor"]].to("meta") if "tensor" in a else a["value"] for a in args]
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model(*call)
        return int(counter.get_total_flops())
    except Exception:  # noqa: BLE001 - no FLOP floor for this problem
        return None


def _best_ms(torch, work: Callable[[], object], runs: int) -> float:
    """The fastest of `runs` timings (ms) of `work` on the current stream."""
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return min(times)


def peak_matmul_flops(torch, device) -> float:
    """The fastest dense matmul rate (FLOP/s), fp16 and fp32-with-TF32, best of a few 8192^3 products: no
    honest kernel (whatever tensor cores it uses) is faster."""
    n, best = 8192, 0.0
    allow = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        for dtype in (torch.float16, torch.float32):
            a = torch.randn(n, n, device=device, dtype=dtype)
            b = torch.randn(n, n, device=device, dtype=dtype)
            a @ b
            best = max(best, 2 * n**3 / (_best_ms(torch, lambda a=a, b=b: a @ b, 3) / 1e3))
            del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow
    torch.cuda.empty_cache()
    return best


def copy_bandwidth(torch, device) -> float:
    """Device memory bandwidth (bytes/s, read + write) of a 1 GiB device-to-device copy, the best of a few."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    seconds = _best_ms(torch, lambda src=src, dst=dst: dst.copy_(src), 6) / 1e3
    del src, dst
    torch.cuda.empty_cache()
    return 2 * (1 << 30) / seconds
