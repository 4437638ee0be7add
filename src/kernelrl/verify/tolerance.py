"""Per-dtype tolerances; the defaults are KernelBench's (fp32 1e-4, half precision 1e-2). Stdlib only.

The tolerance model (docs/evaluation.md, "Tolerance model"): an output element passes when it is allclose
to the reference (|cand - ref| <= atol + rtol * |ref|), or, for fp32/fp16/bf16 outputs whose reference also
runs in float64, when it is as close to the float64 answer as the reference itself plus that tolerance:
|cand - ref64| <= atol + rtol * |ref64| + k * |ref - ref64|. A long reduction (a matrix-vector product over
24,576 terms) rounds differently in every summation order, and the reference's own rounding error there can
exceed atol: an honest kernel must not be failed for disagreeing with the reference's rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-4, 1e-4),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
}

# k in the float64 allowance: a candidate may be k times as far from the exact (float64) answer as the
# reference is. An honest kernel of the same precision makes errors of the reference's size but in other
# places and with other signs (its summation order differs), so k = 1 would still fail it where the reference
# happened to round well and the kernel did not; 3 covers that spread. A genuinely wrong kernel (an index off
# by one, a skipped element, a wrong reduction) is off by the size of the values themselves, and one that
# computes in lower precision (fp16 intermediates in an fp32 problem) by ~2^-11 relative, ~10^4 times fp32's
# rounding: far above k times the reference's error either way, so they stay wrong_output.
REFERENCE_ERROR_K = 3.0
# output dtypes whose reference is also computed in float64 when a comparison fails (integers compare exactly,
# float64 has nothing more exact to compare with)
WIDENED_DTYPES = frozenset({"float32", "float16", "bfloat16"})
# a wrong_output whose worst element is within this factor of its allowance
# is marginal: another draw of the secret inputs could pass it, so the
# verdict is not stored in the result cache (kernelrl.cache.result_cacheable)
MARGINAL_FACTOR = 10.0


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    dtype: str


def tolerance_for(dtypes: list[str], overrides: dict[str, tuple[float, float]] | None = None) -> Tolerance:
    """The loosest default among the output dtypes (integers and bools compare exactly)."""
    table = {**DEFAULT_TOLERANCES, **(overrides or {})}
    best = Tolerance(0.0, 0.0, dtypes[0] if dtypes else "none")
    for name in dtypes:
        atol, rtol = table.get(name, (0.0, 0.0))
        if (atol, rtol) > (best.atol, best.rtol):
            best = Tolerance(atol, rtol, name)
    return best


def tolerance_model(output_dtypes: list[str], k: float) -> str:
    """What `CorrectnessReport.tolerance_model` says: 'allclose' (exact
    for integers), or 'allclose|float64-reference(k=3)' when an
    fp32/fp16/bf16 output may also pass against the float64 reference."""
    if k > 0 and WIDENED_DTYPES.intersection(output_dtypes):
        return f"allclose|float64-reference(k={k:g})"
    return "allclose"


def is_marginal(reason: str | None, tolerance_ratio: float | None) -> bool:
    """A value mismatch whose worst element is within MARGINAL_FACTOR of what it was allowed."""
    return reason == "values" and tolerance_ratio is not None and tolerance_ratio <= MARGINAL_FACTOR
