"""Degenerate-problem checks on reference outputs (run in the judge; needs torch).

A problem is degenerate when an answer that ignores the real computation passes the evaluator's own
comparison: all zeros, a constant, another input's output, one of the inputs, or outputs that ignore the
weights. A reference that disagrees with itself cannot grade anything. Each check uses `compare_outputs` with
the evaluator's tolerance, so "passes" means exactly what it means for a candidate.
"""

from __future__ import annotations

import torch

from kernelrl.verify.compare import compare_outputs


def _passes(expected: list[torch.Tensor], answer: list[torch.Tensor], atol: float, rtol: float) -> bool:
    return compare_outputs(expected, answer, atol, rtol) is None


def perturbed(model: torch.nn.Module, seed: int = 43) -> torch.nn.Module:
    """`model` with every floating parameter and buffer moved by random values of its own size (half its
    standard deviation; of its mean magnitude, or 1, when it is constant). The audit's other-weights model is
    built with another seed, but default initializations do not depend on the seed (a norm layer's ones and
    zeros), so without this every LayerNorm/GroupNorm/BatchNorm problem would look as if it ignored its
    weights."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            if not tensor.is_floating_point() or tensor.numel() == 0:
                continue
            wide = tensor.detach().double()
            scale = (float(wide.std()) if tensor.numel() > 1 else 0.0) or float(wide.abs().mean()) or 1.0
            noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float64) * (0.5 * scale)
            tensor.add_(noise.to(tensor.device, tensor.dtype))
    return model


def _other_weights_pass(passes, reinit_run, first) -> bool:
    try:
        other = reinit_run(first)
    except Exception:  # noqa: BLE001 - perturbed weights the reference refuses: it does use them
        return False
    return passes(other)


def output_flags(run, fresh_inputs, atol: float, rtol: float, reinit_run=None, errors_of=None, k: float = 0.0
                 ) -> list[tuple[str, str]]:
    """`run(inputs) -> outputs`; `fresh_inputs(seed) -> inputs`; `reinit_run` runs a model built with other
    weights (another seed, then `perturbed`; None when the model has no parameters or buffers);
    `errors_of(inputs, outputs)`, with the tolerance model's `k`, the float64 reference's errors
    (kernelrl.verify.exact), so that an answer passes here exactly when it would pass for a candidate. Returns
    (flag, detail) pairs."""
    flags = []
    first, second = fresh_inputs(1001), fresh_inputs(1002)
    out, other = run(first), run(second)
    if not _passes(out, run(first), atol, rtol):
        flags.append(("nondeterministic", "two runs on the same inputs disagree beyond the tolerance"))
    errors = errors_of(first, out) if errors_of is not None and k else None

    def passes(answer: list[torch.Tensor], only: int | None = None) -> bool:
        if only is not None:
            return compare_outputs([out[only]], answer, atol, rtol, errors and [errors[only]], k) is None
        return compare_outputs(out, answer, atol, rtol, errors, k) is None

    # a constant that could be known in advance: the mean of the output for *other* inputs
    constants = [t.double().mean().item() if t.numel() and not t.is_complex() else 0 for t in other]
    if passes([torch.zeros_like(t) for t in out]):
        flags.append(("zeros_pass", "an all-zeros answer passes"))
    elif len(other) == len(out) and passes([torch.full_like(t, c)
                                            for t, c in zip(out, constants, strict=True)]):
        flags.append(("constant_pass", "a constant answer (the mean output for other inputs) passes"))
    if passes(other):
        flags.append(("input_independent", "the output for other random inputs passes"))
    tensors = [x for x in first if isinstance(x, torch.Tensor)]
    for n, o in enumerate(out):
        for i, x in enumerate(tensors):
            if x.shape == o.shape and x.dtype == o.dtype and passes([x.to(o.device)], n):
                flags.append(("returns_input", f"returning input {i} as output {n} passes"))
    if reinit_run is not None and _other_weights_pass(passes, reinit_run, first):
        flags.append(("weights_ignored", "a model built with other weights gives a passing output"))
    return flags
