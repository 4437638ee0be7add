"""`kernelrl train grpo`: GRPO with TRL's GRPOTrainer and
a LoRA adapter; the reward is the sandboxed evaluator.

A step generates `num_generations` completions for each of `prompts_per_step` prompts, sends all of them to
the `Scorer` at once (`kernelrl.adapters.trl.KernelReward`), and logs the reward components next to TRL's own
metrics (reward mean/std, `frac_reward_zero_std`: the share of groups whose rewards are all equal and so teach
nothing); with `dynamic_sampling` such groups are generated again (`kernelrl.train.dynamic`). A completion
without a verdict gets no reward (None): TRL leaves it out of its group's baseline and gives it no advantage.
With the curriculum on, prompts are drawn by `CurriculumSampler` from the problems the curriculum allows.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelrl.evaluate import Scorer
from kernelrl.train.config import GRPOConfig, TrainConfigError, to_dict
from kernelrl.train.data import ROLLOUTS, prompt_rows
from kernelrl.train.rundir import ADAPTER, CHECKPOINTS, last_checkpoint, make_callbacks, prepare_run_dir
from kernelrl.train.session import Session

CURRICULUM_STATE = "curriculum.json"


@dataclass
class GRPOOutcome:
    run_dir: Path
    adapter: Path
    steps: int
    resumed_from: str | None


def _curriculum(config: GRPOConfig, session: Session, run_dir: Path, rows: Sequence[dict[str, Any]]) -> Any:
    from kernelrl.train.curriculum import Curriculum, CurriculumConfig

    ids = {r["problem_id"] for r in rows}
    problems = [p for p in session.suite if p.id in ids]
    settings = CurriculumConfig(key=config.curriculum_key, promote_threshold=config.promote_threshold,
                                window=config.curriculum_window, min_attempts=config.curriculum_min_attempts,
                                skip_solved_after=config.skip_solved_after,
                                skip_hopeless_after=config.skip_hopeless_after,
                                frontier_share=config.curriculum_frontier_share,
                                family_spread=config.family_spread)
    curriculum = Curriculum.from_problems(problems, settings, seed=config.seed)
    state = run_dir / CURRICULUM_STATE
    if state.is_file():  # a resumed run continues where the curriculum stood
        curriculum = Curriculum.load(state, curriculum.tiers, settings, config.seed, curriculum.families)
    return curriculum


def _trainer_class(curriculum: Any, row_ids: list[str]) -> type:
    from kernelrl.train.dynamic import DynamicSamplingGRPOTrainer

    if curriculum is None:
        return DynamicSamplingGRPOTrainer
    from kernelrl.train.curriculum import CurriculumSampler

    class CurriculumGRPOTrainer(DynamicSamplingGRPOTrainer):
        """GRPOTrainer drawing its prompts from the curriculum (same index layout as its RepeatSampler)."""

        def _get_train_sampler(self, dataset: Any = None) -> Any:
            return CurriculumSampler(curriculum, row_ids, mini_repeat_count=self.num_generations,
                                     batch_size=self.args.generation_batch_size // self.num_generations,
                                     repeat_count=self.num_iterations * self.args.steps_per_generation)

    return CurriculumGRPOTrainer


def continuous_batching_cache(rows: Sequence[dict[str, Any]], tokenizer: Any, sequences: int,
                              max_completion_length: int,
                              max_prompt_length: int | None = None) -> dict[str, int]:
    """The paged KV cache one generation call can need: `sequences` of the longest prompt plus the completion
    cap. Left to itself, transformers sizes the cache from free memory (TRL asks for half of it) and zeroes it
    on every call: ~20 s a step on a CPU, and on a GPU memory that an evaluator beside the trainer needs."""
    from transformers.generation import ContinuousBatchingConfig

    defaults = ContinuousBatchingConfig()
    page = getattr(defaults, "page_size", None) or getattr(defaults, "block_size", None) or 256
    prompt = max(len(tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True,
                                                   return_dict=True)["input_ids"]) for r in rows)
    if max_prompt_length:
        prompt = min(prompt, max_prompt_length)
    tokens = prompt + max_completion_length
    # a page of slack a sequence (TRL's own templating may add a token or two); max_batch_tokens bounds one
    # forward pass and the attention mask's size: never more than the call holds
    return {"num_blocks": sequences * (math.ceil(tokens / page) + 1),
            "max_batch_tokens": min(8192, sequences * tokens)}


def world_size() -> int:
    """Training processes (`accelerate launch`, `torchrun` set WORLD_SIZE; 1 when run directly)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def step_split(completions: int, micro_batch: int | None, world: int) -> tuple[int, int]:
    """(completions per forward/backward pass in each process, passes accumulated) so that `world` processes
    together make one optimizer step of `completions`, as one process alone would: TRL's step is the
    per-device batch x processes x accumulation, and it generates the accumulated passes' completions at
    once (in each process, its share)."""
    if completions % world:
        raise TrainConfigError(f"the step's {completions} completions (prompts_per_step x num_generations) "
                               f"do not split evenly over {world} training processes")
    mine = completions // world
    micro = min(micro_batch or mine, mine)
    if mine % micro:
        raise TrainConfigError(f"micro_batch {micro_batch} does not divide each of the {world} processes' "
                               f"{mine} completions a step")
    return micro, mine // micro


def run_grpo(config: GRPOConfig, scorer: Scorer | None = None, rows: Sequence[dict[str, Any]] | None = None,
             judge: Any = None) -> GRPOOutcome:
    """Train (or resume) a GRPO run. `scorer`: any Scorer (default an Evaluator on
    `config.eval_device`); `rows`: prompt rows (default the first-turn prompts of the
    selected train-split problems; two-stage passes its mid-end prompts); `judge`: an
    LLMJudge for the cold-start term (default: built from `config.judge`)."""
    session = Session.open(config)
    try:
        return _train(session, config, scorer, rows, judge)
    finally:
        session.close()


def _train(session: Session, config: GRPOConfig, scorer: Scorer | None, rows: Sequence[dict[str, Any]] | None,
           judge: Any) -> GRPOOutcome:
    rows = list(rows) if rows is not None else prompt_rows(session.problems, session.prompts, session.suite)
    if not rows:
        raise ValueError("no prompt rows to train on")
    run_dir = prepare_run_dir(config.run_dir, "grpo" if config.stage is None else f"grpo-{config.stage}",
                              {**to_dict(config), "rows": len(rows)})
    from datasets import Dataset
    from trl import GRPOConfig as TRLGRPOConfig

    from kernelrl.adapters.trl import KernelReward

    if judge is None and config.judge and config.judge_steps:
        from kernelrl.policies import make_policy
        from kernelrl.rewards.judge import LLMJudge

        judge = LLMJudge(make_policy(config.judge), cache_path=run_dir / "judge.sqlite",
                         prompts=session.prompts)
    curriculum = _curriculum(config, session, run_dir, rows) if config.curriculum else None

    def on_groups(groups: dict[str, list[bool]]) -> dict[str, float]:
        if curriculum is None:
            return {}
        for problem_id, correct in groups.items():
            curriculum.record(problem_id, correct)
        curriculum.save(run_dir / CURRICULUM_STATE)
        return {k: v for k, v in curriculum.stats().items() if v is not None}

    problems = {p.id: p for p in session.suite if p.id in {r["problem_id"] for r in rows}}
    reward = KernelReward(session.scorer(scorer), problems, config.reward, format_weight=config.format_weight,
                          judge=judge, judge_weight=config.judge_weight, judge_steps=config.judge_steps,
                          rollouts=run_dir / ROLLOUTS, stage=config.stage, on_groups=on_groups,
                          on_refused=curriculum.refuse if curriculum is not None else None)
    place = session.placement
    micro, accumulation = step_split(config.prompts_per_step * config.num_generations, config.micro_batch,
                                     world_size())
    max_steps = config.max_steps
    if max_steps < 0:  # epochs over the prompts, in steps (the curriculum sampler has no natural length)
        max_steps = max(1, math.ceil(config.epochs * len(rows) / config.prompts_per_step))
    args = TRLGRPOConfig(
        output_dir=str(run_dir / CHECKPOINTS), learning_rate=config.learning_rate, max_steps=max_steps,
        per_device_train_batch_size=micro, gradient_accumulation_steps=accumulation,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length, temperature=config.temperature, beta=config.beta,
        loss_type=config.loss_type, num_iterations=config.num_iterations, logging_steps=config.logging_steps,
        save_steps=config.save_steps, save_total_limit=2, seed=config.seed, bf16=place.bf16,
        gradient_checkpointing=place.gradient_checkpointing, report_to=[], use_cpu=place.device == "cpu",
        dataloader_pin_memory=place.device != "cpu", use_vllm=config.use_vllm, vllm_mode="colocate",
        use_transformers_continuous_batching=config.continuous_batching,
        transformers_continuous_batching_config=continuous_batching_cache(
            rows, session.tokenizer, micro * accumulation, config.max_completion_length,
            config.max_prompt_length)
        if config.continuous_batching else None,
        ignore_data_skip=curriculum is not None, lr_scheduler_type="constant", warmup_steps=0,
        **({"max_prompt_length": config.max_prompt_length} if config.max_prompt_length else {}))
    model, peft_config = session.load_model()
    row_ids = [r["problem_id"] for r in rows]
    trainer_class = _trainer_class(curriculum, row_ids)
    label = config.stage or "grpo"
    callbacks = make_callbacks(run_dir, "grpo", config.stage, session.heldout_fn(scorer, label),
                               config.heldout_every,
                                     config.heldout_at_start)
    trainer = trainer_class(model=model, reward_funcs=[reward], args=args,
                            train_dataset=Dataset.from_list(rows), processing_class=session.tokenizer,
                            peft_config=peft_config, callbacks=callbacks,
                            dynamic_sampling=config.dynamic_sampling,
                            merged_generation=config.merged_generation)
    resume = last_checkpoint(run_dir)
    session.train(trainer, resume)
    adapter = run_dir / ADAPTER
    trainer.save_model(str(adapter))
    if trainer.is_world_process_zero():  # under accelerate launch, one process evaluates
        session.final_heldout(trainer.model, trainer.state.global_step, scorer, label)
    return GRPOOutcome(run_dir, adapter, trainer.state.global_step, resume)
