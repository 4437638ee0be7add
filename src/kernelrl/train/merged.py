"""Generation from a copy of the policy with its LoRA adapter merged into the weights.

A PEFT model runs every adapted layer's adapter as operators of their own: a decode step of SmolLM2-135M with
the default LoRA dispatches 4,284 operators, 2,184 merged, and a small model's decode on a GPU is bound by
their launches (62.5 against 28.0 ms a step on an H200, `bench/generation.py`). Generation needs neither
gradients nor the adapter kept apart, so held-out evaluations and GRPO's rollouts generate from a merged copy;
the model being trained is left as it is. A copy, not an in-place merge and unmerge: that would round the
frozen base weights in bfloat16 at every step. The price is one more copy of the weights while generating.
"""

from __future__ import annotations

import copy
from typing import Any

from trl import GRPOTrainer


def is_adapted(model: Any) -> bool:
    from peft import PeftModel

    return isinstance(model, PeftModel)


def merged_for_generation(model: Any) -> Any:
    """`model` for generation only: a PEFT model becomes a merged copy (the same logits) that runs its own
    weights; any other model is returned as it is."""
    if not is_adapted(model):
        return model
    merged = copy.deepcopy(model).merge_and_unload()
    # A `forward` set on an instance is a patch of the model being trained (TRL's fused LM head, an autocast
    # wrapper): a closure over the original's bound forward, which a deep copy does not rebind, so the copy
    # would run the original's modules, adapters unmerged, in their training state. Generation wants the
    # class's own forward on the copy's own weights.
    for module in merged.modules():
        module.__dict__.pop("forward", None)
    # Nor does it keep the training setup: gradient checkpointing and `use_cache=False` drop the KV cache in
    # the decoder layers of some transformers versions while `generate` goes on feeding one token a step.
    if getattr(merged, "is_gradient_checkpointing", False):  # a transformers model (PEFT adapts any module)
        merged.gradient_checkpointing_disable()
    if hasattr(getattr(merged, "config", None), "use_cache"):
        merged.config.use_cache = True
    return merged.eval()


class MergedGenerationGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose rollouts come from a merged copy of the LoRA policy (`merged_generation`). Kept off
    where the copy would not hold the whole model or does not generate: vLLM, DeepSpeed and FSDP (sharded
    weights)."""

    def __init__(self, *args: Any, merged_generation: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.merged_generation = merged_generation

    def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
        trained = self.model_wrapped
        policy = self.accelerator.unwrap_model(trained)
        if (not self.merged_generation or self.use_vllm or self.is_deepspeed_enabled or self.is_fsdp_enabled
                or not is_adapted(policy)):
            return super()._generate_single_turn(*args, **kwargs)
        # TRL generates from what it unwraps from model_wrapped: the copy, for this call only
        self.model_wrapped = merged_for_generation(policy)
        try:
            return super()._generate_single_turn(*args, **kwargs)
        finally:
            self.model_wrapped = trained
