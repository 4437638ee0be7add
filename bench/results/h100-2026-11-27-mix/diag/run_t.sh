set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
python3 -c "import numpy, triton, torch; print('numpy', numpy.__version__, 'triton', triton.__version__, 'torch', torch.__version__)" | tee $OUT/versions.log
timeout 90 python3 .scratch-gpu/diag/mixbench3.py 2>&1 | tail -8 | tee $OUT/mixbench3.log
timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short tests/test_protocol.py tests/test_rules.py tests/test_runtime_exploits.py tests/test_sandbox_uid.py tests/test_pool.py 2>&1 | tail -40 | tee $OUT/gpu-all-2.log
