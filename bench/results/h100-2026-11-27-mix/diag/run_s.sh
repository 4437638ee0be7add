set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_timed_mix.py -m "gpu or not gpu" -rf --tb=line 2>&1 | tail -15 | tee $OUT/timed-mix-main.log
timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=line --durations=5 2>&1 | tail -30 | tee $OUT/gpu-all-1.log
