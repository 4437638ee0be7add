"""`open_scorer`: the local scorer for a device, one `Evaluator` or a `MultiDeviceEvaluator` over several.

Apart from `scorer` so that the seam's module imports none of its implementations.
"""

from __future__ import annotations

from kernelrl.evaluate.evaluator import Evaluator
from kernelrl.evaluate.multi import MultiDeviceEvaluator
from kernelrl.evaluate.scorer import ScorerBase
from kernelrl.evaluate.settings import VerdictSettings


def open_scorer(device: str | list[str] | None = None, settings=None, verdict: VerdictSettings | None = None,
                **overrides) -> ScorerBase:
    """The scorer for where evaluations should run; what the CLI, the agent, the bench and the trainer call.

    `device`: 'auto', 'cpu', 'cuda' or 'cuda:N' (one `Evaluator`), 'all' (one evaluator per visible GPU, or
    the CPU without one) or a list of devices (`MultiDeviceEvaluator` when it names several); None: the device
    of `settings` (default 'auto'). `settings` (EvaluatorSettings) apply to every device; `verdict`
    (VerdictSettings) is the default of every call; `overrides` are fields of either. Close it when done (it
    is a context manager)."""
    if isinstance(device, str) and "://" in device:
        raise ValueError(f"{device!r} is a remote scorer (reward service URL or Ray address): "
                         "open it with kernelrl.serve.open_scorer; this one takes a device: auto, "
                         "cpu, cuda, cuda:N or all")
    if device == "all":
        return MultiDeviceEvaluator("auto", settings, verdict, **overrides)
    if isinstance(device, list | tuple):
        if not device:
            raise ValueError("devices must not be empty")
        if len(device) > 1:
            return MultiDeviceEvaluator(list(device), settings, verdict, **overrides)
        device = device[0]
    if device is not None:
        overrides = {**overrides, "device": device}
    return Evaluator(settings, verdict, **overrides)
