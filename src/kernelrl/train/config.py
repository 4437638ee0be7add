"""Training settings: one dataclass per command, mirrored by a TOML file and by `kernelrl train` options.

Defaults follow the published recipes: SFT as seed 003's warm start (LoRA r=8, lr 1e-4, 5 epochs); GRPO as
seed 003's RL stage (LoRA r=32, lr 1e-5, 6 generations, beta 0); `preset="seed004"` gives the two-stage
paper's settings (LoRA r=16, alpha 32, 4 generations, beta 0.1). Stdlib only, so the CLI can show help without
the `train` extra installed.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo")
DEFAULT_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class TrainConfigError(ValueError):
    """A training setting (or config file) is invalid."""


@dataclass(frozen=True)
class CommonConfig:
    """Settings every training command shares."""

    run_dir: str = field(default="",
                         metadata={"help": "Run directory (config, metrics.jsonl, checkpoints, adapter)."})
    model: str = field(default="smollm2", metadata={
        "help": "smollm2 (the offline GGUF), a local directory or .gguf file, or a Hugging Face hub id."})
    adapter: str | None = field(default=None, metadata={
        "help": "Start from this LoRA adapter directory (e.g. an SFT run's RUN_DIR/adapter)."})
    suite: str = field(default="builtin", metadata={"help": "Problem suite: builtin or a directory."})
    problems: tuple[str, ...] = field(default=(), metadata={
        "help": "Training problems: ids or prefixes (level1/, level0/1_relu); "
                "default the whole train split."})
    backend: str = field(default="triton", metadata={"help": "Prompt for triton or cuda kernels."})
    prompt_style: str = field(default="full", metadata={
        "help": "full (the agent's prompt, with a worked example), compact (no example: ~1,000 tokens "
                "shorter; evaluate such a model with `kernelrl bench --templates` pointing at "
                "prompts/templates/compact), or a directory of templates, each replacing the built-in "
                "template of its name."})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA alpha."})
    lora_dropout: float = field(default=0.05, metadata={"help": "LoRA dropout."})
    lora_targets: tuple[str, ...] = field(default=DEFAULT_TARGET_MODULES, metadata={
        "help": "Module names LoRA adapts."})
    learning_rate: float = field(default=1e-4, metadata={"help": "Peak learning rate."})
    max_steps: int = field(default=-1, metadata={"help": "Optimizer steps (-1: from epochs)."})
    save_steps: int = field(default=50,
                            metadata={"help": "Checkpoint every N steps (resume picks the last)."})
    logging_steps: int = field(default=1, metadata={"help": "Log (metrics.jsonl) every N steps."})
    seed: int = field(default=0, metadata={"help": "Random seed."})
    bf16: bool | None = field(default=None, metadata={
        "help": "bf16 training (default: on when a CUDA GPU supports it; off on CPU, "
                "where it is ~40x slower)."})
    gradient_checkpointing: bool | None = field(default=None, metadata={
        "help": "Gradient checkpointing (default: on a GPU only)."})
    eval_device: str = field(default="auto", metadata={
        "help": "The evaluator's device: auto, cpu (Triton interpreter) or cuda:N (keep it off the training "
                "GPU where you can), all (one evaluator per visible GPU, the training GPU's included); or a "
                "reward service's URL (http://evalhost:8777, `kernelrl serve`; its token from "
                "KERNELRL_SERVE_TOKEN)."})
    eval_concurrency: int = field(default=4, metadata={"help": "Sandboxes the evaluator runs at once."})
    gpu_memory_fraction: float | None = field(default=None, metadata={
        "help": "Cap on the training process's share of its GPU's memory (default: 0.6 when the evaluator "
                "runs on the same GPU, so its sandboxes and reference outputs find room; else none)."})
    eval_timing: bool = field(default=True, metadata={
        "help": "Time correct kernels (GPU): off for correctness-only rewards, which "
                "then need no timing slot."})
    eval_bench_inputs: bool = field(default=True, metadata={
        "help": "Rewards (GPU): check correctness on the bench-sized inputs too; off: check and sweep "
                "sizes only (far less GPU memory an evaluation, so more run at once; held-out "
                "evaluations always check them)."})
    heldout_every: int = field(default=0, metadata={
        "help": "Held-out evaluation on the test split every N steps (0: only at the "
                "start and end; -1: never)."})
    heldout_at_start: bool = field(default=True, metadata={
        "help": "Also evaluate the starting model (off when it was just evaluated, e.g. at the end of SFT)."})
    heldout_samples: int = field(default=8, metadata={
        "help": "Sampled completions per held-out problem for pass@k (0: greedy only)."})
    heldout_problems: int | None = field(default=None, metadata={
        "help": "Evaluate only the first N test-split problems (quick runs)."})
    heldout_max_tokens: int = field(default=1024, metadata={"help": "Token limit of a held-out completion."})
    heldout_timing: bool = field(default=True, metadata={
        "help": "Time the held-out evaluations' correct kernels (fast_1); off: correctness only, which frees "
                "the timing slot (a large held-out set evaluates sooner)."})
    heldout_suites: tuple[str, ...] = field(default=(), metadata={
        "help": "More held-out sets (repeatable): the test split of each suite named (builtin, a directory), "
                "evaluated beside the training suite's own (for a generated suite, builtin's test split is "
                "out-of-family); records carry the suite's name."})
    heldout_batch: int = field(default=128, metadata={
        "help": "Sequences a held-out generate call decodes at once (lower it when their KV cache does not "
                "fit)."})
    heldout_static_cache: bool = field(default=False, metadata={
        "help": "Held-out generation with a static KV cache: transformers compiles the decode step on a GPU "
                "(2.4x faster a step than the dynamic cache at 128 sequences on an H200, after about 40 s of "
                "compiling an evaluation's first call)."})

    def __post_init__(self) -> None:
        if self.lora_r < 1 or self.lora_alpha < 1 or not 0 <= self.lora_dropout < 1:
            raise TrainConfigError("lora_r and lora_alpha must be >= 1 and 0 <= lora_dropout < 1")
        if self.learning_rate <= 0:
            raise TrainConfigError(f"learning_rate must be > 0, not {self.learning_rate}")
        if self.max_steps == 0 or self.max_steps < -1:
            raise TrainConfigError(f"max_steps must be >= 1 (or -1: from epochs), not {self.max_steps}")
        if self.save_steps < 1 or self.logging_steps < 1 or self.eval_concurrency < 1:
            raise TrainConfigError("save_steps, logging_steps and eval_concurrency must be >= 1")
        if self.gpu_memory_fraction is not None and not 0 < self.gpu_memory_fraction <= 1:
            raise TrainConfigError(f"gpu_memory_fraction must be in (0, 1], not {self.gpu_memory_fraction}")
        if self.heldout_every < -1 or self.heldout_samples < 0:
            raise TrainConfigError("heldout_every must be >= -1 and heldout_samples >= 0")
        if self.heldout_problems is not None and self.heldout_problems < 1:
            raise TrainConfigError("heldout_problems must be >= 1")
        if self.heldout_batch < 1:
            raise TrainConfigError("heldout_batch must be >= 1")
        if self.prompt_style not in ("full", "compact") and not Path(self.prompt_style).is_dir():
            raise TrainConfigError(f"prompt_style must be full, compact or a directory of templates, not "
                                   f"{self.prompt_style!r}")
        if self.backend not in ("triton", "cuda"):
            raise TrainConfigError(f"backend must be triton or cuda, not {self.backend!r}")


@dataclass(frozen=True)
class SFTConfig(CommonConfig):
    """`kernelrl train sft`: supervised fine-tuning on
    (prompt, correct kernel) pairs, loss on the completion."""

    data: tuple[str, ...] = field(default=("solutions",), metadata={
        "help": "SFT sources: 'solutions' (the suite's reference solutions), a run directory (agent/bench "
                "trajectories or a training run's rollouts; correct attempts only), or a .jsonl of records."})
    epochs: float = field(default=5.0, metadata={"help": "Passes over the SFT data."})
    batch_size: int = field(default=2, metadata={"help": "Examples per device step."})
    gradient_accumulation: int = field(default=1, metadata={"help": "Steps accumulated per optimizer step."})
    max_length: int = field(default=2048,
                            metadata={"help": "Longest tokenized example (longer ones are cut)."})
    merge: bool = field(default=False, metadata={"help": "Also save the model with the adapter merged in."})
    eval_loss: bool = field(default=True, metadata={
        "help": "Report the loss on the test split's reference solutions (never trained on)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.data:
            raise TrainConfigError("data needs at least one source")
        if self.epochs <= 0 or self.batch_size < 1 or self.gradient_accumulation < 1 or self.max_length < 64:
            raise TrainConfigError("epochs > 0, batch_size >= 1, "
                                   "gradient_accumulation >= 1, max_length >= 64")


@dataclass(frozen=True)
class GRPOConfig(CommonConfig):
    """`kernelrl train grpo`: GRPO with LoRA, the sandboxed evaluator as the reward."""

    lora_r: int = field(default=32, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=64, metadata={"help": "LoRA alpha."})
    learning_rate: float = field(default=1e-5, metadata={"help": "Peak learning rate."})
    preset: str | None = field(default=None, metadata={
        "help": "seed004: LoRA r=16, alpha 32, 4 generations, beta 0.1 (fields you set yourself win)."})
    reward: str = field(default="composite", metadata={
        "help": "Reward preset with parameters (composite, makora:delta=1.8, two_stage:stage=frontend, "
                "tiered) or module:function."})
    format_weight: float = field(default=0.0, metadata={
        "help": "Weight of a shaping term: 1 when the completion has a fenced block defining ModelNew."})
    judge: str | None = field(default=None, metadata={
        "help": "Policy spec of an LLM judge for the cold start (openai:MODEL, hf:PATH, smollm2)."})
    judge_weight: float = field(default=0.5, metadata={"help": "Weight lambda of the judge's score."})
    judge_steps: int = field(default=0, metadata={"help": "Use the judge for the first N steps (0: off)."})
    num_generations: int = field(default=6, metadata={"help": "Completions per prompt (the GRPO group)."})
    prompts_per_step: int = field(default=2, metadata={"help": "Distinct prompts per optimizer step."})
    micro_batch: int | None = field(default=None, metadata={
        "help": "Completions per forward/backward pass, the step's gradient accumulated over them (default: "
                "the whole step at once); lower it when a step runs out of GPU memory."})
    max_completion_length: int = field(default=1024, metadata={"help": "Completion token limit."})
    max_prompt_length: int | None = field(default=None,
                                          metadata={"help": "Prompt token limit (None: no limit)."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of the rollouts."})
    beta: float = field(default=0.0, metadata={"help": "KL coefficient (0: no reference model is kept)."})
    loss_type: str = field(default="grpo", metadata={"help": f"TRL loss: {', '.join(LOSS_TYPES)}."})
    num_iterations: int = field(default=1, metadata={"help": "Optimization passes per generated batch."})
    dynamic_sampling: int = field(default=0, metadata={
        "help": "Dynamic sampling (DAPO): up to N more generation rounds a step for the groups whose rewards "
                "are all equal (each round generates and evaluates them again; 0: off)."})
    epochs: float = field(default=1.0, metadata={"help": "Passes over the prompts (when max_steps is -1)."})
    use_vllm: bool = field(default=False, metadata={"help": "Generate with vLLM (GPU, TRL's colocate mode)."})
    continuous_batching: bool = field(default=False, metadata={
        "help": "Generate with transformers' continuous batching (paged attention: a finished completion "
                "frees its slot at once instead of waiting for the longest in the batch)."})
    merged_generation: bool = field(default=True, metadata={
        "help": "Generate rollouts from a copy of the policy with its LoRA adapter merged in (half the "
                "operators a decode step; one more copy of the weights in memory). Not with vLLM, DeepSpeed "
                "or FSDP."})
    curriculum: bool = field(default=True, metadata={
        "help": "Start on the lowest level and promote when the running solve rate passes the threshold."})
    curriculum_key: str = field(default="level", metadata={"help": "Tiers by level or difficulty."})
    promote_threshold: float = field(default=0.5,
                                     metadata={"help": "Solve rate that promotes the next tier."})
    curriculum_window: int = field(default=32, metadata={"help": "Attempts the running solve rate counts."})
    curriculum_min_attempts: int = field(default=16,
                                         metadata={"help": "Attempts on a tier before it promotes."})
    skip_solved_after: int | None = field(default=2, metadata={
        "help": "Skip a problem whose last N groups were all correct (None: never)."})
    skip_hopeless_after: int | None = field(default=None, metadata={
        "help": "Set aside a problem whose last N groups had no correct completion (None: never)."})
    curriculum_frontier_share: float = field(default=0.0, metadata={
        "help": "Share of each step's problems drawn from the highest active tier, the rest from every "
                "active tier (solved lower tiers give groups of one reward, which teach nothing)."})
    family_spread: bool = field(default=False, metadata={
        "help": "Curriculum draws weigh each problem by its op family's share of groups with both correct "
                "and wrong completions so far (the groups GRPO learns from); equal weights until there is a "
                "record."})
    stage: str | None = field(default=None,
                              metadata={"help": "two-stage: frontend or midend (set by two-stage)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_generations < 2:
            raise TrainConfigError("num_generations must be >= 2 (GRPO compares completions of one prompt)")
        if self.prompts_per_step < 1 or self.max_completion_length < 16 or self.num_iterations < 1:
            raise TrainConfigError("prompts_per_step >= 1, max_completion_length >= 16, num_iterations >= 1")
        if self.dynamic_sampling < 0:
            raise TrainConfigError(f"dynamic_sampling must be >= 0, not {self.dynamic_sampling}")
        step = self.prompts_per_step * self.num_generations
        if self.micro_batch is not None and (self.micro_batch < 1 or step % self.micro_batch):
            raise TrainConfigError(f"micro_batch must divide the step's {step} completions (prompts_per_step "
                                   f"x num_generations), not {self.micro_batch}")
        if self.loss_type not in LOSS_TYPES:
            raise TrainConfigError(f"loss_type must be one of {', '.join(LOSS_TYPES)}, "
                                   f"not {self.loss_type!r}")
        if self.preset not in (None, "seed004"):
            raise TrainConfigError(f"unknown preset {self.preset!r} (known: seed004)")
        if self.curriculum_key not in ("level", "difficulty"):
            raise TrainConfigError("curriculum_key must be level or difficulty")
        if not 0 <= self.promote_threshold <= 1:
            raise TrainConfigError("promote_threshold must be in [0, 1]")
        if not 0 <= self.curriculum_frontier_share <= 1:
            raise TrainConfigError("curriculum_frontier_share must be in [0, 1]")
        if self.family_spread and not self.curriculum:
            raise TrainConfigError("family_spread weighs the curriculum's draws: it needs the curriculum on")
        if self.temperature <= 0 or self.beta < 0 or self.format_weight < 0 or self.judge_weight < 0:
            raise TrainConfigError("temperature > 0 and beta, format_weight, judge_weight >= 0 are required")
        if self.judge_steps < 0 or (self.judge_steps and not self.judge):
            raise TrainConfigError("judge_steps needs --judge (and must be >= 0)")
        if self.stage not in (None, "frontend", "midend"):
            raise TrainConfigError(f"stage must be frontend or midend, not {self.stage!r}")
        if self.epochs <= 0:
            raise TrainConfigError("epochs must be > 0")
        from kernelrl.rewards import get_reward, parse_reward_spec

        try:
            name, params = parse_reward_spec(self.reward)
            get_reward(name, **params)
        except (ValueError, KeyError, ImportError, AttributeError) as exc:
            raise TrainConfigError(f"reward {self.reward!r}: {exc}") from None


SEED004 = {"lora_r": 16, "lora_alpha": 32, "num_generations": 4, "beta": 0.1}


def apply_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Fill a preset's settings into `values` where the user did not set them."""
    if values.get("preset") == "seed004":
        return {**SEED004, **values}
    return values


def _coerce(kind: Any, value: Any, name: str) -> Any:
    """A TOML/JSON value for a field of type `kind` (lists become tuples)."""
    origin = typing.get_origin(kind)
    if origin is tuple or kind is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            raise TrainConfigError(f"{name} must be a list, not {value!r}")
        return tuple(value)
    return value


def config_from_dict(cls: type, values: dict[str, Any]) -> Any:
    """Build `cls` from a mapping (a TOML table or saved JSON); unknown keys are an error, not ignored."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise TrainConfigError(f"unknown {cls.__name__} setting(s): {', '.join(unknown)} "
                               f"(known: {', '.join(sorted(known))})")
    values = apply_preset(dict(values)) if cls is GRPOConfig else dict(values)
    try:
        return cls(**{k: _coerce(hints[k], v, k) for k, v in values.items()})
    except TypeError as exc:
        raise TrainConfigError(f"{cls.__name__}: {exc}") from None


def load_toml(path: str | Path) -> dict[str, Any]:
    try:
        with Path(path).open("rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise TrainConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TrainConfigError(f"config {path} is not valid TOML: {exc}") from None


def looks_like_path(model: str) -> bool:
    """Whether a --model value names a local file or directory rather than a hub id ("org/name")."""
    return model.startswith(("/", "./", "../", "~")) or model in (".", "..") or model.endswith(".gguf") or (
        model.count("/") > 1)


def check_inputs(config: CommonConfig) -> None:
    """What a training command needs before it shows its settings or loads anything: a run directory, and the
    local model and adapter paths it names (a hub id is only checked when it is loaded)."""
    if not config.run_dir:
        raise TrainConfigError("--run-dir is required: the directory the run writes its settings, metrics, "
                               "checkpoints and adapter to (e.g. --run-dir runs/sft)")
    if Path(config.run_dir).exists() and not Path(config.run_dir).is_dir():
        raise TrainConfigError(f"--run-dir {config.run_dir} is a file, not a directory")
    model = config.model
    if model != "smollm2":
        path = Path(model)
        if looks_like_path(model) and not path.exists():
            raise TrainConfigError(f"--model {model}: no such file or directory (give an "
                                   "existing model directory or .gguf file, smollm2, or a "
                                   "Hugging Face hub id such as org/name)")
        if path.is_file() and path.suffix != ".gguf":
            raise TrainConfigError(f"--model {model} is a file but not a .gguf model (give a .gguf file or a "
                                   "model directory)")
    if config.adapter is not None and not Path(config.adapter).is_dir():
        raise TrainConfigError(f"--adapter {config.adapter}: no such directory (give a LoRA adapter "
                               "directory, e.g. an SFT run's RUN_DIR/adapter)")


def to_dict(config: Any) -> dict[str, Any]:
    return json.loads(json.dumps(dataclasses.asdict(config)))
