#!/usr/bin/env bash
# The warm pool on a CUDA machine with torch and triton installed (no internet): the pool's GPU test, the
# gpu-marked tests, and the throughput bench with and without the pool.
# Logs and bench JSON go to $OUT (or ./pool-gpu-out).
#   bash scripts/pool_gpu_check.sh          # tests, then bench
#   bash scripts/pool_gpu_check.sh tests    # only the tests      bash scripts/pool_gpu_check.sh bench   # only the bench
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/pool-gpu-out}"
WHAT="${1:-all}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
"$PY" -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 \
  || { echo "pip install failed (see install.log); using PYTHONPATH=src"; export PYTHONPATH="$PWD/src"; }
export PYTHONUNBUFFERED=1 KERNELRL_GPU_SUMMARY="$OUT/gpu_summary.jsonl"
status=0
if [ "$WHAT" != bench ]; then
  "$PY" -m pytest -m gpu -v -s -p no:cacheprovider tests/sandbox/test_pool.py tests/gpu/test_gpu.py 2>&1 | tee "$OUT/gpu_pytest.log"
  status=${PIPESTATUS[0]}
fi
if [ "$WHAT" != tests ]; then
  "$PY" bench/throughput.py --device cuda --json "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log"
fi
exit "$status"
