"""Phase 3: the trials' inputs drawn (before the candidate exists; the problem itself never reaches it), the
thread baseline taken, the candidate imported, and the model built as the judge builds the reference."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

from kernelrl.sandbox import problem_data
from kernelrl.sandbox.handoff import Handoff
from kernelrl.sandbox.native_threads import NativeThreads, warm_pools
from kernelrl.sandbox.protocol import (
    BaselineEvent,
    Event,
    ImportedEvent,
    InitializedEvent,
    InputsUnavailableEvent,
    SandboxRequest,
)
from kernelrl.sandbox.stub.trusted import CANDIDATE_MODULE, Trusted


class LoadedCandidate:
    """The imported candidate and what the trials need beside it: each trial's pristine inputs (forward gets
    copies), the model per input set, the thread baseline and the hand-off of outputs."""

    def __init__(self, trusted: Trusted, drawn: problem_data.ProblemData, model_cls: type, native: Any,
                 handoff: Any, threads_before: set) -> None:
        self.trusted, self.drawn, self.model_cls = trusted, drawn, model_cls
        self.pristine = drawn.inputs
        self.native, self.handoff, self.threads_before = native, handoff, threads_before
        self._models: dict[str, object] = {}

    def model_for(self, set_name: str):
        """As the judge builds the reference: seed 42, construct (the arguments were drawn after seeding
        42)."""
        torch = self.trusted.torch
        if set_name not in self._models:
            torch.manual_seed(42)
            if self.trusted.gpu:
                torch.cuda.manual_seed(42)
            self._models[set_name] = self.model_cls(*self.drawn.init_args[set_name]).to(self.trusted.device)
        return self._models[set_name]

    def stray_threads(self) -> list[str]:
        """Python threads started since the baseline (the census follows one thread)."""
        return sorted(str(t) for t in set(self.trusted.current_frames()) - self.threads_before)[:8]


def import_candidate(request: SandboxRequest, trusted: Trusted, problem_source: list[bytes | None],
                     send: Callable[[Event], None], clock: Callable[[], float]) -> LoadedCandidate:
    """Draw every trial's inputs and constructor arguments, take the thread baseline, import the candidate.
    `problem_source` holds the problem's source, taken out of it here: the caller's frame is one the candidate
    can walk up to, and must not find the source there."""
    marks = {"start": clock()}
    # every trial's inputs and constructor arguments exist before the candidate does; the problem does not
    try:
        drawn = problem_data.take(request, problem_source.pop(), trusted.device, trusted.torch,
                                  trusted.host_stage)
    except problem_data.Unavailable as exc:  # no candidate code has run: a problem or harness failure
        send(InputsUnavailableEvent(detail=str(exc)[:500]))
        os._exit(0)
    if trusted.gpu:
        trusted.sync()
    marks["inputs"] = clock()
    threads_before = set(trusted.current_frames())
    warm_pools(trusted.torch)  # the thread pools honest work starts lazily, started now: then the baseline
    native = NativeThreads(trusted.current_frames)
    native.mark()
    send(BaselineEvent(pid=os.getpid(), tasks=native.baseline()))  # the verdict process's watch
    handoff = Handoff()  # the harness's state the candidate must leave as it is
    module = _load(request.candidate_path, CANDIDATE_MODULE)
    model_cls = getattr(module, "ModelNew", None)
    if not isinstance(model_cls, type):
        raise TypeError("the candidate module defines no class ModelNew")
    # diagnostics only (the candidate's code runs in this process): seconds from the import stage's start
    send(ImportedEvent(marks={k: round(v - marks["start"], 4) for k, v in marks.items()}))
    return LoadedCandidate(trusted, drawn, model_cls, native, handoff, threads_before)


def build_model(request: SandboxRequest, candidate: LoadedCandidate, send: Callable[[Event], None]) -> None:
    """The init stage: the candidate's constructor for the first trial's input set."""
    candidate.model_for(request.trials[0].set)
    send(InitializedEvent())


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
