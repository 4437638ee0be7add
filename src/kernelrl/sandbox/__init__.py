"""The sandbox: where candidate code runs (the stub, `child.py`), how it is started and watched
(`launcher.py`, `runner.py`), the judge that holds the reference (`judge.py` behind `judge_client.py`) and the
typed wire between them. This is its face: the evaluator imports what it needs from here, never from the
modules themselves.

Names load on first use, so a process that needs one module (the stub, before it confines itself; the judge)
imports nothing else."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_FACE = {
    "ChildOutcome": "runner",
    "DeviceGate": "gate", "RunSlots": "gate",
    "JudgeClient": "judge_client", "JudgeError": "judge_client",
    # the judge's operations as the evaluator sends them, and the replies it reads (typed: judge_wire)
    "AuditRequest": "judge_wire", "BandwidthRequest": "judge_wire", "BaselinesRequest": "judge_wire",
    "CompareRequest": "judge_wire", "PeakFlopsRequest": "judge_wire", "PrepareReply": "judge_wire",
    "PrepareRequest": "judge_wire", "ReleaseRequest": "judge_wire",
    "LaunchSettings": "launcher", "SandboxLauncher": "launcher", "Standby": "launcher",
    "new_workdir": "launcher",
    "ProcessOwner": "owner",
    "SandboxRequest": "protocol", "TrialPlan": "protocol",
    "SHARE_ATTEMPTS": "protocol", "SHARE_PREFIX": "protocol",
    # the child's events as the verdict reads them (typed: kernelrl.sandbox.protocol)
    "CensusEvent": "protocol",
    "DoneEvent": "protocol",
    "ErrorEvent": "protocol",
    "Event": "protocol",
    "ExitEvent": "protocol",
    "ImportedEvent": "protocol",
    "InitializedEvent": "protocol",
    "InputsUnavailableEvent": "protocol",
    "NativeThreadSeenEvent": "protocol",
    "OpReport": "protocol",
    "OutputMeta": "protocol",
    "ReadyEvent": "protocol",
    "TerminatedEvent": "protocol",
    "TimedCheck": "protocol",
    "TimingEvent": "protocol",
    "TimingTokenEvent": "protocol",
    "TrialEvent": "protocol",
    "ITEMSIZE": "tensorio", "TensorFileError": "tensorio", "nbytes_of": "tensorio",
    "validate_meta": "tensorio",
    "mixes": "timed_mix", "timing_variants": "timed_mix",
}
__all__ = [
    "ITEMSIZE", "SHARE_ATTEMPTS", "SHARE_PREFIX", "AuditRequest", "BandwidthRequest", "BaselinesRequest",
    "CensusEvent", "ChildOutcome", "CompareRequest", "DeviceGate", "DoneEvent", "ErrorEvent", "Event",
    "ExitEvent", "ImportedEvent", "InitializedEvent", "InputsUnavailableEvent", "JudgeClient",
    "JudgeError", "LaunchSettings", "NativeThreadSeenEvent", "OpReport", "OutputMeta",
    "PeakFlopsRequest", "PrepareReply", "PrepareRequest", "ProcessOwner", "ReadyEvent", "ReleaseRequest",
    "RunSlots", "SandboxLauncher", "SandboxRequest", "Standby", "TensorFileError", "TerminatedEvent",
    "TimedCheck", "TimingEvent", "TimingTokenEvent", "TrialEvent", "TrialPlan", "mixes", "nbytes_of",
    "new_workdir", "timing_variants", "validate_meta",
]
assert sorted(__all__) == sorted(_FACE), "the face's names and their modules disagree"

if TYPE_CHECKING:
    from kernelrl.sandbox.gate import DeviceGate, RunSlots
    from kernelrl.sandbox.judge_client import JudgeClient, JudgeError
    from kernelrl.sandbox.judge_wire import (
        AuditRequest,
        BandwidthRequest,
        BaselinesRequest,
        CompareRequest,
        PeakFlopsRequest,
        PrepareReply,
        PrepareRequest,
        ReleaseRequest,
    )
    from kernelrl.sandbox.launcher import LaunchSettings, SandboxLauncher, Standby, new_workdir
    from kernelrl.sandbox.owner import ProcessOwner
    from kernelrl.sandbox.protocol import (
        SHARE_ATTEMPTS,
        SHARE_PREFIX,
        CensusEvent,
        DoneEvent,
        ErrorEvent,
        Event,
        ExitEvent,
        ImportedEvent,
        InitializedEvent,
        InputsUnavailableEvent,
        NativeThreadSeenEvent,
        OpReport,
        OutputMeta,
        ReadyEvent,
        SandboxRequest,
        TerminatedEvent,
        TimedCheck,
        TimingEvent,
        TimingTokenEvent,
        TrialEvent,
        TrialPlan,
    )
    from kernelrl.sandbox.runner import ChildOutcome
    from kernelrl.sandbox.tensorio import ITEMSIZE, TensorFileError, nbytes_of, validate_meta
    from kernelrl.sandbox.timed_mix import mixes, timing_variants


def __getattr__(name: str) -> Any:
    module = _FACE.get(name)
    if module is None:  # a submodule (`from kernelrl.sandbox import isolation`) is the import system's
        raise AttributeError(f"module 'kernelrl.sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kernelrl.sandbox.{module}"), name)
    globals()[name] = value
    return value
