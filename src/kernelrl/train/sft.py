"""`kernelrl train sft`: supervised fine-tuning with TRL's
SFTTrainer and a LoRA adapter, loss on the completion.

Data: the suite's reference solutions for its train split, teacher rollouts (agent/bench run
directories, correct attempts only), training rollouts, or exported .jsonl files — deduplicated by
canonical AST, the test split refused. The test split's solutions give an eval loss (never trained on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelrl.evaluate import Scorer
from kernelrl.train.config import SFTConfig, to_dict
from kernelrl.train.data import TrainDataError, heldout_sft_rows, sft_rows
from kernelrl.train.rundir import ADAPTER, CHECKPOINTS, last_checkpoint, make_callbacks, prepare_run_dir
from kernelrl.train.session import Session


@dataclass
class SFTOutcome:
    run_dir: Path
    adapter: Path
    steps: int
    train_loss: float | None
    rows: int
    resumed_from: str | None


def run_sft(config: SFTConfig, scorer: Scorer | None = None) -> SFTOutcome:
    """Train (or resume) an SFT run; returns where the adapter went. `scorer` evaluates held-out attempts
    (default: an Evaluator on `config.eval_device`)."""
    session = Session.open(config)
    try:
        return _train(session, config, scorer)
    finally:
        session.close()


def _train(session: Session, config: SFTConfig, scorer: Scorer | None) -> SFTOutcome:
    rows = sft_rows(config.data, session.suite, session.prompts, session.problems)
    _check_lengths(rows, session.tokenizer, config.max_length)
    eval_rows = heldout_sft_rows(session.suite, session.prompts) if config.eval_loss else []
    run_dir = prepare_run_dir(config.run_dir, "sft", {**to_dict(config), "rows": len(rows),
                                                      "sources": sorted({r["source"] for r in rows})})
    from datasets import Dataset
    from trl import SFTConfig as TRLSFTConfig
    from trl import SFTTrainer

    place = session.placement
    model, peft_config = session.load_model()
    epoch_steps = math.ceil(len(rows) / (config.batch_size * config.gradient_accumulation))
    args = TRLSFTConfig(
        output_dir=str(run_dir / CHECKPOINTS), learning_rate=config.learning_rate,
        num_train_epochs=config.epochs, max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation, max_length=config.max_length,
        completion_only_loss=True, logging_steps=config.logging_steps, save_steps=config.save_steps,
        save_total_limit=2, seed=config.seed, bf16=place.bf16,
        gradient_checkpointing=place.gradient_checkpointing, eval_strategy="steps" if eval_rows else "no",
        eval_steps=max(1, min(config.save_steps, epoch_steps)), per_device_eval_batch_size=config.batch_size,
        report_to=[], use_cpu=place.device == "cpu", dataloader_pin_memory=place.device != "cpu",
        lr_scheduler_type="cosine", warmup_steps=0)
    columns = ("prompt", "completion")
    trainer = SFTTrainer(
        model=model, args=args, processing_class=session.tokenizer, peft_config=peft_config,
        train_dataset=Dataset.from_list([{k: r[k] for k in columns} for r in rows]),
        eval_dataset=Dataset.from_list([{k: r[k] for k in columns}
                                        for r in eval_rows]) if eval_rows else None,
        callbacks=make_callbacks(run_dir, "sft", None, session.heldout_fn(scorer, "sft"),
                                 config.heldout_every,
                                     config.heldout_at_start))
    resume = last_checkpoint(run_dir)
    adapter = run_dir / ADAPTER
    try:
        output = session.train(trainer, resume)
    except KeyboardInterrupt:
        keep_last_step(trainer, run_dir, adapter)
        raise
    trainer.save_model(str(adapter))
    if trainer.is_world_process_zero():  # under accelerate launch, one process evaluates
        session.final_heldout(trainer.model, trainer.state.global_step, scorer, "sft")
    if config.merge:
        merged = trainer.model.merge_and_unload()
        merged.save_pretrained(str(run_dir / "merged"))
        session.tokenizer.save_pretrained(str(run_dir / "merged"))
    return SFTOutcome(run_dir, adapter, trainer.state.global_step, _loss(output), len(rows), resume)


def keep_last_step(trainer: Any, run_dir: Path, adapter: Path) -> None:
    """A run stopped between save steps (Ctrl-C): checkpoint the last finished
    step, so the same command resumes from it, and save its adapter (a step
    cut midway has not changed the weights: the optimizer steps last)."""
    step = trainer.state.global_step
    if step == 0 or not trainer.is_world_process_zero():
        return
    if not (run_dir / CHECKPOINTS / f"checkpoint-{step}").is_dir():
        trainer._save_checkpoint(trainer.model, trial=None)
    trainer.save_model(str(adapter))


def _check_lengths(rows: list[dict[str, Any]], tokenizer: Any, max_length: int) -> None:
    """TRL cuts examples at max_length and drops those left without completion tokens: say so up front."""
    prompt_tokens = [len(tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True,
                                                       return_dict=True)["input_ids"]) for r in rows]
    dropped = [r["problem_id"] for r, n in zip(rows, prompt_tokens, strict=True) if n >= max_length]
    if len(dropped) == len(rows):
        raise TrainDataError(f"every SFT prompt is at least max_length={max_length} tokens long (shortest "
                             f"{min(prompt_tokens)}): raise --max-length or use --prompt-style compact")
    if dropped:
        import warnings

        warnings.warn(f"{len(dropped)} of {len(rows)} SFT prompts reach max_length={max_length} and are "
                      f"dropped: {', '.join(dropped[:5])}", stacklevel=2)


def _loss(output: Any) -> float | None:
    value = getattr(output, "training_loss", None)
    return float(value) if value is not None else None
