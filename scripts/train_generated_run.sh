#!/usr/bin/env bash
# A learning run on a generated suite (docs/training.md): SFT on the suite's verified template solutions, then
# GRPO over its train split with the curriculum by difficulty (op count), each model evaluated on the suite's
# test split (held out in-family) and on the built-in test split (out-of-family), greedy and pass@k, without
# timing. Resumable: the same command continues from the last checkpoint, and a held-out evaluation already
# recorded is not repeated, so a phase stopped by a time limit goes on when it is run again.
#
#   scripts/train_generated_run.sh RUN_DIR MODEL SUITE_DIR [sft] [grpo]
#
# MODEL: smollm2, a .gguf, a directory or a hub id. SUITE_DIR: `kernelrl gen --solutions` output (its
# solutions/ are the SFT data). sft evaluates the base model first (step 0), then trains, then evaluates the
# SFT model. HELDOUT_PROBLEMS (default 240: the first N of each test split), HELDOUT_SAMPLES (8),
# HELDOUT_MAX_TOKENS (1024), HELDOUT_STATIC_CACHE (1: held-out generation with a static KV cache, 0: dynamic),
# GRPO_STEPS (60), GRPO_PROMPTS (8), SFT_EPOCHS (3), EVAL_DEVICE (auto; `all` on a node: an evaluator per GPU
# for the rewards and the held-out evaluations, which dominate the run) and PHASE_TIMEOUT (seconds; a phase
# stopped by it resumes on the next call) tune it; SFT_ARGS and GRPO_ARGS add options.
set -euo pipefail
RUN=$1; MODEL=$2; SUITE=$3; shift 3
PHASES=("$@"); [ ${#PHASES[@]} -gt 0 ] || PHASES=(sft grpo)
KERNELRL=${KERNELRL:-kernelrl}
HELDOUT=(--heldout-problems "${HELDOUT_PROBLEMS:-240}" --heldout-samples "${HELDOUT_SAMPLES:-8}"
         --heldout-max-tokens "${HELDOUT_MAX_TOKENS:-1024}" --no-heldout-timing --heldout-suites builtin)
[ "${HELDOUT_STATIC_CACHE:-1}" = 1 ] && HELDOUT+=(--heldout-static-cache)  # a compiled decode step on a GPU
for phase in "${PHASES[@]}"; do
  case "$phase" in
    sft)
      # the settings of the built-in run's SFT (lr 1e-3, LoRA r=8) with more data: fewer epochs
      timeout "${PHASE_TIMEOUT:-100000}" $KERNELRL train sft --run-dir "$RUN/sft" --model "$MODEL" \
        --suite "$SUITE" --data solutions --epochs "${SFT_EPOCHS:-3}" --batch-size 8 --learning-rate 1e-3 \
        --max-length 4096 --save-steps 50 --heldout-every 0 "${HELDOUT[@]}" --eval-concurrency 16 \
        --eval-device "${EVAL_DEVICE:-auto}" \
        ${SFT_ARGS:-} ;;
    grpo)
      # the settings of the built-in run's GRPO (8 prompts x 8, lr 2e-4), tiers by difficulty; 896 tokens,
      # not 512: the suite's template solutions are 406 tokens at the median and up to 822 (gen-2500,
      # SmolLM2's tokenizer), so 512 would cut a fifth of the answers the model was taught to write. Half of
      # each step's problems from the highest active tier: the SFT model solves the low tiers (the first GRPO
      # steps had 7 and 8 of 8 groups with one reward for every sample), and gen-2500's 2,264 training
      # problems are too many for --skip-solved-after to reach; for the same reason, more problems of the
      # families whose groups had a spread (16 steps: 46 of 126 groups had one, 24 of them map_multi)
      timeout "${PHASE_TIMEOUT:-100000}" $KERNELRL train grpo --run-dir "$RUN/grpo" --model "$MODEL" \
        --suite "$SUITE" --adapter "$RUN/sft/adapter" --no-heldout-at-start --heldout-every 0 \
        "${HELDOUT[@]}" \
        --max-steps "${GRPO_STEPS:-60}" --prompts-per-step "${GRPO_PROMPTS:-8}" --num-generations 8 \
        --max-completion-length 896 --temperature 0.8 --learning-rate 2e-4 --lora-r 8 --lora-alpha 16 \
        --reward composite --format-weight 0.1 --no-eval-timing --no-eval-bench-inputs --micro-batch 16 \
        --eval-concurrency 16 --eval-device "${EVAL_DEVICE:-auto}" --save-steps 1 --curriculum \
        --curriculum-key difficulty --curriculum-frontier-share 0.5 --family-spread ${GRPO_ARGS:-} ;;
    *) echo "unknown phase $phase (sft, grpo)" >&2; exit 2 ;;
  esac
done
