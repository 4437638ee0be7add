"""Lower-precision arithmetic in an fp32 problem (`rt-low-precision`): a candidate that passes the tolerance
but is much further from the exact (float64) answer than the fp32 reference itself.

fp16 or bf16 intermediates (and TF32 matrix products) round at 2^-11 to 2^-8 of a value; in an output whose
values are small against atol (a softmax, a normalized or down-scaled result) that error fits inside the fp32
tolerance on any input, so no input set forces it out. What does not hide is its size against fp32's own
rounding: the check compares, on one correctness trial, the candidate's largest error against the float64
answer with the reference's largest error (kernelrl.verify.exact), both over the output's largest value. An
fp32 kernel that sums in another order stays within a few times the reference's error; the floor keeps an
exactly rounded reference (an element-wise op, error 0) from flagging an fp32 kernel that rounds once more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the parent's trial bookkeeping imports describe() without torch
    import torch

# candidate error over the reference's own; an fp32 kernel is within
# a few times it (kernelrl.verify.tolerance's k = 3 covers the spread
# of summation orders), a half-precision one thousands of times
PRECISION_RATIO = 16.0
# of the output's largest |value|: fp32 rounding of a long reduction stays far below (a 24,576-term
# matrix-vector product: ~1e-6), fp16 and TF32 rounding (2^-11 ~ 4.9e-4) and bf16's (2^-8) far above
PRECISION_FLOOR = 2.0 ** -17
_CHUNK = 1 << 22


def low_precision(expected: list[torch.Tensor], actual: list[torch.Tensor],
                  errors: list[torch.Tensor | None]) -> dict | None:
    """The first fp32 output whose error against the float64 answer (`expected` + `errors`,
    errors being the float64 answer minus the reference) exceeds both PRECISION_RATIO times
    the reference's and PRECISION_FLOOR of its largest value: {"output_index",
    "candidate_error", "reference_error"} (both relative to that value), else None. Outputs
    without a float64 answer, non-finite elements and empty outputs are not judged."""
    import torch

    for index, (exp, act, err) in enumerate(zip(expected, actual, errors, strict=False)):
        if err is None or exp.dtype != torch.float32 or act.dtype != torch.float32 or exp.shape != act.shape:
            continue
        exp_flat, act_flat, err_flat = exp.reshape(-1), act.reshape(-1).to(exp.device), err.reshape(-1)
        scale = candidate = reference = 0.0
        for start in range(0, exp_flat.numel(), _CHUNK):
            part = slice(start, start + _CHUNK)
            exact = exp_flat[part].to(torch.float64) + err_flat[part].to(torch.float64)
            cand = act_flat[part].to(torch.float64)
            finite = torch.isfinite(exact) & torch.isfinite(cand)
            if not bool(finite.any()):
                continue
            scale = max(scale, float(exact[finite].abs().max()))
            candidate = max(candidate, float((cand - exact)[finite].abs().max()))
            reference = max(reference, float(err_flat[part].to(torch.float64)[finite].abs().max()))
        if scale > 0 and candidate > max(PRECISION_RATIO * reference, PRECISION_FLOOR * scale):
            return {"output_index": index, "candidate_error": candidate / scale,
                    "reference_error": reference / scale}
    return None


def describe(found: dict) -> str:
    """The finding's detail: how far each is from the float64 answer."""
    return (f"output {found['output_index']}: largest error against the float64 answer "
            f"{found['candidate_error']:.2e} of the output's largest value, the fp32 reference's "
            f"{found['reference_error']:.2e} (more than {PRECISION_RATIO:g}x, and over "
            f"{PRECISION_FLOOR:.1e})")
