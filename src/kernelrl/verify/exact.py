"""The reference recomputed in float64, for the tolerance model (kernelrl.verify.tolerance). Runs in the judge
(needs torch), only when a candidate's output failed the plain allclose comparison.

The reference model is copied and cast to float64 (`Module.double()`: floating parameters and buffers),
floating inputs are cast to float64 (integer inputs stay), and forward runs with float64 as torch's default
dtype (tensors made inside forward). An output's reference error is the float64 answer minus the reference's,
kept where the output is fp32/fp16/bf16 and the float64 run gave a float64 output of the same shape; elsewhere
(a model that casts to a fixed dtype inside, an op without float64 support, out of memory) there is none and
the comparison stays plain allclose, as before the model.
"""

from __future__ import annotations

import copy
import weakref
from contextlib import contextmanager

import torch

from kernelrl.verify.tolerance import WIDENED_DTYPES

# a float64 answer further from the reference than this share of the output's largest
# value is not taken for rounding: the float64 run may have computed something else (a
# model that branches on the dtype, say), and no allowance is derived from it. Rounding of
# a long fp32 reduction stays far below (matvec over 24,576 terms: ~1e-6 of the largest
# value); a reference that loses this much to cancellation is judged by allclose as before
_MAX_ROUNDING_SHARE = 2.0 ** -6


def double_model(model: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of the reference model (the original stays as it is)."""
    return copy.deepcopy(model).double()


def _wide(value):
    """A float64 copy of a floating tensor, a copy of another
    tensor (forward may write into it), else as is."""
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64, copy=True) if value.is_floating_point() else value.clone()
    return value


def _outputs(out) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list) and all(isinstance(t, torch.Tensor) for t in out):
        return list(out)
    raise TypeError(f"forward returned {type(out).__name__}")


def reference_errors(model64: torch.nn.Module, call_args: list, refs: list[torch.Tensor]
                     ) -> tuple[list[torch.Tensor | None], str | None]:
    """Per reference output: the float64 answer minus the reference (float32), or None; and why there is none
    for any output (None when at least one has an error tensor)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            answers = _outputs(model64(*[_wide(a) for a in call_args]))
    except Exception as exc:  # noqa: BLE001 - no float64 reference: the comparison stays plain allclose
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            torch.cuda.empty_cache()
        return [None] * len(refs), f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        torch.set_default_dtype(before)
    errors: list[torch.Tensor | None] = []
    why = "the float64 run returned other outputs" if len(answers) != len(refs) else None
    for k, ref in enumerate(refs):
        answer = answers[k] if k < len(answers) else None
        err = None
        if str(ref.dtype).removeprefix("torch.") not in WIDENED_DTYPES:
            why = why or "no fp32/fp16/bf16 output"
        elif answer is None or answer.dtype != torch.float64 or answer.shape != ref.shape:
            why = why or f"output {k} of the float64 run is not a float64 tensor of the reference's shape"
        else:
            err = (answer - ref.detach().to(answer.device)).to(torch.float32)
            # never an inf allowance
            err = torch.where(torch.isfinite(err), err, torch.full_like(err, float("nan")))
            scale = (float(torch.nan_to_num(answer.abs(), nan=0.0, posinf=0.0).max()) if answer.numel()
                     else 0.0)
            if err.numel() \
                    and float(torch.nan_to_num(err.abs(), nan=0.0).max()) > _MAX_ROUNDING_SHARE * scale:
                why = why or f"output {k}'s float64 answer differs from the reference beyond rounding"
                err = None
        errors.append(err)
    return errors, None if any(e is not None for e in errors) else why


class FloatReferences:
    """The judge's float64 copies of its reference models (one per model, while the model lives) and each
    trial's reference errors, computed once per trial on the first value mismatch."""

    def __init__(self) -> None:
        # a reference model's float64 copy lives as long as the model: the judge drops models it no longer
        # needs, and a key by id() could then name a new model built at the same address
        self._models: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its float64 copy
        # the most device memory one float64 recomputation allocated (its copy of the model included): the
        # GPU memory admission keeps that much back from the sandboxes
        self.peak_bytes = 0

    def of(self, model: torch.nn.Module, call_args: list,
           refs: list[torch.Tensor]) -> list[torch.Tensor | None]:
        """The errors of `refs`, the reference's outputs for `call_args` (the audit's), or Nones."""
        try:
            with self._transient(refs):
                return reference_errors(self._double(model), call_args, refs)[0]
        except Exception:  # noqa: BLE001 - no float64 reference: allclose
            return [None] * len(refs)

    @contextmanager
    def _transient(self, refs: list):
        """Measure the most the block allocates at once on the references' GPU beyond what was allocated
        before it, cached blocks it reuses included (the judge serves one request at a time, so the device's
        peak is the block's own)."""
        device = next((t.device for t in refs if isinstance(t, torch.Tensor) and t.is_cuda), None)
        if device is None:
            yield
            return
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        try:
            yield
        finally:
            self.peak_bytes = max(self.peak_bytes, torch.cuda.max_memory_allocated(device) - before)

    def _double(self, model: torch.nn.Module) -> torch.nn.Module:
        model64 = self._models.get(model)
        if model64 is None:
            model64 = self._models[model] = double_model(model)
        return model64

    def errors(self, state: dict, index: int) -> tuple[list[torch.Tensor | None], str | None]:
        """Trial `index`'s errors, from the judge's state of one evaluation: per trial its reference model and
        forward arguments ("calls": (model, [{"tensor": k} | {"value": v}])), its input tensors ("inputs", a
        function of the trial: held or drawn again), reference outputs ("refs"), and the errors computed so
        far ("errors")."""
        cache = state["errors"]
        if index not in cache:
            model, args = state["calls"][index]
            refs = state["refs"][index]
            try:
                with self._transient(refs):
                    model64 = self._double(model)
                    tensors = state["inputs"](index)
                    call = [tensors[a["tensor"]] if "tensor" in a else a["value"] for a in args]
                    cache[index] = reference_errors(model64, call, refs)
            except Exception as exc:  # noqa: BLE001 - e.g. a model deepcopy refuses: plain allclose as before
                cache[index] = [None] * len(refs), f"{type(exc).__name__}: {str(exc)[:200]}"
        return cache[index]

