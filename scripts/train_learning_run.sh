#!/usr/bin/env bash
# The SmolLM2-135M learning run of docs/training.md: base -> SFT on the train split's reference solutions ->
# SFT + GRPO on the train split (curriculum on), each model evaluated on the held-out test split (greedy single
# attempt and pass@8, through the bench code). Resumable: running a phase again continues from its checkpoint.
#
#   scripts/train_learning_run.sh RUN_DIR MODEL [sft] [sft-heldout] [grpo]   (MODEL: smollm2, a .gguf, a dir, a hub id)
#
# sft trains without held-out evaluation (so GRPO can start at once); sft-heldout evaluates the finished SFT run
# (the same command again, held-out on: it trains nothing). GRPO evaluates only at its end.
# GRPO_STEPS (default 40), GRPO_PROMPTS (prompts a step, default 8), GRPO_TIMEOUT (seconds; a phase stopped by it
# resumes on the next call) and GRPO_ARGS (extra options, e.g. --temperature 1.0) tune it; SFT_ARGS adds options to
# both SFT phases. A step of 8 x 8 x 640 tokens in one pass, checkpointing off, ran out of memory on an H100 80 GB:
# hence micro-batches (16) with checkpointing on. The GRPO settings are those of the run of 2026-11-26
# (docs/training.md), the first whose reward and correct rate rose: 8 prompts x 8, 512 tokens, temperature 0.8,
# lr 2e-4 (4 prompts, 640 tokens, lr 1e-4 stayed flat over 12 steps).
set -euo pipefail
RUN=$1; MODEL=$2; shift 2
PHASES=("$@"); [ ${#PHASES[@]} -gt 0 ] || PHASES=(sft sft-heldout grpo)
KERNELRL=${KERNELRL:-kernelrl}
sft() {
  # Stronger than seed 003's 5 epochs at lr 1e-4: at lr 2e-4 x 5 epochs SmolLM2-135M kept a train loss of 1.2 and
  # rambled when sampled (75% format_error in GRPO, docs/training.md)
  $KERNELRL train sft --run-dir "$RUN/sft" --model "$MODEL" --epochs 15 --batch-size 8 --learning-rate 1e-3 \
    --max-length 4096 --heldout-samples 8 --heldout-max-tokens 1024 --eval-concurrency 8 --save-steps 40 \
    "$@" ${SFT_ARGS:-}
}
for phase in "${PHASES[@]}"; do
  case "$phase" in
    sft) sft --heldout-every -1 ;;
    sft-heldout) sft --heldout-every 0 --no-heldout-at-start ;;
    grpo)
      timeout "${GRPO_TIMEOUT:-100000}" $KERNELRL train grpo --run-dir "$RUN/grpo" --model "$MODEL" \
        --adapter "$RUN/sft/adapter" --no-heldout-at-start --heldout-every 0 --heldout-samples 8 \
        --heldout-max-tokens 1024 --max-steps "${GRPO_STEPS:-40}" --prompts-per-step "${GRPO_PROMPTS:-8}" \
        --num-generations 8 \
        --max-completion-length 512 --temperature 0.8 --learning-rate 2e-4 --lora-r 8 --lora-alpha 16 \
        --reward composite --format-weight 0.1 --no-eval-timing --no-eval-bench-inputs --micro-batch 16 --eval-concurrency 16 \
        --save-steps 1 --curriculum ${GRPO_ARGS:-} ;;
    *) echo "unknown phase $phase (sft, sft-heldout, grpo)" >&2; exit 2 ;;
  esac
done
