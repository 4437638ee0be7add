"""Turn a run's trajectories into supervised fine-tuning data."""

from __future__ import annotations

import json
from pathlib import Path

from kernelrl.runs.store import RunStore


def export_sft(run_dir: str | Path, out: str | Path, min_reward: float | None = None,
               correct_only: bool = True) -> int:
    """Write chat-format SFT records (`{"messages": prompt + [assistant completion], "problem_id", "turn",
    "sample", "reward", "status"}`) for the run's attempts that are correct (unless `correct_only=False`) and
    reach `min_reward`. Returns the number of records written."""
    count = 0
    with Path(out).open("w") as f:
        for step in RunStore(run_dir).steps():
            if correct_only and not step.result.correct:
                continue
            if min_reward is not None and step.reward < min_reward:
                continue
            record = {"messages": [*step.messages, {"role": "assistant", "content": step.completion.text}],
                      "problem_id": step.problem_id, "turn": step.turn, "sample": step.sample,
                      "reward": step.reward, "status": step.result.status.value}
            f.write(json.dumps(record) + "\n")
            count += 1
    return count
