"""One line per GRPO run of a GPU check (scripts/two_gpu_check.sh beside, scripts/node_check.sh split): steps,
steps an hour, completions an hour (when its rollouts were copied), the share of step time spent waiting for
rewards (the main process's own wait) and the correct rate of each step.

  python scripts/grpo_summary.py OUT NAME...   # reads OUT/grpo-NAME-metrics.jsonl (and -rollouts.jsonl[.gz])
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path


def summary(out: Path, name: str) -> str:
    rows = [json.loads(line) for line in (out / f"grpo-{name}-metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "step_time" in r]
    seconds = sum(r["step_time"] for r in steps)
    wait = sum(r.get("kernelrl/eval_seconds", 0) for r in steps)
    correct = [round(r.get("kernelrl/correct_rate", 0), 3) for r in steps]
    completions = ""
    for rollouts in (out / f"grpo-{name}-rollouts.jsonl", out / f"grpo-{name}-rollouts.jsonl.gz"):
        if rollouts.is_file():  # committed results keep their rollouts compressed
            text = (gzip.decompress(rollouts.read_bytes()).decode() if rollouts.suffix == ".gz"
                    else rollouts.read_text())
            completions = f"{3600 * len(text.splitlines()) / seconds:.0f} completions/hour, "
    return (f"{name}: {len(steps)} steps, {3600 * len(steps) / seconds:.1f} steps/hour, {completions}"
            f"reward wait {wait:.1f} s of {seconds:.1f} s ({wait / seconds:.0%}); correct rate {correct}")


if __name__ == "__main__":
    for run in sys.argv[2:]:
        print(summary(Path(sys.argv[1]), run))
