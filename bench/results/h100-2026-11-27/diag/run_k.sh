# admission constants — (1.10 margin, 0.90 fraction) vs the defaults (1.25, 0.80), same machine; NVML memory peak
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
run() {  # tag margin fraction limit
  echo "== $1"
  NEED_MARGIN=$2 MEMORY_FRACTION=$3 OBSERVED_LOG=$OUT/$1-observed.jsonl timeout $4 python3 .scratch-gpu/diag/observed.py --device cuda --modes fresh-candidates --candidates solutions --only level1/ --profile training --concurrency auto --rounds 3 --cache-dir /tmp/bench-cache --json $OUT/$1.json --progress $OUT/$1-progress.jsonl 2>&1 | tee $OUT/$1.log | grep -v "done in" | grep -E "admission constants|evals/min|phases|holding|utilization|warm-up"
}
run fresh-margin110-fraction090 1.10 0.90 290
run fresh-margin125-fraction080 1.25 0.80 250
