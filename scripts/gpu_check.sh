#!/usr/bin/env bash
# Run kernelrl's GPU checks on a CUDA machine that already has torch and triton (no internet needed):
# installs kernelrl without dependencies, then runs one part or all of them:
#   evaluator  the evaluator's gpu tests (timing, baselines, admission, the timed-input mix, the judge's memory)
#   sandbox    the sandbox's gpu tests (protocol, static and runtime checks, the candidate's uid, the warm pool)
#   mutants    the GPU-only checks' mutants, each killed by the GPU corpus (g01-g08)
#   demo       `kernelrl demo --device cuda`
# Each part fits a 10-minute call on an H100. Writes logs and a JSON-lines summary to $OUT (or ./gpu-check-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-check-out}"
PARTS="${1:-evaluator sandbox demo}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
"$PY" -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 \
  || { echo "pip install failed (see install.log); using PYTHONPATH=src"; export PYTHONPATH="$PWD/src"; }
"$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
export PYTHONUNBUFFERED=1 KERNELRL_GPU_SUMMARY="$OUT/gpu_summary.jsonl"
status=0
for part in ${PARTS//,/ }; do
  case "$part" in
    evaluator) files="tests/gpu/test_gpu.py tests/gpu/test_free_blocks.py tests/gpu/test_timed_mix.py tests/gpu/test_judge_memory.py" ;;
    sandbox) files="tests/sandbox/test_protocol.py tests/unit/candidates/test_rules.py tests/corpus/test_runtime_exploits.py tests/sandbox/test_sandbox_uid.py tests/sandbox/test_pool.py tests/sandbox/test_call_pace.py" ;;
    mutants) files="tests/corpus/test_mutants.py" ;;  # the GPU-only checks' mutants, each killed by the GPU corpus
    demo) "$PY" -m kernelrl.cli demo --device cuda 2>&1 | tee "$OUT/demo.log"; [ "${PIPESTATUS[0]}" = 0 ] || status=1
          continue ;;
    *) echo "unknown part $part (evaluator, sandbox, mutants, demo)"; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  "$PY" -m pytest -m gpu -v -s -p no:cacheprovider $files 2>&1 | tee "$OUT/gpu_pytest_$part.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
exit "$status"
