# the stub's mix kernel (BlockMix): ms vs the where, the pool overhead against b9c8bd7 on one machine, GPU tests
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
mkdir -p /tmp/base && tar xzf .scratch-gpu/base-b9c8bd7.tgz -C /tmp/base
python3 - <<'PY' 2>&1 | tee $OUT/mix-kernel.log
import torch
from kernelrl.sandbox.timed_mix import Mixer
from kernelrl.sandbox.warm_kernel import BlockMix
def t(fn, n=30):
    fn(); torch.cuda.synchronize(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n): fn()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / n
k = BlockMix(torch)
for dt in (torch.float32, torch.float16):
    n = (1 << 30) // torch.empty((), dtype=dt).element_size()
    a, b = torch.randn(n, device="cuda").to(dt), torch.randn(n, device="cuda").to(dt); buf = torch.empty_like(a)
    mk, mw = Mixer(torch, k), Mixer(torch)
    kms = t(lambda: mk.into([buf], [a], [b], 7)); wms = t(lambda: mw.into([buf], [a], [b], 7))
    mk.into([buf], [a], [b], 7); same = torch.equal(buf.view(torch.uint8), mw.mixed([a], [b], 7)[0].view(torch.uint8))
    print(f"{dt} 1 GiB: kernel {kms:.3f} ms, where {wms:.3f} ms, copy {t(lambda: buf.copy_(a)):.3f} ms, same bytes: {same}", flush=True)
    del a, b, buf; torch.cuda.empty_cache()
PY
for v in on-1 base-1 on-2 base-2; do
  case $v in base-*) dir=/tmp/base; pp=/tmp/base/src:/tmp/site;; *) dir=$PWD; pp=/tmp/site;; esac
  (cd $dir && PYTHONPATH=$pp timeout 100 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-$v.json 2>&1 | grep -A1 "pool:" | sed "s/^/$v /" | tee -a $OUT/pool-interleaved.log)
done
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py tests/test_runtime_exploits.py -k "mix_kernel or timed or fresh or memo or shared_buffer or stream or thread" -rf --tb=short 2>&1 | tail -25 | tee $OUT/gpu-tests.log
