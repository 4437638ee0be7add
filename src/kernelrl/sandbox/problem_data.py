"""The problem's part of the sandbox stub: everything the stub needs from the problem module (each trial's
inputs, the constructor arguments per input set), taken before the candidate is imported, after which the
module is gone from the process: out of `sys.modules`, held by nothing of the stub's, its functions and
classes collected (checked through weak references), so candidate code finds no `Model`, `get_inputs` or
module by any route (modules, subclasses, gc, frames). The file itself is hidden by the stub before then
(`read_source`, `isolation.hide_files`). The one exception is paired-baseline timing (GPU, `paired_baseline`),
which times the reference `Model` in this process: there the class is kept, and its module with it.
"""

from __future__ import annotations

import gc
import os
import sys
import types
import weakref
from dataclasses import dataclass
from typing import Any

from kernelrl.problems.input_sets import call_with, draw_inputs, input_probe, input_sets
from kernelrl.sandbox.protocol import SandboxRequest, TrialPlan

# while it exists: a problem that looks itself up (dataclasses, pickle) finds itself
_NAME = "kernelrl_problem"


class Unavailable(Exception):
    """The stub could not take what it needs from the problem (no candidate code has run: not its failure)."""


@dataclass
class ProblemData:
    inputs: dict[int, list]  # trial index -> its pristine input tensors
    init_args: dict[str, list]  # input set -> the constructor's arguments, drawn after seeding with 42
    # paired-baseline timing only: the problem's Model and constructor arguments of its own for the timing set
    # (the candidate's constructor could change the ones it got)
    reference: tuple[type, list] | None


def read_source(path: str) -> bytes | None:
    """The problem file's text, read before the stub hides the file (None: unreadable; `take` says so)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def take(request: SandboxRequest, source: bytes | None, device: Any, torch: Any,
         host_stage: Any) -> ProblemData:
    """Load the problem from `source`, draw what the stub needs, drop the module and check that nothing of it
    survived (unless paired-baseline timing keeps its Model). Raises Unavailable."""
    if source is None:
        raise Unavailable(f"the problem file {request.problem_path} could not be read")
    keep_reference = request.gpu and request.timing and request.paired_baseline
    # everything alive now is the stub's: the collection below then scans only what the problem made
    gc.freeze()
    data, watched = _draw(request, source, device, torch, host_stage, keep_reference)
    gc.collect()
    alive = sorted({name for name, ref in watched if ref() is not None})
    if alive and not keep_reference:
        raise Unavailable(f"the problem stays reachable after the stub dropped it ({', '.join(alive)} still "
                          "alive): get_init_inputs() must return data (numbers, tensors, lists of them), and "
                          "the problem must not register its functions anywhere outside its module")
    return data


def _draw(request: SandboxRequest, source: bytes, device: Any, torch: Any, host_stage: Any,
          keep_reference: bool) -> tuple[ProblemData, list[tuple[str, weakref.ref]]]:
    """The module lives in this frame only: once it returns, only what the returned data holds is left."""
    module = types.ModuleType(_NAME)
    module.__file__ = request.problem_path
    sys.modules[_NAME] = module
    try:
        try:
            # the problem is trusted
            exec(compile(source, request.problem_path, "exec"), module.__dict__)  # noqa: S102
            sets = input_sets(module)
            inputs = {t.index: _trial_inputs(request, t, module.get_inputs, sets, device, torch, host_stage)
                      for t in request.trials}
            init_args = {}
            for name in dict.fromkeys(t.set for t in request.trials):
                # as the judge builds its reference (the model is built after seeding again)
                torch.manual_seed(42)
                init_args[name] = list(call_with(module.get_init_inputs, sets[name]))
            reference = None
            if keep_reference and request.timing_set in sets:  # else nothing is timed
                torch.manual_seed(42)
                reference = (module.Model, list(call_with(module.get_init_inputs, sets[request.timing_set])))
        except _InputsMismatch as exc:
            raise Unavailable(f"the inputs differ from the judge's: {exc}. get_inputs() must depend only on "
                              "torch's seed.") from None
        except Exception as exc:  # noqa: BLE001 - any failure of the problem's code is the problem's
            raise Unavailable(f"the inputs could not be drawn: {type(exc).__name__}: "
                              f"{str(exc)[:300]}") from None
    finally:
        sys.modules.pop(_NAME, None)
    watched = [(_NAME, weakref.ref(module))] + [
        (name, weakref.ref(value)) for name, value in vars(module).items()
        if isinstance(value, type | types.FunctionType) and getattr(value, "__module__", None) == _NAME]
    return ProblemData(inputs=inputs, init_args=init_args, reference=reference), watched


class _InputsMismatch(Exception):
    pass


def _trial_inputs(request: SandboxRequest, trial: TrialPlan, get_inputs: Any, sets: dict, device: Any,
                  torch: Any, host_stage: Any) -> list:
    """One trial's input tensors: drawn here from the trial's seed when the judge found the draw reproducible
    (checked against the judge's probe), else read from the judge's files, which are then deleted (a candidate
    could read them and precompute answers)."""
    from kernelrl.sandbox.tensor_files import read_tensor

    draw = trial.draw
    if draw is None:
        tensors = []
        for k, meta in enumerate(trial.inputs):
            path = os.path.join(request.in_dir, f"trial{trial.index}_in{k}.bin")
            tensors.append(read_tensor(path, meta, device, host_stage))
            os.unlink(path)
        return tensors
    values = draw_inputs(torch, get_inputs, sets[trial.set], draw.seed, draw.on, device)
    if input_probe(torch, values) != draw.probe:
        raise _InputsMismatch(f"trial {trial.index} (input set {trial.set})")
    return [v for v in values if isinstance(v, torch.Tensor)]
