# (git checkout gpu-pending/gather-mix first; ~9 min): the paired gather mix on the GPU, then
# needs these in the working tree: ".scratch-gpu/whl", ".scratch-gpu/job.sh", ".scratch-gpu/diag", ".scratch-gpu/base-b9c8bd7.tgz"
# the pool overhead (the 0.1 s overhead bound) with it and with main's two files, same machine
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
timeout 60 python3 .scratch-gpu/diag/mixbench2.py 2>&1 | tee $OUT/mixbench2.log
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_timed_mix.py tests/test_gpu.py -m "gpu or not gpu" -k "timed or mix or fresh or shared_buffer" 2>&1 | tail -4 | tee $OUT/pytest.log
timeout 110 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-gather.json 2>&1 | tail -4 | tee $OUT/pool-gather.log
cp .scratch-gpu/diag/main/timed_mix.py src/kernelrl/sandbox/timed_mix.py; cp .scratch-gpu/diag/main/child.py src/kernelrl/sandbox/child.py
timeout 110 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-main.json 2>&1 | tail -4 | tee $OUT/pool-main.log
# the code that measured 0.464 s (b9c8bd7, 2026-11-23), same machine: is the bound's baseline the machine or the code?
mkdir -p /tmp/base && tar xzf .scratch-gpu/base-b9c8bd7.tgz -C /tmp/base
(cd /tmp/base && PYTHONPATH=/tmp/base/src:/tmp/site timeout 110 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/pool-b9c8bd7.json 2>&1 | tail -4 | tee $OUT/pool-b9c8bd7.log)
