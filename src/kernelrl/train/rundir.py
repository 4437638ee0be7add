"""A training run directory: its config, the metrics log, checkpoints and the held-out evaluations.

    RUN_DIR/train_config.json   the resolved settings (a resumed run keeps the earlier ones under "previous")
    RUN_DIR/metrics.jsonl       one JSON object per log event: {"phase", "step", "time", ...}
    RUN_DIR/rollouts.jsonl      GRPO: every completion with its prompt, verdict and reward
    RUN_DIR/checkpoints/        trainer checkpoints (resume picks the last)
    RUN_DIR/adapter/            the final LoRA adapter (and RUN_DIR/merged/ when asked for)
    RUN_DIR/heldout/<label>-step<N>/  bench run directories of the held-out evaluations
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelrl._version import __version__

CONFIG = "train_config.json"
METRICS = "metrics.jsonl"
CHECKPOINTS = "checkpoints"
ADAPTER = "adapter"


def prepare_run_dir(run_dir: str | Path, command: str, config: dict[str, Any]) -> Path:
    """Create the run directory and record the settings (on resume, a changed config keeps the old one)."""
    path = Path(run_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(f"run directory {path} is a file")
    path.mkdir(parents=True, exist_ok=True)
    document = {"command": command, "kernelrl": __version__, **config}
    config_path = path / CONFIG
    if config_path.exists():
        try:
            old = json.loads(config_path.read_text())
        except json.JSONDecodeError:
            old = None
        if old is not None and {k: v for k, v in old.items() if k != "previous"} != document:
            document["previous"] = old
        elif old is not None and "previous" in old:  # same settings again: keep the history
            document["previous"] = old["previous"]
    config_path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return path


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def append_metrics(run_dir: Path, record: dict[str, Any]) -> None:
    """Append one record to metrics.jsonl (a line written
    whole, so a crash loses at most the line in flight)."""
    record = {"time": round(time.time(), 3), **{k: _finite(v) for k, v in record.items()}}
    with (run_dir / METRICS).open("a") as f:
        f.write(json.dumps(record) + "\n")


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / METRICS
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by a crash
    return out


def last_checkpoint(run_dir: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    directory = run_dir / CHECKPOINTS
    return get_last_checkpoint(str(directory)) if directory.is_dir() else None


def make_callbacks(run_dir: Path, phase: str, stage: str | None,
                   heldout: Callable[[Any, int], None] | None, heldout_every: int,
                   heldout_at_start: bool = True) -> list[Any]:
    """Trainer callbacks: every log event to metrics.jsonl, and the held-out evaluation at the start (a fresh
    run, when `heldout_at_start`) and every `heldout_every` steps. The final one runs after the adapter is
    saved (`Session.final_heldout`), so a run cut short during it loses no training."""
    from transformers import TrainerCallback

    class MetricsLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None,
                   **kwargs: Any) -> None:
            if logs and state.is_world_process_zero:  # one line per step, not one per process
                extra = {"stage": stage} if stage else {}
                append_metrics(run_dir, {"phase": phase, **extra, "step": state.global_step, **logs})

    class HeldOut(TrainerCallback):
        def __init__(self) -> None:
            self.done: set[int] = set()

        def _run(self, model: Any, step: int, main: bool) -> None:
            if main and heldout is not None and heldout_every >= 0 and step not in self.done:
                self.done.add(step)
                heldout(model, step)

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                           **kwargs: Any) -> None:
            if state.global_step == 0 and heldout_at_start:
                self._run(model, 0, state.is_world_process_zero)

        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if heldout_every > 0 and state.global_step % heldout_every == 0:
                self._run(model, state.global_step, state.is_world_process_zero)

    return [MetricsLog(), HeldOut()]
