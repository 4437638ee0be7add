# the where over 64-bit words: mix ms, GPU timed tests, pool overhead new/main/new on one machine
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
python3 - <<'PY' 2>&1 | tee $OUT/mix-words.log
import torch
from kernelrl.sandbox.timed_mix import Mixer
def t(fn, n=30):
    fn(); torch.cuda.synchronize(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n): fn()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / n
for dt in (torch.float32, torch.float16, torch.bfloat16):
    n = (1 << 30) // torch.empty((), dtype=dt).element_size()
    a, b = torch.randn(n, device="cuda").to(dt), torch.randn(n, device="cuda").to(dt); buf = torch.empty_like(a)
    m = Mixer(torch); ms = t(lambda: m.into([buf], [a], [b], 7))
    same = torch.equal(buf, torch.where(m.mask(n // 16, a.device, 7, 0).repeat_interleave(16), b, a))
    print(f"{dt} 1 GiB: mix {ms:.3f} ms, copy {t(lambda: buf.copy_(a)):.3f} ms, same as an element-wise where: {same}", flush=True)
    del a, b, buf; torch.cuda.empty_cache()
PY
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py tests/test_runtime_exploits.py -k "timed or mix or fresh or memo" -rf 2>&1 | tail -3 | tee $OUT/gpu-timed-tests.log
cp src/kernelrl/sandbox/timed_mix.py /tmp/timed_mix_new.py
for v in new main new2; do
  [ $v = main ] && cp .scratch-gpu/diag/main/timed_mix.py src/kernelrl/sandbox/timed_mix.py
  [ $v = new2 ] && cp /tmp/timed_mix_new.py src/kernelrl/sandbox/timed_mix.py
  timeout 110 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-$v.json 2>&1 | tail -4 | tee $OUT/pool-$v.log
done
