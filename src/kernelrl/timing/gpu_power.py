"""How long a GPU was held down by its power or thermal limit, through NVML (nvidia-ml-py): the fidelity bench
reports it per timing, so a rerun spread caused by the GPU's clock is told apart from one caused by the timer.

Measured on an H100 (driver 580): the level-1 fp16 matmul draws the board's 700 W limit, the driver caps the
SM clock (1980 -> 1480-1620 MHz; NVML clock-event reason: software power cap) within its first timing, and
waiting before each timing until NVML no longer reports the cap (~0.5 s) did not steady it. Longer
launch-cover spins lower the duty cycle and with it the cap (reruns 0.13% apart in one run with a 300 us spin,
2.6% in another with the 400 us cover): what is left is the machine, which the bench's rows now say.

`GpuPower.open(cuda_index)` is None where NVML cannot be used (no driver, no nvidia-ml-py, a MIG instance).
"""

from __future__ import annotations

import os
from typing import Any


def nvml_index(cuda_index: int, visible: str | None) -> int | str | None:
    """The NVML index (or UUID prefix) of CUDA device `cuda_index` under CUDA_VISIBLE_DEVICES=`visible`;
    None for a MIG instance or an index past the list. Assumes CUDA's device order is NVML's (PCI bus order),
    true for the identical GPUs of one host."""
    if visible is None:
        return cuda_index
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if not 0 <= cuda_index < len(entries):
        return None
    entry = entries[cuda_index]
    if entry.isdigit():
        return int(entry)
    if entry.startswith("GPU-"):
        return entry
    return None  # MIG-...: the power state is the whole GPU's, shared with other instances


class GpuPower:
    """One GPU's power and thermal violation counters."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self._nvml = nvml
        self._handle = handle

    @classmethod
    def open(cls, cuda_index: int = 0, *, visible: str | None = None) -> GpuPower | None:
        """CUDA device `cuda_index` as this process sees it (CUDA_VISIBLE_DEVICES from the environment unless
        `visible` is given); None where NVML cannot say."""
        if visible is None:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        target = nvml_index(cuda_index, visible)
        if target is None:
            return None
        try:
            import pynvml

            pynvml.nvmlInit()
            if isinstance(target, int):
                handle = pynvml.nvmlDeviceGetHandleByIndex(target)
            else:
                handles = (pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount()))
                handle = next((h for h in handles if _text(pynvml.nvmlDeviceGetUUID(h)).startswith(target)),
                              None)
                if handle is None:
                    return None
            power = cls(pynvml, handle)
            power.throttled_ns()  # a driver that cannot report violations is no use
            return power
        except Exception:  # noqa: BLE001 - ImportError, NVMLError (no driver, not supported): nothing to say
            return None

    def throttled_ns(self) -> int:
        """Cumulative time (ns) the GPU spent held down by its power or thermal limit; the difference of two
        readings is how much of the span between them was."""
        total = 0
        for policy in (self._nvml.NVML_PERF_POLICY_POWER, self._nvml.NVML_PERF_POLICY_THERMAL):
            total += int(self._nvml.nvmlDeviceGetViolationStatus(self._handle, policy).violationTime)
        return total


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
