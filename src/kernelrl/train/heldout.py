"""Held-out evaluation of the model being trained: the test split through the bench (single attempt, greedy;
and `samples` sampled attempts for pass@k), with the same metrics as `kernelrl bench` (compile / correct / fast_p
vs eager and Inductor). Each evaluation is a bench run directory under RUN_DIR/heldout/, resumable like any."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelrl.agent.bench import run_bench
from kernelrl.agent.loop import AgentConfig
from kernelrl.evaluate import Scorer
from kernelrl.problems import Problem
from kernelrl.prompts import Prompts
from kernelrl.train.rundir import append_metrics

SAMPLING_TEMPERATURE = 0.8  # pass@k samples; greedy decoding gives the single-attempt numbers


def heldout_records(model: Any, tokenizer: Any, problems: Sequence[Problem], scorer: Scorer, prompts: Prompts,
                    run_dir: Path, step: int, model_label: str, samples: int, max_tokens: int) -> list[dict]:
    """Evaluate `model` on `problems`; returns the metrics records (also appended to metrics.jsonl)."""
    from kernelrl.policies.hf import HFPolicy

    was_training = model.training
    device = str(next(model.parameters()).device)
    policy = HFPolicy.from_loaded(model, tokenizer, name=f"train:{model_label}@{step}", device=device)
    runs = [("greedy", AgentConfig(turns=1, samples=1, temperature=0.0, max_tokens=max_tokens))]
    if samples > 0:
        runs.append(("sampled", AgentConfig(turns=1, samples=samples, temperature=SAMPLING_TEMPERATURE,
                                            max_tokens=max_tokens)))
    records = []
    try:
        for label, agent_config in runs:
            bench = run_bench(policy, problems, run_dir / "heldout" / f"{model_label}-{label}-step{step}", scorer,
                              agent_config, prompts=prompts, kernel_db=None,
                              info={"heldout": True, "step": step, "model_label": model_label})
            m = bench.metrics["all"]
            record = {"phase": "heldout", "step": step, "label": label, "model_label": model_label, "split": "test",
                      "problems": m.problems, "attempts": m.attempts, "format_rate": m.format_rate,
                      "compile_rate": m.compile_rate, "correct_rate": m.correct_rate, "solved_rate": m.solved_rate,
                      **m.pass_at_k, "fast_1": m.fast_p_eager.get("fast_1"),
                      "fast_1_inductor": m.fast_p_inductor.get("fast_1"), "status_counts": m.status_counts}
            append_metrics(run_dir, record)
            records.append(record)
    finally:
        if was_training:
            model.train()
    return records
