# call 1 on the x4 host: Ray's first part to /tmp, CUDA context creation variants on 4 GPUs, the GPU mutants
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
cp .carry/ra/raypart.aa /tmp/ &
nvidia-smi -L > $OUT/gpus.txt; nvidia-smi topo -m > $OUT/topology.txt 2>&1; nproc >> $OUT/gpus.txt
git log -1 --format=%h 2>/dev/null
timeout 250 python3 bench/cuda_context.py --procs 1,8,16 \
  --variants torch,torch-one-connection,driver,driver-one-connection --json $OUT/context.json 2>&1 | tee $OUT/context.log
echo "context rc $?"
wait
# the GPU mutants, one group per GPU
mkdir -p $OUT/mutants; k=0
for sel in "deferred-write-unchecked or timing-threads-unchecked" "timed-calls-uncompared" "floor-unchecked or share-floor-off" "share-calls-uncompared"; do
  CUDA_VISIBLE_DEVICES=$k timeout 280 python3 -m pytest -m gpu -v -s -p no:cacheprovider tests/test_mutants.py \
    -k "test_the_gpu_corpus_kills_the_gpu_mutant and ($sel)" > $OUT/mutants/gpu$k.log 2>&1 &
  k=$((k+1))
done
wait
grep -hE "killed by|PASSED|FAILED|passed|failed|Error" $OUT/mutants/*.log | cut -c1-300
ls -la /tmp/raypart.aa
