# the stub split into phases (sandbox/stub/) and its stateless secret, on a GPU
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi -L > $OUT/gpus.txt
timeout 450 python3 -m pytest -m gpu -v -p no:cacheprovider tests/test_protocol.py tests/test_runtime_exploits.py \
  tests/test_rules.py tests/test_gpu.py tests/test_free_blocks.py -k "correct_triton_kernels or failure_verdicts \
  or timing_modes or kernel_share or shared_buffer or worked_example or mix_kernel or real_child_times \
  or runtime_exploit_is_caught or op_census or never_returns or honest_twins or free_block" 2>&1 \
  | grep -v '^\s*$' > $OUT/gpu-pytest.log
echo "pytest rc $?"; grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/gpu-pytest.log | sed 's/.*:://' | tail -60
