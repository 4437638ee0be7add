# test_pool on the GPU host (its CPU-mode tests with the relative address-space cap), the chunk test broken once
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
sed -i 's/^EQUAL_CHUNK_BYTES = 64 << 20/EQUAL_CHUNK_BYTES = 1 << 40/' src/kernelrl/sandbox/tensorio.py
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "chunk_more" 2>&1 | grep -E "^E  .*assert|passed|failed" | head -3 | tee $OUT/gpu-chunk-test-broken.log
sed -i 's/^EQUAL_CHUNK_BYTES = 1 << 40/EQUAL_CHUNK_BYTES = 64 << 20/' src/kernelrl/sandbox/tensorio.py
timeout 230 python3 -m pytest -v -p no:cacheprovider tests/test_pool.py 2>&1 | tee $OUT/gpu-host-test_pool.log | grep -E "PASSED|FAILED|ERROR|passed|failed|^E  " | cut -c1-250
