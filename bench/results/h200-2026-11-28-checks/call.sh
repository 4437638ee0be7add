# one H200: SmolLM2's first part to /tmp; the GPU checks, three parts side by side on the one GPU
set -o pipefail; export PYTHONUNBUFFERED=1
cp .carry/ga/smol.part.aa /tmp/ &
nvidia-smi -L > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
python3 -m pip install -q --no-deps --no-build-isolation -e . > $OUT/install.log 2>&1 || tail -3 $OUT/install.log
for part in evaluator sandbox mutants; do
  OUT=$OUT/check-$part timeout 560 bash scripts/gpu_check.sh $part > $OUT/check-$part.log 2>&1 &
  sleep 20
done
wait
for part in evaluator sandbox mutants; do echo "== $part"; grep -E "passed|failed|error" $OUT/check-$part.log | tail -2; grep -E "FAILED|ERROR" $OUT/check-$part.log | cut -c1-250 | head -20; done
grep -hE "killed by" $OUT/check-mutants.log | cut -c1-200
ls -la /tmp/smol.part.aa
