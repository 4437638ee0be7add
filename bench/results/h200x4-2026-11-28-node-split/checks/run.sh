# call 1 on the x4 host: SmolLM2's first part to /tmp, then the GPU checks one part per GPU
# (evaluator, sandbox, mutants) beside a fresh-candidate row on the fourth
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src
cp .carry/ga/smol.part.aa /tmp/ &
nvidia-smi -L > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))'
k=0
for part in evaluator sandbox mutants; do
  CUDA_VISIBLE_DEVICES=$k OUT=$OUT/check-$part PYTHONPATH=$PWD/src timeout 540 bash scripts/gpu_check.sh $part > $OUT/check-$part.log 2>&1 &
  k=$((k+1))
done
CUDA_VISIBLE_DEVICES=3 PYTHONPATH=$PWD/src timeout 300 python3 bench/throughput.py --device cuda --modes fresh-candidates \
  --candidates solutions --only level1/ --concurrency auto --rounds 1 --cache-dir /tmp/bench-cache --json $OUT/row.json > $OUT/row.log 2>&1
echo "row rc $?"; grep -E "warm-up|evals/min" $OUT/row.log | cut -c1-300
wait
for part in evaluator sandbox mutants; do echo "== $part"; grep -E "passed|failed|error" $OUT/check-$part.log | tail -3; grep -E "FAILED|ERROR" $OUT/check-$part.log | cut -c1-250 | head -20; done
grep -hE "killed by" $OUT/check-mutants.log | cut -c1-200
ls -la /tmp/smol.part.aa
