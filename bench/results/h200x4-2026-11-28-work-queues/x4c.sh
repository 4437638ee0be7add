# the GPU mutants (after the share phase's names were bound at import), then 4-GPU rows through
# MultiDeviceEvaluator with CUDA's default work queues and with the evaluator's (device_work_queues=1)
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi -L > $OUT/gpus.txt; git log -1 --format=%h 2>/dev/null
mkdir -p $OUT/mutants; k=0
for sel in "deferred-write-unchecked or timing-threads-unchecked" "timed-calls-uncompared" "floor-unchecked or share-floor-off" "share-calls-uncompared"; do
  CUDA_VISIBLE_DEVICES=$k timeout 170 python3 -m pytest -m gpu -v -s -p no:cacheprovider tests/test_mutants.py \
    -k "test_the_gpu_corpus_kills_the_gpu_mutant and ($sel)" > $OUT/mutants/gpu$k.log 2>&1 &
  k=$((k+1))
done
wait
grep -hE "killed by|PASSED|FAILED|passed|failed" $OUT/mutants/*.log | cut -c1-250
for q in 0 1; do
  vmstat -n 1 > $OUT/vmstat-multi-4-q$q.txt & vm=$!
  timeout 150 python3 bench/scaling.py --via multi --gpus 4 --rounds 4 --work-queues $q --cache-dir /tmp/kr-cache \
    --json $OUT/multi-4-q$q.json 2>&1 | grep -v ' INFO \|^\s*$' | tee -a $OUT/rows.log
  kill $vm
done
