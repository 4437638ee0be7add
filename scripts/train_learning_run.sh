#!/usr/bin/env bash
# The SmolLM2-135M learning run of docs/training.md: base -> SFT on the train split's reference solutions ->
# SFT + GRPO on the train split (curriculum on), each model evaluated on the held-out test split (greedy single
# attempt and pass@8, through the bench code). Resumable: running a phase again continues from its checkpoint.
#
#   scripts/train_learning_run.sh RUN_DIR MODEL [sft] [grpo]      (MODEL: smollm2, a .gguf, a directory, a hub id)
#
# GRPO_STEPS (default 24) and GRPO_TIMEOUT (seconds; a phase stopped by it resumes on the next call) tune it.
set -euo pipefail
RUN=$1; MODEL=$2; shift 2
PHASES=("$@"); [ ${#PHASES[@]} -gt 0 ] || PHASES=(sft grpo)
KERNELRL=${KERNELRL:-kernelrl}
for phase in "${PHASES[@]}"; do
  case "$phase" in
    sft)
      $KERNELRL train sft --run-dir "$RUN/sft" --model "$MODEL" --epochs 5 --batch-size 8 --learning-rate 2e-4 \
        --max-length 4096 --heldout-samples 8 --heldout-max-tokens 1024 --eval-concurrency 8 --save-steps 20 ;;
    grpo)
      timeout "${GRPO_TIMEOUT:-100000}" $KERNELRL train grpo --run-dir "$RUN/grpo" --model "$MODEL" \
        --adapter "$RUN/sft/adapter" --no-heldout-at-start --heldout-every 0 --heldout-samples 8 \
        --heldout-max-tokens 1024 --max-steps "${GRPO_STEPS:-24}" --prompts-per-step 4 --num-generations 8 \
        --max-completion-length 512 --temperature 0.7 --learning-rate 1e-4 --lora-r 8 --lora-alpha 16 \
        --reward composite --format-weight 0.1 --no-eval-timing --no-gradient-checkpointing --eval-concurrency 8 \
        --save-steps 2 --curriculum ${GRPO_ARGS:-} ;;
    *) echo "unknown phase $phase (sft, grpo)" >&2; exit 2 ;;
  esac
done
