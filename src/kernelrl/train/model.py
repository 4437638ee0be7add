"""The policy model for training: any Hugging Face causal LM (hub id, local directory, .gguf, or the offline
SmolLM2 GGUF), with a LoRA adapter (new, or loaded from an earlier run to keep training it)."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelrl.train.config import CommonConfig

TRAIN_EXTRA = ("trl", "peft", "datasets", "transformers", "accelerate")


class TrainSetupError(RuntimeError):
    """Training cannot start: a missing extra, a model that does not load, no such adapter."""


def require_train_extra() -> None:
    missing = [name for name in TRAIN_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise TrainSetupError(f"training needs {', '.join(missing)}: pip install 'kernelrl[train]'")


@dataclass(frozen=True)
class Placement:
    """Where and how the policy trains."""

    device: str  # 'cuda' or 'cpu'
    bf16: bool
    gradient_checkpointing: bool
    # GPU memory an evaluator sharing the training GPU may hold (what the trainer's cap leaves); None: no cap
    evaluator_gpu_budget_gb: float | None = None


def placement(config: CommonConfig) -> Placement:
    import torch

    gpu = torch.cuda.is_available()
    bf16 = config.bf16 if config.bf16 is not None else bool(gpu and torch.cuda.is_bf16_supported())
    if bf16 and not gpu:
        raise TrainSetupError("bf16 training needs a CUDA GPU here (on a CPU it is ~40x slower): drop --bf16")
    checkpointing = config.gradient_checkpointing if config.gradient_checkpointing is not None else gpu
    if gpu:
        fraction = config.gpu_memory_fraction
        if fraction is None and evaluator_shares_gpu(config.eval_device, torch.cuda.current_device()):
            # PyTorch's caching allocator otherwise keeps what a step's logits once took, and the evaluator's
            # reference outputs then fail with out-of-memory (seen on an H100: 64 GB held by a 135M policy)
            fraction = SHARED_GPU_MEMORY_FRACTION
        if fraction is not None and fraction < 1:
            torch.cuda.set_per_process_memory_fraction(fraction)
            if evaluator_shares_gpu(config.eval_device, torch.cuda.current_device()):
                total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
                budget = evaluator_gpu_budget_gb(total, fraction)
                return Placement("cuda", bf16, checkpointing, budget)
    return Placement("cuda" if gpu else "cpu", bf16, checkpointing)


def evaluator_gpu_budget_gb(total_bytes: int, trainer_fraction: float) -> float:
    """The evaluator's GPU memory admission budget beside a trainer capped
    at `trainer_fraction`: 0.8 of what the cap leaves (the judge measures
    free memory when it starts, before the trainer has grown to its cap)."""
    return round(0.8 * (1 - trainer_fraction) * total_bytes / (1 << 30), 2)


SHARED_GPU_MEMORY_FRACTION = 0.6


def evaluator_shares_gpu(eval_device: str, training_device: int) -> bool:
    """Whether an evaluator on `eval_device` ('auto', 'cpu', 'cuda', 'cuda:N', 'all') uses the training
    GPU."""
    if eval_device == "all":  # one evaluator per visible GPU: the training GPU's among them
        return True
    if eval_device in ("auto", "cuda"):  # the evaluator's first visible GPU
        return training_device == 0
    return eval_device == f"cuda:{training_device}"


def load_tokenizer(model: str) -> Any:
    from transformers import AutoTokenizer

    from kernelrl.policies.hf import model_source

    source, kwargs = model_source(model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        raise TrainSetupError(f"cannot load the tokenizer of {model!r}: {str(exc)[:400]}") from None
    if tokenizer.pad_token is None:  # batched generation and padding need one
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_base_model(model: str, place: Placement) -> Any:
    """The base model, trainable (a GGUF file is dequantized: a model still marked quantized cannot train)."""
    import torch
    from transformers import AutoModelForCausalLM

    from kernelrl.policies.hf import PolicyError, model_source

    try:
        source, kwargs = model_source(model)
    except PolicyError as exc:
        raise TrainSetupError(str(exc)) from None
    if "gguf_file" in kwargs:
        from transformers import GgufConfig

        kwargs["quantization_config"] = GgufConfig(dequantize=True)
    kwargs["dtype"] = torch.bfloat16 if place.bf16 else torch.float32
    try:
        loaded = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        raise TrainSetupError(f"cannot load model {model!r}: {str(exc)[:400]}") from None
    return loaded.to(place.device)


def lora_config(config: CommonConfig) -> Any:
    from peft import LoraConfig

    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                      target_modules=list(config.lora_targets), task_type="CAUSAL_LM")


def merge_adapter(model: Any, adapter: str) -> Any:
    """The model with a trained LoRA adapter merged into its weights."""
    from peft import PeftModel

    try:
        return PeftModel.from_pretrained(model, adapter).merge_and_unload()
    except (OSError, ValueError) as exc:
        raise TrainSetupError(f"cannot load adapter {adapter}: {str(exc)[:400]}") from None


def adapter_chain(adapter: str | None) -> list[str]:
    """The adapters to merge, oldest first, for a model trained from `adapter`: an adapter saved by a kernelrl
    run (RUN_DIR/adapter) names the one its run started from in RUN_DIR/train_config.json. A relative name
    that is not there from the working directory is read from RUN_DIR, so a run directory that was moved or
    shipped with the adapter it started from (`"adapter": "../sft/adapter"`) keeps its chain."""
    chain: list[str] = []
    seen: set[Path] = set()
    while adapter is not None:
        if Path(adapter).resolve() in seen:
            raise TrainSetupError(f"adapter {adapter} starts from itself (train_config.json loop)")
        seen.add(Path(adapter).resolve())
        chain.insert(0, adapter)
        run_dir = Path(adapter).parent
        config = run_dir / "train_config.json"
        adapter = json.loads(config.read_text()).get("adapter") if config.is_file() else None
        if adapter is not None and not Path(adapter).is_absolute() and not Path(adapter).exists():
            adapter = str(run_dir / adapter)
    return chain


def load_policy(config: CommonConfig, place: Placement) -> tuple[Any, Any]:
    """(model, LoRA config): the base model with `config.adapter` (and the adapters it was trained from)
    merged in, and a new LoRA adapter with this stage's own settings for the trainer to apply (seed 003: SFT
    at r=8, then GRPO at r=32 on top)."""
    model = load_base_model(config.model, place)
    for adapter in adapter_chain(config.adapter):
        model = merge_adapter(model, adapter)
    return model, lora_config(config)
