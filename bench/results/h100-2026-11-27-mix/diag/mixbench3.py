"""Device-only: ways to mix two variants per block of 16 elements into a buffer (1 GiB), ms per mix, and whether
each gives the same bytes as the current where."""
import torch
from kernelrl.sandbox.timed_mix import Mixer, BLOCK

def t(fn, n=30):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / n

for dtype in (torch.float32, torch.float16, torch.int64):
    nbytes = 1 << 30
    n = nbytes // torch.empty((), dtype=dtype).element_size()
    a = torch.randn(n, device="cuda").to(dtype); b = torch.randn(n, device="cuda").to(dtype)
    m = Mixer(torch); buf = torch.empty_like(a)
    res = {}
    res["copy"] = t(lambda: buf.copy_(a))
    res["where"] = t(lambda: m.into([buf], [a], [b], 7))
    ref = buf.clone(); m.into([ref], [a], [b], 7)
    nb = n // BLOCK
    mask = m.mask(nb, a.device, 7, 0)
    def where_view(vd):
        av, bv, ov = a.view(vd).view(nb, -1), b.view(vd).view(nb, -1), buf.view(vd).view(nb, -1)
        return lambda: torch.where(m.mask(nb, a.device, 7, 0)[:, None], bv, av, out=ov)
    for name, vd in (("where-int64", torch.int64), ("where-int32", torch.int32)):
        res[name] = t(where_view(vd)); where_view(vd)(); res[name + "-same"] = torch.equal(buf.view(torch.uint8), ref.view(torch.uint8))
    both = torch.stack([a, b]).view(2 * nb, BLOCK)
    ar = torch.arange(nb, device="cuda")
    for name, itype, vd in (("index_select-i64", torch.int64, None), ("index_select-i32", torch.int32, None),
                            ("index_select-i64-int64view", torch.int64, torch.int64)):
        src = both if vd is None else both.view(vd)
        out = buf.view(nb, BLOCK) if vd is None else buf.view(vd).view(nb, -1)
        def f(itype=itype, src=src, out=out):
            mk = m.mask(nb, a.device, 7, 0)
            idx = (ar + mk.to(torch.int64) * nb).to(itype)
            torch.index_select(src, 0, idx, out=out)
        res[name] = t(f); f(); res[name + "-same"] = torch.equal(buf.view(torch.uint8), ref.view(torch.uint8))
    both3 = torch.stack([a.view(nb, BLOCK), b.view(nb, BLOCK)], dim=1)  # (nb, 2, 16) interleaved
    def g():
        mk = m.mask(nb, a.device, 7, 0)
        torch.index_select(both3.view(2 * nb, BLOCK), 0, ar * 2 + mk.to(torch.int64), out=buf.view(nb, BLOCK))
    res["index_select-interleaved"] = t(g); g(); res["index_select-interleaved-same"] = torch.equal(buf.view(torch.uint8), ref.view(torch.uint8))
    res["mask-only"] = t(lambda: m.mask(nb, a.device, 7, 0))
    print(dtype, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in res.items()}, flush=True)
    del a, b, buf, both, both3, ref
    torch.cuda.empty_cache()
