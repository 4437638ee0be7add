"""The judge's audit of a problem (kernelrl.problems.audit): a degenerate reference (zeros, constant, input-
independent, returning its input, ignoring its weights, nondeterministic, raising), inputs too large, an eager
time too short to measure. Runs in the judge process, on problem code only."""

from __future__ import annotations

import time
from functools import partial

from kernelrl.problems.input_sets import call_with, correctness_sets, timing_set
from kernelrl.sandbox.judge_wire import AuditFlag, AuditReply, AuditRequest

_clock = time.perf_counter


def flatten_reference(out, torch) -> list:
    """A reference forward's result as a list of tensors."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list) and all(isinstance(t, torch.Tensor) for t in out):
        return list(out)
    raise TypeError(f"the reference forward returned {type(out).__name__}, not a tensor or tuple of tensors")


def audit_problem(judge, req: AuditRequest) -> dict:
    """Flag a degenerate or unusable problem (see kernelrl.verify.degeneracy and kernelrl.problems.audit)."""
    try:
        module, sets = judge._module(req.problem_path, req.problem_sha256)
        names = correctness_sets(list(sets), judge.gpu, req.input_sets or None)
    except Exception as exc:  # noqa: BLE001 - an unloadable problem is the finding
        detail = f"{type(exc).__name__}: {exc}"[:500]
        return AuditReply(flags=[AuditFlag(flag="reference_raises", input_set=None, detail=detail)]).fields()
    flags, eager_ms, timing_bytes = [], {}, None
    for name in names:
        found, median, call_bytes = _audit_set(judge, req, module, sets, name)
        flags.extend(AuditFlag(flag=flag, input_set=name, detail=detail) for flag, detail in found)
        if median is not None:
            eager_ms[name] = median
        if name == timing_set(list(sets)):
            timing_bytes = call_bytes
    return AuditReply(flags=flags, eager_ms=eager_ms, timing_set_bytes=timing_bytes).fields()


def reference_runner(torch, model):

    def run(inputs):
        args = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        with torch.no_grad():
            return [t.detach().clone() for t in flatten_reference(model(*args), torch)]

    return run


def _audit_set(judge, req: AuditRequest, module, sets: dict, name: str
               ) -> tuple[list[tuple[str, str]], float | None, int | None]:
    """Flags for one input set, the eager median (ms) when it was timed, and the bytes of one call's
    inputs and outputs (what the GPU memory admission estimates a problem's first evaluations from)."""
    from kernelrl.sandbox.tensorio import dtype_name
    from kernelrl.timing.cuda_timer import TimerSettings, time_cuda
    from kernelrl.verify.degeneracy import output_flags, perturbed
    from kernelrl.verify.tolerance import tolerance_for

    torch = judge.torch
    params = sets[name]

    drawn: dict[int, list] = {}

    def fresh(seed):  # drawing bench-sized inputs on the host is slow: once per seed
        if seed not in drawn:
            drawn[seed] = judge._inputs(module, params, seed)
        return drawn[seed]

    median = call_bytes = None
    try:
        model = judge._model(req.problem_sha256, module, params)
        run = reference_runner(torch, model)
        probe = run(fresh(1001))
        call_bytes = sum(v.numel() * v.element_size() for v in [*fresh(1001), *probe]
                         if isinstance(v, torch.Tensor))
        overrides = {k: tuple(v) for k, v in req.tolerances.items()}
        tol = tolerance_for(sorted({dtype_name(t.dtype) for t in probe}), overrides)
        reinit_run = None
        if any(True for _ in model.parameters()) or any(True for _ in model.buffers()):
            torch.manual_seed(43)
            init_inputs = call_with(module.get_init_inputs, params)
            torch.manual_seed(43)
            reinit = perturbed(module.Model(*init_inputs).to(judge.device))  # not ones/zeros
            reinit_run = reference_runner(torch, reinit)
        found = output_flags(run, fresh, tol.atol, tol.rtol, reinit_run, partial(judge._float64.of, model),
                             req.ref_error_k or 0.0)
        if judge.gpu and req.timing and name == timing_set(list(sets)):
            inputs = fresh(1001)
            size = sum(v.numel() * v.element_size() for v in inputs if isinstance(v, torch.Tensor))
            if size > 2 << 30:
                found.append(("too_large", f"inputs take {size / 2**30:.1f} GiB (limit 2 GiB)"))
            def forward():  # the bare forward, as the baselines time it (run() also clones)
                with torch.no_grad():
                    model(*inputs)

            raw = time_cuda(forward, torch=torch, synchronize=torch.cuda.synchronize,
                            event_cls=torch.cuda.Event, clock=_clock,
                            settings=TimerSettings(warmup_ms=20, target_ms=100, min_reps=10, max_reps=200))
            median = sorted(raw["times_ms"])[len(raw["times_ms"]) // 2]
            if median < 0.1:
                found.append(("launch_bound", f"eager takes {median * 1000:.0f} us (< 100 us)"))
        return found, median, call_bytes
    except torch.cuda.OutOfMemoryError as exc:
        return [("too_large", f"out of GPU memory: {str(exc)[:200]}")], median, call_bytes
    except Exception as exc:  # noqa: BLE001 - the reference failing is the finding
        return [("reference_raises", f"{type(exc).__name__}: {exc}"[:500])], median, call_bytes
