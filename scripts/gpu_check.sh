#!/usr/bin/env bash
# Run kernelrl's GPU checks on a CUDA machine that already has torch and triton (no internet needed):
# installs kernelrl without dependencies, runs the gpu-marked tests and the demo.
# Writes logs and a JSON-lines summary to $OUT (or ./gpu-check-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
"$PY" -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 \
  || { echo "pip install failed (see install.log); using PYTHONPATH=src"; export PYTHONPATH="$PWD/src"; }
"$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
export PYTHONUNBUFFERED=1 KERNELRL_GPU_SUMMARY="$OUT/gpu_summary.jsonl"
rm -f "$KERNELRL_GPU_SUMMARY"
"$PY" -m pytest -m gpu -v -s -p no:cacheprovider tests/ 2>&1 | tee "$OUT/gpu_pytest.log"
status=${PIPESTATUS[0]}
"$PY" -m kernelrl.cli demo --device cuda 2>&1 | tee "$OUT/demo.log"
exit "$status"
