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
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelrl._version import __version__

CONFIG = "train_config.json"
METRICS = "metrics.jsonl"
CHECKPOINTS = "checkpoints"
ADAPTER = "adapter"
# optimizer steps in a row with non-finite gradients before a run stops: one is the rare bf16 overflow,
# several in a row are something systematic (a learning rate too high, a broken batch) that skipping
# cannot fix
NONFINITE_STEPS_IN_A_ROW = 3


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


def skip_nonfinite_steps() -> Any:
    """The trainer callback that skips an optimizer step whose gradients are not all finite (its class says
    why)."""
    from transformers import TrainerCallback

    class SkipNonFiniteSteps(TrainerCallback):
        """An optimizer step whose gradients are not all finite is skipped (its gradients dropped), and each
        logged step says how many were skipped since the last log (`nonfinite_steps_skipped`). Why: bf16 LoRA
        training now and then yields a NaN gradient beside a finite loss; clipping by the global norm spreads
        it to every gradient, and one optimizer step turns every adapter weight to NaN, after which sampling
        fails ('probability tensor contains either inf, nan') and the run is lost. The warning names the
        first parameters whose own gradient was not finite, in the order backward computed them (by the
        optimizer step, clipping has spread the NaN to all): the first is nearest where it arose."""

        def __init__(self) -> None:
            self.since_log = 0
            self.in_a_row = 0
            self.backward: list[tuple[str, Any]] = []  # (parameter, is its gradient finite), backward's order
            self.hooks: list[Any] = []

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                           **kwargs: Any) -> None:
            import torch

            def hook(name: str) -> Callable[[Any], None]:
                # a flag tensor, not a bool: no device sync in a healthy step
                return lambda grad: self.backward.append((name, torch.isfinite(grad).all()))

            for name, parameter in model.named_parameters():
                if parameter.requires_grad:
                    self.hooks.append(parameter.register_hook(hook(name)))

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            # the trained model lives on (held-out evaluations, a caller's own use): leave no hook behind
            for handle in self.hooks:
                handle.remove()
            self.hooks, self.backward = [], []

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None,
                                  **kwargs: Any) -> None:
            import torch

            seen, self.backward = self.backward, []
            # decided on the gradients the optimizer would use (accumulated, all-reduced, clipped), not on the
            # hooks' per-process flags: they are the same on every process, so every process skips together
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            if not grads or bool(torch.stack([torch.isfinite(g).all() for g in grads]).all()):
                self.in_a_row = 0
                return
            first = list(dict.fromkeys(name for name, finite in seen if not bool(finite)))
            warnings.warn(f"optimizer step {state.global_step + 1} skipped: its gradients are not all finite"
                          + (f" (first in backward: {', '.join(first[:3])})" if first else ""), stacklevel=1)
            for p in model.parameters():
                p.grad = None  # the optimizer passes over parameters without a gradient
            self.since_log += 1
            self.in_a_row += 1
            if self.in_a_row >= NONFINITE_STEPS_IN_A_ROW:
                from kernelrl.train.model import TrainSetupError

                raise TrainSetupError(
                    f"gradients were not finite in {self.in_a_row} optimizer steps in a row (the last: step "
                    f"{state.global_step + 1}); lower the learning rate or look for a broken batch")

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None,
                   **kwargs: Any) -> None:
            if logs is not None and "grad_norm" in logs:  # a training step's log, not the run's summary
                logs["nonfinite_steps_skipped"] = self.since_log
                self.since_log = 0

    return SkipNonFiniteSteps()


def make_callbacks(run_dir: Path, phase: str, stage: str | None,
                   heldout: Callable[[Any, int], None] | None, heldout_every: int,
                   heldout_at_start: bool = True) -> list[Any]:
    """Trainer callbacks: optimizer steps with non-finite gradients skipped, every log event to metrics.jsonl,
    and the held-out evaluation at the start (a fresh run, when `heldout_at_start`) and every `heldout_every`
    steps. The final one runs after the adapter is saved (`Session.final_heldout`), so a run cut short during
    it loses no training."""
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

    # the guard first: its on_log adds to the record MetricsLog writes
    return [skip_nonfinite_steps(), MetricsLog(), HeldOut()]
