"""What every training command sets up the same way: the problems and prompts, where the policy trains, its
tokenizer and model, the evaluator (made only when needed, closed at the end), the held-out evaluation, and
a train call whose out-of-memory failure says what to lower."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelrl.evaluate import Scorer
from kernelrl.problems import Problem, Suite, load_suite
from kernelrl.prompts import TEMPLATE_DIR, Prompts
from kernelrl.train.config import CommonConfig
from kernelrl.train.data import select_problems
from kernelrl.train.model import (
    Placement,
    TrainSetupError,
    load_policy,
    load_tokenizer,
    placement,
    require_train_extra,
)


def run_prompts(config: CommonConfig) -> Prompts:
    """The prompts a run renders: the built-in full or compact templates, or the user's directory of them."""
    styles = {"full": None, "compact": TEMPLATE_DIR / "compact"}
    return Prompts(styles.get(config.prompt_style, config.prompt_style), backend=config.backend)


def planned_steps(trainer: Any) -> int:
    """The optimizer steps the trainer's run takes in all: --max-steps, or what its epochs come to (Trainer's
    own count over its data loader)."""
    if trainer.args.max_steps > 0:
        return trainer.args.max_steps
    *_, steps = trainer.set_initial_training_values(trainer.args, trainer.get_train_dataloader())
    return steps


@dataclass
class Session:
    config: CommonConfig
    suite: Suite
    prompts: Prompts
    problems: list[Problem]
    placement: Placement
    tokenizer: Any
    _owned: Any = field(default=None, repr=False)  # the scorer we opened (closed at the end)

    @classmethod
    def open(cls, config: CommonConfig) -> Session:
        """Validate the inputs (extra installed, suite, problems) before anything is created."""
        if not config.run_dir:
            raise TrainSetupError("a run directory is required (--run-dir)")
        require_train_extra()
        suite = load_suite(config.suite)
        problems = select_problems(suite, config.problems)
        if not problems:
            raise TrainSetupError(f"suite {suite.name} has no train-split problems")
        return cls(config, suite, run_prompts(config), problems, placement(config),
                   load_tokenizer(config.model))

    @property
    def run_dir(self) -> Path:
        return Path(self.config.run_dir)

    def load_model(self) -> tuple[Any, Any]:
        return load_policy(self.config, self.placement)

    def scorer(self, given: Scorer | None, timing: bool | None = None) -> Scorer:
        """`given`, else the evaluator on the configured device (one for the whole run)
        with the rewards' verdict settings (`timing` None: `eval_timing`,
        `eval_bench_inputs`). Held-out evaluations (`timing` given: `heldout_timing`, for
        fast_p) check the bench inputs: the same evaluator with other verdict settings."""
        if given is not None:
            return given
        if self._owned is None:
            if "://" in self.config.eval_device:  # a reward service (its token from the env)
                from kernelrl.serve import open_scorer

                self._owned = open_scorer(self.config.eval_device)
            else:
                from kernelrl.evaluate import open_scorer

                self._owned = open_scorer(self.config.eval_device,
                                          max_concurrency=self.config.eval_concurrency,
                                          gpu_memory_budget_gb=self.placement.evaluator_gpu_budget_gb)
            # its workers (a judge and sandboxes, or a pool's actors, every one) come up while the policy
            # loads and writes its first completions, so the first step's rewards do not wait for them
            self._owned.warm_up_in_background()
        rewards = timing is None
        return self._owned.with_verdict(timing=self.config.eval_timing if rewards else timing,
                                        bench_correctness=self.config.eval_bench_inputs or not rewards)

    def heldout_fn(self, scorer: Scorer | None, label: str) -> Callable[[Any, int], None] | None:
        """The held-out evaluation the trainer callbacks run (None when switched off)."""
        config = self.config
        if config.heldout_every < 0:
            return None
        # the training suite's test split (its records carry no suite, as before), then each extra suite's
        sets = [(None, self.suite)] + [(name, load_suite(name)) for name in config.heldout_suites]
        problems = {name: list(suite.split("test"))[: config.heldout_problems] for name, suite in sets}

        def run(model: Any, step: int) -> None:
            from kernelrl.train.heldout import heldout_records
            from kernelrl.train.merged import merged_for_generation

            judged = self.scorer(scorer, timing=config.heldout_timing)
            model_label = "initial" if step == 0 else label
            generator = merged_for_generation(model)  # one merged copy for every suite and sampling
            for name, chosen in problems.items():
                heldout_records(generator, self.tokenizer, chosen, judged, self.prompts, self.run_dir, step,
                                model_label, config.heldout_samples, config.heldout_max_tokens,
                                concurrency=config.eval_concurrency, batch=config.heldout_batch, suite=name,
                                static_cache=config.heldout_static_cache)

        return run

    def final_heldout(self, model: Any, step: int, scorer: Scorer | None, label: str) -> None:
        """The end-of-run held-out evaluation (after the adapter is saved; skipped when switched off)."""
        run = self.heldout_fn(scorer, label)
        if run is not None:
            run(model, step)

    def train(self, trainer: Any, resume: str | None) -> Any:
        import torch

        if resume is not None:
            # Trainer would still run one step when it does not skip data (the curriculum's sampler) or when
            # the run ends inside an epoch (a fraction of one): a checkpoint already at the run's last step
            # gets its weights and state loaded instead, so the adapter and held-out match it
            from transformers import TrainerState

            state = TrainerState.load_from_json(str(Path(resume) / "trainer_state.json"))
            if state.global_step >= planned_steps(trainer):
                trainer._load_from_checkpoint(resume)
                trainer.state = state
                return None
        try:
            return trainer.train(resume_from_checkpoint=resume)
        except torch.OutOfMemoryError:
            raise TrainSetupError(
                f"out of GPU memory at step {trainer.state.global_step}: lower batch_size / "
                "prompts_per_step, num_generations, max_length / max_completion_length, or turn "
                "gradient_checkpointing on") from None

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()
            self._owned = None

