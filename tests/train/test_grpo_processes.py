"""GRPO over several training processes (`torchrun`/`accelerate launch`): the optimizer step is the same
prompts x generations as in one process, split between them, and each process scores its own share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kernelrl.train.config import TrainConfigError
from kernelrl.train.grpo import step_split

PROMPTS = str(Path(__file__).resolve().parents[1] / "prompts" / "tiny")


@pytest.mark.parametrize(("completions", "micro", "world", "split"), [
    (4, None, 1, (4, 1)),   # one process: the whole step in one pass, as before
    (8, 2, 1, (2, 4)),
    (4, None, 2, (2, 1)),   # two processes: half the step each
    (16, 4, 2, (4, 2)),
    (16, 32, 2, (8, 1)),    # a micro-batch larger than a process's share is that share
])
def test_a_step_splits_over_processes_and_micro_batches(completions, micro, world, split):
    per_pass, accumulation = step_split(completions, micro, world)
    assert (per_pass, accumulation) == split
    assert per_pass * accumulation * world == completions  # the optimizer step is unchanged


@pytest.mark.parametrize(("completions", "micro", "world"), [(6, None, 4), (8, 3, 2)])
def test_a_step_that_does_not_split_evenly_is_refused(completions, micro, world):
    with pytest.raises(TrainConfigError, match="split evenly|does not divide"):
        step_split(completions, micro, world)


@pytest.mark.slow  # two SmolLM2 processes on the CPU (~25 s)
def test_two_processes_train_one_step_of_the_configured_size(tmp_path):
    run = tmp_path / "run"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "kernelrl.cli",
               "train", "grpo", "--run-dir", str(run), "--model", "smollm2", "--problems", "level0/1_relu",
               "--problems", "level0/2_scale_shift", "--prompt-style", PROMPTS, "--max-steps", "1",
               "--prompts-per-step", "2", "--num-generations", "2", "--max-completion-length", "16",
               "--eval-device", "cpu", "--no-eval-timing", "--heldout-every", "-1", "--no-heldout-at-start",
               "--learning-rate", "1e-3", "--lora-r", "4", "--lora-alpha", "8", "--lora-dropout", "0",
               "--no-curriculum"]
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}  # gloo between the processes
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("grpo: 1 steps") == 2, done.stdout[-2000:]  # both processes trained the step
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "loss" in m] == [1]  # one process writes the metrics
    rollouts = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    # the configured step, 2 prompts x 2 completions, not per process: each process scored one whole group
    assert Counter(r["problem_id"] for r in rollouts) == {"level0/1_relu": 2, "level0/2_scale_shift": 2}
    assert {r["step"] for r in rollouts} == {1}
