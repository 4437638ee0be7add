# run 2 of 2 (right after run_m.sh, machine warm): the branch's pool/protocol tests on the GPU, the pool's
# overhead bound (pool mode) and all 72 reference solutions with every check on, all with the branch's files
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
cp .scratch-gpu/diag/branch/gate.py src/kernelrl/sandbox/gate.py; cp .scratch-gpu/diag/branch/runner.py src/kernelrl/sandbox/runner.py; cp .scratch-gpu/diag/branch/test_pool.py tests/test_pool.py
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
timeout 150 python3 -m pytest -v -p no:cacheprovider tests/test_pool.py "tests/test_protocol.py::test_the_real_child_times_on_a_gpu_through_typed_events" 2>&1 | tee $OUT/gpu-pytest-branch.log | grep -E "PASSED|FAILED|ERROR|passed|failed|^E  "
timeout 110 python3 bench/throughput.py --device cuda --modes pool --rounds 3 --no-inductor --json $OUT/throughput-pool-r3.json 2>&1 | tee $OUT/throughput-pool-r3.log | tail -4
timeout 300 python3 bench/suite_gpu.py solutions --out $OUT/solutions.jsonl --jobs 4 --no-inductor --runtime-policy rt-low-precision=warn 2>&1 | tee $OUT/solutions.log | tail -8
