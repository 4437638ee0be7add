# uid on under CUDA by default: memdiag (IPC path under the uid?), verdicts, GPU tests
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
cp src/kernelrl/sandbox/child.py /tmp/child.orig
python3 .scratch-gpu/diag/patch_mem.py
echo "== memdiag, uid on"; timeout 60 python3 .scratch-gpu/diag/memdiag.py level1/1_row_softmax 2>&1 | tee $OUT/memdiag-uid.log | grep -E "t2|correct|wrong|error"
cp /tmp/child.orig src/kernelrl/sandbox/child.py
echo "== uid on/off verdicts"; timeout 150 python3 .scratch-gpu/diag/uid_gpu.py 2>&1 | tee $OUT/uid-gpu.log | tail -24
echo "== pytest -m gpu"
timeout 330 python3 -m pytest -m gpu -v --durations=0 -p no:cacheprovider tests/test_sandbox_uid.py tests/test_free_blocks.py tests/test_gpu.py tests/test_protocol.py tests/test_pool.py 2>&1 | tee $OUT/gpu-pytest-uid-on-1.log | grep -E "PASSED|FAILED|ERROR|passed|failed|^E  " | head -60
