# run 1 of 2 (~9.5 min): fresh candidates on main, then with branch gpu-pending/resume-at-timing-report
# (refresh the copies first: git show gpu-pending/resume-at-timing-report:<path> > .scratch-gpu/diag/branch/<file>)
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
run() {  # tag limit
  echo "== $1"
  TIMING_LOG=$OUT/$1-timing.jsonl OBSERVED_LOG=$OUT/$1-observed.jsonl timeout $2 python3 .scratch-gpu/diag/observed.py --device cuda --modes fresh-candidates --candidates solutions --only level1/ --profile training --concurrency auto --rounds 3 --cache-dir /tmp/bench-cache --json $OUT/$1.json --progress $OUT/$1-progress.jsonl 2>&1 | tee $OUT/$1.log | grep -v "done in" | grep -E "JUDGE|evals/min|phases|holding|utilization|warm-up"
}
run fresh-main 250
cp .scratch-gpu/diag/branch/gate.py src/kernelrl/sandbox/gate.py; cp .scratch-gpu/diag/branch/runner.py src/kernelrl/sandbox/runner.py; cp .scratch-gpu/diag/branch/test_pool.py tests/test_pool.py
run fresh-resume-at-report 190
