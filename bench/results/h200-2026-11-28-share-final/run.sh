# the kernel share's final form on a GPU: the sandbox's gpu tests that cover it, then one fresh-candidate row
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi -L > $OUT/gpus.txt
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))'
git log -1 --format=%h 2>/dev/null
timeout 360 python3 -m pytest -m gpu -v -s -p no:cacheprovider tests/test_protocol.py tests/test_runtime_exploits.py \
  tests/test_rules.py tests/test_gpu.py \
  -k "real_child_times or runtime_exploit_is_caught or op_census or never_returns or honest_twins or kernel_share" \
  2>&1 | grep -v '^\s*$' > $OUT/gpu-pytest.log
echo "pytest rc $?"; grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/gpu-pytest.log | tail -40
timeout 200 python3 bench/throughput.py --device cuda --modes fresh-candidates --candidates solutions --only level1/ \
  --concurrency auto --rounds 1 --cache-dir /tmp/bench-cache --json $OUT/row-new.json > $OUT/row-new.log 2>&1
echo "row rc $?"; grep -E "warm-up|evals/min|learned charges" $OUT/row-new.log | cut -c1-400
