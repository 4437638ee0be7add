# timing-slot breakdown per evaluation; training profile warm-up 50 ms (the default) vs 20 ms, same machine
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
run() {  # tag warmup_ms limit
  echo "== $1"
  WARMUP_MS=$2 TIMING_LOG=$OUT/$1-timing.jsonl OBSERVED_LOG=$OUT/$1-observed.jsonl timeout $3 python3 .scratch-gpu/diag/observed.py --device cuda --modes fresh-candidates --candidates solutions --only level1/ --profile training --concurrency auto --rounds 3 --cache-dir /tmp/bench-cache --json $OUT/$1.json --progress $OUT/$1-progress.jsonl 2>&1 | tee $OUT/$1.log | grep -v "done in" | grep -E "JUDGE|evals/min|phases|holding|utilization|warm-up"
}
run fresh-warmup50 50 280
run fresh-warmup20 20 250
