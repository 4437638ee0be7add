# memory per step (main, then chunked same_bytes), uid forced on under CUDA, fresh candidates (chunked)
set -uo pipefail
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/site/pytest ] || bash .scratch-gpu/job.sh setup 2>&1 | tail -3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
cp src/kernelrl/sandbox/child.py /tmp/child.orig; cp src/kernelrl/sandbox/tensorio.py /tmp/tensorio.orig
python3 .scratch-gpu/diag/patch_mem.py
echo "== main: same_bytes whole"; timeout 90 python3 .scratch-gpu/diag/memdiag.py level1/1_row_softmax 2>&1 | tee $OUT/memdiag-main.log | tail -40
cp .scratch-gpu/diag/tensorio_chunked.py src/kernelrl/sandbox/tensorio.py
echo "== chunked same_bytes"; timeout 90 python3 .scratch-gpu/diag/memdiag.py level1/1_row_softmax 2>&1 | tee $OUT/memdiag-chunked.log | tail -40
cp /tmp/child.orig src/kernelrl/sandbox/child.py
echo "== uid forced on under CUDA (chunked same_bytes)"
cp src/kernelrl/evaluate/evaluator.py /tmp/evaluator.orig
sed -i 's/candidate_uid=cfg.candidate_uid if env.mode != "gpu" else None,/candidate_uid=cfg.candidate_uid,/' src/kernelrl/evaluate/evaluator.py
grep -n "candidate_uid=cfg" src/kernelrl/evaluate/evaluator.py
timeout 120 python3 .scratch-gpu/diag/uid_gpu.py 2>&1 | tee $OUT/uid-gpu.log | tail -20
cp /tmp/evaluator.orig src/kernelrl/evaluate/evaluator.py
echo "== fresh candidates (chunked same_bytes)"
OBSERVED_LOG=$OUT/observed.jsonl timeout 260 python3 .scratch-gpu/diag/observed.py --device cuda --modes fresh-candidates --candidates solutions --only level1/ --profile training --concurrency auto --rounds 3 --cache-dir /tmp/bench-cache --json $OUT/fresh.json --progress $OUT/fresh-progress.jsonl 2>&1 | tee $OUT/fresh.log | grep -v "done in" | tail -16
