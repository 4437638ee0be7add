"""Device-only: the timed-input mix, `where` over separate variants vs `gather` over paired ones (1 GiB float32 and
fp16), bit-for-bit the same, and the device memory `pair` needs at its peak."""
import time
import torch
from kernelrl.sandbox.timed_mix import Mixer

def t(fn, n=30):
    fn(); torch.cuda.synchronize(); s = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize(); return (time.perf_counter() - s) / n * 1e3

for dtype in (torch.float32, torch.float16):
    shape = (16384, 16384) if dtype == torch.float32 else (16384, 32768)
    a = [torch.randn(shape, device="cuda").to(dtype)]; b = [torch.randn(shape, device="cuda").to(dtype)]
    m = Mixer(torch)
    buf_where = [a[0].clone()]
    where_ms = t(lambda: m.into(buf_where, a, b, 7))
    copy_ms = t(lambda: buf_where[0].copy_(a[0]))
    m.into(buf_where, a, b, 7)
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); before = torch.cuda.memory_allocated()
    m.pair(a, b)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before; after = torch.cuda.memory_allocated() - before
    buf = [a[0].clone()]
    gather_ms = t(lambda: m.into(buf, a, b, 7))
    m.into(buf, a, b, 7)
    same = torch.equal(buf[0], buf_where[0])
    m.into(buf, b, a, 7); same2 = torch.equal(buf[0], Mixer(torch).mixed([b[0].clone()], [a[0].clone()], 7)[0])
    print(f"{dtype} {a[0].numel() * a[0].element_size() / 2**30:.0f} GiB: where {where_ms:.3f} ms, gather (paired) "
          f"{gather_ms:.3f} ms, copy {copy_ms:.3f} ms; same as where: {same} {same2}; pair: peak +{peak / 2**30:.2f} GiB,"
          f" after +{after / 2**30:.2f} GiB", flush=True)
    del a, b, buf, buf_where
    torch.cuda.empty_cache()
