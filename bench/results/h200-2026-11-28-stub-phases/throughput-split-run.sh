# bench/throughput.py after its split (batch_stats.py, candidate_mix.py): one small fresh-candidate row
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi -L > $OUT/gpus.txt
timeout 200 python3 bench/throughput.py --device cuda --modes fresh-candidates --candidates solutions \
  --only level1/1_ --concurrency auto --rounds 1 --json $OUT/row.json > $OUT/row.log 2>&1
echo "row rc $?"; grep -E "warm-up|evals/min|utilization|host CPU" $OUT/row.log | cut -c1-300
